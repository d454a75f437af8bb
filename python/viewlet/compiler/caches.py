"""View caches ([J] §5.2), behind the view option `caches`.

A nested aggregate correlated on inequalities does not bind its inputs (VWAP: the bid volume
above each bid's price `p`), so by default ([J] rule 3, input-variable extraction) a batch
evaluates it for every input value the enclosing query holds, joining those values with maps
keyed by the compared columns: |values| x |map| per batch. With caches the nested query is
kept as a map of its own keyed by its inputs, a copy of the nested value per input value,
restricted to the input values the enclosing relation holds:

    x := Q[p]    becomes    x := Sum[p](Groups(Sum[p](R(p))) * Q[p])

where R is the enclosing monomial's relation atom binding `p`. Both agree wherever R has rows
for `p`, which is everywhere the monomial looks (R binds `p` there), so the rewrite is exact.
The rewritten query binds its inputs, and the compiler materializes it as one map (the cache,
keyed by `p`; EXPLAIN marks it); its own triggers add a batch's contribution to every cached
value (|values| x |batch|) and evaluate new input values once. It pays when the inputs'
active domain is small (a price grid) and costs a map of that size otherwise. A MIN / MAX /
DISTINCT aggregate's query is a multiset keyed by its inputs and a value: its cache is keyed
by both, and restricted on the inputs only.

Nested aggregates that sum a comparison per row are kept the same way, option or not
(`with_row_caches`). TPC-H Q20's `s_suppkey IN (SELECT ps_suppkey FROM partsupp WHERE
ps_availqty > (SELECT 0.5 * SUM(l_quantity) ... ps_partkey, ps_suppkey))` is, per supplier,
a sum over its partsupp rows of a comparison with an aggregate keyed by (part, supplier). A
batch of lineitem changes touches a few (part, supplier) pairs, yet without a map of that
count the statement re-evaluates it over every partsupp row of each touched supplier (the
enclosing query needs its old and new value). As a map keyed by the supplier, the old value
is one lookup and the new one that plus the difference over the touched pairs: work in
proportion to the batch. Its own triggers compute that difference, which the rule for a
nested aggregate restricts to the touched pairs (calculus/delta.py). The rule applies when
the nested query binds its inputs (no restriction needed) and holds a nested aggregate
keyed by a variable it sums over; a nested query whose inner aggregates are keyed by its
inputs alone (Q18a's per-order count) is one lookup per input already.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from ..calculus.delta import binds_inputs
from ..calculus.ir import SUM, Groups, Monomial, Nested, Query, Rel
from ..calculus.normalize import simplify


def with_view_caches(query: Query) -> Query:
    """query with each nested aggregate that a relation of its monomial can restrict marked
    as a view cache (nested aggregates inside nested aggregates too)."""
    return _marked(query, _view_cache)


def with_row_caches(query: Query) -> Query:
    """query with each nested SUM that sums a comparison per row (a nested aggregate in it
    keyed by a variable it sums over) and binds its inputs marked as a view cache, at any
    depth."""
    return _marked(query, _row_cache)


def _marked(query: Query, mark: Callable[[Nested, Monomial], Nested]) -> Query:
    """query with `mark(atom, its monomial)` applied to each nested aggregate, innermost
    first (an atom's query is marked before the atom)."""
    return Query(query.group, tuple(
        Monomial(m.coef, tuple(mark(replace(a, query=_marked(a.query, mark)), m)
                               if isinstance(a, Nested) else a for a in m.atoms))
        for m in query.monomials))


def _view_cache(atom: Nested, mono: Monomial) -> Nested:
    """An inequality-correlated atom restricted to the input values a relation of its
    monomial holds, as a cache."""
    if atom.cached or not atom.inputs or binds_inputs(Query(atom.inputs, atom.query.monomials)):
        return atom
    binder = next((r for r in mono.atoms if isinstance(r, Rel) and set(atom.inputs) <= set(r.vars)),
                  None)
    if binder is None:
        return atom
    return replace(atom, query=_restricted(atom.query, atom.inputs, binder), cached=True)


def _row_cache(atom: Nested, mono: Monomial) -> Nested:
    """A SUM that binds its inputs and compares per row, as a cache."""
    if (atom.kind == SUM and not atom.cached and atom.inputs
            and binds_inputs(Query(atom.inputs, atom.query.monomials))
            and _compares_per_row(atom)):
        return replace(atom, cached=True)
    return atom


def _compares_per_row(atom: Nested) -> bool:
    """A nested aggregate directly in atom's query is keyed by a variable that is not one
    of atom's inputs (so its value changes from row to row of the sum)."""
    inputs = set(atom.inputs)
    return any(isinstance(a, Nested) and not set(a.inputs) <= inputs
               for m in atom.query.monomials for a in m.atoms)


def _restricted(query: Query, inputs, binder: Rel) -> Query:
    """query times the indicator of the input values `binder` holds (a MIN / MAX / DISTINCT
    aggregate's multiset: its value variable is not an input, the cache is keyed by both)."""
    cols = [(c, v) for c, v in zip(binder.columns, binder.vars) if v in inputs]
    values = Rel(binder.table, tuple(c for c, _ in cols), tuple(v for _, v in cols))
    domain = Groups(Query(tuple(inputs), (Monomial(1, (values,)),)))
    return Query(query.group, simplify([Monomial(m.coef, (domain,) + m.atoms)
                                        for m in query.monomials], keep=query.group))
