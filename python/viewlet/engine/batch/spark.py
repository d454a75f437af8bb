"""The Spark target: the batch plan's Spark text over DataFrames (leaves staged as Parquet
files), in a clone of the user's session with adaptive execution off; map rows summed by key
on Spark.
"""
from __future__ import annotations

from typing import Dict, Optional

import pyarrow as pa
from pyspark.sql import SparkSession

from ...plan.lower import q
from ..spark.io import frame_arrow
from ..state.settings import conf
from .leaves import SparkLeaves
from .target import run_phases


#: rows of batch input per shuffle partition of a Spark batch (at least one partition, at
#: most the session's spark.sql.shuffle.partitions)
ROWS_PER_PARTITION = 500_000


def batch_session(view, input_rows: Optional[int]):
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
    most = int(conf(user, "spark.sql.shuffle.partitions", "200") or 200)
    wanted = max(1, min(most, -(-(input_rows or 0) // ROWS_PER_PARTITION)))
    session.conf.set("spark.sql.shuffle.partitions", str(wanted))
    # Delta tables hold timestamps as INT64 microseconds (Spark writes INT96 by default)
    session.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    return session


def run_spark(view, plan, record, deltas, stats) -> Dict[str, pa.Table]:
    scratch = view.scratch_dir(record.batch)
    spark = batch_session(view, stats.get("input_rows"))
    try:
        inputs = SparkLeaves(view, record, deltas, scratch, spark)

        def execute(phase):
            frames = {name: inputs.bind(leaf) for name, leaf in phase.leaves.items()}
            df = spark.sql(phase.spark_text, **frames)
            return frame_arrow(df)

        return run_phases(view, plan, inputs, execute, stats)
    finally:
        _retire_scratch(view, scratch)


def _retire_scratch(view, scratch: str):
    """Drop the staged files of the view's previous Spark batch, keep this batch's until the
    next one: Spark jobs were seen still reading a batch's files after its result had been
    collected (FILE_NOT_EXIST in a benchmark's log, results unaffected), which a drop right
    away turns into failing tasks. DROP removes the view's directory, scratch included."""
    previous = view.compiled.cache.get("scratch")
    view.compiled.cache["scratch"] = scratch
    if previous is not None and previous != scratch:
        view.ctx.store.drop(previous)


def sum_by_keys(df, keys, values: Dict[str, str]):
    """Group a DataFrame by keys, sum each value column cast to its map type, drop all-zero
    rows (the initial load of a map)."""
    sums = [f"CAST(COALESCE(SUM({q(c)}), 0) AS {t}) AS {q(c)}" for c, t in values.items()]
    expr_keys = ", ".join(q(k) for k in keys)
    nonzero = " OR ".join(f"{q(c)} <> 0" for c in values)
    sql = (f"SELECT {expr_keys + ', ' if keys else ''}{', '.join(sums)} FROM {{d}}"
           + (f" GROUP BY {expr_keys}" if keys else ""))
    return df.sparkSession.sql(f"SELECT * FROM ({sql}) WHERE {nonzero}", d=df)
