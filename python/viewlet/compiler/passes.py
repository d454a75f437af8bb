"""The compiler's passes, in the order it runs them (the viewlet transform of [J] Alg. 2).

The transform is recursive: a view's maps get triggers, whose deltas materialize new maps,
which get triggers of their own. So the pipeline is four short lists, each run by one step
of the compiler (compiler/hoivm.py, `Compiler`), the inner ones again for every map the outer
ones create:

  VIEW_PASSES      once per view: the level-0 maps and their triggers
  DELTA_PASSES     per map column and base relation it reads: one trigger statement
  MONOMIAL_PASSES  per monomial of a delta (and of a nested query in it): its maps
  MAP_RULES        per map definition a monomial needs: the first rule that gives a map wins

Every pass is a function (compiler, value) -> value: the compiler holds the state (options,
the Program built so far, the indices of maps by canonical form and by join); the value is
the work item of its list (a `View`, `Delta`, `Term` or `MapRequest`), which the pass takes
and returns with its part done. A pass returns None to end its list early (nothing more to
do: a zero delta, a monomial at the depth limit or without relations). A map rule returns
the map reference, or None to let the next rule try.

The four lists are at the end of this module, after the functions they name; `describe()`
prints them with each pass's one-line summary (docs/internals.md, "Compiler passes").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Tuple

from ..calculus.canonical import canonicalize
from ..calculus.delta import delta
from ..calculus.ir import DeltaRel, Domain, Expr, Groups, MapRef, Monomial, Nested, Query, Rel
from ..calculus.normalize import normalize, simplify
from .caches import with_row_caches, with_view_caches
from .program import VALUE, MapDef, Statement
from .rules import cut_shared_joins, decompose, join_skeleton, product, reads_batch, safe_name

if TYPE_CHECKING:  # pragma: no cover
    from .hoivm import Compiler


@dataclass(frozen=True)
class Pass:
    """A named step of the compiler: `run(compiler, value)` returns the value for the next
    pass (None: the list ends here); a map rule returns a map reference or None. `doc`: one
    line (the function's docstring says what it takes and guarantees)."""

    name: str
    run: Callable
    doc: str


def run_passes(passes: Sequence[Pass], compiler: "Compiler", value, stage: str):
    """Run `passes` in order on `value`; the last value (the input of the pass that ended the
    list, when one returned None). The compiler's trace hook sees (stage, pass name, value)
    before each pass."""
    for p in passes:
        compiler.traced(stage, p.name, value)
        out = p.run(compiler, value)
        if out is None:
            return value
        value = out
    return value


def first_match(rules: Sequence[Pass], compiler: "Compiler", value, stage: str):
    """The result of the first rule that gives one (the trace sees the rule that did)."""
    for rule in rules:
        out = rule.run(compiler, value)
        if out is not None:
            compiler.traced(stage, rule.name, value)
            return out
    raise AssertionError(f"no {stage} rule applies")   # the last rule always applies


# -- VIEW_PASSES: once per view -----------------------------------------------------------------

@dataclass
class View:
    """A view to compile: its group variables, state columns (each a query keyed by the group),
    multisets (MIN / MAX / DISTINCT aggregates, keyed by the group and a value) and the state's
    row-count column; `maps` the level-0 maps once made."""

    group: Tuple[str, ...]
    columns: Dict[str, Query]
    multisets: Dict[str, Query]
    support: Optional[str] = None
    maps: List[MapDef] = field(default_factory=list)


def view_caches(c: "Compiler", view: View) -> View:
    """View caches ([J] §5.2, option `caches`, depth unlimited or >= 2): each nested aggregate
    a relation of its monomial can restrict is marked as a cache, to become one map keyed by
    its inputs (compiler/caches.py). Without the option the view is unchanged."""
    if c.caches:
        _mark_caches(c, view, with_view_caches)
    return view


def row_caches(c: "Compiler", view: View) -> View:
    """Depth unlimited or >= 2: each nested SUM over rows compared with an aggregate of
    their own (TPC-H Q20's IN count over partsupp) is marked as a cache, to become one map
    keyed by its inputs (compiler/caches.py `with_row_caches`): a batch then looks its old
    value up instead of summing every row of each touched input again."""
    _mark_caches(c, view, with_row_caches)
    return view


def _mark_caches(c: "Compiler", view: View, mark: Callable[[Query], Query]) -> None:
    """The view's columns and multisets through `mark`, at depths that keep maps of order
    >= 1 under the view (a cache is a map)."""
    if c.depth is None or c.depth >= 2:
        view.columns = {col: mark(q) for col, q in view.columns.items()}
        view.multisets = {n: mark(q) for n, q in view.multisets.items()}


def view_maps(c: "Compiler", view: View) -> View:
    """Level-0 maps: the view state (the group's columns) and one map per multiset, keyed by
    the group and the value; raises ValueError for a multiset not keyed so. Guarantees: the
    Program holds the level-0 maps, the state first, with no statements yet."""
    state = MapDef(c.program.view_map, tuple(view.group), dict(view.columns), level=0,
                   support=view.support)
    view.maps = [state]
    for name, q in view.multisets.items():
        if tuple(q.group[:-1]) != tuple(view.group) or name in c.program.maps:
            raise ValueError(f"multiset {name} must be keyed by the view's group "
                             f"{tuple(view.group)} and one value, not {q.group}")
        view.maps.append(MapDef(name, q.group, {VALUE: q}, level=0, group_keys=len(view.group)))
    for m in view.maps:
        c.program.maps[m.name] = m
    return view


def reevaluate(c: "Compiler", view: View) -> View:
    """Depth 0 (no maintenance): per level-0 column and relation it reads, one `:=` statement
    that re-evaluates the column's query over the base relations. Other depths: nothing."""
    if c.depth == 0:
        for m in view.maps:
            for col, q in m.values.items():
                for rel in sorted(q.relations()):
                    c.program.add_statement(rel, Statement(m.name, col, q, "reevaluate"))
    return view


def maintain(c: "Compiler", view: View) -> View:
    """Depth >= 1 or unlimited: each level-0 column gets its triggers (DELTA_PASSES per relation
    it reads), which materialize the maps they need (and those maps' triggers, recursively).
    Guarantees: every map of the Program has a statement per relation its delta is not zero
    for, in the order the maps were made."""
    if c.depth != 0:
        for m in view.maps:
            for col, q in m.values.items():
                c.compile_column(m.name, col, q, level=0)
    return view


# -- DELTA_PASSES: per map column and relation ---------------------------------------------------

@dataclass
class Delta:
    """One trigger statement in the making: `target.column` (defined by `query`, a map at
    `level`) on a batch of `relation`; `expr` and `monomials` its right-hand side so far."""

    target: str
    column: str
    query: Query
    level: int
    relation: str
    expr: Optional[Expr] = None
    monomials: Tuple[Monomial, ...] = ()


def take_delta(c: "Compiler", d: Delta) -> Delta:
    """The delta of the column's query for a batch of the relation (calculus/delta.py): base
    atoms of the relation become batch atoms, nested aggregates their old-and-new difference."""
    d.expr = delta(d.query.to_expr(), d.relation)
    return d


def normalize_delta(c: "Compiler", d: Delta) -> Optional[Delta]:
    """[J] rule 2: the polynomial normal form of the delta keyed by the map's keys
    (calculus/normalize.py: expansion, partial evaluation, unification, like terms combined);
    ends the list when the delta is zero (the relation cannot change this column)."""
    d.monomials = normalize(d.expr, group=d.query.group).monomials
    return d if d.monomials else None


def materialize(c: "Compiler", d: Delta) -> Delta:
    """Each monomial through MONOMIAL_PASSES: the parts that read base relations become maps
    (below the depth limit), so the statement reads the batch and maps."""
    d.monomials = tuple(c.materialize(m, d.query.group, d.level) for m in d.monomials)
    return d


def simplify_statement(c: "Compiler", d: Delta) -> Optional[Delta]:
    """The materialized monomials simplified again keyed by the map's keys (equal terms over
    the same maps combine, opposite ones cancel); ends the list when nothing is left."""
    d.monomials = simplify(d.monomials, keep=d.query.group)
    return d if d.monomials else None


def emit(c: "Compiler", d: Delta) -> Delta:
    """The statement `target.column += rhs` appended to the relation's trigger."""
    c.program.add_statement(d.relation, Statement(d.target, d.column,
                                                  Query(d.query.group, d.monomials)))
    return d


# -- MONOMIAL_PASSES: per monomial of a delta --------------------------------------------------

@dataclass
class Term:
    """A monomial to materialize: `mono` (rewritten by the passes), the keys of the query it is
    part of, the level of that query's map, the inputs an enclosing nested query binds, and the
    decomposition (`trigger_vars`: the variables bound outside the maps; `outside`: atoms that
    stay in the statement; `components`: atom lists, each to become a map)."""

    mono: Monomial
    target_keys: Tuple[str, ...]
    level: int
    inputs: frozenset = frozenset()
    trigger_vars: frozenset = frozenset()
    outside: List = field(default_factory=list)
    components: List[List] = field(default_factory=list)


def depth_limit(c: "Compiler", t: Term) -> Optional[Term]:
    """Ends the list at the depth limit: a monomial whose maps would be of order > depth keeps
    reading base relations (depth n materializes deltas up to order n)."""
    return t if c.depth is None or t.level + 1 < c.depth else None


def decorrelate(c: "Compiler", t: Term) -> Term:
    """[J] rule 4: the query of each nested aggregate (and domain, GROUP BY groups) becomes maps
    of its own first (its monomials through MONOMIAL_PASSES, a view cache one map keyed by
    its inputs); the enclosing monomial then reads them through the assignment."""
    t.mono = Monomial(t.mono.coef, tuple(_materialize_inner(c, a, t.level)
                                         if isinstance(a, (Nested, Domain, Groups)) else a
                                         for a in t.mono.atoms))
    return t


def split_components(c: "Compiler", t: Term) -> Optional[Term]:
    """[J] rules 1 and 3 (compiler/rules.py `decompose`): the relation atoms split into
    connected components over the non-trigger variables; conditions, values and assignments
    over trigger variables (batch columns, touched domains, nested aggregates, an enclosing
    query's inputs) stay outside, the others are pushed into the component they touch. Ends
    the list for a monomial without relation atoms (nothing to materialize)."""
    if not any(isinstance(a, Rel) for a in t.mono.atoms):
        return None
    bound_outside = (DeltaRel, Domain, Nested, Groups)
    trigger_vars = frozenset(t.inputs).union(*(a.free_vars() for a in t.mono.atoms
                                               if isinstance(a, bound_outside)))
    t.components, t.outside = decompose(t.mono, trigger_vars)
    t.trigger_vars = trigger_vars
    return t


def components_to_maps(c: "Compiler", t: Term) -> Term:
    """Predicate and aggregation pushdown: each component, normalized and summed to the
    variables it shares with the rest (the query's keys, the outside atoms' variables, the
    trigger variables: input-variable extraction), becomes a map reference (MAP_RULES); a
    component cut at a many-to-many join (rules.py `cut_shared_joins`) becomes one map per
    part, the statement joining them on the cut variables. Guarantees: the monomial reads no
    base relation."""
    outside_vars = (frozenset(t.target_keys).union(*(a.free_vars() for a in t.outside))
                    | t.trigger_vars)
    atoms: List = list(t.outside)
    for comp in t.components:
        comp_vars = frozenset().union(*(a.free_vars() for a in comp))
        for part, keys in cut_shared_joins(comp, comp_vars & outside_vars, t.trigger_vars):
            atoms.append(c.map_for(normalize(product(part), group=keys), t.level + 1))
    t.mono = Monomial(t.mono.coef, tuple(atoms))
    return t


def _materialize_inner(c: "Compiler", atom, level: int):
    """A nested query's monomials as maps keyed by its group variables: a MIN / MAX /
    DISTINCT aggregate's multiset becomes maps keyed by inputs and value."""
    query = atom.query
    inputs = atom.inputs if isinstance(atom, Nested) else query.group
    monos = []
    if isinstance(atom, Nested) and atom.cached:
        # a view cache: the query as of batch start is one map keyed by the inputs; the
        # batch's part (monomials reading the batch) is materialized as usual below
        before = [m for m in query.monomials if not reads_batch(m)]
        if before:
            monos.append(Monomial(1, (c.map_for(Query(query.group, tuple(before)),
                                                level + 1, cache=True),)))
        query = Query(query.group, tuple(m for m in query.monomials if reads_batch(m)))
    for m in query.monomials:
        bound = frozenset().union(*(a.free_vars() for a in m.atoms
                                    if isinstance(a, (Rel, DeltaRel, MapRef, Domain, Groups))))
        free_inputs = frozenset(inputs) - bound
        monos.append(c.materialize(m, query.group, level, free_inputs))
    inner = Query(query.group, simplify(monos, keep=query.group))
    if isinstance(atom, Nested):
        return atom.with_query(inner)
    return Groups(inner) if isinstance(atom, Groups) else Domain(inner)


# -- MAP_RULES: per map definition -------------------------------------------------------------

@dataclass
class MapRequest:
    """A map definition a monomial needs, keyed by its group, at `level`; `cache`: a view
    cache. Its canonical form and join skeleton are computed once, when a rule asks."""

    definition: Query
    level: int
    cache: bool
    fuse: bool

    @cached_property
    def canonical(self) -> Tuple[str, Tuple[str, ...]]:
        """(canonical text, the definition's keys in canonical order)."""
        return canonicalize(self.definition, relations_first=self.fuse)

    @cached_property
    def skeleton(self):
        """(join skeleton, whether the definition is its count), or None (rules.join_skeleton)."""
        return join_skeleton(self.definition) if self.fuse else None

    @cached_property
    def join(self):
        """The canonical form of the join skeleton, or None."""
        return canonicalize(self.skeleton[0], True) if self.skeleton is not None else None


def reuse_map(c: "Compiler", r: MapRequest) -> Optional[MapRef]:
    """Duplicate-map elimination ([J] §5.1, calculus/canonical.py): a definition equal to a
    map's column up to variable names reads that column, its keys permuted."""
    text, canonical_keys = r.canonical
    if text not in c.by_canonical:
        return None
    name, column, perm = c.by_canonical[text]
    c.program.maps[name].cache |= r.cache
    return MapRef(name, tuple(canonical_keys[i] for i in perm), column)


def fuse_map(c: "Compiler", r: MapRequest) -> Optional[MapRef]:
    """Map fusion (option `fuse`): a definition over the same join as a map (a SUM next to the
    count) becomes one more value column of it, compiled like a map's (DELTA_PASSES), so that
    the two share their reads, writes and statement blocks."""
    if r.join is None or r.join[0] not in c.by_join:
        return None
    text, canonical_keys = r.canonical
    name, positions = c.by_join[r.join[0]]
    mdef = c.program.maps[name]
    keys = [""] * len(positions)
    for var, position in zip(r.join[1], positions):
        keys[position] = var
    column = f"v{len(mdef.values)}"
    mdef.values[column] = Query(tuple(keys), r.definition.monomials)
    mdef.cache |= r.cache
    if mdef.support is None and r.skeleton[1]:
        mdef.support = column
    perm = tuple(canonical_keys.index(k) for k in keys)
    c.by_canonical[text] = (name, column, perm)
    c.compile_column(name, column, mdef.values[column], r.level)
    return MapRef(name, tuple(keys), column)


def new_map(c: "Compiler", r: MapRequest) -> MapRef:
    """A new map `m<n>_<relations>` keyed in canonical order, registered for the two rules
    above, and its triggers (DELTA_PASSES per relation it reads: the recursion)."""
    text, canonical_keys = r.canonical
    name = c.next_map_name(r.definition)
    ordered = Query(canonical_keys, r.definition.monomials)
    c.by_canonical[text] = (name, VALUE, tuple(range(len(canonical_keys))))
    support = None
    if r.join is not None:
        c.by_join[r.join[0]] = (name, tuple(canonical_keys.index(k) for k in r.join[1]))
        support = VALUE if r.skeleton[1] else None
    c.program.maps[name] = MapDef(name, canonical_keys, {VALUE: ordered}, r.level,
                                  cache=r.cache, support=support)
    c.compile_column(name, VALUE, ordered, r.level)
    return MapRef(name, canonical_keys)


# -- the pipeline: the lists the compiler runs, in order ---------------------------------------

#: once per view (Compiler.compile)
VIEW_PASSES: Tuple[Pass, ...] = (
    Pass("view_caches", view_caches,
         "option caches: nested aggregates a relation restricts become view caches"),
    Pass("row_caches", row_caches,
         "nested sums of per-row comparisons with an aggregate become caches keyed by inputs"),
    Pass("view_maps", view_maps, "the level-0 maps: the view state and its multisets"),
    Pass("reevaluate", reevaluate, "depth 0: a `:=` statement per level-0 column and relation"),
    Pass("maintain", maintain, "depth >= 1: triggers for each level-0 column (DELTA_PASSES)"),
)

#: per map column and base relation its query reads (Compiler.compile_column)
DELTA_PASSES: Tuple[Pass, ...] = (
    Pass("delta", take_delta, "the delta of the column's query for a batch of the relation"),
    Pass("normalize", normalize_delta,
         "rule 2: polynomial expansion, simplification; stop at zero"),
    Pass("materialize", materialize, "each monomial's relation parts as maps (MONOMIAL_PASSES)"),
    Pass("simplify", simplify_statement, "combine and cancel the materialized terms; stop if none"),
    Pass("emit", emit, "append `target.column += rhs` to the relation's trigger"),
)

#: per monomial of a delta, and of a nested query in one (Compiler.materialize)
MONOMIAL_PASSES: Tuple[Pass, ...] = (
    Pass("depth_limit", depth_limit, "stop at the depth limit: the monomial keeps its relations"),
    Pass("decorrelate", decorrelate, "rule 4: the monomials of nested queries become maps first"),
    Pass("decompose", split_components, "rules 1, 3: connected components; trigger atoms stay out"),
    Pass("components_to_maps", components_to_maps,
         "each component (cut at many-to-many joins), summed to its shared variables, a map"),
)

#: per map definition a monomial needs, the first rule that gives a map (Compiler.map_for)
MAP_RULES: Tuple[Pass, ...] = (
    Pass("reuse_map", reuse_map, "duplicate elimination: an equal definition's map column"),
    Pass("fuse_map", fuse_map, "fusion: one more value column of the map over the same join"),
    Pass("new_map", new_map, "a new map and its triggers (DELTA_PASSES): the recursion"),
)


def map_name(counter: int, definition: Query) -> str:
    """`m<counter>_<the relations it reads>`, at most 60 characters."""
    rels = "_".join(sorted({a.table.split("/")[-1].split(".")[-1] for m in definition.monomials
                            for a in m.atoms if isinstance(a, Rel)}))
    return f"m{counter}_{safe_name(rels)}"[:60]


PIPELINE: Tuple[Tuple[str, Tuple[Pass, ...]], ...] = (
    ("VIEW_PASSES", VIEW_PASSES),
    ("DELTA_PASSES", DELTA_PASSES),
    ("MONOMIAL_PASSES", MONOMIAL_PASSES),
    ("MAP_RULES", MAP_RULES),
)


def describe() -> str:
    """The pipeline as text: each list, its passes in order with their one-line summary."""
    lines = []
    for title, passes in PIPELINE:
        lines.append(title)
        lines += [f"  {i}. {p.name:<20} {p.doc}" for i, p in enumerate(passes, 1)]
    return "\n".join(lines)
