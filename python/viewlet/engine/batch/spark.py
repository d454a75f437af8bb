"""The Spark target: the batch plan's Spark text over DataFrames (the batch's own rows staged
as Parquet files), in a clone of the user's session with adaptive execution off; each
phase's packed rows are collected to the driver as Arrow. By default the phases run as the
local target's DuckDB queries in one Spark task (batch/task_phase.py). Under auto, a phase
reading no more rows than the local target is given (spark.viewlet.local.maxInputRows) runs
in the driver's DuckDB instead (`SparkTarget.in_driver`). Also: map rows summed by key on Spark,
for every part of the engine that sums a DataFrame of map rows.
"""
from __future__ import annotations

import logging
from typing import Dict, Optional

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from ...plan.batch import Phase
from ...plan.lower import q
from ...storage.arrow import plain_types
from ..spark.io import frame_arrow
from ..state.settings import SPARK
from .leaves import LeafReader, SparkLeaves
from .local import LOCAL_FAILURES, driver_phase_rows, failure_text
from .task_phase import local_master, run_in_task
from .target import ArrowTarget, summed_sql

log = logging.getLogger("viewlet")

#: rows of batch input per shuffle partition of a Spark batch (at least one partition, at
#: most the session's spark.sql.shuffle.partitions)
ROWS_PER_PARTITION = 500_000


def batch_session(view, input_rows: Optional[int]) -> SparkSession:
    """The Spark session a batch query runs in: a clone of the user's session, taken per
    batch (about 2 ms), so it has everything the user's queries see (functions and UDFs,
    temporary views, the current database, every SQL setting) and only two settings of its
    own: adaptive execution off, so that a query's stages run as one Spark job (plus one per
    broadcast; adaptive execution ran each shuffle stage as a job of its own: a batch of
    TPC-H Q20 used to run 118 jobs, 69 now, Q17a 22 -> 12, and they ran faster too), and
    shuffle partitions sized to the batch. The user's session is never changed."""
    user = view.ctx.spark
    # cloneSession is Scala's private[sql], public in bytecode: py4j reaches it
    session = SparkSession(user.sparkContext, user._jsparkSession.cloneSession())
    session.conf.set("spark.sql.adaptive.enabled", "false")
    most = view.settings.shuffle_partitions
    wanted = max(1, min(most, -(-(input_rows or 0) // ROWS_PER_PARTITION)))
    session.conf.set("spark.sql.shuffle.partitions", str(wanted))
    # Delta tables hold timestamps as INT64 microseconds (Spark writes INT96 by default)
    session.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    return session


class SparkTarget(ArrowTarget):
    """The plan's phases as Spark queries in a batch session of their own; `input_rows`
    (the policy's estimate) sizes its shuffles; `looked_up`: lookups already read."""

    name = SPARK

    def __init__(self, view, record, deltas: Dict[str, pa.Table], input_rows: Optional[int],
                 looked_up: Optional[LeafReader] = None, small_in_driver: bool = False):
        """`small_in_driver`: phases reading at most spark.viewlet.local.maxInputRows rows
        run in the driver's DuckDB (policy.small_work_in_driver)."""
        self.view = view
        self.scratch = view.scratch_dir(record.batch)
        self.spark = batch_session(view, input_rows)
        self.input_rows = input_rows
        self.leaves = SparkLeaves(view, record, deltas, self.scratch, self.spark, looked_up)
        self.small_in_driver = small_in_driver
        self.driver_phases = 0
        self.computed: Dict[int, pa.Table] = {}     # id(phase) -> its rows, from `begin`

    def begin(self, phases) -> None:
        """A batch of several phases runs in one task, one Spark job (batch/task_phase.py),
        when each phase may (`task_fits`), unless small phases run in the driver; a batch
        the task cannot compute runs phase by phase."""
        if len(phases) < 2 or self.small_in_driver or not self.task_fits():
            return
        rows = run_in_task(self.view, self.spark, phases, self.leaves)
        if rows is not None:
            self.computed = {id(phase): r for phase, r in zip(phases, rows)}

    def execute(self, phase: Phase) -> pa.Table:
        rows = self.computed.pop(id(phase), None)
        if rows is not None:
            return plain_types(rows)
        rows = self.in_driver(phase) if self.small_in_driver else None
        if rows is not None:
            self.driver_phases += 1
            return rows
        if len(phase.leaves) >= 2 and self.task_fits():
            # Spark's plan of a one-leaf phase is one job already, and quicker than a
            # Python task (TPC-H Q1)
            rows = run_in_task(self.view, self.spark, [phase], self.leaves)
            if rows is not None:
                return plain_types(rows[0])
        frames = {name: self.leaves.bind(leaf) for name, leaf in phase.leaves.items()}
        return frame_arrow(self.spark.sql(phase.spark_text, **frames))

    def in_driver(self, phase: Phase) -> Optional[pa.Table]:
        """The phase's packed rows computed by the driver's DuckDB, as the local target does,
        when its leaves hold at most spark.viewlet.local.maxInputRows rows (the batch's
        changes, earlier phases' deltas and the rows lookups kept, which the driver holds
        already; maps and tables read whole, counted from their statistics); else None
        (Spark runs it). A phase the local target fails (an overflow under ANSI mode) runs
        on Spark, which gives Spark's own result or error, and so do the batch's later
        phases."""
        limit, rows = self.view.settings.max_input_rows, 0
        for leaf in phase.leaves.values():
            rows += self.leaves.rows_in_driver(leaf)
            if rows > limit:
                return None
        try:
            return driver_phase_rows(self.view, phase, self.leaves)
        except LOCAL_FAILURES as e:
            log.info("Viewlet: a phase of a Spark batch failed in the driver (%s); it runs on "
                     "Spark", failure_text(e))
            self.small_in_driver = False
            return None

    def task_fits(self) -> bool:
        """Whether the batch's phases may run in a task (batch/task_phase.py): the local
        target's engine is DuckDB and one machine's DuckDB can take the batch: a local
        master's (its task's DuckDB uses every core Spark's plan would), or a batch reading
        no more rows than the driver's DuckDB is given (spark.viewlet.local.maxInputRows;
        a larger one keeps Spark's plan, spread over the executors)."""
        settings = self.view.settings
        if settings.phase_engine != "duckdb":
            return False
        return local_master(self.spark) or \
            (self.input_rows or 0) <= settings.max_input_rows

    def __exit__(self, *exc) -> None:
        """Drop the staged files of the view's previous Spark batch, keep this batch's until
        the next one: Spark jobs were seen still reading a batch's files after its result
        had been collected (FILE_NOT_EXIST in a benchmark's log, results unaffected), which a
        drop right away turns into failing tasks. DROP removes the view's directory, scratch
        included."""
        runtime = self.view.runtime
        previous, runtime.scratch = runtime.scratch, self.scratch
        if previous is not None and previous != self.scratch:
            self.view.ctx.store.drop(previous)


def sum_by_keys(df: DataFrame, keys, values: Dict[str, str]) -> DataFrame:
    """Group a DataFrame of map rows by keys, sum each value column cast to its map type,
    drop all-zero rows."""
    return df.sparkSession.sql(summed_sql("{d}", keys, values, q), d=df)
