"""A FROM clause's joins as a calculus expression, outer joins included.

Inner and cross joins multiply their sides; their ON conditions are factors too. An outer
join is the inner join plus the preserved side's rows that no row of the other side matches,
padded with NULLs ([J] §9.1's nested-aggregate form of NOT EXISTS):

    L LEFT JOIN R ON p  =  L * R * [p]
                         + L * [pl] * (n := Sum[c](R * [pr])) * [n = 0] * (r := NULL, ...)
                         + L * [NOT COALESCE(pl, FALSE)] * (r := NULL, ...)

pl are the conjuncts of p over L alone, pr the others, c the variables of L that pr reads
(the correlation inputs of the nested count n). `r := CAST(NULL AS type)` binds each of R's
output variables to a NULL of its column's type; normalization substitutes it into the
conditions and values of the monomial, where most conditions on R's columns (`NULL = x`)
can never be true and the monomial vanishes (calculus/nulls.py). RIGHT is the mirror image
and FULL has both padding parts. The count n is maintained like a NOT EXISTS subquery:
decorrelated into maps of R, its changes restricted to the correlation values a batch
touches, so padding rows appear and vanish as matches come and go.

Joins are left-deep, as written: `a LEFT JOIN b ... JOIN c ...` pads b's columns before c is
joined. Variables of a side that an outer join may pad are never unified with other
variables across the query (their equalities stay conditions, unified per monomial where the
side is present), so a padded NULL never meets a relation's column through a shared name.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from sqlglot import exp

from ..calculus.ir import Add, Cond, Lift, Mul, Nested
from ..calculus.normalize import normalize
from ..calculus.scalar import Scalar, conjuncts

OUTER = ("left", "right", "full")

# A column reference naming a calculus variable directly (USING columns), for column_var.
VAR_QUALIFIER = "__viewlet_var__"


def var_column(var: str) -> exp.Column:
    return exp.column(var, table=VAR_QUALIFIER, quoted=True)


@dataclass
class Join:
    kind: str                                   # inner | left | right | full
    source: object                              # the instance joined on the right
    node: exp.Expression                        # the JOIN clause (for messages)
    on: Optional[exp.Expression] = None
    merged: List[Tuple[str, exp.Expression]] = field(default_factory=list)   # FULL USING
    using: List[Tuple[str, str]] = field(default_factory=list)  # USING column -> its variable
    conds: List[exp.Expression] = field(default_factory=list)   # ON after unification


def join_kind(join: exp.Join) -> Optional[str]:
    """inner / left / right / full, or None for kinds that are not supported."""
    side = (join.args.get("side") or "").upper()
    kind = (join.args.get("kind") or "").upper()
    if kind in ("SEMI", "ANTI", "NATURAL") or (join.args.get("method") or "").upper() == "NATURAL":
        return None
    if side in ("LEFT", "RIGHT", "FULL"):
        return side.lower()
    if kind in ("", "INNER", "CROSS", "OUTER"):
        return "inner" if kind != "OUTER" else None
    return None


def padded_sources(joins: List[Join], first) -> List:
    """The sources whose columns some outer join pads with NULLs."""
    out = []
    seen = [first]
    for j in joins:
        if j.kind in ("left", "full"):
            out.append(j.source)
        if j.kind in ("right", "full"):
            out += seen
        seen.append(j.source)
    return out


def from_atoms(tr, join_atoms) -> List:
    """The FROM clause as factors of the query: a plain product of the sources' atoms and
    the ON conditions, or, with outer joins, a single sum of products. `join_atoms[i]` are
    the atoms of the i-th join's ON conditions."""
    first = tr.instances[0]
    acc: List = tr.source_atoms(first)
    acc_vars = set(tr.instance_vars(first))
    for j, cond_atoms in zip(tr.joins, join_atoms):
        right = tr.source_atoms(j.source)
        right_vars = set(tr.instance_vars(j.source))
        inner = acc + right + cond_atoms
        if j.kind == "inner":
            acc = inner
        else:
            terms = [_product(inner)]
            if j.kind in ("left", "full"):
                terms += _padding(tr, acc, acc_vars, right, right_vars, j)
            if j.kind in ("right", "full"):
                terms += _padding(tr, right, right_vars, acc, acc_vars, j)
            acc = [Add(tuple(terms))]
        acc_vars |= right_vars
        for var, value in j.merged:
            acc = acc + [Lift(var, tr.to_scalar(value))]
            acc_vars.add(var)
    return acc


def _padding(tr, kept: List, kept_vars: set, other: List, other_vars: set, j: Join) -> List:
    """The rows of `kept` that no row of `other` matches, with other's columns NULL."""
    pads = [Lift(v, tr.null_of(v)) for v in sorted(other_vars)]
    only_kept, rest = [], []
    for c in j.conds:
        cols = {tr.column_var(col) for col in c.find_all(exp.Column)
                if not isinstance(col.this, exp.Star)}
        (only_kept if cols <= kept_vars else rest).append(c)
    other_free = set().union(*(a.free_vars() for a in other)) | other_vars
    rest_atoms = [Cond(tr.to_scalar(c)) for c in rest]
    inputs = tuple(sorted(set().union(*(a.free_vars() for a in rest_atoms)) - other_free))
    body = other + rest_atoms
    count = tr.fresh("oj")
    nested = Nested(count, normalize(_product(body), group=inputs))
    unmatched = [nested, Cond(Scalar(exp.EQ(this=exp.column(count, quoted=True),
                                            expression=exp.Literal.number(0))))]
    if not only_kept:
        return [_product(kept + unmatched + pads)]
    test = exp.and_(*[c.copy() for c in only_kept]) if len(only_kept) > 1 else only_kept[0].copy()
    holds = Cond(tr.to_scalar(test))
    fails = Cond(tr.to_scalar(exp.Not(this=exp.Coalesce(this=exp.Paren(this=test),
                                                        expressions=[exp.false()]))))
    return [_product(kept + [holds] + unmatched + pads), _product(kept + [fails] + pads)]


def _product(atoms):
    return atoms[0] if len(atoms) == 1 else Mul(tuple(atoms))


def bound_vars(atom) -> set:
    """Variables an atom (or a sum/product of atoms) binds itself: relation, batch and map
    columns, assignments, nested aggregates."""
    if isinstance(atom, (Add, Mul)):
        parts = atom.terms if isinstance(atom, Add) else atom.factors
        return set().union(*(bound_vars(p) for p in parts))
    out = set()
    if isinstance(getattr(atom, "vars", None), tuple):
        out |= set(atom.vars)
    if isinstance(atom, (Nested, Lift)):
        out.add(atom.var)
    return out


def split_conjuncts(node: exp.Expression) -> List[exp.Expression]:
    return list(conjuncts(node))
