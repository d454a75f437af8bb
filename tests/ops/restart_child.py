"""A Python process that restarts its Spark session the way notebook users do (run by
tests/ops/test_session_restart.py). Prints one line per check; exits non-zero on a failure.

    python tests/ops/restart_child.py STATE_DIR

1. A plain session (no Viewlet) starts this process's JVM without Viewlet's jar. While it
   runs, configure_spark(...).getOrCreate() returns it unchanged: enable() says what to do.
2. After spark.stop(), a session from configure_spark works: CREATE, REFRESH, SELECT.
3. After another stop, a new session without a new enable() call: statements follow it.
"""
from __future__ import annotations

import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path[:0] = [os.path.join(ROOT, "python"), ROOT]

QUERY = "SELECT k, SUM(v) AS s, COUNT(*) AS n FROM orders GROUP BY k"


def builder():
    from pyspark.sql import SparkSession
    return SparkSession.builder.master("local[1]").appName("viewlet-restart") \
        .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1") \
        .config("spark.driver.memory", "1g")


def append(path, rows):
    import pyarrow as pa
    from deltalake import write_deltalake
    write_deltalake(path, pa.table({"k": pa.array([r[0] for r in rows], pa.int64()),
                                    "v": pa.array([r[1] for r in rows], pa.int64())}),
                    mode="append", configuration={"delta.enableChangeDataFeed": "true"})


def main():
    state = sys.argv[1]
    warehouse, table = os.path.join(state, "wh"), os.path.join(state, "orders")
    import viewlet
    from viewlet.errors import ViewletError
    from tests.spark.oracle import assert_view_matches

    plain = builder().getOrCreate()
    assert plain.range(3).count() == 3
    same = viewlet.configure_spark(builder(), warehouse=warehouse).getOrCreate()
    try:
        viewlet.enable(same)
        print("FAIL enable on a session without the extension succeeded", flush=True)
        sys.exit(1)
    except ViewletError as e:
        print("REFUSED", e.message.replace("\n", " "), flush=True)
    plain.stop()

    append(table, [(1, 10), (1, 5), (2, 7)])
    spark = viewlet.configure_spark(builder(), warehouse=warehouse).getOrCreate()
    viewlet.enable(spark)
    viewlet.register_table(spark, "orders", table)
    spark.sql(f"CREATE INCREMENTAL VIEW totals AS {QUERY}")
    append(table, [(2, 1), (3, 4)])
    print("SECOND", spark.sql("REFRESH INCREMENTAL VIEW totals").first()["status"], flush=True)
    assert_view_matches(spark, "totals", QUERY, engine=False)
    print("CHECKED second session", flush=True)
    spark.stop()

    spark = viewlet.configure_spark(builder(), warehouse=warehouse).getOrCreate()
    shown = [r["view"] for r in spark.sql("SHOW INCREMENTAL VIEWS").collect()]
    print("SHOW", ",".join(shown), flush=True)
    append(table, [(1, -3), (4, 9)])
    print("THIRD", spark.sql("REFRESH INCREMENTAL VIEW totals").first()["status"], flush=True)
    assert_view_matches(spark, "totals", QUERY, engine=False)
    viewlet.enable(spark)                   # enabling again (as the docs say) is fine too
    viewlet.register_table(spark, "orders", table)
    assert_view_matches(spark, "totals", QUERY, engine=False)
    print("CHECKED third session", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
