"""MIN, MAX and the DISTINCT aggregates as multisets kept in maps.

A sum or a count changes by the batch's contribution; MIN, MAX and COUNT/SUM/AVG(DISTINCT x)
do not (deleting the current minimum needs the next one). For them the view keeps, per group,
the multiset of the argument's non-NULL values: a map keyed by (group keys, value) holding the
number of rows with that value. It is an ordinary sum, maintained by deltas like the view
state; the aggregate is read from it when a group's row is derived:

  MIN(x) / MAX(x)       the least / greatest value with a positive count, NULL when none
  COUNT(DISTINCT x)     the number of values with a positive count
  SUM(DISTINCT x)       their sum, NULL when none
  AVG(DISTINCT x)       SUM(DISTINCT x) / COUNT(DISTINCT x), with AVG's type
  MIN/MAX(DISTINCT x)   MIN / MAX

Aggregates over the same argument share one multiset (duplicate-map elimination). Inside a
subquery the same multiset is the query of a nested aggregate (calculus `Nested` with a kind).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from sqlglot import exp

from ..calculus.ir import COUNT_DISTINCT, MAX, MIN, SUM_DISTINCT, Cond, Lift, Mul, Query
from ..calculus.normalize import normalize, same_multiset
from ..calculus.scalar import Scalar

AVG_DISTINCT = "avg_distinct"            # a view aggregate over two multiset values
MULTISET_AGGREGATES = (MIN, MAX, COUNT_DISTINCT, SUM_DISTINCT, AVG_DISTINCT)
MULTISET_PREFIX = "view_ms"


@dataclass
class Multiset:
    """A level-0 map of the view: Sum[group..., value](rows of the group with that value)."""

    name: str
    query: Query
    # the aggregated expression, Spark SQL over base columns (None for the multiset of a
    # subquery in SELECT / HAVING: its type is the subquery's, see ViewSpec.subquery_probe)
    arg_sql: Optional[str]

    @property
    def group(self) -> Tuple[str, ...]:
        return self.query.group[:-1]

    @property
    def value(self) -> str:
        return self.query.group[-1]


def multiset_aggregate(node: exp.Expression, fail) -> Optional[Tuple[str, exp.Expression]]:
    """(kind, argument) of an aggregate kept as a multiset, None for SUM / COUNT / AVG.
    `fail(construct, node, detail)` refuses what has no multiset form."""
    arg = node.this
    distinct = isinstance(arg, exp.Distinct)
    if distinct:
        args = arg.expressions
        if len(args) != 1:
            fail(f"{node.key.upper()}(DISTINCT ...) with {len(args)} arguments", node,
                 "Count the rows of a SELECT DISTINCT subquery in FROM instead.")
        arg = args[0]
    if isinstance(node, (exp.Min, exp.Max)):
        if arg is None or isinstance(arg, exp.Star):
            fail(f"{node.key.upper()}(*)", node)
        return (MIN if isinstance(node, exp.Min) else MAX), arg
    if not distinct:
        return None
    kinds = {exp.Count: COUNT_DISTINCT, exp.Sum: SUM_DISTINCT, exp.Avg: AVG_DISTINCT}
    kind = next((k for t, k in kinds.items() if isinstance(node, t)), None)
    if kind is None:
        fail(f"{node.key.upper()}(DISTINCT ...)", node,
             "DISTINCT is supported in COUNT, SUM, AVG, MIN and MAX.")
    return kind, arg


def multiset_body(tr, base: List, arg: exp.Expression, value: str) -> List:
    """The factors of a multiset over the rows `base`: value := arg, for non-NULL values."""
    return base + [Lift(value, tr.to_scalar(arg)), not_null(value)]


def not_null(var: str) -> Cond:
    return Cond(Scalar(exp.Not(this=exp.Is(this=exp.column(var, quoted=True),
                                           expression=exp.Null()))))


class ViewMultisets:
    """The multisets of an aggregate view, one per distinct argument."""

    def __init__(self, tr, group: Sequence[str], base: List):
        self.tr, self.group, self.base = tr, tuple(group), base
        self.by_name: Dict[str, Multiset] = {}
        self._by_arg: Dict[str, str] = {}

    def add(self, arg: exp.Expression) -> str:
        key = self.tr.to_scalar(arg).key
        if key not in self._by_arg:
            value = self.tr.fresh("mv")
            atoms = multiset_body(self.tr, self.base, arg, value)
            query = normalize(Mul(tuple(atoms)), group=self.group + (value,))
            name = f"{MULTISET_PREFIX}{len(self.by_name)}"
            self.by_name[name] = Multiset(name, query, arg.sql(dialect="spark"))
            self._by_arg[key] = name
        return self._by_arg[key]

    def with_rows(self, extra: List) -> "ViewMultisets":
        """The same multisets over the rows times `extra` atoms (an aggregate whose argument
        reads per-row subquery values, frontend._row_subqueries)."""
        if not extra:
            return self
        view = ViewMultisets(self.tr, self.group, self.base + list(extra))
        view.by_name, view._by_arg = self.by_name, self._by_arg
        return view

    def add_query(self, query: Query) -> str:
        """A multiset given as its query, keyed by the view's group and a value (a subquery's
        in SELECT / HAVING, see frontend/select_subqueries.py); equal queries share one."""
        if query.group[:-1] != self.group:
            raise ValueError(f"a multiset of the view is keyed by {self.group} and a value, "
                             f"not {query.group}")
        for name, m in self.by_name.items():
            if same_multiset(m.query, query):
                return name
        name = f"{MULTISET_PREFIX}{len(self.by_name)}"
        self.by_name[name] = Multiset(name, query, None)
        return name


__all__ = ["Multiset", "ViewMultisets", "multiset_aggregate", "multiset_body",
           "MULTISET_AGGREGATES", "AVG_DISTINCT", "not_null"]
