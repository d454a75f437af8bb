"""Delta rules of the calculus (DBToaster journal §3.4), for a batch of changes to one table.

Delta(Q) is Q(D + dD) - Q(D). With batches the change of a relation is itself a relation
(DeltaRel) holding signed multiplicities, so the rule for a relation atom replaces it by the
batch atom instead of binding trigger variables to one tuple (Hot Dog §3.1).

A nested aggregate follows [J] §5.3: d(x := Q) = (x := Q + dQ) - (x := Q). When every
monomial of dQ binds Q's input variables (equality correlation on the batch), the difference
is non-zero only for the inputs dQ touches, so it is multiplied by Domain(dQ) (the range-
restricted variant; Hot Dog's domain extraction for batches): the enclosing query is then
evaluated only for those inputs instead of over its whole range. The rule holds for every
kind of nested aggregate: a MIN / MAX / DISTINCT aggregate is a function of its multiset Q
(keyed by inputs and value), Q + dQ is the new multiset, and the domain is over the inputs.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product as cartesian

from .ir import (Add, Const, Cond, DeltaRel, Domain, Expr, Groups, Lift, MapRef, Mul, Nested, Query,
                 Rel, Sum, Value, ZERO)

RELATIONAL = (Rel, DeltaRel, MapRef, Domain, Groups)
NESTED = (Nested, Groups)


def delta(expr: Expr, table: str) -> Expr:
    if isinstance(expr, _NestedGroup):
        return expr.delta(table)
    if isinstance(expr, Rel):
        return DeltaRel(expr.table, expr.columns, expr.vars) if expr.table == table else ZERO
    if isinstance(expr, NESTED):
        return _delta_nested(expr, table)
    if isinstance(expr, (DeltaRel, MapRef, Const, Value, Cond, Lift, Domain)):
        return ZERO
    if isinstance(expr, Sum):
        return Sum(expr.group, delta(expr.body, table))
    if isinstance(expr, Add):
        return Add(tuple(delta(t, table) for t in expr.terms))
    if isinstance(expr, Mul):
        return _delta_product(expr.factors, table)
    raise TypeError(f"no delta rule for {type(expr).__name__}")


def nested_delta_query(query: Query, table: str) -> Query:
    from .normalize import normalize
    return normalize(delta(query.to_expr(), table), group=query.group)


def binds_inputs(query: Query) -> bool:
    """Every monomial binds the group (input) variables through relation/batch/map atoms."""
    for m in query.monomials:
        bound = set()
        for a in m.atoms:
            if isinstance(a, RELATIONAL):
                bound |= set(a.vars)
        if not set(query.group) <= bound:
            return False
    return bool(query.monomials)


def _inputs(atom):
    return atom.inputs if isinstance(atom, Nested) else atom.query.group


def _with_query(atom, query: Query):
    if isinstance(atom, Groups):
        return Groups(query)
    return atom.with_query(query)


def _delta_nested(atom, table: str) -> Expr:
    from .normalize import simplify
    dq = nested_delta_query(atom.query, table)
    if dq.is_zero():
        return ZERO
    new = _with_query(atom, Query(atom.query.group,
                                  simplify(atom.query.monomials + dq.monomials, atom.query.group)))
    diff = Add((new, Mul((Const(-1), atom))))
    touched = Query(_inputs(atom), dq.monomials)        # the inputs whose value may change
    if touched.group and binds_inputs(touched):
        return Mul((domain_of(touched), diff))
    return diff


def domain_of(dq: Query) -> Domain:
    """A superset of the inputs dq touches, as cheap as possible: per monomial, the batch
    (or inner domain) atom that binds all inputs, instead of the whole delta query. Any
    superset is correct: outside dq's inputs the nested value does not change."""
    from .ir import Monomial
    group = set(dq.group)
    monos = []
    for m in dq.monomials:
        binder = next((a for a in m.atoms if isinstance(a, DeltaRel) and group <= set(a.vars)), None)
        if binder is not None:
            # private variables named by column, so equal batch atoms become one
            names = tuple(v if v in group else f"dom_{c}".lower()
                          for c, v in zip(binder.columns, binder.vars))
            monos.append(Monomial(1, (DeltaRel(binder.table, binder.columns, names),)))
            continue
        inner = next((a for a in m.atoms if isinstance(a, Domain) and group <= set(a.vars)), None)
        if inner is not None and tuple(inner.vars) == tuple(dq.group):
            monos.extend(inner.query.monomials)
            continue
        monos.append(m)
    unique = []
    for m in monos:
        if m not in unique:
            unique.append(m)
    return Domain(Query(dq.group, tuple(unique)))


@dataclass(frozen=True)
class _NestedGroup:
    """Several nested aggregates of one product that the batch changes: their joint delta
    D * (prod(new) - prod(old)) takes 2 terms where the product rule takes 2^(n+1) - 2."""
    atoms: tuple

    def delta(self, table: str) -> Expr:
        news, dqs = [], []
        for a in self.atoms:
            dq = nested_delta_query(a.query, table)
            dqs.append(dq)
            news.append(_with_query(a, Query(a.query.group, _simplify(a.query.monomials + dq.monomials,
                                                                       a.query.group))))
        diff = Add((Mul(tuple(news)), Mul((Const(-1),) + tuple(self.atoms))))
        group = _inputs(self.atoms[0])
        touched = [Query(_inputs(a), dq.monomials) for a, dq in zip(self.atoms, dqs)]
        if group and all(t.group == group and binds_inputs(t) for t in touched):
            union = Query(group, tuple(m for t in touched for m in t.monomials))
            return Mul((domain_of(union), diff))
        return diff


def _plain(f):
    return Mul(f.atoms) if isinstance(f, _NestedGroup) else f


def _simplify(monos, keep):
    from .normalize import simplify
    return simplify(monos, keep)


def _group_nested(factors, table):
    changed = [f for f in factors if isinstance(f, NESTED)
               and not nested_delta_query(f.query, table).is_zero()]
    if len(changed) < 2:
        return list(factors)
    rest = [f for f in factors if not any(f is c for c in changed)]
    return rest + [_NestedGroup(tuple(changed))]


def _delta_product(factors, table) -> Expr:
    """d(f1*...*fn) = sum over non-empty sets S of changed factors of prod(i in S ? dfi : fi).

    This is the binary rule dQ1*Q2 + Q1*dQ2 + dQ1*dQ2 applied n-ary; the terms with several
    delta factors are what self-joins need when one batch touches both occurrences.
    """
    factors = _group_nested(factors, table)
    deltas = [delta(f, table) for f in factors]
    changed = [i for i, d in enumerate(deltas) if d != ZERO]
    terms = []
    for choice in cartesian((False, True), repeat=len(changed)):
        if not any(choice):
            continue
        picked = {i for i, take in zip(changed, choice) if take}
        terms.append(Mul(tuple(deltas[i] if i in picked else _plain(f) for i, f in enumerate(factors))))
    if not terms:
        return ZERO
    return terms[0] if len(terms) == 1 else Add(tuple(terms))
