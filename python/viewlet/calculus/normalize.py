"""Polynomial normal form and simplification (DBToaster journal §5.3).

`expand` pushes sums through products (polynomial expansion, materialization rule 2) and
flattens nested Sum[...] terms whose private variables are renamed apart. `simplify` then
applies partial evaluation (constants folded, identities Q*1, Q*0, Q+0, cancellation of
equal terms with opposite signs) and unification (x = y on two variables becomes one
variable; x := y is inlined), to a fixed point.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import itertools
from dataclasses import replace
from fractions import Fraction
from typing import Dict, Iterable, List, Sequence, Tuple

from sqlglot import exp

from .ir import (EMPTY_VALUE, Add, Atom, Const, Cond, DeltaRel, Domain, Expr, Groups, Lift, MapRef,
                 Monomial, Mul, Nested, Query, Rel, Sum, Value, walk_atoms)
from .nulls import always_true, is_null, never_true
from .scalar import Scalar

_global_fresh = itertools.count()
_fresh: contextvars.ContextVar = contextvars.ContextVar("viewlet_fresh_names", default=None)


def fresh_var(prefix: str = "v") -> str:
    return f"{prefix}_{next(_fresh.get() or _global_fresh)}"


@contextlib.contextmanager
def fresh_names():
    """Number fresh variables from 0 within the block, so that compiling a definition twice
    (in any session or process) prints the same program."""
    token = _fresh.set(itertools.count())
    try:
        yield
    finally:
        _fresh.reset(token)


def rename_atom(atom: Atom, mapping: Dict[str, str]) -> Atom:
    if not mapping:
        return atom
    r = lambda v: mapping.get(v, v)  # noqa: E731
    if isinstance(atom, Rel):
        return Rel(atom.table, atom.columns, tuple(map(r, atom.vars)))
    if isinstance(atom, DeltaRel):
        return DeltaRel(atom.table, atom.columns, tuple(map(r, atom.vars)))
    if isinstance(atom, MapRef):
        return MapRef(atom.name, tuple(map(r, atom.vars)), atom.column)
    if isinstance(atom, Value):
        return Value(atom.expr.rename(mapping))
    if isinstance(atom, Cond):
        return Cond(atom.pred.rename(mapping))
    if isinstance(atom, Lift):
        return Lift(r(atom.var), atom.expr.rename(mapping))
    if isinstance(atom, Nested):
        return replace(atom, var=r(atom.var), query=rename_inputs(atom.query, mapping, atom.inputs))
    if isinstance(atom, Groups):
        return Groups(rename_inputs(atom.query, mapping))
    if isinstance(atom, Domain):
        return Domain(rename_inputs(atom.query, mapping))
    raise TypeError(type(atom).__name__)


def rename_inputs(query: Query, mapping: Dict[str, str], inputs=None) -> Query:
    """Rename a nested query's input variables (default: its group variables); its private
    variables, a multiset's value variable among them, are its own."""
    inputs = query.group if inputs is None else inputs
    inner = {k: v for k, v in mapping.items() if k in inputs}
    if not inner:
        return query
    group = tuple(dict.fromkeys(inner.get(g, g) for g in query.group))
    return Query(group, tuple(rename_monomial(m, inner) for m in query.monomials))


def rename_monomial(mono: Monomial, mapping: Dict[str, str]) -> Monomial:
    return Monomial(mono.coef, tuple(rename_atom(a, mapping) for a in mono.atoms))


def expand(expr: Expr) -> List[Monomial]:
    """Polynomial expansion of an expression into monomials (no simplification)."""
    if isinstance(expr, Const):
        return [Monomial(expr.value, ())] if expr.value != 0 else []
    if isinstance(expr, (Rel, DeltaRel, MapRef, Value, Cond, Lift, Nested, Domain, Groups)):
        return [Monomial(1, (expr,))]
    if isinstance(expr, Add):
        return [m for t in expr.terms for m in expand(t)]
    if isinstance(expr, Mul):
        result = [Monomial(1, ())]
        for factor in expr.factors:
            parts = expand(factor)
            result = [Monomial(a.coef * b.coef, a.atoms + b.atoms) for a in result for b in parts]
        return result
    if isinstance(expr, Sum):
        # Sum[g](Q) inside a product: rename Q's private variables apart, then flatten.
        out = []
        for m in expand(expr.body):
            private = m.free_vars() - set(expr.group)
            # in name order: the fresh numbers must not follow the set's hash order
            out.append(rename_monomial(m, {v: fresh_var(v.split("_")[0] or "v")
                                           for v in sorted(private)}))
        return out
    raise TypeError(type(expr).__name__)


