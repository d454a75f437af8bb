"""Aggregate `FILTER (WHERE p)` clauses, rewritten into the aggregate's argument.

Every aggregate skips NULL inputs, so an aggregate over the rows where `p` is true is the
aggregate of `CASE WHEN p THEN x END` over all rows (a NULL or false `p` gives NULL, skipped):

  SUM(x) FILTER (WHERE p)               SUM(CASE WHEN p THEN x END)
  COUNT(*) FILTER (WHERE p)             COUNT(CASE WHEN p THEN 1 END)
  COUNT(DISTINCT x) FILTER (WHERE p)    COUNT(DISTINCT CASE WHEN p THEN x END)
  string_agg(x, s) FILTER (WHERE p)     string_agg(CASE WHEN p THEN x END, s)

The CASE has the argument's type, so result types are Spark's for the original call; the
rewritten aggregates are then maintained like any other (sums with non-NULL counts, multisets).
"""
from __future__ import annotations

from sqlglot import exp


def rewrite_aggregate_filters(tree: exp.Expression, fail) -> exp.Expression:
    """The tree with every `agg FILTER (WHERE p)` rewritten (subqueries included)."""
    if not any(isinstance(n, exp.Filter) for n in tree.walk()):
        return tree

    def swap(node):
        if not isinstance(node, exp.Filter):
            return node
        agg, where = node.this, node.expression
        if not isinstance(agg, exp.AggFunc) or not isinstance(where, exp.Where):
            fail("FILTER (WHERE ...) on something other than an aggregate", node)
        return _filtered(agg.copy(), where.this, fail, node)

    return tree.transform(swap)


def _filtered(agg: exp.AggFunc, cond: exp.Expression, fail, node) -> exp.Expression:
    def when(value: exp.Expression) -> exp.Expression:
        return exp.Case(ifs=[exp.If(this=cond.copy(), true=value)])

    arg = agg.this
    if arg is None or isinstance(arg, exp.Star):
        if not isinstance(agg, exp.Count):
            fail(f"{agg.key.upper()}(*) with FILTER", node)
        agg.set("this", when(exp.Literal.number(1)))
    elif isinstance(arg, exp.Distinct):
        arg.set("expressions", [when(e) for e in arg.expressions])
    elif isinstance(arg, exp.Order):              # string_agg(x ...) WITHIN GROUP (ORDER BY ...)
        arg.set("this", when(arg.this))
    else:
        agg.set("this", when(arg))
    return agg


__all__ = ["rewrite_aggregate_filters"]
