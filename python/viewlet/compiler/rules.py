"""The materialization heuristics of [J] Fig. 1 that the compiler passes (compiler/passes.py)
apply: query decomposition into connected components with input-variable extraction
(`decompose`, rules 1 and 3) and the join a map definition counts (`join_skeleton`, for map
fusion). Pure functions over the calculus IR.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ..calculus.ir import (Cond, DeltaRel, Domain, Groups, Lift, MapRef, Monomial, Mul, Nested, Query,
                           Rel, Value, walk_atoms)


def join_skeleton(definition: Query) -> Optional[Tuple[Query, bool]]:
    """The join a one-monomial map definition counts, and whether the definition is that
    count: the definition without its value part (coefficient; values, NOT NULL tests and
    assignments over value-only variables: columns one relation atom binds, and assigned
    variables, that are not keys and that nothing else reads). Filters stay in the skeleton,
    so maps over differently filtered rows stay apart. Definitions with the same skeleton
    have the same keys and their rows among the skeleton's, and are kept as columns of one
    map; the count, if one is, is the column whose zero means a row is gone. None for
    definitions of several monomials."""
    if len(definition.monomials) != 1:
        return None
    mono = definition.monomials[0]
    bound: Dict[str, int] = {}
    for a in mono.atoms:
        for v in (a.vars if isinstance(a, Rel) else (a.var,) if isinstance(a, Lift) else ()):
            bound[v] = bound.get(v, 0) + 1
    scalar = [a for a in mono.atoms if isinstance(a, (Value, Lift))
              or isinstance(a, Cond) and a.pred.tests_not_null()]
    only_values = {v for v, n in bound.items() if n == 1} - set(definition.group)
    only_values -= frozenset().union(*(a.free_vars() for a in mono.atoms
                                       if not isinstance(a, Rel) and a not in scalar))
    changed = True
    while changed:          # the largest set whose readers are all value atoms
        changed = False
        for a in scalar:
            fv = a.free_vars()
            if fv & only_values and not fv <= only_values:
                only_values -= fv
                changed = True
    value_part = [a for a in scalar if a.free_vars() <= only_values]
    kept = [a for a in mono.atoms if not isinstance(a, Rel) and a not in value_part]
    rels = []
    for a in mono.atoms:
        if isinstance(a, Rel):
            cols = [(c, v) for c, v in zip(a.columns, a.vars) if v not in only_values]
            rels.append(Rel(a.table, tuple(c for c, _ in cols), tuple(v for _, v in cols)))
    counts = not any(isinstance(a, (Value, Cond)) for a in value_part)   # an assignment is 1
    return Query(definition.group, (Monomial(1, tuple(rels + kept)),)), counts


def decompose(mono: Monomial, trigger_vars: frozenset):
    """Split the non-batch part of a monomial into connected components ([J] rule 1).

    Relation atoms are linked by shared variables other than trigger variables; a condition,
    value or assignment without trigger variables links every component it touches and is
    pushed into it. Atoms that mention trigger variables stay outside (rule 3).
    """
    rels = [a for a in mono.atoms if isinstance(a, Rel)]
    parent = list(range(len(rels)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(i, j):
        parent[find(i)] = find(j)

    owners: Dict[str, List[int]] = {}
    for i, r in enumerate(rels):
        for v in sorted(r.free_vars() - trigger_vars):     # sorted: union order decides roots
            owners.setdefault(v, []).append(i)
    for idxs in owners.values():
        for j in idxs[1:]:
            union(idxs[0], j)

    others = [a for a in mono.atoms if isinstance(a, (Cond, Value, Lift))]
    placed: Dict[int, List] = {}
    outside = [a for a in mono.atoms if isinstance(a, (DeltaRel, MapRef, Nested, Domain, Groups))]
    pending = list(others)
    # Assignments define variables that later atoms may use: iterate to a fixed point.
    progress = True
    while pending and progress:
        progress = False
        unplaced = {a.var for a in pending if isinstance(a, Lift)}
        for atom in list(pending):
            fv = atom.free_vars()
            if (fv - {getattr(atom, "var", None)}) & unplaced and not fv & trigger_vars:
                continue                 # wait until the assignments it reads are placed
            if fv & trigger_vars or not fv:
                outside.append(atom)
                pending.remove(atom)
                if isinstance(atom, Lift):      # bound outside: what reads it stays outside
                    trigger_vars = trigger_vars | {atom.var}
                progress = True
                continue
            touched = {find(i) for v in fv for i in owners.get(v, [])}
            if not touched:
                continue
            roots = sorted(touched)
            for r in roots[1:]:
                union(roots[0], r)
            root = find(roots[0])
            placed.setdefault(root, []).append(atom)
            if isinstance(atom, Lift):
                owners.setdefault(atom.var, []).append(root)
            pending.remove(atom)
            progress = True
    outside.extend(pending)  # atoms over variables no relation binds (e.g. outside lifts)

    groups: Dict[int, List] = {}
    for i, r in enumerate(rels):
        groups.setdefault(find(i), []).append(r)
    for root, atoms in placed.items():
        groups.setdefault(find(root), []).extend(atoms)
    components = [atoms for _, atoms in sorted(groups.items())]
    return components, outside


def reads_batch(mono: Monomial) -> bool:
    """The monomial reads the batch (a delta relation or a touched domain), at any depth."""
    return any(isinstance(a, (DeltaRel, Domain)) for a in walk_atoms(Query((), (mono,))))


def product(atoms):
    """The product of a component's atoms (the atom itself for one)."""
    return atoms[0] if len(atoms) == 1 else Mul(tuple(atoms))


