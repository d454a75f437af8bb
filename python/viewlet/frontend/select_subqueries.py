"""Subqueries in a view's output expressions: SELECT, HAVING, and GROUP BY items that are a
function of the other keys.

Each subquery (scalar, EXISTS, IN, or a quantified comparison's counts) is translated like
one in WHERE, into nested aggregates `v := Q(inputs)`, and stands in the output expression
as a placeholder `__sq_i` for its value. The view state gets one column per nested
aggregate holding `v` once per state row:

    Sum[G](Groups(Sum[G](base)) * (v := Q) * v)

(Groups: 1 for each state group that has rows), so the existing delta rules maintain it
(incrementally per touched input when the batch binds Q's inputs, else for every group from
the old and new values), a change of `v` marks the group as touched, and the result reads it
back: Spark evaluates the placeholder from the state row, cast to the type Spark gives the
subquery. A MIN / MAX / DISTINCT aggregate (`v := MIN[w] Q`, Q keyed by inputs and value w)
has no such column (its value may be NULL or not a number): its multiset becomes a multiset
of the view (frontend/multisets.py), keyed by the state's keys and the value,

    Sum[G, w](Groups(Sum[G](base)) * Q's body)

from which the result derives `v` per group as it derives a MIN / MAX aggregate
(`ViewSpec.value_multisets`); a change of it touches the group through the multiset. The
state is keyed by G, which holds the subquery's inputs, so `v` is a function of the state key:
  * aggregate views: G are the GROUP BY keys; a subquery may refer to them only (Spark's rule);
  * views without aggregates: G are the output columns plus the subquery's inputs (hidden);
  * global aggregates: G is empty; the subquery is uncorrelated and the state row must exist
    over no input rows, so its row count column carries a constant 1 (see `frontend`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Sequence, Set, Tuple

from sqlglot import exp

from ..calculus.ir import (SUM, Add, DeltaRel, Groups, Lift, MapRef, Monomial, Nested, Rel, Value,
                           product)
from ..calculus.normalize import normalize
from ..calculus.scalar import Scalar
from .multisets import not_null
from .subqueries import SubqueryTranslator


@dataclass
class SubqueryValue:
    placeholder: str               # the variable standing for the subquery in outputs
    expr: Scalar                   # its value over nested-aggregate and outer variables
    sql: str                       # the subquery as Spark SQL (for Spark's type of it)


def is_subquery_node(node: exp.Expression) -> bool:
    """A subquery, EXISTS, or IN (subquery) node; NOT IN is one node with its NOTs (Spark
    evaluates `x NOT IN (...)` as a unit, see SubqueryTranslator.value)."""
    while isinstance(node, exp.Not) and isinstance(node.this, (exp.Not, exp.Paren, exp.In)):
        node = node.this.this if isinstance(node.this, exp.Paren) else node.this
    return isinstance(node, (exp.Subquery, exp.Select, exp.Exists)) or (
        isinstance(node, exp.In) and node.args.get("query") is not None)


def push_not(node: exp.Expression, negate: bool = False) -> exp.Expression:
    """node with NOT pushed through NOT, AND and OR down to the predicates (De Morgan; the
    same truth values), as Spark's optimizer does before it evaluates IN subqueries in a
    value: there `x IN (...)` and `x NOT IN (...)` are each two-valued, so where a NOT
    stands matters."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Not):
        return push_not(node.this, not negate)
    if isinstance(node, (exp.And, exp.Or)):
        kind = type(node) if not negate else (exp.Or if isinstance(node, exp.And) else exp.And)
        return exp.Paren(this=kind(this=push_not(node.left, negate),
                                   expression=push_not(node.right, negate)))
    node = node.copy()
    return exp.Not(this=exp.Paren(this=node)) if negate else node


def has_in_subquery(node: exp.Expression) -> bool:
    """An IN (subquery) among the node's boolean connectives (not inside a subquery)."""
    if isinstance(node, exp.In) and node.args.get("query") is not None:
        return True
    if isinstance(node, (exp.Not, exp.Paren, exp.And, exp.Or)):
        return any(has_in_subquery(c) for c in node.iter_expressions())
    return False


def subquery_nodes(node: exp.Expression):
    """The subquery nodes of an expression that are not inside another subquery."""
    if is_subquery_node(node):
        yield node
        return
    for child in node.iter_expressions():
        yield from subquery_nodes(child)


