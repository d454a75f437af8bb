"""The two recompute baselines a refresh is measured against.

* Spark: what a user does today without Viewlet: run the defining query over the current
  tables and write its result out, here ``spark.sql(query).write.parquet(dir)`` (overwrite).
  The written result also serves as the expected rows of the correctness check.
* DuckDB: the single-machine reference. delta-rs lists the current snapshot's Parquet files
  of each table (no deletion vectors or partitions in these tables, so the files are the
  snapshot), DuckDB's built-in Parquet reader scans them (no extensions needed), and the
  query, translated from Spark SQL by sqlglot, is fetched into Arrow (not written out).
"""
from __future__ import annotations

import time
from typing import Dict, Mapping

import pyarrow as pa


def spark_recompute(spark, query: str, out_dir: str) -> float:
    """Seconds to evaluate ``query`` with Spark and write its result as Parquet."""
    t0 = time.perf_counter()
    spark.sql(query).write.mode("overwrite").parquet(out_dir)
    return time.perf_counter() - t0


def spark_result(spark, out_dir: str):
    """(schema, rows) of the result a :func:`spark_recompute` wrote."""
    df = spark.read.parquet(out_dir)
    return df.schema, df.collect()


class DuckDBRecompute:
    def __init__(self, tables: Mapping[str, str], threads: int = 2):
        import duckdb

        self.tables = dict(tables)
        self.con = duckdb.connect()
        self.con.execute(f"SET threads TO {int(threads)}")
        self._translated: Dict[str, str] = {}

    def translate(self, query: str) -> str:
        if query not in self._translated:
            import sqlglot
            self._translated[query] = sqlglot.transpile(query, read="spark", write="duckdb")[0]
        return self._translated[query]

    def run(self, query: str, tables) -> "tuple[float, pa.Table]":
        """(seconds, result) of ``query`` over the current snapshots of ``tables``."""
        from deltalake import DeltaTable

        sql = self.translate(query)
        t0 = time.perf_counter()
        for name in tables:
            files = DeltaTable(self.tables[name]).file_uris()
            listing = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
            self.con.execute(f'CREATE OR REPLACE VIEW "{name}" AS '
                             f"SELECT * FROM read_parquet([{listing}])")
        result = self.con.sql(sql).to_arrow_table()
        return time.perf_counter() - t0, result

    def close(self):
        self.con.close()
