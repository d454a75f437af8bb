"""The engine's context: one Spark session, one warehouse, its catalog, and what this process
keeps of its views; the statements run against it (the operations of ops/), and the parts
of the engine reach the session, the store and the catalog through it.

The handle users get (``viewlet.enable(spark)``) is ``viewlet.api.context.Viewlet``: the
user's verbs, over this context (`Viewlet.ctx`)."""
from __future__ import annotations

import logging
import uuid
from typing import Dict, List, Optional

from pyspark.sql import DataFrame, SparkSession

from ..errors import ViewAlreadyExists, ViewNotFound, ViewletError
from ..frontend.lexical import quote_identifier
from ..plan.lower import q
from ..storage.base import TableStore
from .local.executor import LocalEngine
from .local.hotmaps import HotMaps
from .ops.continuous import ContinuousRefresh
from .ops.create import create_view
from .ops.drop import drop_view
from .ops.rebuild import rebuild_view
from .ops.refresh import refresh_view
from .ops.results import Created, Dropped, Refreshed, Registered
from .spark.io import read_table
from .state.catalog import Catalog, Entry, missing_view, validate_name
from .state.history import record_failure
from .state.program import CompiledView, load_definition
from .state.settings import ENGINES, MAP_WRITES, REFRESH_POLICIES, Settings, ViewOptions
from .state.tables import LiveResolver
from .state.view import LoadedView, Resident
from .state.warehouse import WarehouseLayout, normalize_location

log = logging.getLogger("viewlet")

_REGISTER_ATTEMPTS = 3     # an add that lost the name to another process decides again


