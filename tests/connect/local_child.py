"""Run by test_connect_local.py in a fresh Python: a Connect session whose server pyspark
starts in this process (`remote("local[2]")`), configured by viewlet.configure_spark.
Prints one JSON object: what the test checks."""
from __future__ import annotations

import json
import sys

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from pyspark.sql import SparkSession

import viewlet


def rows(df):
    return sorted([list(r) for r in df.collect()], key=repr)


def main(base: str) -> None:
    orders = f"{base}/orders"
    write_deltalake(orders, pa.table({"k": pa.array([1, 1, 2], pa.int64()),
                                      "v": pa.array([10, 20, 5], pa.int64())}),
                    configuration={"delta.enableChangeDataFeed": "true"})
    builder = SparkSession.builder.remote("local[2]").config("spark.ui.enabled", "false") \
        .config("spark.sql.shuffle.partitions", "2")
    spark = viewlet.configure_spark(builder, warehouse=f"{base}/wh").getOrCreate()
    out = {"connect": type(spark).__module__,
           "settings": {k: spark.conf.get(k) for k in (
               "spark.viewlet.warehouse", "spark.viewlet.attach", "spark.sql.extensions")}}
    vl = viewlet.enable(spark)
    out["handle"] = type(vl).__name__
    out["context_is_handle"] = viewlet.context(spark) is vl
    query = f"SELECT k, SUM(v) AS s, COUNT(*) AS n FROM delta.`{orders}` GROUP BY k"
    out["create"] = vl.create_view("totals", query)["status"]
    write_deltalake(orders, pa.table({"k": pa.array([2, 3], pa.int64()),
                                      "v": pa.array([1, 4], pa.int64())}), mode="append")
    DeltaTable(orders).delete("v = 20")
    out["refresh"] = spark.sql("REFRESH INCREMENTAL VIEW totals").first().asDict()
    out["view"] = rows(spark.sql("SELECT * FROM totals"))
    out["spark"] = rows(spark.sql(query))
    print("RESULT " + json.dumps(out), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
