"""collect_list / array_agg, collect_set and string_agg / listagg, read from multisets.

Like MIN and MAX (multisets.py), these aggregates are functions of the multiset of their
argument's non-NULL values per group, which the view keeps in a map keyed by (group, value)
with the number of rows holding each value; a touched group's value is read from it:

  collect_list(x), array_agg(x)    every value, as many times as rows hold it
  collect_set(x),                  each value once
  collect_list(DISTINCT x)
  string_agg(x [, sep]),           the values (each once with DISTINCT) as strings, joined by
  listagg(x [, sep])               `sep` (none when omitted or NULL); NULL without values

Spark's order of these is the order rows arrive in, which is not deterministic; Viewlet gives
the values in ascending order (for string_agg / listagg: of the value, before it becomes a
string). `WITHIN GROUP (ORDER BY x [ASC | DESC])` on the argument itself is exact; ordering
by another expression is refused (rows that tie on it have no defined order).

The collections are built where a group's result row is derived (engine/batch/result_sql.py), never
inside a subquery: there they are refused.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from sqlglot import exp

COLLECT_LIST = "collect_list"       # the sorted values, each as often as rows hold it
COLLECT_SET = "collect_set"         # the sorted distinct values
STRING_AGG = "string_agg"           # an aggregate kind reading one of the two above
COLLECT_KINDS = (COLLECT_LIST, COLLECT_SET)
COLLECT_NODES = (exp.ArrayAgg, exp.ArrayUniqueAgg, exp.GroupConcat)


@dataclass(frozen=True)
class Collect:
    kind: str                       # COLLECT_LIST, COLLECT_SET or STRING_AGG
    collection: str                 # the multiset kind read: COLLECT_LIST or COLLECT_SET
    separator: str = "''"           # string_agg: the separator as a Spark SQL string literal
    descending: bool = False


def collect_aggregate(node: exp.Expression, fail) -> Optional[Tuple[Collect, exp.Expression]]:
    """(how, argument) of a collecting aggregate, None for any other node."""
    if not isinstance(node, COLLECT_NODES):
        return None
    arg = node.this
    orders = []
    if isinstance(arg, exp.Order):                   # string_agg(...) WITHIN GROUP (ORDER BY)
        orders = list(arg.expressions)
        arg = arg.this
    distinct = isinstance(arg, exp.Distinct)
    if distinct:
        if len(arg.expressions) != 1:
            fail(f"{_name(node)}(DISTINCT ...) with {len(arg.expressions)} arguments", node)
        arg = arg.expressions[0]
    if arg is None or isinstance(arg, exp.Star):
        fail(f"{_name(node)}(*)", node)
    if isinstance(node, exp.ArrayUniqueAgg):
        return Collect(COLLECT_SET, COLLECT_SET), arg
    collection = COLLECT_SET if distinct else COLLECT_LIST
    if isinstance(node, exp.ArrayAgg):
        return Collect(COLLECT_LIST, collection), arg
    descending = False
    if orders:
        key = arg.sql(dialect="spark")
        if len(orders) != 1 or orders[0].this.sql(dialect="spark") != key:
            fail(f"{_name(node)} ... WITHIN GROUP (ORDER BY an expression other than its "
                 "argument)", node, "Rows that tie on the order have no defined order in Spark; "
                 "order by the aggregated expression itself, or sort when you read the view.")
        descending = bool(orders[0].args.get("desc"))
    sep = node.args.get("separator")
    if sep is None or isinstance(sep, exp.Null):
        text = "''"
    elif isinstance(sep, exp.Literal) and sep.is_string:
        text = sep.sql(dialect="spark")
    else:
        fail(f"{_name(node)} with a separator that is not a string literal", sep)
    return Collect(STRING_AGG, collection, text, descending), arg


def explicit_separators(tree: exp.Expression) -> exp.Expression:
    """listagg(x) with its default separator written out (NULL: none): sqlglot writes a
    listagg without separator back as LISTAGG(x, ','), which Spark reads differently."""
    for node in tree.find_all(exp.GroupConcat):
        if node.args.get("separator") is None:
            node.set("separator", exp.Null())
    return tree


def collect_sql(how: Collect, column: str) -> str:
    """A group's value from its collection column (NULL when the group has no multiset row)."""
    if how.kind != STRING_AGG:
        return f"COALESCE({column}, array())"
    values = f"transform({column}, v -> CAST(v AS STRING))"
    if how.descending:
        values = f"reverse({values})"
    return f"CASE WHEN size({column}) > 0 THEN array_join({values}, {how.separator}) END"


def _name(node: exp.Expression) -> str:
    return {exp.ArrayAgg: "COLLECT_LIST", exp.ArrayUniqueAgg: "COLLECT_SET",
            exp.GroupConcat: "LISTAGG"}.get(type(node), node.key.upper())


__all__ = ["Collect", "collect_aggregate", "collect_sql", "explicit_separators",
           "COLLECT_LIST", "COLLECT_SET", "STRING_AGG", "COLLECT_KINDS", "COLLECT_NODES"]
