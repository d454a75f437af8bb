"""A PySpark script whose progress output tests/ops/test_progress.py captures, through a
pseudo-terminal and through a pipe.

    python tests/ops/progress_child.py STATE_DIR

Its Spark stages run for seconds (a Python UDF that sleeps a little per row), so Spark's
console progress bar would draw: first for a plain Spark job (between `MARK spark` lines on
stderr), then around Viewlet's CREATE (initial load) and REFRESH on Spark (between `MARK
viewlet` lines), where Viewlet's display must be the only one, then for a plain Spark job
again (`MARK again`).
"""
from __future__ import annotations

import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path[:0] = [os.path.join(ROOT, "python"), ROOT]

ROWS = 24
QUERY = "SELECT k, SUM(slow(v)) AS s, COUNT(*) AS n FROM orders GROUP BY k"


def slow(v):
    import time
    time.sleep(0.05)
    return v


def append(path, start, n):
    import pyarrow as pa
    from deltalake import write_deltalake
    write_deltalake(path, pa.table({"k": pa.array([i % 4 for i in range(start, start + n)],
                                                  pa.int64()),
                                    "v": pa.array(list(range(start, start + n)), pa.int64())}),
                    mode="append", configuration={"delta.enableChangeDataFeed": "true"})


def mark(what):
    print(f"MARK {what}", file=sys.stderr, flush=True)


def main():
    state = sys.argv[1]
    from pyspark.sql import SparkSession
    from pyspark.sql.types import LongType
    import viewlet

    builder = SparkSession.builder.master("local[2]").appName("viewlet-progress") \
        .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2") \
        .config("spark.driver.memory", "1g").config("spark.ui.showConsoleProgress", "true") \
        .config("spark.viewlet.progress.afterSeconds", "0")
    spark = viewlet.configure_spark(builder, warehouse=os.path.join(state, "wh")).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    viewlet.enable(spark)
    spark.udf.register("slow", slow, LongType())
    table = os.path.join(state, "orders")
    append(table, 0, ROWS)
    viewlet.register_table(spark, "orders", table)

    mark("spark")
    spark.range(0, ROWS, 1, 2).selectExpr("slow(id) AS x").collect()
    mark("spark")
    mark("viewlet")
    spark.sql(f"CREATE INCREMENTAL VIEW totals WITH (engine = 'spark') AS {QUERY}")
    append(table, ROWS, ROWS // 2)
    status = spark.sql("REFRESH INCREMENTAL VIEW totals").first()["status"]
    mark("viewlet")
    mark("again")                        # Spark's bar is back for jobs of its own
    spark.range(0, ROWS, 1, 2).selectExpr("slow(id) AS x").collect()
    mark("again")
    print("REFRESH", status, flush=True)


if __name__ == "__main__":
    main()