def normalize(expr: Expr, group: Sequence[str] | None = None) -> Query:
    """Normal form of Sum[group](expr); a bare expression keeps all its free variables."""
    if isinstance(expr, Sum) and group is None:
        group, expr = expr.group, expr.body
    group = tuple(group if group is not None else sorted(expr.free_vars()))
    return Query(group, simplify(expand(expr), group))


def simplify(monomials: Iterable[Monomial], keep: Sequence[str] = ()) -> Tuple[Monomial, ...]:
    """Partial evaluation + unification per monomial, then combination of like terms."""
    combined: Dict[Tuple, Fraction] = {}
    order: List[Tuple] = []
    for m in monomials:
        m = simplify_monomial(m, frozenset(keep))
        if m is None:
            continue
        key = m.atoms
        if key not in combined:
            combined[key] = 0
            order.append(key)
        combined[key] += m.coef
    out = []
    for key in order:
        coef = combined[key]
        if coef != 0:
            coef = int(coef) if Fraction(coef).denominator == 1 else coef
            out.append(Monomial(coef, key))
    return tuple(out)


def simplify_monomial(mono: Monomial, keep: frozenset) -> Monomial | None:
    coef = mono.coef
    atoms = list(mono.atoms)
    changed = True
    while changed:
        changed = False
        propagated = _propagate_constants(atoms, keep)
        if propagated is not None:
            atoms = propagated
            changed = True
            continue
        for i, atom in enumerate(atoms):
            folded = _fold_constant(atom)
            if folded is not None:
                if folded == 0:
                    return None
                coef *= folded
                del atoms[i]
                changed = True
                break
            mapping = _unifier(atom, atoms, keep)
            if mapping:
                del atoms[i]
                atoms = [rename_atom(a, mapping) for a in atoms]
                changed = True
                break
    if coef == 0:
        return None
    atoms = _project_unused_columns(atoms, keep)
    return Monomial(coef, tuple(sorted(atoms, key=_atom_sort_key)))


def _project_unused_columns(atoms, keep: frozenset):
    """A relation column whose variable nothing else reads is summed away: R(a: x, b: y)
    with y used nowhere is the projection R(a: x) (so equal maps print equally). Batch
    atoms keep their columns: a domain (the keys a batch touches) must see every changed
    row, also rows whose multiplicities cancel on the projection."""
    uses: Dict[str, int] = {}
    for a in atoms:
        if isinstance(a, (Rel, DeltaRel)):
            for v in a.vars:
                uses[v] = uses.get(v, 0) + 1
        else:
            for v in a.free_vars():
                uses[v] = uses.get(v, 0) + 2
    out = []
    for a in atoms:
        if isinstance(a, Rel):
            cols = [(c, v) for c, v in zip(a.columns, a.vars) if v in keep or uses[v] > 1]
            if len(cols) != len(a.columns):
                a = type(a)(a.table, tuple(c for c, _ in cols), tuple(v for _, v in cols))
        out.append(a)
    return out


def _propagate_constants(atoms: List[Atom], keep: frozenset):
    """Partial evaluation of constant assignments: for `x := c` (c without variables, e.g. an
    outer join's NULL padding), c replaces x in the monomial's conditions, values and other
    assignments, a nested aggregate correlated by `=` on a NULL input has its value over no
    rows (no row matches NULL), and the assignment goes once nothing else reads x. None when
    nothing changes."""
    constants: Dict[str, Lift] = {}
    defined: Dict[str, int] = {}
    for a in atoms:
        if isinstance(a, Lift):
            defined[a.var] = defined.get(a.var, 0) + 1
            if not a.expr.vars:
                constants[a.var] = a
    constants = {v: a for v, a in constants.items() if defined[v] == 1}
    if not constants:
        return None
    values = {v: a.expr for v, a in constants.items()}
    out: List[Atom] = []
    changed = False
    for a in atoms:
        new = a
        if isinstance(a, Cond) and a.pred.vars & values.keys():
            new = Cond(a.pred.substitute(values))
        elif isinstance(a, Value) and a.expr.vars & values.keys():
            new = Value(a.expr.substitute(values))
        elif isinstance(a, Lift) and a.expr.vars & values.keys():
            new = Lift(a.var, a.expr.substitute(values))
        elif isinstance(a, Nested) and not a.null_safe and any(
                is_null(values[g].ast) for g in a.inputs if g in values) \
                and _binds_inputs(a.query, a.inputs):
            empty = EMPTY_VALUE[a.kind]
            new = Lift(a.var, Scalar(exp.Null() if empty is None else exp.Literal.number(empty)))
        changed = changed or new is not a
        out.append(new)
    used = frozenset().union(*(a.free_vars() - ({a.var} if isinstance(a, Lift) else set())
                               for a in out))
    kept = [a for a in out if not (isinstance(a, Lift) and a.var in constants
                                   and a.var not in keep and a.var not in used)]
    return kept if changed or len(kept) != len(out) else None


