"""The two recompute baselines a refresh is measured against.

* Spark: what a user does today without Viewlet: run the defining query over the current
  tables and write its result out, here ``spark.sql(query).write.parquet(dir)`` (overwrite).
  The written result also serves as the expected rows of the correctness check.
* DuckDB: the single-machine reference. delta-rs lists the current snapshot's Parquet files
  of each table (no deletion vectors or partitions in these tables, so the files are the
  snapshot), DuckDB's built-in Parquet reader scans them (no extensions needed), and the
  query, translated from Spark SQL by sqlglot, is fetched into Arrow (not written out).
  It runs in the benchmark's process, beside Spark's driver and Viewlet's hot maps, with a
  memory limit that leaves them room (`duckdb_memory_limit`) and a spill directory.
"""
from __future__ import annotations

import os
import time
from typing import Dict, Mapping, Optional

import pyarrow as pa

from ...engine.state.settings import MEMORY_SHARE, memory_beside_driver

GIB = 1 << 30


def spark_recompute(spark, query: str, out_dir: str) -> float:
    """Seconds to evaluate ``query`` with Spark and write its result as Parquet."""
    t0 = time.perf_counter()
    spark.sql(query).write.mode("overwrite").parquet(out_dir)
    return time.perf_counter() - t0


def spark_result(spark, out_dir: str):
    """(schema, rows) of the result a :func:`spark_recompute` wrote."""
    df = spark.read.parquet(out_dir)
    return df.schema, df.collect()


def duckdb_memory_limit(driver_memory: int, machine: Optional[int]) -> Optional[int]:
    """Bytes the DuckDB baseline may use: the machine's memory less the driver's heap, less
    Viewlet's hot maps (up to half the heap, in this process), less 2 GiB for the rest; at
    least 1 GiB (None: DuckDB's default, 80% of the machine, when its size is unknown).
    With DuckDB's default beside an 8g driver, Q5's recompute at SF 10 grew this process
    past 14 GiB and the kernel killed the benchmark."""
    if machine is None:
        return None
    return memory_beside_driver(machine, driver_memory, int(MEMORY_SHARE * driver_memory))


class DuckDBRecompute:
    def __init__(self, tables: Mapping[str, str], threads: int = 2,
                 memory_limit: Optional[int] = None, spill_dir: Optional[str] = None):
        """`memory_limit` in bytes (None: DuckDB's default); joins and aggregates over it
        spill to `spill_dir`."""
        import duckdb

        self.tables = dict(tables)
        self.con = duckdb.connect()
        self.con.execute(f"SET threads TO {int(threads)}")
        if memory_limit is not None:
            self.con.execute(f"SET memory_limit = '{int(memory_limit) // (1 << 20)}MiB'")
        if spill_dir is not None:
            os.makedirs(spill_dir, exist_ok=True)
            self.con.execute("SET temp_directory = '" + spill_dir.replace("'", "''") + "'")
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