class EngineContext:
    def __init__(self, spark: SparkSession, warehouse: str, store: TableStore,
                 auto_enable_change_feed: Optional[bool] = None):
        self.spark = spark
        self.layout = WarehouseLayout(warehouse)
        self.store = store
        for prefix in self.layout.owned_prefixes():
            self.store.own(prefix)
        self.catalog = Catalog(self.store, self.layout)
        self._auto_enable_change_feed = auto_enable_change_feed
        # view id -> what this process keeps of the view (its compiled program, what is
        # derived from it, what its batches leave), while its stored program is the same
        self._resident: Dict[str, Resident] = {}
        self._continuous = None
        self._local_engine = None
        self._hot_maps = None

    @property
    def hot_maps(self):
        """Maps hot in memory (local/hotmaps.py), within spark.viewlet.local.memory."""
        if self._hot_maps is None:
            self._hot_maps = HotMaps(Settings(self.spark).memory_budget)
        return self._hot_maps

    @property
    def local_engine(self):
        """The local target's engine (batch/local.py), started on first use."""
        if self._local_engine is None:
            self._local_engine = LocalEngine(memory_limit=Settings(self.spark).engine_memory)
        return self._local_engine

    @property
    def auto_enable_change_feed(self) -> bool:
        """Whether CREATE may turn on a base table's change data feed (a commit to the user's
        table) for views without the enable_change_data_feed option: set on this context
        (True / False), else the session's spark.viewlet.enableChangeDataFeed (default off)."""
        if self._auto_enable_change_feed is not None:
            return self._auto_enable_change_feed
        return Settings(self.spark).auto_enable_change_feed

    @auto_enable_change_feed.setter
    def auto_enable_change_feed(self, value: Optional[bool]):
        self._auto_enable_change_feed = value

    @property
    def warehouse(self) -> str:
        return self.layout.root

    def resolver(self) -> LiveResolver:
        return LiveResolver(self)

    # -- views -----------------------------------------------------------------------------
    def create_view(self, name: str, sql: str, depth: Optional[int] = None,
                    if_not_exists: bool = False, caches: bool = False,
                    map_writes: str = "append", engine: Optional[str] = None,
                    enable_change_data_feed: Optional[bool] = None,
                    refresh_policy: Optional[str] = None) -> Created:
        """CREATE INCREMENTAL VIEW (ops/create.py), its options checked first (the user's
        documentation: viewlet.api.context.Viewlet.create_view)."""
        if depth is not None and (not isinstance(depth, int) or depth < 0):
            raise ViewletError(f"depth must be a non-negative integer or unlimited, not {depth!r}")
        if map_writes not in MAP_WRITES:
            raise ViewletError(f"map_writes must be one of {', '.join(MAP_WRITES)}, not {map_writes!r}")
        if engine is not None and engine not in ENGINES:
            raise ViewletError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
        if refresh_policy is not None:
            refresh_policy = " ".join(str(refresh_policy).upper().split())
            if refresh_policy not in REFRESH_POLICIES:
                raise ViewletError(f"refresh_policy must be one of {', '.join(REFRESH_POLICIES)}, "
                                   f"not {refresh_policy!r}")
        options = ViewOptions(engine, map_writes, None if enable_change_data_feed is None
                              else bool(enable_change_data_feed), refresh_policy)
        return create_view(self, name, sql, depth, if_not_exists, caches=caches,
                           options=options)

    def refresh(self, name: str, full: bool = False,
                max_commits: Optional[int] = None) -> Refreshed:
        """REFRESH INCREMENTAL VIEW [FULL] (ops/refresh.py, ops/rebuild.py); a refresh that
        fails is recorded in the view's history."""
        try:
            if full:
                return rebuild_view(self, name)
            return refresh_view(self, name, max_commits)
        except ViewNotFound:
            raise
        except Exception as e:
            record_failure(self, name, e)
            raise

    # -- continuous mode (ops/continuous.py) ----------------------------------------------
    @property
    def continuous(self):
        if self._continuous is None:
            self._continuous = ContinuousRefresh(self)
        return self._continuous

    def start(self, name: Optional[str] = None, every: Optional[float] = None,
              max_commits: Optional[int] = None):
        """Refresh `name` (None: every view with a refresh interval) in the background."""
        self.continuous.start(name, every, max_commits)

    def refresh_status(self, name: str):
        """The background refresh of `name` running in this session (its batches, its last
        error), or None (ops/continuous.py)."""
        refresher = self._continuous
        if refresher is None or not refresher.running(name):
            return None
        return refresher.status.get(name.lower())

    def stop(self, name: Optional[str] = None, timeout: Optional[float] = None):
        """Stop background refreshes (None: all; waits for the batch in flight)."""
        if self._continuous is not None:
            self._continuous.stop(name, timeout)

    def refresh_view(self, name: str, max_commits: Optional[int] = None,
                     until: Optional[Dict[str, int]] = None) -> Refreshed:
        """One view's REFRESH as a step of another statement: each view a CREATE or a chain
        refresh brings to common base-table versions (ops/chains.py)."""
        return refresh_view(self, name, max_commits, until)

    def drop_view(self, name: str, if_exists: bool = False) -> Dropped:
        """DROP INCREMENTAL VIEW (ops/drop.py)."""
        return drop_view(self, name, if_exists)

    def view_names(self) -> List[str]:
        """The names of the warehouse's incremental views."""
        return [e.name for e in self.catalog.entries("view")]

    def load(self, name: str) -> LoadedView:
        """The view as a statement sees it: its definition, compiled program, settings and
        manifest (batches, history).

        Raises:
            ViewNotFound: no such view.
        """
        entry = self.catalog.find(name, "view")
        if entry is None:
            raise missing_view(name)
        key = _compiled_key(entry)
        resident = self._resident.get(entry.id)
        if resident is None or resident.key != key:
            compiled = load_definition(entry.definition, quote_identifier(entry.name))
            resident = self._resident[entry.id] = Resident(compiled, key)
        return LoadedView(self, entry, resident)

    def remember(self, entry: Entry, compiled: CompiledView):
        """The view just created (its compiled program needs no load)."""
        self._resident[entry.id] = Resident(compiled, _compiled_key(entry))

    def forget(self, view_id: str):
        self._resident.pop(view_id, None)

    def read_view(self, name: str, version: Optional[int] = None) -> DataFrame:
        """The view's rows (its result table, output columns under their SQL names)."""
        view = self.load(name)
        df = read_table(self.spark, self.store, view.result_path, version)
        cols = view.definition.result.columns
        return df.selectExpr(*[f"{q(c.physical)} AS {q(c.name)}" for c in cols])

    # -- base tables -----------------------------------------------------------------------
    def register_table(self, name: str, path: str, replace: bool = False) -> Registered:
        validate_name(name)
        location = normalize_location(path)
        if not self.store.exists(location):
            raise ViewletError(f"No Delta table at {location}: register_table needs an existing "
                               "Delta table.")
        # Processes starting together (jobs, notebooks) register the same tables at once: the
        # add that loses the name re-reads the catalog and decides again against the winner.
        for _ in range(_REGISTER_ATTEMPTS):
            existing = self.catalog.find(name)
            if existing is not None:
                if existing.kind == "view":
                    raise ViewletError(f"'{name}' is already an incremental view.")
                if existing.location == location:
                    return Registered(name, location, "registered")
                if not replace:
                    raise ViewletError(f"Table name '{name}' is already registered for "
                                       f"{existing.location}. Pass replace=True to point it "
                                       "elsewhere.")
                self.catalog.remove(existing.id)
            try:
                self.catalog.add(Entry(uuid.uuid4().hex, "table", name, location, {}))
                return Registered(name, location, "registered")
            except ViewAlreadyExists:
                continue
        raise ViewletError(f"Table name '{name}' kept being registered by other processes at the "
                           "same time; register it again once they are done.")

    def resolve_relation(self, parts: List[str]) -> Optional[DataFrame]:
        """A DataFrame for a table reference Spark's catalog does not know, or None."""
        if len(parts) == 2 and parts[0].lower() == "delta":
            location = normalize_location(parts[1])
            if not self.store.exists(location):
                return None
            return read_table(self.spark, self.store, location)
        if len(parts) != 1:
            return None
        entry = self.catalog.find(parts[0])
        if entry is None:
            return None
        if entry.kind == "view":
            return self.read_view(entry.name)
        return read_table(self.spark, self.store, entry.location)


def _compiled_key(entry: Entry) -> str:
    """What a view's compiled form follows from: its stored program (its fingerprint), or
    for a view created before programs were stored, its query."""
    program = entry.definition.program
    return program.fingerprint if program else entry.definition.sql