def _binds_inputs(query: Query, inputs) -> bool:
    """Every monomial binds the inputs through relation, batch or map atoms (so the lowering
    correlates them with SQL `=`)."""
    for m in query.monomials:
        bound = set()
        for a in m.atoms:
            if isinstance(a, (Rel, DeltaRel, MapRef, Domain, Groups)):
                bound |= set(a.vars)
        if not set(inputs) <= bound:
            return False
    return True


def _fold_constant(atom: Atom):
    """The numeric value of a constant atom, or None if it depends on variables. Conditions
    that can never be true (NULL compared) are 0, values that are surely NULL add nothing."""
    if isinstance(atom, Const):
        return atom.value
    if isinstance(atom, Cond):
        if never_true(atom.pred.ast):
            return 0
        if always_true(atom.pred.ast):
            return 1
    if isinstance(atom, Value) and is_null(atom.expr.ast):
        return 0
    if isinstance(atom, Value) and not atom.expr.vars:
        lit = atom.expr.ast
        if isinstance(lit, exp.Literal) and not lit.is_string:
            text = lit.this
            try:
                return int(text)
            except ValueError:
                return None  # keep decimals as Spark values, exact typing matters
        return None
    if isinstance(atom, Cond) and not atom.pred.vars:
        node = atom.pred.ast
        if isinstance(node, exp.Boolean):
            return 1 if node.this else 0
        if isinstance(node, exp.Null):
            return 0
    return None


def _unifier(atom: Atom, atoms: List[Atom], keep: frozenset) -> Dict[str, str] | None:
    """x = y between two variables (or x := y) lets one variable replace the other; so do
    two nested aggregates x := Q and y := Q of the same query (a subquery used twice)."""
    if isinstance(atom, Nested):
        twin = next((a for a in atoms if isinstance(a, Nested) and a is not atom
                     and a.var != atom.var and _same_nested(a, atom)), None)
        if twin is not None and atom.var not in keep:
            return {atom.var: twin.var}
        return None
    if isinstance(atom, Cond):
        node = atom.pred.ast
        if isinstance(node, exp.EQ) and isinstance(node.left, exp.Column) \
                and isinstance(node.right, exp.Column):
            a, b = node.left.name, node.right.name
            if a == b:
                return None
            # x := e with x = y stays a test: one name would make it `y <=> e`, and SQL `=`
            # never matches NULL (x := y itself is inlined first, then x = y may unify).
            if any(isinstance(o, (Lift, Nested)) and o.var in (a, b) for o in atoms):
                return None             # (a nested aggregate x := Q is such an assignment)
            # a GROUP BY group's key joins with <=> (NULL is a group): x = y stays a test
            if any(isinstance(o, Groups) and {a, b} & set(o.vars) for o in atoms):
                return None
            if b not in keep:
                return {b: a}
            if a not in keep:
                return {a: b}
        return None
    if isinstance(atom, Lift) and atom.expr.is_var():
        # x := y is x = y: one name for both.
        src = next(iter(atom.expr.vars))
        if atom.var not in keep:
            return {atom.var: src}
        if src not in keep:
            return {src: atom.var}
    return None


@functools.lru_cache(maxsize=4096)
def _canonical(query: Query):
    from .canonical import canonicalize
    return canonicalize(query)


def same_query(a: Query, b: Query) -> bool:
    """a and b are the same query up to the names of their private variables (their group
    variables, the inputs of a nested query, named alike)."""
    return a == b or (a.group == b.group and _canonical(a) == _canonical(b))


def same_multiset(a: Query, b: Query) -> bool:
    """Two multisets (queries whose last group variable is a value) are the same up to the
    names of their private variables, the value among them."""
    va, vb = a.group[-1], b.group[-1]
    if va != vb:
        if va in frozenset().union(*(x.free_vars() for x in walk_atoms(b))):
            return False                  # renaming would capture one of b's variables
        b = rename_inputs(b, {vb: va}, (vb,))
    return same_query(a, b)


def _same_nested(a: Nested, b: Nested) -> bool:
    """x := Q and y := Q' are the same nested aggregate: the same kind (MIN and MAX of one
    multiset differ), flags and query; a multiset's value variable is private to its query."""
    if (a.kind, a.null_safe, a.cached) != (b.kind, b.null_safe, b.cached):
        return False
    return same_query(a.query, b.query) if a.value_var is None else same_multiset(a.query, b.query)


_KIND_ORDER = {DeltaRel: 0, Domain: 1, Groups: 1, Rel: 2, MapRef: 3, Nested: 4, Lift: 5, Value: 6, Cond: 7,
               Const: 8}


def _atom_sort_key(atom: Atom):
    return (_KIND_ORDER[type(atom)], repr(atom))
