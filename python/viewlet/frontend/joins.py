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
from ..calculus.scalar import Scalar
from .sources import safe_name

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


def record_join(tr, join: exp.Join):
    """Record a join of tr's FROM clause (left-deep, in order), with its USING columns
    resolved as Spark does: the left column, the right one after a RIGHT join, COALESCE of
    both after a FULL join (a fresh variable assigned after the join)."""
    side, kind = (join.args.get("side") or "").upper(), (join.args.get("kind") or "").upper()
    natural = (join.args.get("method") or "").upper() == "NATURAL"
    if natural:
        if join.args.get("on") is not None or join.args.get("using"):
            tr.fail("NATURAL JOIN with ON or USING", join, "Write either NATURAL or the condition.")
        join = join.copy()
        join.set("method", None)
    how = join_kind(join)
    if how is None:
        tr.fail(f"{(side + ' ' + kind).strip()} JOIN", join,
                "Supported: inner, CROSS, LEFT / RIGHT / FULL [OUTER] joins; write a semi "
                "or anti join as EXISTS / NOT EXISTS.")
    if isinstance(join.this, exp.Subquery) and isinstance(join.this.this, exp.Table):
        tr.fail("a parenthesized join", join.this,
                "Write the inner join as a subquery: (SELECT ... FROM a JOIN b ...) AS x.")
    left_names = [c.name for c in from_columns(tr)[0]] if natural else []
    if how in ("right", "full") and isinstance(join.this, exp.Lateral):
        tr.fail(f"{how.upper()} JOIN LATERAL", join,
                "As in Spark: a LATERAL subquery joins with an inner, CROSS or LEFT join.")
    tr.add_source(join.this)
    record = Join(how, tr.instances[-1], join, join.args.get("on"))
    using = []
    idents = join.args.get("using") or []
    if natural:
        # NATURAL is USING over the columns both sides have, in the left side's order (as
        # Spark resolves it); none in common: a join without condition
        idents = [exp.to_identifier(n) for n in dict.fromkeys(left_names)
                  if tr.instances[-1].table.column(n) is not None]
    for ident in idents:
        name = ident.name.lower()
        right = tr.instances[-1]
        if right.table.column(ident.name) is None:
            tr.fail(f"USING ({ident.name}): no such column in '{right.alias}'", join)
        if name in tr.using:
            left_var = tr.using[name]
        else:
            left = [i for i in tr.instances[:-1] if i.table.column(ident.name) is not None]
            if len(left) != 1:
                tr.fail(f"USING ({ident.name}) with {len(left)} matching tables on the left",
                        join)
            left_var = tr.column_var(exp.column(ident.name, table=left[0].alias))
        right_var = tr.column_var(exp.column(ident.name, table=right.alias))
        using.append(exp.EQ(this=var_column(left_var), expression=var_column(right_var)))
        if how == "full":
            merged = tr.fresh(f"{safe_name(ident.name)}".lower() or "u")
            tr.parent[merged] = merged
            tr.nullable[merged] = True
            tr.assigned.add(merged)
            record.merged.append((merged, exp.Coalesce(this=var_column(left_var),
                                                       expressions=[var_column(right_var)])))
            tr.using[name] = merged
        else:
            tr.using[name] = right_var if how == "right" else left_var
        record.using.append((ident.name, tr.using[name]))
    if using:
        record.on = exp.and_(*using) if len(using) > 1 else using[0]
    tr.joins.append(record)


@dataclass(frozen=True)
class StarColumn:
    """A column a `*` or `t.*` over the FROM clause can list: its name, the FROM item it
    belongs to (None for a FULL JOIN's merged USING column) and its value."""
    name: str
    qualifier: Optional[str]
    expr: exp.Expression


def from_columns(tr) -> Tuple[List[StarColumn], List[StarColumn]]:
    """The FROM clause's columns as Spark's analyzer keeps them: (output, hidden). A join
    with USING (or NATURAL) lists its USING columns first (the left side's, the right
    side's after a RIGHT join, their COALESCE after a FULL join), then the other columns of
    its left and of its right side; the USING columns it does not list are hidden, reachable
    only by a qualified name, newest join first. `*` is the output; `t.*` is t's columns of
    hidden + output, in that order (Spark's `UnresolvedStar.expand`), so `R.*` over
    `R NATURAL JOIN S` starts with the join columns too."""
    def columns(inst):
        return [StarColumn(c.name, inst.alias, exp.column(c.name, table=inst.alias, quoted=True))
                for c in inst.table.columns]
    output = columns(tr.instances[0])
    hidden: List[StarColumn] = []
    for j in tr.joins:
        right = columns(j.source)
        if not j.using:
            output = output + right
            continue
        names = [n.lower() for n, _ in j.using]
        left_keys = [next(c for c in output if c.name.lower() == n) for n in names]
        right_keys = [next(c for c in right if c.name.lower() == n) for n in names]
        if j.kind == "full":
            keys = [StarColumn(n, None, exp.alias_(var_column(v), n, quoted=True))
                    for n, v in j.using]
            unlisted = left_keys + right_keys
        elif j.kind == "right":
            keys, unlisted = right_keys, left_keys
        else:
            keys, unlisted = left_keys, right_keys
        output = keys + [c for c in output if c not in left_keys] + \
            [c for c in right if c not in right_keys]
        hidden = unlisted + hidden
    return output, hidden


def star_columns(tr, qualifier: Optional[str] = None) -> List[exp.Expression]:
    """What `*` (qualifier None) or `qualifier.*` lists over tr's FROM clause, as Spark."""
    output, hidden = from_columns(tr)
    if qualifier is None:
        return [c.expr for c in output]
    q = qualifier.lower()
    return [c.expr for c in hidden + output if c.qualifier is not None and c.qualifier.lower() == q]


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
    # a LATERAL subquery's matches are counted per value of the columns it reads too
    # (only LEFT joins a LATERAL subquery: it is the padded side `other`)
    lateral = set(getattr(j.source, "lateral_inputs", None) or ())
    inputs = tuple(sorted((set().union(*(a.free_vars() for a in rest_atoms)) - other_free)
                          | lateral))
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
