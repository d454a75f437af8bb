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

The steps are named passes, listed in the order they run in compiler/passes.py (VIEW_PASSES,
DELTA_PASSES, MONOMIAL_PASSES, MAP_RULES); `Compiler` holds the state they share and runs
each list where the recursion needs it.
"""
from __future__ import annotations

from typing import Callable, Dict, Optional, Sequence, Tuple

from ..calculus.ir import MapRef, Monomial, Query
from . import passes as P
from .program import Program
from .rules import decompose, join_skeleton

__all__ = ["Compiler", "Trace", "compile_view", "decompose", "join_skeleton"]  # the rules' old home

#: a trace hook: called with (stage, pass name, work item) before each pass runs (stages
#: "view", "delta", "monomial"; the item a View, Delta or Term, one object per run of the
#: list) and with ("map", rule name, MapRequest) for the map rule that gave the map
Trace = Callable[[str, str, object], None]


class Compiler:
    """The state the passes share: options, the Program built so far, the maps by canonical
    form and by join, the map counter; and the four steps that run the pass lists."""

    def __init__(self, depth: Optional[int], view_map: str = "view_state", caches: bool = False,
                 fuse: bool = True, trace: Optional[Trace] = None):
        self.depth = depth
        self.caches = caches
        self.fuse = fuse
        self.trace = trace
        self.program = Program(view_map=view_map, depth=depth)
        # canonical text -> (map, column, for each map key the index of the definition's
        # key in canonical order)
        self.by_canonical: Dict[str, Tuple[str, str, Tuple[int, ...]]] = {}
        # canonical text of a join skeleton -> (map, for each skeleton key its map key)
        self.by_join: Dict[str, Tuple[str, Tuple[int, ...]]] = {}
        self._counter = 0

    def traced(self, stage: str, name: str, item):
        if self.trace is not None:
            self.trace(stage, name, item)

    # -- the steps: each runs one pass list ----------------------------------------------
    def compile(self, group: Sequence[str], columns: Dict[str, Query],
                multisets: Optional[Dict[str, Query]] = None,
                support: Optional[str] = None) -> Program:
        """VIEW_PASSES. `multisets`: the view's MIN / MAX / DISTINCT aggregates, each a query
        keyed by the view's group variables and a value (its count of rows with that value):
        level-0 maps next to the view state, maintained like it. `support`: the state's
        row-count column (a group is gone when it sums to 0)."""
        view = P.View(tuple(group), dict(columns), dict(multisets or {}), support)
        P.run_passes(P.VIEW_PASSES, self, view, "view")
        return self.program

    def compile_column(self, map_name: str, column: str, query: Query, level: int):
        """DELTA_PASSES for each relation the column's query reads, in name order."""
        for rel in sorted(query.relations()):
            P.run_passes(P.DELTA_PASSES, self, P.Delta(map_name, column, query, level, rel),
                         "delta")

    def materialize(self, mono: Monomial, target_keys: Sequence[str], level: int,
                    inputs: frozenset = frozenset()) -> Monomial:
        """MONOMIAL_PASSES: the monomial with its base-relation parts read from maps."""
        term = P.Term(mono, tuple(target_keys), level, frozenset(inputs))
        return P.run_passes(P.MONOMIAL_PASSES, self, term, "monomial").mono

    def map_for(self, definition: Query, level: int, cache: bool = False) -> MapRef:
        """MAP_RULES: a reference to the map (column) holding `definition`."""
        request = P.MapRequest(definition, level, cache, self.fuse)
        return P.first_match(P.MAP_RULES, self, request, "map")

    def next_map_name(self, definition: Query) -> str:
        self._counter += 1
        return P.map_name(self._counter, definition)


def compile_view(group: Sequence[str], columns: Dict[str, Query], depth: Optional[int],
                 multisets: Optional[Dict[str, Query]] = None, caches: bool = False,
                 fuse: bool = True, support: Optional[str] = None,
                 trace: Optional[Trace] = None) -> Program:
    """`fuse`: maps over the same join share one map, a value column each (views created
    before that was the rule compile with False, to keep the maps they have). `support`: the
    view state's row-count column. `trace`: see `Trace`."""
    return Compiler(depth, caches=caches, fuse=fuse, trace=trace).compile(group, columns,
                                                                         multisets, support)
