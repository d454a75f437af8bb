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

from dataclasses import dataclass, replace
from itertools import product as cartesian

from sqlglot import exp

from .ir import (Add, Const, Cond, DeltaRel, Domain, Expr, Groups, Lift, MapRef, Mul, Nested, Query,
                 Rel, Sum, Value, ZERO)
from .scalar import Scalar

RELATIONAL = (Rel, DeltaRel, MapRef, Domain, Groups)
NESTED = (Nested, Groups)


def delta(expr: Expr, table: str, keep: frozenset = frozenset()) -> Expr:
    """`keep`: the variables an enclosing Sum groups by (a term may not rename them)."""
    if isinstance(expr, _NestedGroup):
        return expr.delta(table)
    if isinstance(expr, Rel):
        return DeltaRel(expr.table, expr.columns, expr.vars) if expr.table == table else ZERO
    if isinstance(expr, NESTED):
        return _delta_nested(expr, table)
    if isinstance(expr, (DeltaRel, MapRef, Const, Value, Cond, Lift, Domain)):
        return ZERO
    if isinstance(expr, Sum):
        return Sum(expr.group, delta(expr.body, table, keep | frozenset(expr.group)))
    if isinstance(expr, Add):
        return Add(tuple(delta(t, table, keep) for t in expr.terms))
    if isinstance(expr, Mul):
        return _delta_product(expr.factors, table, keep)
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
    dq = nested_delta_query(atom.query, table)
    if dq.is_zero():
        return ZERO
    new = _new_value(atom, dq)
    diff = Add((new, Mul((Const(-1), atom))))
    domain = _touched_domain((atom,), (dq,))            # the inputs whose value may change
    return diff if domain is None else Mul((domain, diff))


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
        dqs = [nested_delta_query(a.query, table) for a in self.atoms]
        news = [_new_value(a, dq) for a, dq in zip(self.atoms, dqs)]
        diff = Add((Mul(tuple(news)), Mul((Const(-1),) + tuple(self.atoms))))
        domain = _touched_domain(self.atoms, dqs)
        return diff if domain is None else Mul((domain, diff))


def _flipped(factors, picked, table: str, keep: frozenset):
    """The term of the product rule for a change of nested aggregates alone, when what
    reads their values is conditions only: rest * (news * C(new) - olds * C(old)) as

        rest * news * olds * (C(new) <> C(old)) * (C(new) - C(old))

    with C the conditions' conjunction as 1 or 0 (NULL is not true) and the new values under
    fresh names. One evaluation of the enclosing part instead of two, and its filter leaves
    only the rows whose comparison flips for the rest of it: a comparison with a total the
    batch moves a little (TPC-H Q22a's balance against the sum of positive balances) tests
    every row once and joins few. None when the rule does not apply (a value or assignment
    reads the nested value, or the enclosing query outputs it)."""
    (k,) = picked
    factor = factors[k]
    atoms = factor.atoms if isinstance(factor, _NestedGroup) else (factor,)
    if not all(isinstance(a, Nested) for a in atoms):
        return None
    values = frozenset(a.var for a in atoms)
    if values & keep:
        return None
    rest = [f for i, f in enumerate(factors) if i != k]
    readers = [f for f in rest if f.free_vars() & values]
    if not readers or not all(isinstance(f, Cond) for f in readers):
        return None
    from .normalize import fresh_var
    renames = {a.var: fresh_var(a.var.split("_")[0] or "v")
               for a in sorted(atoms, key=lambda a: a.var)}
    dqs = [nested_delta_query(a.query, table) for a in atoms]
    news = [replace(_new_value(a, dq), var=renames[a.var]) for a, dq in zip(atoms, dqs)]
    new_holds = _indicator(_all_true([f.pred.rename(renames) for f in readers]))
    old_holds = _indicator(_all_true([f.pred for f in readers]))
    flip = exp.Sub(this=new_holds.copy(), expression=old_holds.copy())
    differ = exp.NEQ(this=new_holds, expression=old_holds)
    kept = [f for f in rest if not any(f is r for r in readers)]
    domain = _touched_domain(atoms, dqs)
    return Mul(tuple(kept) + ((domain,) if domain is not None else ()) + tuple(news)
               + tuple(atoms) + (Cond(Scalar(differ)), Value(Scalar(flip))))


def _all_true(preds) -> exp.Expression:
    nodes = [exp.Paren(this=p.ast) for p in preds]
    out = nodes[0]
    for n in nodes[1:]:
        out = exp.And(this=out, expression=n)
    return out


def _indicator(pred: exp.Expression) -> exp.Expression:
    """1 when pred is true, else 0 (false or NULL), as a Cond counts it."""
    return exp.Paren(this=exp.Case(ifs=[exp.If(this=pred, true=exp.Literal.number(1))],
                                   default=exp.Literal.number(0)))


def _new_value(atom, dq: Query):
    """The nested aggregate after the batch: its query plus its delta query."""
    return _with_query(atom, Query(atom.query.group, _simplify(atom.query.monomials + dq.monomials,
                                                                atom.query.group)))


def _touched_domain(atoms, dqs):
    """Domain(the inputs the batch touches) for nested aggregates of one input list whose
    deltas all bind it; None when there is none (uncorrelated, or inputs not bound)."""
    group = _inputs(atoms[0])
    touched = [Query(_inputs(a), dq.monomials) for a, dq in zip(atoms, dqs)]
    if group and all(t.group == group and binds_inputs(t) for t in touched):
        return domain_of(Query(group, tuple(m for t in touched for m in t.monomials)))
    return None


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


def _delta_product(factors, table, keep: frozenset = frozenset()) -> Expr:
    """d(f1*...*fn) = sum over non-empty sets S of changed factors of prod(i in S ? dfi : fi).

    This is the binary rule dQ1*Q2 + Q1*dQ2 + dQ1*dQ2 applied n-ary; the terms with several
    delta factors are what self-joins need when one batch touches both occurrences. A term
    that changes only nested aggregates which conditions compare with is one term over the
    rows whose comparison flips (`_flipped`).
    """
    factors = _group_nested(factors, table)
    deltas = [delta(f, table, keep) for f in factors]
    changed = [i for i, d in enumerate(deltas) if d != ZERO]
    terms = []
    for choice in cartesian((False, True), repeat=len(changed)):
        if not any(choice):
            continue
        picked = {i for i, take in zip(changed, choice) if take}
        flipped = _flipped(factors, picked, table, keep) if len(picked) == 1 else None
        if flipped is not None:
            terms.append(flipped)
            continue
        terms.append(Mul(tuple(deltas[i] if i in picked else _plain(f) for i, f in enumerate(factors))))
    if not terms:
        return ZERO
    return terms[0] if len(terms) == 1 else Add(tuple(terms))
