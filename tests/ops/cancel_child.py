"""A PySpark process whose REFRESH the parent interrupts with a real SIGINT (run by
tests/ops/test_cancel.py). Prints one line per event; exits non-zero on a failed check.

    python tests/ops/cancel_child.py STATE_DIR

1. `held`: the batch's Spark job evaluates a Python UDF that blocks (after writing
   STATE/udf.reached) while STATE/hold exists. The parent sends SIGINT: only cancelling the
   Spark job ends the REFRESH, which must raise KeyboardInterrupt and leave the batch planned.
2. `paused`: the batch stops after its first map write (VIEWLET_PAUSE, engine/runtime/faults.py;
   STATE/pause.reached tells the parent). SIGINT there must leave a half-written batch that
   the next REFRESH rolls forward exactly once.
After each interrupt: no Spark job of the batch runs, the session still works, the next
REFRESH completes the batch and the view equals Spark's recompute.
"""
from __future__ import annotations

import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path[:0] = [os.path.join(ROOT, "python"), ROOT]

SENTINEL = 999
HELD = "SELECT k, SUM(hold(v)) AS s, COUNT(*) AS n FROM orders GROUP BY k"
PAUSED = "SELECT k, SUM(v) AS s, COUNT(*) AS n FROM orders GROUP BY k"


def append(path, rows):
    import pyarrow as pa
    from deltalake import write_deltalake
    write_deltalake(path, pa.table({"k": pa.array([r[0] for r in rows], pa.int64()),
                                    "v": pa.array([r[1] for r in rows], pa.int64())}),
                    mode="append", configuration={"delta.enableChangeDataFeed": "true"})


def hold_udf(state):
    """hold(v) = v; the sentinel blocks while STATE/hold exists (in the Python worker)."""
    import time
    hold, reached = os.path.join(state, "hold"), os.path.join(state, "udf.reached")

    def hold_value(v):
        if v == SENTINEL:
            with open(reached, "w"):
                pass
            while os.path.exists(hold):
                time.sleep(0.05)
        return v
    return hold_value


def interrupted_refresh(spark, view):
    try:
        status = spark.sql(f"REFRESH INCREMENTAL VIEW {view}").first()["status"]
    except KeyboardInterrupt as e:
        print("INTERRUPTED", view, str(e).replace("\n", " "), flush=True)
        return
    print("NOT INTERRUPTED", view, status, flush=True)
    sys.exit(1)


def after(spark, view, query):
    from tests.spark.oracle import assert_view_matches
    active = list(spark.sparkContext.statusTracker().getActiveJobsIds())
    print("ACTIVE JOBS", view, len(active), flush=True)
    top = spark.sql(f"DESCRIBE INCREMENTAL VIEW {view} HISTORY LIMIT 1").first()
    print("HISTORY", view, top["batch"], top["status"], flush=True)
    print("REFRESH", view, spark.sql(f"REFRESH INCREMENTAL VIEW {view}").first()["status"],
          flush=True)
    records = __import__("viewlet").context(spark).ctx.load(view).manifest.records()
    print("ROWS", view, " ".join(f"{r.batch}:{r.phase}" for r in records), flush=True)
    assert_view_matches(spark, view, query, engine=False)
    print("CHECKED", view, flush=True)


def main():
    state = sys.argv[1]
    from pyspark.sql import SparkSession
    from pyspark.sql.types import LongType
    import viewlet

    builder = SparkSession.builder.master("local[2]").appName("viewlet-cancel") \
        .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2") \
        .config("spark.driver.memory", "1g") \
        .config("spark.viewlet.engine", os.environ.get("VIEWLET_TEST_ENGINE", "local"))
    spark = viewlet.configure_spark(builder, warehouse=os.path.join(state, "wh")).getOrCreate()
    spark.sparkContext.setLogLevel("OFF")
    viewlet.enable(spark)
    spark.udf.register("hold", hold_udf(state), LongType())
    table = os.path.join(state, "orders")
    append(table, [(1, 10), (1, 5), (2, 7)])
    viewlet.register_table(spark, "orders", table)
    spark.sql(f"CREATE INCREMENTAL VIEW held WITH (engine = 'spark') AS {HELD}")
    spark.sql(f"CREATE INCREMENTAL VIEW paused AS {PAUSED}")

    append(table, [(2, SENTINEL), (3, 4)])
    open(os.path.join(state, "hold"), "w").close()
    interrupted_refresh(spark, "held")
    os.remove(os.path.join(state, "hold"))
    after(spark, "held", HELD)

    append(table, [(1, -3), (4, 9)])
    os.environ["VIEWLET_PAUSE"] = f"batch.map_merged={os.path.join(state, 'pause')}"
    open(os.path.join(state, "pause"), "w").close()
    interrupted_refresh(spark, "paused")
    os.remove(os.path.join(state, "pause"))
    after(spark, "paused", PAUSED)
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
