"""Two processes refreshing one view (run by tests/ops/test_two_refreshers.py as roles a and b,
both started at once). Files in STATE_DIR order the steps; each process prints one line per
event and exits non-zero on a failed check.

    python tests/ops/refresher_child.py STATE_DIR a|b

a: creates the view, appends rows and refreshes, held after computing batch 1 (VIEWLET_PAUSE:
   STATE/hold1 while it exists). Then appends again and refreshes, held at batch 2 the same
   way (STATE/hold2), where the parent kills it.
b: once a holds batch 1 (STATE/hold1.reached), shows HISTORY and refreshes: it must wait for
   a's batch instead of computing it (STATE/b1.done when done). Once the parent killed a at batch 2 (STATE/go), it
   refreshes again: a's lease must not block it (it re-runs batch 2), and the view must equal
   Spark's recompute with every batch committed once.
"""
from __future__ import annotations

import os
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path[:0] = [os.path.join(ROOT, "python"), ROOT]

QUERY = "SELECT k, SUM(v) AS s, COUNT(*) AS n FROM orders GROUP BY k"


def append(path, rows):
    import pyarrow as pa
    from deltalake import write_deltalake
    write_deltalake(path, pa.table({"k": pa.array([r[0] for r in rows], pa.int64()),
                                    "v": pa.array([r[1] for r in rows], pa.int64())}),
                    mode="append", configuration={"delta.enableChangeDataFeed": "true"})


def wait_for(path):
    """The other process or the parent writes `path` when this one may go on."""
    while not os.path.exists(path):
        time.sleep(0.05)


def session(state):
    from pyspark.sql import SparkSession
    import viewlet
    builder = SparkSession.builder.master("local[1]").appName("viewlet-refresher") \
        .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1") \
        .config("spark.driver.memory", "1g") \
        .config("spark.viewlet.progress.afterSeconds", "0") \
        .config("spark.viewlet.engine", os.environ.get("VIEWLET_TEST_ENGINE", "local"))
    spark = viewlet.configure_spark(builder, warehouse=os.path.join(state, "wh")).getOrCreate()
    spark.sparkContext.setLogLevel("OFF")
    viewlet.enable(spark)
    viewlet.register_table(spark, "orders", os.path.join(state, "orders"), replace=True)
    return spark


def refresh(spark, tag):
    row = spark.sql("REFRESH INCREMENTAL VIEW totals").first()
    print(tag, row["batch"], row["status"], flush=True)


def role_a(state):
    spark = session(state)
    spark.sql(f"CREATE INCREMENTAL VIEW totals AS {QUERY}")
    table = os.path.join(state, "orders")
    append(table, [(1, 4), (3, 8)])
    os.environ["VIEWLET_PAUSE"] = f"batch.computed={os.path.join(state, 'hold1')}"
    refresh(spark, "A1")
    wait_for(os.path.join(state, "b1.done"))   # b's REFRESH is over: a new batch is a's
    append(table, [(1, -2), (5, 1)])
    os.environ["VIEWLET_PAUSE"] = f"batch.computed:2={os.path.join(state, 'hold2')}"
    refresh(spark, "A2")                 # the parent kills this process here
    print("A NOT KILLED", flush=True)


def role_b(state):
    spark = session(state)
    import viewlet
    from tests.spark.oracle import assert_view_matches
    wait_for(os.path.join(state, "hold1.reached"))
    top = spark.sql("DESCRIBE INCREMENTAL VIEW totals HISTORY LIMIT 1").first()
    print("HISTORY", top["batch"], top["status"], flush=True)
    refresh(spark, "B1")
    open(os.path.join(state, "b1.done"), "w").close()
    wait_for(os.path.join(state, "go"))
    refresh(spark, "B2")
    assert_view_matches(spark, "totals", QUERY, engine=False)
    records = viewlet.context(spark).ctx.load("totals").manifest.records()
    print("ROWS", " ".join(f"{r.batch}:{r.phase}" for r in records), flush=True)
    print("CHECKED", flush=True)


if __name__ == "__main__":
    (role_a if sys.argv[2] == "a" else role_b)(sys.argv[1])
