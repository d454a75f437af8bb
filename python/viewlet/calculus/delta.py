"""Delta rules of the calculus (DBToaster journal §3.4), for a batch of changes to one table.

Delta(Q) is Q(D + dD) - Q(D). With batches the change of a relation is itself a relation
(DeltaRel) holding signed multiplicities, so the rule for a relation atom replaces it by the
batch atom instead of binding trigger variables to one tuple (Hot Dog §3.1).
"""
from __future__ import annotations

from itertools import product as cartesian

from .ir import Add, Const, Cond, DeltaRel, Expr, Lift, MapRef, Mul, Rel, Sum, Value, ZERO


def delta(expr: Expr, table: str) -> Expr:
    if isinstance(expr, Rel):
        return DeltaRel(expr.table, expr.columns, expr.vars) if expr.table == table else ZERO
    if isinstance(expr, (DeltaRel, MapRef, Const, Value, Cond, Lift)):
        return ZERO
    if isinstance(expr, Sum):
        return Sum(expr.group, delta(expr.body, table))
    if isinstance(expr, Add):
        return Add(tuple(delta(t, table) for t in expr.terms))
    if isinstance(expr, Mul):
        return _delta_product(expr.factors, table)
    raise TypeError(f"no delta rule for {type(expr).__name__}")


def _delta_product(factors, table) -> Expr:
    """d(f1*...*fn) = sum over non-empty sets S of changed factors of prod(i in S ? dfi : fi).

    This is the binary rule dQ1*Q2 + Q1*dQ2 + dQ1*dQ2 applied n-ary; the terms with several
    delta factors are what self-joins need when one batch touches both occurrences.
    """
    deltas = [delta(f, table) for f in factors]
    changed = [i for i, d in enumerate(deltas) if d != ZERO]
    terms = []
    for choice in cartesian((False, True), repeat=len(changed)):
        if not any(choice):
            continue
        picked = {i for i, take in zip(changed, choice) if take}
        terms.append(Mul(tuple(deltas[i] if i in picked else f for i, f in enumerate(factors))))
    if not terms:
        return ZERO
    return terms[0] if len(terms) == 1 else Add(tuple(terms))
