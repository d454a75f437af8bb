"""Canonical forms of map definitions, for duplicate-map elimination ([J] §5.1).

Two definitions are the same map when a renaming of variables turns one into the other with
keys going to keys. The canonical form names variables by first occurrence in a shape-sorted
atom list, so equal maps print equally; ties between same-shape atoms may hide a duplicate,
which costs a map but never correctness.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Dict, Mapping, Tuple

from .ir import (Cond, DeltaRel, Domain, Groups, Lift, MapRef, Monomial, Nested, Query, Rel,
                 Value)
from .normalize import rename_atom
from .printer import show, show_monomial


def _shape(atom) -> str:
    free = sorted(atom.free_vars())
    return show(rename_atom(atom, {v: "?" for v in free}), flags=False)


def canonicalize(query: Query, relations_first: bool = False) -> Tuple[str, Tuple[str, ...]]:
    """(canonical text, the query's key variables in canonical key order). `relations_first`
    names variables by the relation columns that bind them before values and conditions
    read them, so that two values over one relation (price * discount) cannot tie; programs
    compiled before it existed keep the first order (their maps follow from it)."""
    names: Dict[str, str] = {}

    def name(v):
        if v not in names:
            names[v] = f"x{len(names)}"
        return names[v]

    def order(atom):
        return (not isinstance(atom, Rel), _shape(atom)) if relations_first else _shape(atom)

    monos = sorted(query.monomials, key=lambda m: (len(m.atoms), [_shape(a) for a in m.atoms]))
    for m in monos:
        for atom in sorted(m.atoms, key=order):
            for v in _ordered_vars(atom):
                name(v)
    for v in query.group:
        name(v)
    keys = tuple(sorted(query.group, key=lambda v: int(names[v][1:])))
    renamed = [Monomial(m.coef, tuple(sorted((rename_atom(a, names) for a in m.atoms),
                                             key=lambda a: show(a, flags=False))))
               for m in monos]
    body = " + ".join(sorted(show_monomial(m, flags=False) for m in renamed))
    # Nested aggregates' flags tell maps apart without changing the text above, from which
    # existing views' map names follow (views are recompiled from their SQL when loaded).
    flagged = " + ".join(sorted(show_monomial(m) for m in renamed))
    marks = f" | {flagged}" if flagged != body else ""
    return f"[{', '.join(names[k] for k in keys)}] {body}{marks}", keys


def _ordered_vars(atom):
    if hasattr(atom, "vars") and isinstance(getattr(atom, "vars"), tuple):
        return atom.vars
    return sorted(atom.free_vars())


# -- the keyed form: what a map holds, independent of how a compile named its variables -----

def keyed_form(query: Query, tables: Mapping[str, str] = {}) -> Query:
    """`query` renamed so that equal maps give equal queries whoever compiled them: its
    group variables k0, k1, ... by position (a map's key columns), every other variable by
    first occurrence in an order that follows the query's structure (atoms ordered by their
    text with every variable blanked), nested queries' private variables too (scoped per
    nested query); relation names replaced by `tables` (relation -> table identity). A map's
    content fingerprint is taken over this form (compiler/stored.py)."""
    q = _canonical(query, {v: f"k{i}" for i, v in enumerate(query.group)}, "x")
    return _deep_query(q, lambda v: v, tables) if tables else q


def _canonical(query: Query, fixed: Dict[str, str], prefix: str) -> Query:
    names = dict(fixed)
    count = [0]

    def name(v):
        if v not in names:
            names[v] = f"{prefix}{count[0]}"
            count[0] += 1

    monos = sorted(query.monomials, key=lambda m: (len(m.atoms), sorted(map(_blank, m.atoms))))
    for m in monos:
        for atom in sorted(m.atoms, key=_blank):
            for v in _structural_vars(atom):
                name(v)
    for v in query.group:
        name(v)
    out = []
    for m in monos:
        atoms = [_renamed(a, names, prefix) for a in m.atoms]
        out.append(Monomial(m.coef, tuple(sorted(atoms, key=show))))
    return Query(tuple(names[v] for v in query.group), tuple(sorted(out, key=show_monomial)))


def _renamed(atom, names: Dict[str, str], prefix: str):
    if isinstance(atom, (Nested, Domain, Groups)):
        inner = atom.query
        outer = {v: names[v] for v in inner.group if v in names}
        query = _canonical(inner, outer, prefix + "n")
        if isinstance(atom, Nested):
            return replace(atom, var=names[atom.var], query=query)
        return type(atom)(query)
    return rename_atom(atom, names)


def _structural_vars(atom) -> Tuple[str, ...]:
    """The variables an atom binds or reads, in the order of its structure."""
    if isinstance(atom, (Rel, DeltaRel, MapRef, Domain, Groups)):
        return tuple(atom.vars)
    if isinstance(atom, Nested):
        return (atom.var,) + tuple(atom.inputs)
    if isinstance(atom, Lift):
        return (atom.var,) + atom.expr.var_order()
    if isinstance(atom, (Value, Cond)):
        return (atom.expr if isinstance(atom, Value) else atom.pred).var_order()
    return ()


def _blank(atom) -> str:
    """The atom's text with every variable, at any depth, written `?`."""
    return show(_deep(atom, lambda v: "?", {}))


def _deep_query(query: Query, f: Callable[[str], str], tables: Mapping[str, str]) -> Query:
    return Query(tuple(map(f, query.group)),
                 tuple(Monomial(m.coef, tuple(_deep(a, f, tables) for a in m.atoms))
                       for m in query.monomials))


def _deep(atom, f: Callable[[str], str], tables: Mapping[str, str]):
    """`atom` with every variable at any depth renamed by `f` and relations by `tables`."""
    if isinstance(atom, (Rel, DeltaRel)):
        return type(atom)(tables.get(atom.table, atom.table), atom.columns, tuple(map(f, atom.vars)))
    if isinstance(atom, MapRef):
        return MapRef(atom.name, tuple(map(f, atom.vars)), atom.column)
    if isinstance(atom, Value):
        return Value(atom.expr.rename({v: f(v) for v in atom.expr.vars}))
    if isinstance(atom, Cond):
        return Cond(atom.pred.rename({v: f(v) for v in atom.pred.vars}))
    if isinstance(atom, Lift):
        return Lift(f(atom.var), atom.expr.rename({v: f(v) for v in atom.expr.vars}))
    if isinstance(atom, Nested):
        return replace(atom, var=f(atom.var), query=_deep_query(atom.query, f, tables))
    if isinstance(atom, (Domain, Groups)):
        return type(atom)(_deep_query(atom.query, f, tables))
    return atom
