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
"""
from __future__ import annotations

from dataclasses import replace

from ..calculus.delta import binds_inputs
from ..calculus.ir import Groups, Monomial, Nested, Query, Rel
from ..calculus.normalize import simplify


def with_view_caches(query: Query) -> Query:
    """query with each nested aggregate that a relation of its monomial can restrict marked
    as a view cache (nested aggregates inside nested aggregates too)."""
    return Query(query.group, tuple(_monomial(m) for m in query.monomials))


def _monomial(mono: Monomial) -> Monomial:
    relations = [a for a in mono.atoms if isinstance(a, Rel)]
    atoms = []
    for a in mono.atoms:
        if isinstance(a, Nested):
            a = replace(a, query=with_view_caches(a.query))
            if not a.cached and a.inputs and not binds_inputs(Query(a.inputs, a.query.monomials)):
                binder = next((r for r in relations if set(a.inputs) <= set(r.vars)), None)
                if binder is not None:
                    a = replace(a, query=_restricted(a.query, a.inputs, binder), cached=True)
        atoms.append(a)
    return Monomial(mono.coef, tuple(atoms))


def _restricted(query: Query, inputs, binder: Rel) -> Query:
    """query times the indicator of the input values `binder` holds (a MIN / MAX / DISTINCT
    aggregate's multiset: its value variable is not an input, the cache is keyed by both)."""
    cols = [(c, v) for c, v in zip(binder.columns, binder.vars) if v in inputs]
    values = Rel(binder.table, tuple(c for c, _ in cols), tuple(v for _, v in cols))
    domain = Groups(Query(tuple(inputs), (Monomial(1, (values,)),)))
    return Query(query.group, simplify([Monomial(m.coef, (domain,) + m.atoms)
                                        for m in query.monomials], keep=query.group))
