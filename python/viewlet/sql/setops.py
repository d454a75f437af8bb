"""UNION [ALL] and SELECT DISTINCT, reduced to what the front end already maintains.

  q1 UNION ALL q2        a FROM item whose rows are the sum of its branches': each branch is
                         translated like a subquery in FROM and assigns its output columns to
                         the union's variables (one monomial set per branch)
  q1 UNION q2            DISTINCT over q1 UNION ALL q2 (an inner UNION under an outer one is
                         subsumed by the outer DISTINCT)
  SELECT DISTINCT ...    without aggregates: the state already counts each distinct output row,
                         the result holds one row per row with count > 0 instead of count copies;
                         with GROUP BY whose keys are all output columns (or a global
                         aggregate): the rows are distinct already; otherwise the aggregating
                         query becomes a subquery in FROM grouped by all its columns
  a view that is a UNION  SELECT [DISTINCT] * FROM (the union) AS __union

Column types across branches: Spark widens them (int and bigint to bigint, decimals to a
decimal holding both, ...); when the branches' columns have known, different types, each
branch casts to the widened type, so the union's variables have one type in every map.
"""
from __future__ import annotations

import re
from typing import List, Optional

from sqlglot import exp

UNION_ALIAS = "__union"
DISTINCT_ALIAS = "__distinct"


def as_select(tree: exp.Expression, fail) -> exp.Expression:
    """A view whose query is a set operation, as a SELECT over it."""
    while isinstance(tree, exp.Subquery) and not tree.alias and isinstance(
            tree.this, (exp.Union, exp.Select)):
        tree = tree.this
    if isinstance(tree, (exp.Intersect, exp.Except)):
        fail(tree.key.upper(), tree, "Only UNION and UNION ALL are supported.")
    if not isinstance(tree, exp.Union):
        return tree
    check_union(tree, fail)
    distinct = bool(tree.args.get("distinct"))
    inner = all_branches(tree) if distinct else tree
    select = exp.select(exp.Star()).from_(exp.Subquery(this=inner, alias=exp.TableAlias(
        this=exp.to_identifier(UNION_ALIAS))))
    if distinct:
        select.set("distinct", exp.Distinct())
    return select


def check_union(node: exp.Union, fail):
    for key, what in (("order", "ORDER BY"), ("limit", "LIMIT/OFFSET"), ("offset", "LIMIT/OFFSET")):
        if node.args.get(key) is not None:
            fail(f"{what} on a UNION", node.args[key],
                 "A view is an unordered relation: order and limit when you query it.")
    if node.args.get("with") is not None or node.args.get("with_") is not None:
        fail("a WITH clause (common table expressions)", node,
             "Inline the subquery or create an incremental view for it.")


def all_branches(node: exp.Expression) -> exp.Expression:
    """The union with every UNION turned into UNION ALL (under an outer DISTINCT)."""
    node = node.copy()
    for u in node.find_all(exp.Union):
        u.set("distinct", False)
    return node


def branches(node: exp.Expression, fail) -> List[exp.Select]:
    """The SELECTs of a UNION ALL, left to right. A UNION (distinct) inside it becomes a
    branch `SELECT DISTINCT * FROM (that union)`."""
    while isinstance(node, exp.Subquery) and not node.alias:
        node = node.this
    if isinstance(node, (exp.Intersect, exp.Except)):
        fail(node.key.upper(), node, "Only UNION and UNION ALL are supported.")
    if isinstance(node, exp.Union):
        check_union(node, fail)
        if node.args.get("distinct"):
            select = exp.select(exp.Star()).from_(exp.Subquery(
                this=all_branches(node), alias=exp.TableAlias(this=exp.to_identifier(UNION_ALIAS))))
            select.set("distinct", exp.Distinct())
            return [select]
        return branches(node.this, fail) + branches(node.expression, fail)
    if not isinstance(node, exp.Select):
        fail(f"a {node.key.upper()} in a UNION", node)
    return [node]


def distinct_as_subquery(tree: exp.Select) -> exp.Select:
    """SELECT DISTINCT e1, ..., en FROM ... GROUP BY ... as
    SELECT c0, ..., cn FROM (SELECT e1 AS c0, ... FROM ... GROUP BY ...) AS __distinct
    GROUP BY c0, ..., cn (Spark names the columns from the original query)."""
    inner = tree.copy()
    inner.set("distinct", None)
    names = [f"c{i}" for i in range(len(inner.expressions))]
    inner.set("expressions", [exp.alias_(e.this if isinstance(e, exp.Alias) else e, n)
                              for e, n in zip(inner.expressions, names)])
    outer = exp.select(*[exp.column(n, table=DISTINCT_ALIAS) for n in names]).from_(
        exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(DISTINCT_ALIAS))))
    outer.set("group", exp.Group(expressions=[exp.column(n, table=DISTINCT_ALIAS) for n in names]))
    return outer


# -- Spark's type widening for UNION columns (TypeCoercion.findWiderTypeForTwo) -------------

_INTEGRAL = {"tinyint": (3, 1), "smallint": (5, 2), "int": (10, 3), "bigint": (20, 4)}
_DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)")


def wider_type(types: List[Optional[str]]) -> Optional[str]:
    """The type Spark gives a UNION column whose branches have these types; None when a type
    is unknown or the widening is not one of the simple cases below."""
    if not types or any(t is None for t in types):
        return None
    out = types[0].lower()
    for t in types[1:]:
        out = _wider(out, t.lower())
        if out is None:
            return None
    return out


def _wider(a: str, b: str) -> Optional[str]:
    if a == b:
        return a
    if a in _INTEGRAL and b in _INTEGRAL:
        return a if _INTEGRAL[a][1] > _INTEGRAL[b][1] else b
    if "double" in (a, b) and all(t in _FRACTIONAL or _as_decimal(t) for t in (a, b)):
        return "double"
    if "float" in (a, b) and all(t in _FRACTIONAL or t in _INTEGRAL for t in (a, b)):
        return "float"
    da, db = _as_decimal(a), _as_decimal(b)
    if da and db:                     # DecimalPrecision.widerDecimalType, bounded to 38
        (p1, s1), (p2, s2) = da, db
        scale = max(s1, s2)
        return f"decimal({min(38, max(p1 - s1, p2 - s2) + scale)},{min(38, scale)})"
    return None


_FRACTIONAL = {"float", "double"}


def _as_decimal(t: str):
    m = _DECIMAL.fullmatch(t.replace(" ", ""))
    if m:
        return int(m.group(1)), int(m.group(2))
    if t in _INTEGRAL:
        return _INTEGRAL[t][0], 0
    return None
