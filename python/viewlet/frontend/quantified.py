"""Quantified comparisons `x op ALL | ANY | SOME (SELECT y FROM ... WHERE p)`.

Spark 4.0 does not parse them, so Viewlet rewrites them, in the view's query before
translating it and in every query text it hands to Spark (types, depth 0), into SQL's
three-valued definition over three row counts of the subquery, each a scalar COUNT subquery
(so each becomes one nested aggregate of the calculus):

  x op ALL (S):  S empty -> TRUE; some row with x op y FALSE -> FALSE;
                 x NULL or some y NULL -> NULL; else TRUE
  x op ANY (S):  some row with x op y TRUE -> TRUE; S empty -> FALSE;
                 x NULL or some y NULL -> NULL; else FALSE

`x` moves into the subqueries, so the query's columns are first qualified as Spark resolves
them (frontend/names.py): a subquery table with a column of the same name would capture
them otherwise.

An aggregating S with GROUP BY or HAVING has one row per group: it becomes a subquery in
FROM of the counts, `SELECT COUNT(*) FROM (S with its item as y) AS q WHERE ...q.y...`, so
the counts are counts of groups (`_over_groups`). A global aggregate has exactly one row:
`x op ALL (S)` and `x op ANY (S)` are then `x op (S)`, a scalar subquery.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

from sqlglot import exp

from ..errors import UnsupportedSQL
from .checks import position_of
from .names import qualify_columns

_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


def rewrite_quantified(tree: exp.Expression, sql: str,
                       columns_of: Callable[[exp.Table], Sequence[str]]) -> exp.Expression:
    """tree with every quantified comparison replaced (the tree is changed in place).
    `columns_of(table)` lists a FROM table's column names."""
    found = [n for n in tree.find_all(exp.All, exp.Any)]
    if found:                                  # x moves into subqueries: qualify it first
        qualify_columns(tree, columns_of)
    for node in reversed(found):               # inner ones first: outer copies carry them
        _replace(node, sql)
    return tree


def _fail(sql, construct, node, detail=""):
    raise UnsupportedSQL(construct, detail, position_of(node), sql)


def _replace(node, sql):
    kind = "ALL" if isinstance(node, exp.All) else "ANY / SOME"
    cmp = node.parent
    if not isinstance(cmp, _COMPARISONS) or cmp.args.get("expression") is not node:
        _fail(sql, f"{kind} outside a comparison", node,
              "Write x = ANY (SELECT ...), x > ALL (SELECT ...) and so on.")
    select = node.this.this if isinstance(node.this, exp.Subquery) else node.this
    if not isinstance(select, exp.Select):
        _fail(sql, f"{kind} over a list (only subqueries)", node,
              "Compare with each value, or write the values as IN (...).")
    if len(select.expressions) != 1 or isinstance(select.expressions[0], exp.Star):
        _fail(sql, f"{kind} with a subquery not returning exactly one column", node)
    grouped = select.args.get("group") is not None or select.args.get("having") is not None
    if not grouped and any(isinstance(n, exp.AggFunc) for n in select.expressions[0].walk()):
        # a global aggregate has exactly one row: x op ALL / ANY of it is x op its value
        node.replace(exp.Subquery(this=select.copy()))
        return
    if grouped:
        select, y = _over_groups(select)
    else:
        item = select.expressions[0]
        y = item.this if isinstance(item, exp.Alias) else item
    x = cmp.this.copy()

    def count(extra: Optional[exp.Expression]) -> exp.Expression:
        s = select.copy()
        s.set("distinct", None)                # row counts > 0 do not see duplicates
        s.set("expressions", [exp.Count(this=exp.Star())])
        if extra is not None:
            where = s.args.get("where")
            s.set("where", exp.Where(this=extra if where is None else exp.and_(
                exp.Paren(this=where.this), exp.Paren(this=extra))))
        return exp.Subquery(this=s)

    def positive(sub):
        return exp.GT(this=sub, expression=exp.Literal.number(0))

    holds = type(cmp)(this=x.copy(), expression=y.copy())
    rows = exp.EQ(this=count(None), expression=exp.Literal.number(0))
    unknown = exp.Or(this=exp.Is(this=x.copy(), expression=exp.Null()),
                     expression=positive(count(exp.Is(this=y.copy(), expression=exp.Null()))))
    if isinstance(node, exp.All):
        arms = [(rows, exp.true()), (positive(count(exp.Not(this=exp.Paren(this=holds)))), exp.false()),
                (unknown, exp.null())]
        default = exp.true()
    else:
        arms = [(positive(count(holds)), exp.true()), (rows, exp.false()), (unknown, exp.null())]
        default = exp.false()
    case = exp.Case(ifs=[exp.If(this=c, true=v) for c, v in arms], default=default)
    cmp.replace(exp.Paren(this=case))


#: the aggregating subquery of a quantified comparison, as a subquery in FROM
GROUPS_ALIAS, VALUE_ALIAS = "__viewlet_q", "__viewlet_y"


def _over_groups(select: exp.Select):
    """An aggregating subquery (GROUP BY, HAVING, or a global aggregate) as plain rows:
    `SELECT q.y FROM (SELECT <its item> AS y ...) AS q`, one row per group. Its counts are
    then counts of groups; correlated references inside it refer to the enclosing query,
    which a subquery in FROM of a subquery may do (Spark and the front end alike)."""
    inner = select.copy()
    item = inner.expressions[0]
    value = item.this if isinstance(item, exp.Alias) else item
    inner.set("expressions", [exp.alias_(value.copy(), VALUE_ALIAS)])
    y = exp.column(VALUE_ALIAS, table=GROUPS_ALIAS)
    rows = exp.select(y.copy()).from_(exp.Subquery(
        this=inner, alias=exp.TableAlias(this=exp.to_identifier(GROUPS_ALIAS))))
    return rows, y

