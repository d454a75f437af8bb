"""A view's compiled form: the front end's reading of its query (ViewSpec) and its trigger
program, which a view loaded in any process takes from the program stored with it
(compiler/stored.py is the format; a newer compiler never silently substitutes its own)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Set, Union

from ...calculus.ir import DeltaRel, Rel, walk_atoms
from ...calculus.normalize import fresh_names
from ...compiler.hoivm import compile_view
from ...compiler.program import Program, VALUE
from ...compiler.stored import decode_program, encode_program
from ...errors import StoredProgramError
from ...frontend.spec import COUNT_COLUMN, ViewSpec
from ...frontend.tables import TableInfo, TableResolver
from ...frontend.translator import translate
from .definition import StoredProgram, ViewDefinition, table_ref, table_ref_json


@dataclass
class CompiledView:
    spec: ViewSpec
    program: Program
    depth: Optional[int]
    #: maps over one join share one map (compiler.hoivm's fusion); recorded in the catalog
    fused: bool = True
    #: an IN (subquery) conjunct is its match count (frontend/translator.py); recorded in the catalog
    in_filters: bool = True
    #: the program as the catalog entry keeps it (compiler/stored.py); None for a view created
    #: before programs were stored, whose program was compiled again in this process
    stored: Optional[StoredProgram] = field(default=None, repr=False, compare=False)

    @property
    def table_ids(self) -> Dict[str, str]:
        """relation -> table identity, for the relations the program reads."""
        return {rel: self.spec.tables[rel].id for rel in self.program.relations()}


def compile_definition(sql: str, resolver: TableResolver, depth: Optional[int],
                       caches: bool = False, fused: bool = True,
                       in_filters: bool = True) -> CompiledView:
    """`fused`: maps over one join are one map; `in_filters`: an IN (subquery) conjunct is a
    match count. Both False for views created before the rule, whose catalog entries lack
    the flag: they keep the maps they were created with."""
    with fresh_names():
        spec = translate(sql, resolver, in_filters)
        program = compile_view(spec.group, spec.columns, depth,
                               {n: m.query for n, m in spec.multisets.items()}, caches=caches,
                               fuse=fused, support=COUNT_COLUMN)
    return CompiledView(spec, program, depth, fused, in_filters)


def stored_form(compiled: CompiledView) -> Dict:
    """The program as CREATE stores it with the view (compiler/stored.py's JSON), kept on
    `compiled` too."""
    if compiled.stored is None:
        compiled.stored = StoredProgram(encode_program(compiled.program, compiled.table_ids))
    return compiled.stored.json


def load_definition(entry: ViewDefinition, view: str) -> CompiledView:
    """A view's compiled form from its catalog entry (`view`: its name as SQL): the stored
    program, bound to the front end's reading of the query. The front end runs again (the
    result is read through its ViewSpec); the compiler does not: the program is the one
    CREATE stored, and the front end's reading must be the one that program maintains (its
    view state and multisets, over the same tables), else StoredProgramError with the
    remedy. An entry without a stored program (a view created by an earlier version) is
    compiled again; `CompiledView.stored` is None then, and the engine rebuilds such a view
    before its next batch (its maps cannot be proven to be the ones compiled here)."""
    depth, fused, in_filters = entry.depth, bool(entry.fused), bool(entry.in_filters)
    stored = entry.program
    if stored is None:
        return compile_definition(entry.sql, StoredTables(entry.refs), depth,
                                  bool(entry.caches), fused, in_filters)
    program = decode_program(stored.json, view)
    with fresh_names():
        spec = translate(entry.sql, StoredTables(entry.refs), in_filters)
    compiled = CompiledView(spec, program, depth, fused, in_filters, stored=stored)
    mismatch = _binding_mismatch(compiled, stored)
    if mismatch is not None:
        raise StoredProgramError(
            f"Incremental view {view}: this version of Viewlet reads its query differently from "
            f"the version that created it ({mismatch}), so its stored program cannot be bound "
            f"to the query's result. REFRESH INCREMENTAL VIEW {view} FULL rebuilds its maps "
            "from the base tables with this version's program.")
    return compiled


def _binding_mismatch(compiled: CompiledView, stored: StoredProgram) -> Optional[str]:
    """Why the front end's reading of the query is not the one the stored program maintains
    (None when it is): the same tables, view state (keys and column definitions) and
    multisets, variable names included, since the result is read through them."""
    spec, program = compiled.spec, compiled.program
    if program.depth != compiled.depth:
        return f"depth {program.depth} stored, {compiled.depth} in the catalog entry"
    tables = {rel: spec.tables[rel].id for rel in stored.tables if rel in spec.tables}
    if tables != stored.tables:
        return "its tables differ"
    state = program.maps.get(program.view_map)
    if state is None or tuple(state.keys) != tuple(spec.group) \
            or list(state.values.items()) != list(spec.columns.items()):
        return "its view state differs"
    for name, multiset in spec.multisets.items():
        m = program.maps.get(name)
        if m is None or m.values != {VALUE: multiset.query} or m.group_keys != len(spec.group):
            return f"its multiset {name} differs"
    return None


class RecordingResolver(TableResolver):
    """Wraps the live resolver and remembers what each table reference resolved to."""

    def __init__(self, live: TableResolver):
        self.live = live
        self.refs: Dict[str, TableInfo] = {}

    def resolve(self, parts: Sequence[str]) -> TableInfo:
        info = self.live.resolve(parts)
        self.refs[parts_key(parts)] = info
        return info

    def record(self) -> Dict[str, Dict]:
        """The references as the catalog entry records them (`refs`)."""
        return {k: table_ref_json(t) for k, t in self.refs.items()}


class StoredTables(TableResolver):
    """Resolves a view's tables as recorded at CREATE, so every session compiles the same
    program (schema drift is detected separately, not absorbed)."""

    def __init__(self, refs: Mapping[str, Union[TableInfo, Dict]]):
        self.refs = refs             # as read (TableInfo), or as recorded (JSON)

    def resolve(self, parts: Sequence[str]) -> TableInfo:
        return table_ref(self.refs[parts_key(parts)])


def parts_key(parts: Sequence[str]) -> str:
    return "\x1f".join(parts)


def normalize_value_type(t: str) -> str:
    """Map values accumulate sums: widen so adding batches never overflows or loses scale."""
    m = re.match(r"decimal\((\d+),\s*(\d+)\)", t)
    if m:
        return f"decimal(38,{m.group(2)})"
    if t in ("tinyint", "smallint", "int", "bigint"):
        return "bigint"
    if t in ("float", "double"):
        return "double"
    return t


def relation_columns(program: Program) -> Dict[str, List[str]]:
    """Base columns each relation contributes anywhere in the program."""
    cols: Dict[str, Set[str]] = {}
    for m in program.maps.values():
        for query in m.values.values():
            _collect(query, cols)
    for stmts in program.triggers.values():
        for s in stmts:
            _collect(s.rhs, cols)
    return {r: sorted(c) for r, c in cols.items()}


def _collect(query, cols):
    for a in walk_atoms(query):       # nested aggregates read base columns too
        if isinstance(a, (Rel, DeltaRel)):
            cols.setdefault(a.table, set()).update(a.columns)


__all__ = ["CompiledView", "compile_definition", "load_definition", "stored_form", "StoredTables",
           "RecordingResolver", "normalize_value_type", "relation_columns"]
