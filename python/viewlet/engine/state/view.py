"""A view as one statement sees it (`LoadedView`): its catalog entry and definition, its
compiled program, its settings, where its tables live; and what this process keeps of it
between statements (`Resident`): what is derived from its program once (`Derived`) and what
one batch leaves for the next (`Runtime`)."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from functools import cached_property
from typing import Dict, List, Optional, Tuple, Union

import pyarrow as pa

from ...frontend.ordering import TopN
from ...plan.batch import BatchPlan, Phase, build_plan
from ...plan.local.types import NotLocal
from ..spark.io import arrow_schema
from .catalog import Entry
from .definition import MapSchema, ViewDefinition
from .kept import map_location
from .manifest import Manifest, Txn
from .program import CompiledView, relation_columns
from .settings import Settings


@dataclass
class Derived:
    """What this process derives from a view's program and definition once, on first use
    (kept while the program is the view's)."""
    map_arrow: Dict[str, pa.Schema] = field(default_factory=dict)
    #: (changed relations, relations with changes) -> the batch plan (plan/batch.py)
    plans: Dict[Tuple[tuple, tuple], BatchPlan] = field(default_factory=dict)
    #: (phase, ANSI mode) -> the phase in DuckDB's SQL, or why it has none (batch/local.py)
    local_sql: Dict[Tuple[int, bool], Tuple[Phase, Union[str, NotLocal]]] = \
        field(default_factory=dict)
    #: ANSI mode -> why the local target cannot run the view, None if it can
    local_blocker: Dict[bool, Optional[str]] = field(default_factory=dict)
    #: the result rows' SQL over a state delta, and the result table's columns
    result_sql: Optional[Tuple[str, List[str]]] = None
    result_arrow: Optional[pa.Schema] = None
    #: ANSI mode -> the result rows' SQL in DuckDB's, or why it has none
    result_sql_local: Dict[bool, Union[str, NotLocal]] = field(default_factory=dict)
    window_sql: Optional[str] = None
    window_sql_local: Dict[bool, Union[str, NotLocal]] = field(default_factory=dict)
    window_arrow: Optional[pa.Schema] = None


@dataclass
class Runtime:
    """What one batch of a view leaves for the next in this process."""
    #: the staged files of the last batch that ran on Spark (dropped by the next one)
    scratch: Optional[str] = None
    #: a top-N view's ordered rows, at the ordered table's version that holds them
    ordered: Optional[Tuple[int, pa.Table]] = None
    #: relation -> the base table's schema last found compatible (batch/drift.py)
    checked_schemas: Dict[str, object] = field(default_factory=dict)


@dataclass
class Resident:
    """What this process keeps of a view between statements (EngineContext keeps one per
    view, replaced when its program is)."""
    compiled: CompiledView
    key: Optional[str] = None          # what the compiled form follows from (context.py)
    derived: Derived = field(default_factory=Derived)
    runtime: Runtime = field(default_factory=Runtime)


class LoadedView:
    """`settings`: the statement's, when it read them already (a view being created)."""

    def __init__(self, ctx, entry: Entry, resident: Resident,
                 settings: Optional[Settings] = None):
        self.ctx, self.entry = ctx, entry
        self.definition: ViewDefinition = entry.definition
        self.compiled: CompiledView = resident.compiled
        self.derived, self.runtime = resident.derived, resident.runtime
        self._settings = settings

    id = property(lambda self: self.entry.id)
    name = property(lambda self: self.entry.name)

    @property
    def settings(self) -> Settings:
        """The statement's settings: the view's options over the session's (read on first
        use, then kept)."""
        if self._settings is None:
            self._settings = Settings(self.ctx.spark, self.definition.options)
        return self._settings

    @cached_property
    def _columns(self):
        return relation_columns(self.compiled.program)

    def columns_of(self, relation: str) -> List[str]:
        return self._columns.get(relation, [])

    def table_path(self, relation: str) -> str:
        return self.compiled.spec.tables[relation].id

    def map_path(self, name: str) -> str:
        return map_location(self.entry.location, name, self.definition.maps[name])

    def map_schema(self, name: str) -> MapSchema:
        return self.definition.maps[name]

    def map_arrow_schema(self, name: str) -> pa.Schema:
        cache = self.derived.map_arrow
        if name not in cache:
            cache[name] = arrow_schema(self.map_schema(name).struct())
        return cache[name]

    def zero_columns(self, name: str) -> List[str]:
        """The columns of map `name` whose sums all 0 mean a row is gone."""
        return self.compiled.program.maps[name].zero_columns()

    @property
    def result_path(self) -> str:
        return self.ctx.layout.result_table(self.id)

    @property
    def ordered_path(self) -> str:
        return self.ctx.layout.ordered_table(self.id)

    @property
    def top_n(self) -> Optional[TopN]:
        """ORDER BY ... LIMIT of a top-N view (None otherwise, and at depth 0: recomputed)."""
        return self.compiled.spec.top_n if self.compiled.depth != 0 else None

    @property
    def manifest(self) -> Manifest:
        return Manifest(self.ctx.store, self.ctx.layout.manifest_table(self.id))

    @property
    def app_id(self) -> str:
        return f"viewlet:{self.id}"

    def txn(self, batch: int) -> Txn:
        """The transaction id batch `batch` commits every table of the view with."""
        return Txn(self.app_id, batch)

    def scratch_dir(self, batch: int) -> str:
        """Where one attempt at a batch keeps its input files (removed when it ends)."""
        return self.ctx.layout.scratch_dir(self.id, f"{batch}-{uuid.uuid4().hex[:12]}")

    def batch_plan(self, changed, active) -> BatchPlan:
        """The batch SQL for these changed relations (built once per view and set)."""
        plans = self.derived.plans
        key = (changed, active)
        if key not in plans:
            plans[key] = build_plan(self, changed, active)
        return plans[key]
