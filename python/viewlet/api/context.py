"""The handle ``viewlet.enable(spark)`` returns: the user's verbs on one Spark session and one
warehouse, with typed results, and renderings of EXPLAIN and DESCRIBE for notebooks. The
engine behind it (``Viewlet.ctx``, viewlet.engine.context.EngineContext) is what statements
run against; its parts are internals."""
from __future__ import annotations

from typing import List, Optional

from pyspark.sql import DataFrame, SparkSession

from ..engine.context import EngineContext
from ..engine.ops.results import Created, Dropped, Refreshed, Registered
from ..engine.runtime.cancel import interruptible
from ..storage.base import TableStore
from ..storage.deltars import DeltaRsStore
from .display import Description, Explanation


class Viewlet:
    """Viewlet on one Spark session and one warehouse.

    Args:
        spark: the session whose SQL runs the views' batches.
        warehouse: directory or URI holding the views' tables and catalog.
        store: the Delta implementation (default: delta-rs, no JVM jars needed).
        auto_enable_change_feed: turn on base tables' change data feed at CREATE
            (None: the session's ``spark.viewlet.enableChangeDataFeed``, off by default).
    """

    def __init__(self, spark: SparkSession, warehouse: str, store: Optional[TableStore] = None,
                 auto_enable_change_feed: Optional[bool] = None):
        self._ctx = EngineContext(spark, warehouse, store or DeltaRsStore(),
                                  auto_enable_change_feed)

    @property
    def ctx(self) -> EngineContext:
        """The engine behind the handle (what statements run against): internals."""
        return self._ctx

    @property
    def spark(self) -> SparkSession:
        return self.ctx.spark

    @property
    def warehouse(self) -> str:
        return self.ctx.warehouse

    @property
    def auto_enable_change_feed(self) -> bool:
        """Whether CREATE may turn on a base table's change data feed (a commit to the user's
        table) for views without the enable_change_data_feed option: set here (True /
        False), else the session's spark.viewlet.enableChangeDataFeed (default off)."""
        return self.ctx.auto_enable_change_feed

    @auto_enable_change_feed.setter
    def auto_enable_change_feed(self, value: Optional[bool]):
        self.ctx.auto_enable_change_feed = value

    # -- views --------------------------------------------------------------------------------
    @interruptible(lambda self, name, *a, **k: f"create_view('{name}')")
    def create_view(self, name: str, sql: str, depth: Optional[int] = None,
                    if_not_exists: bool = False, caches: bool = False,
                    map_writes: str = "append", engine: Optional[str] = None,
                    enable_change_data_feed: Optional[bool] = None,
                    refresh_policy: Optional[str] = None) -> Created:
        """CREATE INCREMENTAL VIEW from Python: compile, load the maps, publish the view.

        Args:
            name: the view's name (Spark's identifier rules).
            sql: its defining SELECT.
            depth: maintenance depth (None: unlimited, higher-order; 1: first-order; 0:
                recompute).
            if_not_exists: do nothing when the view exists.
            caches: keep inequality-correlated nested queries as view caches
                (compiler/caches.py).
            map_writes: how a batch writes its map deltas, 'append' (appended and compacted
                now and then) or 'merge' (one MERGE per map).
            engine: where batches run, 'auto', 'local', 'spark' or 'distributed'; None: the
                session's spark.viewlet.engine, else auto.
            enable_change_data_feed: True lets CREATE turn on base tables' change data
                feeds; None: `auto_enable_change_feed`.
            refresh_policy: Databricks' REFRESH POLICY, 'AUTO', 'INCREMENTAL',
                'INCREMENTAL STRICT' or 'FULL' (when a REFRESH recomputes the view:
                docs/sql-reference.md); None: none, a REFRESH that cannot apply the changes
                is refused with the remedy.

        Returns:
            The statement's result (view, status, maps, rows, seconds).

        Raises:
            UnsupportedSQL: a construct Viewlet cannot maintain (named, with its position).
            TableNotFound, ChangeFeedError, ViewAlreadyExists, ViewletError: as their
                messages say; nothing is left half-built.
        """
        return self.ctx.create_view(name, sql, depth, if_not_exists, caches, map_writes, engine,
                                    enable_change_data_feed, refresh_policy)

    @interruptible(lambda self, name, *a, **k: f"refresh('{name}')")
    def refresh(self, name: str, full: bool = False,
                max_commits: Optional[int] = None) -> Refreshed:
        """REFRESH INCREMENTAL VIEW: apply the base tables' commits since the last batch as
        one batch, exactly once (`full`: rebuild from the base tables).

        Args:
            name: the view.
            full: recompute the view and its maps (REFRESH ... FULL).
            max_commits: at most this many commits per base table in the batch.

        Returns:
            The statement's result (view, batch, changes, rows changed, seconds, status).

        Raises:
            ViewNotFound: no such view.
            ChangeFeedError: a base table's change feed is off or its history vacuumed.
            BaseTableChanged, UpstreamViewChanged: a table the view reads changed in a way
                a batch cannot absorb (the message names the remedy).
            ViewletError: the batch failed; it is recorded in the view's history and nothing
                of it is applied (the next REFRESH plans it again).
        """
        return self.ctx.refresh(name, full, max_commits)

    def drop_view(self, name: str, if_exists: bool = False) -> Dropped:
        """DROP INCREMENTAL VIEW: the view, its maps and its catalog entry.

        Raises:
            ViewNotFound: no such view and not `if_exists`.
            ViewletError: other views read this one (drop them first).
        """
        return self.ctx.drop_view(name, if_exists)

    def view_names(self) -> List[str]:
        """The names of the warehouse's incremental views."""
        return self.ctx.view_names()

    def read_view(self, name: str, version: Optional[int] = None) -> DataFrame:
        """The view's rows (at a version of its result table, when given).

        Raises:
            ViewNotFound: no such view.
        """
        return self.ctx.read_view(name, version)

    def register_table(self, name: str, path: str, replace: bool = False) -> Registered:
        """Give the Delta table at `path` a name usable in view definitions and queries.

        Raises:
            ViewletError: no Delta table at `path`, or the name is taken and `replace` is
                False.
        """
        return self.ctx.register_table(name, path, replace)

    # -- continuous mode ----------------------------------------------------------------------
    def start(self, name: Optional[str] = None, every: Optional[float] = None,
              max_commits: Optional[int] = None):
        """Refresh `name` (None: every view with a refresh interval) in the background of
        this session, `every` seconds, at most `max_commits` commits per base table a batch."""
        self.ctx.start(name, every, max_commits)

    def stop(self, name: Optional[str] = None, timeout: Optional[float] = None):
        """Stop background refreshes (None: all; waits for the batch in flight)."""
        self.ctx.stop(name, timeout)

    # -- notebook renderings (HTML in Jupyter, text as repr) ----------------------------------
    def explain(self, name: str) -> Explanation:
        """EXPLAIN INCREMENTAL VIEW `name` as an object Jupyter shows as HTML tables.

        Raises:
            ViewNotFound: no incremental view of that name.
        """
        return Explanation.of(self.ctx.load(name))

    def describe(self, name: str) -> Description:
        """DESCRIBE INCREMENTAL VIEW `name` as an object Jupyter shows as an HTML table.

        Raises:
            ViewNotFound: no incremental view of that name.
        """
        return Description.of(self.ctx.load(name))