class SubqueryValues:
    def __init__(self, tr):
        self.tr = tr                         # the view's translator (frontend/translator.py)
        self.values: List[SubqueryValue] = []
        self.atoms: List = []                          # Nested and Lift atoms of all of them
        self.columns: Dict[str, str] = {}              # nested variable -> state column
        self.multisets: Dict[str, Tuple[str, str]] = {}  # nested variable -> (multiset, kind)
        self._by_sql: Dict[str, SubqueryValue] = {}

    def placeholder(self, node: exp.Expression, value: bool = True) -> SubqueryValue:
        """The placeholder of a subquery node (one per distinct subquery text). `value`: in a
        value (SELECT, GROUP BY) rather than a condition (HAVING), see `push_not`."""
        key = ("value " if value else "condition ") + node.sql(dialect="spark")
        if key not in self._by_sql:
            sub = SubqueryTranslator(self.tr)
            expr = Scalar(sub.value(node) if value else sub.condition(node))
            lifts = {a.var: a.expr for a in sub.atoms if isinstance(a, Lift)}
            found = SubqueryValue(f"__sq_{len(self.values)}", expr.substitute(lifts),
                                  node.sql(dialect="spark"))
            self.atoms += sub.atoms
            self.values.append(found)
            self._by_sql[key] = found
        return self._by_sql[key]

    def expression(self, node: exp.Expression) -> exp.Expression:
        """An output expression without aggregates: subqueries -> placeholders, columns ->
        variables."""
        if isinstance(node, exp.Not) and has_in_subquery(node) and not is_subquery_node(node):
            node = push_not(node)
        if is_subquery_node(node):
            return exp.column(self.placeholder(node).placeholder, quoted=True)
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
            return exp.column(self.tr.column_var(node), quoted=True)
        new = node.copy()
        for k, v in node.args.items():
            if isinstance(v, exp.Expression):
                new.set(k, self.expression(v))
            elif isinstance(v, list):
                new.set(k, [self.expression(x) if isinstance(x, exp.Expression) else x for x in v])
        return new

    # -- what the state needs --------------------------------------------------------------
    def nested(self) -> List[Nested]:
        return [a for a in self.atoms if isinstance(a, Nested)]

    def lifts(self) -> List[Lift]:
        return [a for a in self.atoms if isinstance(a, Lift)]

    def outer_vars(self, value: SubqueryValue = None) -> Set[str]:
        """Variables of the enclosing query that the values depend on (inputs of the nested
        aggregates, with assigned variables replaced by what they are computed from)."""
        nested = self.nested()
        own = {a.var for a in nested}
        lifts = {a.var: a.expr.vars for a in self.lifts()}
        wanted: Set[str] = set()
        for a in nested:
            if value is None or a.var in value.expr.vars:
                wanted |= set(a.inputs)
        for v in ([value] if value is not None else self.values):
            wanted |= set(v.expr.vars) - own - {x.placeholder for x in self.values}
        out: Set[str] = set()
        for v in wanted:
            out |= set(lifts[v]) if v in lifts else {v}
        return out

    def add_columns(self, state, base: Sequence, group: Sequence[str], multisets):
        """One state column per nested sum: its value once per state row; a view multiset
        (`multisets`: the view's ViewMultisets) per nested MIN / MAX / DISTINCT aggregate."""
        lifts = self.lifts()
        rows = [Groups(normalize(product(list(base) + lifts), group=tuple(group)))] if group else []
        for i, a in enumerate(self.nested()):
            needed = [l for l in lifts if l.var in a.inputs]
            if a.kind == SUM:
                self.columns[a.var] = state.add(f"q{i}", rows + needed, [a, Value(Scalar.var(a.var))])
            else:
                self.multisets[a.var] = (multisets.add_query(_group_multiset(a, rows + needed, group)),
                                         a.kind)


def _group_multiset(atom: Nested, outer: List, group: Sequence[str]):
    """Sum[G, w](outer * Q's body): the multiset of a nested MIN / MAX / DISTINCT aggregate per
    state group. Q's body binds its inputs with SQL `=` (no row matches a NULL input), the
    groups match NULL keys: an input the body joins on must not be NULL."""
    terms = []
    for m in atom.query.monomials:
        joined = set().union(*(set(a.vars) for a in m.atoms
                               if isinstance(a, (Rel, DeltaRel, MapRef))))
        guards = tuple(not_null(v) for v in atom.inputs if v in joined)
        terms.append(Monomial(m.coef, tuple(outer) + guards + m.atoms).to_expr())
    return normalize(Add(tuple(terms)), group=tuple(group) + (atom.value_var,))
