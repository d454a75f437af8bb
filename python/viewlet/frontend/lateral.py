"""LATERAL subqueries in FROM: `FROM r, LATERAL (SELECT ... WHERE s.k = r.k) x`,
`[INNER | CROSS | LEFT [OUTER]] JOIN LATERAL (...) x [ON ...]`.

A lateral subquery may read the columns of the FROM items before it (its *correlation*);
it is translated like any subquery in FROM, in the scope of the enclosing query:

  without aggregates  inlined: its tables join the enclosing query's, its correlated
                      conditions are join conditions (an equality unifies the columns)
  GROUP BY            a Groups atom keyed by its group keys and the correlation values, and
                      per group nested aggregates with the same inputs (as an aggregating
                      FROM subquery, whose groups now exist per correlation value); a
                      correlation value that SQL's `=` joined cannot be NULL
  global aggregate    one row per row of the enclosing query: the aggregates are nested
                      aggregates of the correlation values, as a correlated scalar subquery's
                      (COUNT 0 and SUM NULL over no rows)

A LEFT JOIN LATERAL pads an enclosing row whose lateral subquery has no (matching) row; its
count of matches is correlated on the lateral subquery's correlation values too.
"""
from __future__ import annotations

from typing import List, Set

from sqlglot import exp

from ..calculus.scalar import Scalar


def lateral_subquery(node: exp.Lateral, fail) -> exp.Subquery:
    """The Subquery a LATERAL (SELECT ...) alias stands for; LATERAL VIEW and other forms
    are refused."""
    inner = node.this
    if node.args.get("view") or not (isinstance(inner, exp.Subquery)
                                     and isinstance(inner.this, exp.Select)):
        fail("LATERAL VIEW" if node.args.get("view") else "LATERAL over something else than a "
             "subquery", node, "Supported: LATERAL (SELECT ...) AS alias in FROM or JOIN.")
    if inner.this.args.get("distinct") is not None:
        fail("SELECT DISTINCT in a LATERAL subquery", inner.this.args["distinct"],
             "Write GROUP BY over the selected columns instead.")
    alias = node.args.get("alias") or inner.args.get("alias")
    if alias is None or not alias.name:
        fail("a LATERAL subquery without an alias", node)
    return exp.Subquery(this=inner.this.copy(), alias=alias.copy())


def is_lateral(node: exp.Expression) -> bool:
    return isinstance(node, exp.Lateral) and not node.args.get("view")


def correlation(tr, atoms: List) -> List[str]:
    """The variables of the enclosing query's FROM items (and its outer scopes') that the
    lateral subquery's atoms read."""
    free: Set[str] = set()
    for a in atoms:
        free |= set(a.free_vars())
    outer: Set[str] = set()
    scope = tr
    while scope is not None:
        for inst in scope.instances:
            outer |= {scope.find(v) for v in inst.vars.values()}
        scope = scope.outer
    return sorted(v for v in free if tr.find(v) in outer)


def check_grouped(tr, atoms: List, corr: List[str], node) -> None:
    """A grouped LATERAL subquery's groups exist per correlation value: each must be bound
    by an equality (a relation of the subquery holds it), not only compared."""
    loose = [v for v in corr if v not in _relation_vars(atoms)]
    if loose:
        rel, col = tr.var_columns.get(loose[0], ("", loose[0]))
        tr.fail(f"a grouped subquery in FROM correlated on column {col} by a comparison "
                f"other than =", node,
                "Correlate a grouped subquery in FROM with equalities, or aggregate it without "
                "GROUP BY.")


def _relation_vars(atoms: List) -> Set[str]:
    from ..calculus.ir import Add, Mul, Rel
    out: Set[str] = set()
    for a in atoms:
        if isinstance(a, Rel):
            out |= set(a.vars)
        elif isinstance(a, (Add, Mul)):
            out |= _relation_vars(list(a.terms if isinstance(a, Add) else a.factors))
    return out


def not_null_guards(atoms: List, corr: List[str]):
    """`v IS NOT NULL` for each correlation variable a relation of the subquery binds (an
    equality that unified it): groups match NULL keys, SQL's `=` does not."""
    from ..calculus.ir import Cond
    bound = _relation_vars(atoms)
    return [Cond(Scalar(exp.Not(this=exp.Is(this=exp.column(v, quoted=True),
                                            expression=exp.Null()))))
            for v in corr if v in bound]


__all__ = ["lateral_subquery", "is_lateral", "correlation", "check_grouped", "not_null_guards"]
