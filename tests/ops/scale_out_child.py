"""A driver whose JVM heap is smaller than one batch (tests/ops/test_scale_out.py).

Run as `python scale_out_child.py <root> <rows>` with SPARK_HOME at the pyspark package:
local-cluster executors, a 256 MB driver heap, a view over a table that then gets one
batch of `rows` rows holding more bytes than that heap (and fewer rows than
spark.viewlet.distributed.minChangeRows: their bytes decide). The batch must run distributed
(nothing collected) and the view must equal Spark's answer; comparisons run on the
executors (symmetric difference counted), never by collecting the rows. Prints one JSON
line of facts for the test to check."""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

from deltalake import DeltaTable, write_deltalake  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

import viewlet  # noqa: E402

QUERY = ("SELECT k, tag, COUNT(*) AS n, SUM(v) AS total, MAX(v) AS top "
         "FROM delta.`{t}` GROUP BY k, tag")


def rows(n: int, seed: int, keys: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    k = rng.integers(0, keys, n)
    # wide rows (13 KB): the batch outgrows the driver's heap with few rows (the rows' count
    # costs time, their bytes make the point)
    tags = np.array([f"{i:04d}" + "x" * 13_000 for i in range(64)])
    return pa.table({"k": pa.array(k, pa.int64()),
                     "tag": pa.array(tags[rng.integers(0, 64, n)], pa.string()),
                     "v": pa.array(rng.integers(-1000, 1000, n), pa.int64())})


def differences(spark, view: str, query: str) -> int:
    """Rows in one of the two and not the other (as multisets), counted by the executors:
    each row's count in the view minus its count in Spark's answer, computed once."""
    columns = "k, tag, n, total, top"
    return spark.sql(f"SELECT COUNT(*) FROM (SELECT {columns}, SUM(side) AS c FROM "
                     f"(SELECT {columns}, 1 AS side FROM {view} UNION ALL "
                     f"SELECT {columns}, -1 AS side FROM ({query})) GROUP BY {columns}) "
                     "WHERE c != 0").first()[0]


def main(root: str, n: int) -> None:
    table = os.path.join(root, "t")
    write_deltalake(table, rows(2000, 1, 500), configuration={"delta.enableChangeDataFeed": "true"})
    spark = viewlet.configure_spark(
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .config("spark.driver.memory", "256m")
        # below Spark's 450 MB floor for a driver (its reserve lowered): the batch need only
        # outgrow this heap, and every byte of it costs the test time
        .config("spark.testing.reservedMemory", str(64 << 20))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8"),
        warehouse=os.path.join(root, "wh")).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    vl = viewlet.enable(spark)
    query = QUERY.format(t=table)
    spark.sql(f"CREATE INCREMENTAL VIEW wide AS {query}")
    facts = {"heap": spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()}
    # one batch: an append of n wide rows (written in row groups: no process holds it whole),
    # a delete and an update
    big = os.path.join(root, "big.parquet")
    facts["batch_bytes"] = 0             # the batch's rows in memory (Arrow), not on disk
    with pq.ParquetWriter(big, rows(1, 0, 1).schema) as out:
        for i in range(0, n, 2_500):
            part = rows(min(2_500, n - i), 100 + i, 400_000)
            facts["batch_bytes"] += part.nbytes
            out.write_table(part)
    reader = pa.RecordBatchReader.from_batches(
        rows(1, 0, 1).schema, pq.ParquetFile(big).iter_batches(batch_size=2_500))
    write_deltalake(table, reader, mode="append")
    DeltaTable(table).delete("k % 97 = 3")
    DeltaTable(table).update(updates={"v": "v + 1"}, predicate="k % 89 = 5")
    spark.sql("REFRESH INCREMENTAL VIEW wide").collect()
    last = vl.ctx.load("wide").manifest.last_committed().stats
    facts["engine"] = last.get("engine")
    facts["reason"] = last.get("engine_reason")
    facts["view_rows"] = spark.sql("SELECT COUNT(*) FROM wide").first()[0]
    print("BIG " + json.dumps(facts), flush=True)
    # a small batch afterwards runs in the driver again, on the maps the big one wrote; the
    # view then equals Spark's answer only if both batches were exact (one comparison: each
    # reads every wide row twice)
    write_deltalake(table, rows(300, 7, 500), mode="append")
    vl.refresh("wide")               # the Python API: a failure shows its Python traceback
    facts["small_engine"] = vl.ctx.load("wide").manifest.last_committed().stats.get("engine")
    facts["differences"] = differences(spark, "wide", query)
    print("FACTS " + json.dumps(facts))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
