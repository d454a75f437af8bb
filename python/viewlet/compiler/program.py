"""The trigger program: maps (materialized queries) and, per base relation, the ordered
statements that keep them up to date when a batch of changes to that relation arrives."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from ..calculus.ir import MAP_VALUE, DeltaRel, Domain, Groups, MapRef, Nested, Query, Rel, walk_atoms

VALUE = MAP_VALUE  # the value column of a single-valued map


@dataclass
class MapDef:
    """A materialized query: one row per key, a value column per defining query."""

    name: str
    keys: Tuple[str, ...]              # key variables, in column order
    values: Dict[str, Query]           # value column -> Sum[keys](...) over base relations
    level: int                         # 0 for the view's own state, n for an n-th order delta
    cache: bool = False                # a view cache: a nested query keyed by its inputs
    # A multiset of the view (MIN / MAX / DISTINCT aggregates): its first `group_keys` keys
    # are the view's group keys, the last one a value. None for other maps.
    group_keys: Optional[int] = None
    # The column whose sum 0 means a key's row is gone (a count every other column's rows are
    # part of); None: a row is gone when every column sums to 0.
    support: Optional[str] = None

    def zero_columns(self) -> List[str]:
        return [self.support] if self.support else list(self.values)

    def relations(self):
        out = set()
        for q in self.values.values():
            out |= q.relations()
        return out


@dataclass
class Statement:
    """target[keys] += rhs (incremental) or target := rhs (re-evaluation)."""

    target: str
    column: str
    rhs: Query                         # Sum[target keys](monomials over the batch and maps)
    strategy: str = "incremental"

    def mode(self) -> str:
        """The strategy EXPLAIN shows. For statements over nested aggregates ([J] §5.1):
        `incremental-domain` when the batch binds the nested query's correlation inputs
        (only the touched inputs are re-evaluated, Hot Dog domain extraction); `reevaluate`
        when it does not (uncorrelated or inequality-correlated: the enclosing part is
        evaluated for the old and the new nested values, from its materialized maps)."""
        if self.strategy != "incremental":
            return self.strategy
        changed = False
        for m in self.rhs.monomials:
            for a in m.atoms:
                if isinstance(a, Domain):
                    return "incremental-domain"
                if isinstance(a, (Nested, Groups)) and any(isinstance(x, DeltaRel)
                                                 for x in walk_atoms(a.query)):
                    changed = True
        return "reevaluate (old and new nested values)" if changed else "incremental"

    def maps_read(self):
        return sorted({a.name for a in walk_atoms(self.rhs) if isinstance(a, MapRef)})

    def relations_read(self):
        return sorted({a.table for m in self.rhs.monomials for a in m.atoms if isinstance(a, Rel)})


@dataclass
class Program:
    view_map: str
    depth: Optional[int]
    maps: Dict[str, MapDef] = field(default_factory=dict)
    triggers: Dict[str, List[Statement]] = field(default_factory=dict)

    def add_statement(self, relation: str, stmt: Statement):
        self.triggers.setdefault(relation, []).append(stmt)

    def relations(self):
        out = set()
        for m in self.maps.values():
            out |= m.relations()
        return sorted(out)

    def multisets(self) -> List[MapDef]:
        """The view's multisets (level-0 maps next to the view state)."""
        return [m for m in self.maps.values() if m.group_keys is not None]

    def result_sources(self) -> Dict[str, int]:
        """{map: how many of its leading keys are the view's group keys} for the maps a
        group's result row is derived from: the view state and its multisets. A batch
        touches the groups that are such a prefix of a key some map delta changes (an
        UPDATE that moves a MIN changes a multiset, not the state's counts)."""
        out = {self.view_map: len(self.maps[self.view_map].keys)}
        out.update({m.name: m.group_keys for m in self.multisets()})
        return out

    def statements_for(self, relation: str) -> List[Statement]:
        return self.triggers.get(relation, [])

    def targets_for(self, relation: str) -> List[str]:
        seen = []
        for s in self.statements_for(relation):
            if s.target not in seen:
                seen.append(s.target)
        return seen