def safe_name(text: str) -> str:
    """text with every non-alphanumeric character as `_` (for map names)."""
    return "".join(c if c.isalnum() else "_" for c in text) or "q"


def cut_shared_joins(component: List, keys: frozenset,
                     linking: frozenset) -> List[Tuple[List, Tuple[str, ...]]]:
    """A component split at many-to-many joins: its atoms as parts, each with its map's keys
    (sorted): its share of `keys` (the variables the component shares with the statement) and
    of the cut variables, which the statement then joins on; one part when nothing is cut.
    `linking`: the variables that do not link relations (the trigger variables).

    A cut variable separates the keys: without it, two or more parts hold keys. And it is a
    variable three or more of the relations join on, or one of the keys already. Why: a
    variable several relations join on is typically a dimension key that two foreign keys
    share (TPC-H Q5's `c_nationkey = s_nationkey = n_nationkey`), a many-to-many join. A map
    keyed on both sides of it holds their product per value (Q5's delta of orders would key
    customer ⋈ supplier ⋈ lineitem by customer and order: every lineitem times the customers
    of its supplier's nation), while the parts keyed by the variable are each at most their
    relations' size; the statement's join of them reads as many rows as the product map's
    slice would have held. A key variable's parts multiply to the map per key value, so cutting
    there only factorizes it. Two relations joined on one variable that is not a key (a
    foreign key to a primary key, mostly) stay joined: the compiler has no statistics to tell
    a many-to-many join of two relations apart."""
    todo = [(list(component), keys)]
    done: List[Tuple[List, Tuple[str, ...]]] = []
    while todo:
        part, part_keys = todo.pop()
        cut = _cut_once(part, part_keys, linking)
        if cut is None:
            done.append((part, tuple(sorted(_atoms_vars(part) & part_keys))))
        else:
            v, pieces = cut       # every piece reads v: the part was connected through it
            todo.extend((p, part_keys | {v}) for p in reversed(pieces))
    return done


def _atoms_vars(atoms) -> frozenset:
    return frozenset().union(*(a.free_vars() for a in atoms))


def _cut_once(part: List, keys: frozenset,
              linking: frozenset) -> Optional[Tuple[str, List[List]]]:
    """The first variable (keys first, then by how many relations join on it, then by name)
    to cut `part` at, and its pieces; None if none qualifies."""
    readers: Dict[str, int] = {}
    for r in part:
        if isinstance(r, Rel):
            for v in r.free_vars() - linking:
                readers[v] = readers.get(v, 0) + 1
    cuts = [v for v, n in readers.items() if n >= 3 or n == 2 and v in keys]
    for v in sorted(cuts, key=lambda v: (v not in keys, -readers[v], v)):
        pieces, outside = decompose(Monomial(1, tuple(part)), linking | {v})
        keyed = [p for p in pieces if (_atoms_vars(p) & keys) - {v}]
        if not outside and len(keyed) > 1:
            return v, pieces
    return None
