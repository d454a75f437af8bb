"""Canonical forms of map definitions, for duplicate-map elimination ([J] §5.1).

Two definitions are the same map when a renaming of variables turns one into the other with
keys going to keys. The canonical form names variables by first occurrence in a shape-sorted
atom list, so equal maps print equally; ties between same-shape atoms may hide a duplicate,
which costs a map but never correctness.
"""
from __future__ import annotations

from typing import Dict, Tuple

from .ir import Monomial, Query, Rel
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
