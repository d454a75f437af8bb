"""A view's maps loaded in rounds, each map from the maps loaded before it.

CREATE loads every map := its definition over the base tables. A map over several relations
is also what its trigger on one of them, R, computes from a batch holding all of R's rows,
applied to the maps of the other relations: the trigger's statements read those maps
(already summed by their keys) where the definition joins base rows. TPC-H Q3's maps over
lineitem and orders joined 3 million lineitem rows each; from orders' trigger they join
orders with lineitem summed by order key once.

That holds for map `m` and relation R (`_via`) when
  * R is a factor of every monomial of every column of `m`, once, and nowhere inside a
    nested aggregate: `m` is 0 while R is empty and linear in R's rows;
  * R's trigger updates every column of `m` with incremental statements, each monomial
    holding R's changes once and nothing nested, reading only maps loaded in the same
    load whose definitions do not read R (so they hold their whole value already).
Under those conditions the trigger's correctness (a batch of R's rows added to maps that
hold the other relations) is the load's. Maps that qualify through no relation, over one
relation, or whose statements read no map, load from their definitions.

Of the relations that qualify, the one with the fewest rows is chosen: the maps it reads
are loaded anyway, and its own rows are what the round reads again. A map is loaded in the
round after every map it reads (round 0: the definitions), one trigger per round
(`round_trigger`), which the batch plan runs as one phase each (plan/batch.py `fresh`).
"""
from __future__ import annotations

from typing import Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from ..calculus.ir import DeltaRel, Domain, Groups, MapRef, Monomial, Nested, Query, Rel, walk_atoms
from .program import MapDef, Program, Statement

#: the load's trigger names: LOAD + round number
LOAD = "__viewlet_load"


def round_trigger(k: int) -> str:
    return f"{LOAD}{k}"


class MapLoad(NamedTuple):
    """How a load computes one map: in `round` (0 first), from its definition (`via` None)
    or from relation `via`'s statements over the maps it `reads`."""
    name: str
    round: int
    via: Optional[str]
    reads: Tuple[str, ...]


def load_order(program: Program, names: Sequence[str],
               rows: Optional[Mapping[str, int]] = None, stage: bool = True) -> List[MapLoad]:
    """How a load computes each of the maps `names`, in `names`' order (staged_load's
    choices; `rows`, `stage` as there)."""
    rows = rows or {}
    chosen: Dict[str, Tuple[str, List[Statement]]] = {}
    if stage:
        for name in names:
            found = _via(program, program.maps[name], set(names), rows)
            if found is not None:
                chosen[name] = found
    level = _levels(names, {n: _reads(stmts) for n, (_, stmts) in chosen.items()})
    return [MapLoad(n, level[n], chosen[n][0], tuple(sorted(_reads(chosen[n][1]))))
            if level[n] > 0 else MapLoad(n, 0, None, ()) for n in names]


def staged_load(program: Program, names: Sequence[str],
                rows: Optional[Mapping[str, int]] = None, stage: bool = True) -> Program:
    """A program whose triggers (`round_trigger(0)`, `round_trigger(1)`, ...) set each
    column of the maps `names` to its value: in round 0 from their definitions, in later
    rounds from one relation's statements over maps of earlier rounds. `rows`: each
    relation's rows (for the choice of relation; unknown counts as large). `stage=False`:
    every map from its definition, in one round."""
    order = load_order(program, names, rows, stage)
    load = Program(program.view_map, program.depth, {n: program.maps[n] for n in names})
    for k in range(max((m.round for m in order), default=0) + 1):
        for m in order:
            if m.round != k:
                continue
            if m.via is None:
                for column, definition in program.maps[m.name].values.items():
                    load.add_statement(round_trigger(k),
                                       Statement(m.name, column, definition, "reevaluate"))
                continue
            for s in _statements(program, m.via, m.name):
                load.add_statement(round_trigger(k),
                                   Statement(m.name, s.column, _whole(s.rhs), "incremental"))
    return load


