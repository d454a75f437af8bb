"""Higher-order IVM: the viewlet transform with materialization decisions ([J] Alg. 2).

For every map and every relation it reads, the delta query becomes a trigger statement; the
parts of the delta that still read base relations are materialized as new maps (which get
triggers of their own) until the recursion reaches the depth limit:
  depth 0     no maintenance: every batch re-evaluates the view (statements use `:=`)
  depth 1     classical first-order IVM: deltas join the batch with the base tables
  depth n     deltas up to order n are materialized; deeper ones read base tables
  unlimited   full higher-order IVM (the default)
Materialization decisions apply the heuristic rules of [J] Fig. 1: query decomposition into
connected components, polynomial expansion, input-variable extraction (conditions on trigger
variables stay in the statement, their component variables become map keys) with predicate
and aggregation pushdown into the maps, and duplicate-map elimination.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from ..calculus.delta import delta
from ..calculus.ir import (Cond, DeltaRel, Domain, Groups, Lift, MapRef, Monomial, Nested, Query, Rel,
                           Value, walk_atoms)
from ..calculus.normalize import normalize, simplify
from .caches import with_view_caches
from ..calculus.canonical import canonicalize
from .program import VALUE, MapDef, Program, Statement


class Compiler:
    def __init__(self, depth: Optional[int], view_map: str = "view_state", caches: bool = False,
                 fuse: bool = True):
        self.depth = depth
        self.caches = caches
        self.fuse = fuse
        self.program = Program(view_map=view_map, depth=depth)
        # canonical text -> (map, column, for each map key the index of the definition's
        # key in canonical order)
        self._by_canonical: Dict[str, Tuple[str, str, Tuple[int, ...]]] = {}
        # canonical text of a join skeleton -> (map, for each skeleton key its map key)
        self._by_join: Dict[str, Tuple[str, Tuple[int, ...]]] = {}
        self._counter = 0

    # -- entry point -------------------------------------------------------------------
    def compile(self, group: Sequence[str], columns: Dict[str, Query],
                multisets: Optional[Dict[str, Query]] = None,
                support: Optional[str] = None) -> Program:
        """`multisets`: the view's MIN / MAX / DISTINCT aggregates, each a query keyed by the
        view's group variables and a value (its count of rows with that value): level-0 maps
        next to the view state, maintained like it. `support`: the state's row-count column
        (a group is gone when it sums to 0)."""
        multisets = dict(multisets or {})
        if self.caches and (self.depth is None or self.depth >= 2):   # caches are maps
            columns = {c: with_view_caches(q) for c, q in columns.items()}
            multisets = {n: with_view_caches(q) for n, q in multisets.items()}
        state = MapDef(self.program.view_map, tuple(group), dict(columns), level=0,
                       support=support)
        level0 = [state]
        for name, q in multisets.items():
            if tuple(q.group[:-1]) != tuple(group) or name in self.program.maps:
                raise ValueError(f"multiset {name} must be keyed by the view's group {tuple(group)} "
                                 f"and one value, not {q.group}")
            level0.append(MapDef(name, q.group, {VALUE: q}, level=0, group_keys=len(group)))
        for m in level0:
            self.program.maps[m.name] = m
        for m in level0:
            for col, q in m.values.items():
                if self.depth == 0:
                    for rel in sorted(q.relations()):
                        self.program.add_statement(rel, Statement(m.name, col, q, "reevaluate"))
                else:
                    self._compile_column(m.name, col, q, level=0)
        return self.program

    # -- recursion ---------------------------------------------------------------------
    def _compile_column(self, map_name: str, column: str, query: Query, level: int):
        for rel in sorted(query.relations()):
            dq = normalize(delta(query.to_expr(), rel), group=query.group)
            if dq.is_zero():
                continue
            monos = [self._materialize(m, query.group, level) for m in dq.monomials]
            rhs = Query(query.group, simplify(monos, keep=query.group))
            if rhs.monomials:
                self.program.add_statement(rel, Statement(map_name, column, rhs))

    def _may_materialize(self, level: int) -> bool:
        return self.depth is None or level + 1 < self.depth

    def _materialize(self, mono: Monomial, target_keys: Sequence[str], level: int,
                     inputs: frozenset = frozenset()) -> Monomial:
        if not self._may_materialize(level):
            return mono
        # Rule 4 (decorrelation): a nested aggregate's query becomes maps of its own first;
        # the enclosing monomial then reads them through the assignment.
        mono = Monomial(mono.coef, tuple(self._materialize_inner(a, level)
                                         if isinstance(a, (Nested, Domain, Groups)) else a
                                         for a in mono.atoms))
        relations = [a for a in mono.atoms if isinstance(a, Rel)]
        if not relations:
            return mono
        # Variables bound outside the maps: batch columns, touched domains, nested aggregates
        # (their inputs and values) and the inputs of an enclosing nested query. Conditions
        # over them stay in the statement, the other variables they touch become map keys
        # (input-variable extraction).
        trigger_vars = frozenset(inputs).union(*(a.free_vars() for a in mono.atoms
                                                 if isinstance(a, (DeltaRel, Domain, Nested, Groups))))
        components, outside = decompose(mono, trigger_vars)
        outside_vars = frozenset(target_keys).union(*(a.free_vars() for a in outside)) | trigger_vars
        new_atoms: List = list(outside)
        for comp in components:
            comp_vars = frozenset().union(*(a.free_vars() for a in comp))
            keys = tuple(sorted(comp_vars & outside_vars))
            definition = normalize(_product(comp), group=keys)
            new_atoms.append(self._map_for(definition, level + 1))
        return Monomial(mono.coef, tuple(new_atoms))

    def _materialize_inner(self, atom, level: int):
        """A nested query's monomials as maps keyed by its group variables: a MIN / MAX /
        DISTINCT aggregate's multiset becomes maps keyed by inputs and value."""
        query = atom.query
        inputs = atom.inputs if isinstance(atom, Nested) else query.group
        monos = []
        if isinstance(atom, Nested) and atom.cached:
            # a view cache: the query as of batch start is one map keyed by the inputs; the
            # batch's part (monomials reading the batch) is materialized as usual below
            before = [m for m in query.monomials if not _reads_batch(m)]
            if before:
                monos.append(Monomial(1, (self._map_for(Query(query.group, tuple(before)),
                                                        level + 1, cache=True),)))
            query = Query(query.group, tuple(m for m in query.monomials if _reads_batch(m)))
        for m in query.monomials:
            bound = frozenset().union(*(a.free_vars() for a in m.atoms
                                        if isinstance(a, (Rel, DeltaRel, MapRef, Domain, Groups))))
            free_inputs = frozenset(inputs) - bound
            monos.append(self._materialize(m, query.group, level, free_inputs))
        inner = Query(query.group, simplify(monos, keep=query.group))
        if isinstance(atom, Nested):
            return atom.with_query(inner)
        return Groups(inner) if isinstance(atom, Groups) else Domain(inner)

    def _map_for(self, definition: Query, level: int, cache: bool = False) -> MapRef:
        text, canonical_keys = canonicalize(definition, relations_first=self.fuse)
        if text in self._by_canonical:
            name, column, perm = self._by_canonical[text]
            self.program.maps[name].cache |= cache
            return MapRef(name, tuple(canonical_keys[i] for i in perm), column)
        skeleton = join_skeleton(definition) if self.fuse else None
        join = canonicalize(skeleton[0], True) if skeleton is not None else None
        if join is not None and join[0] in self._by_join:
            # Same join as a map's other column (a SUM next to the count): one more value
            # column, so that the two share their reads, writes and statement blocks.
            name, positions = self._by_join[join[0]]
            mdef = self.program.maps[name]
            keys = [""] * len(positions)
            for var, position in zip(join[1], positions):
                keys[position] = var
            column = f"v{len(mdef.values)}"
            mdef.values[column] = Query(tuple(keys), definition.monomials)
            mdef.cache |= cache
            if mdef.support is None and skeleton[1]:
                mdef.support = column
            perm = tuple(canonical_keys.index(k) for k in keys)
            self._by_canonical[text] = (name, column, perm)
            self._compile_column(name, column, mdef.values[column], level)
            return MapRef(name, tuple(keys), column)
        self._counter += 1
        rels = "_".join(sorted({a.table.split("/")[-1].split(".")[-1] for m in definition.monomials
                                for a in m.atoms if isinstance(a, Rel)}))
        name = f"m{self._counter}_{_safe(rels)}"[:60]
        ordered = Query(canonical_keys, definition.monomials)
        self._by_canonical[text] = (name, VALUE, tuple(range(len(canonical_keys))))
        support = None
        if join is not None:
            self._by_join[join[0]] = (name, tuple(canonical_keys.index(k) for k in join[1]))
            support = VALUE if skeleton[1] else None
        self.program.maps[name] = MapDef(name, canonical_keys, {VALUE: ordered}, level,
                                         cache=cache, support=support)
        self._compile_column(name, VALUE, ordered, level)
        return MapRef(name, canonical_keys)


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
        for v in r.free_vars() - trigger_vars:
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


def _reads_batch(mono: Monomial) -> bool:
    return any(isinstance(a, (DeltaRel, Domain)) for a in walk_atoms(Query((), (mono,))))


def _product(atoms):
    from ..calculus.ir import Mul
    return atoms[0] if len(atoms) == 1 else Mul(tuple(atoms))


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text) or "q"


def compile_view(group: Sequence[str], columns: Dict[str, Query], depth: Optional[int],
                 multisets: Optional[Dict[str, Query]] = None, caches: bool = False,
                 fuse: bool = True, support: Optional[str] = None) -> Program:
    """`fuse`: maps over the same join share one map, a value column each (views created
    before that was the rule compile with False, to keep the maps they have). `support`: the
    view state's row-count column."""
    return Compiler(depth, caches=caches, fuse=fuse).compile(group, columns, multisets, support)