def load_rounds(load: Program) -> Tuple[str, ...]:
    """The triggers of a staged load, in the order they run."""
    return tuple(t for t in load.triggers if t.startswith(LOAD))


# -- which relation -----------------------------------------------------------------------------
def _via(program: Program, m: MapDef, loaded: set, rows: Mapping[str, int]
         ) -> Optional[Tuple[str, List[Statement]]]:
    """(relation, its trigger's statements for `m`) when `m` loads from them, the relation
    with the fewest rows first; None: `m` loads from its definition."""
    if m.cache or len(m.relations()) < 2:
        return None
    for rel in sorted(m.relations(), key=lambda r: (rows.get(r, 1 << 62), r)):
        statements = _statements(program, rel, m.name)
        if _linear_in(m, rel) and _from_maps(program, m, rel, statements, loaded):
            return rel, statements
    return None


def _statements(program: Program, rel: str, name: str) -> List[Statement]:
    """Relation `rel`'s trigger statements that update map `name`."""
    return [s for s in program.statements_for(rel) if s.target == name]


def _linear_in(m: MapDef, rel: str) -> bool:
    """Every monomial of every column of `m` holds relation `rel` once, as a factor, and no
    nested aggregate, domain or group set of it reads `rel`."""
    for query in m.values.values():
        if any(isinstance(a, DeltaRel) for a in walk_atoms(query)):
            return False
        for mono in query.monomials:
            own = [a for a in mono.atoms if isinstance(a, Rel) and a.table == rel]
            if len(own) != 1:
                return False
            for a in mono.atoms:
                if isinstance(a, (Nested, Domain, Groups)) and rel in a.query.relations():
                    return False
    return True


def _from_maps(program: Program, m: MapDef, rel: str, statements: List[Statement],
               loaded: set) -> bool:
    """`rel`'s statements for `m` cover its columns, are incremental, hold `rel`'s changes
    once per monomial and nothing nested, and read at least one map, each loaded in this
    load and not reading `rel`."""
    if not statements or {s.column for s in statements} != set(m.values):
        return False
    maps = set()
    for s in statements:
        if s.strategy != "incremental":
            return False
        for mono in s.rhs.monomials:
            deltas = [a for a in mono.atoms if isinstance(a, DeltaRel)]
            if len(deltas) != 1 or deltas[0].table != rel:
                return False
            for a in mono.atoms:
                if isinstance(a, (Nested, Domain, Groups)) or \
                        (isinstance(a, Rel) and a.table == rel):
                    return False
                if isinstance(a, MapRef):
                    maps.add(a.name)
    return bool(maps) and all(
        name in loaded and name != m.name and rel not in program.maps[name].relations()
        for name in maps)


def _reads(statements: List[Statement]) -> set:
    return {a.name for s in statements for a in walk_atoms(s.rhs) if isinstance(a, MapRef)}


def _levels(names: Sequence[str], reads: Dict[str, set]) -> Dict[str, int]:
    """Each map's round: 0 for definitions, else one after the latest map it reads. A map
    on a cycle of reads (none is known, but nothing rules one out) loads in round 0 from
    its definition."""
    level = {n: 0 for n in names if n not in reads}
    pending = dict(reads)
    while pending:
        ready = [n for n, r in pending.items() if r <= set(level)]
        if not ready:
            level.update({n: 0 for n in pending})
            break
        for n in ready:
            level[n] = 1 + max(level[r] for r in pending[n])
            del pending[n]
    return level


def _whole(query: Query) -> Query:
    """A trigger's query over all of the relation's rows: its changes read as the relation."""
    return Query(query.group, tuple(
        Monomial(mono.coef, tuple(Rel(a.table, a.columns, a.vars) if isinstance(a, DeltaRel)
                                  else a for a in mono.atoms))
        for mono in query.monomials))
