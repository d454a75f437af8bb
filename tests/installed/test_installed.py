"""The package as a user installs it: run by scripts/test.sh in a clean virtual environment
that holds only the built wheel and its declared dependencies (the newest pyspark it
admits, and in another run the lowest), with Spark's default settings (no driver memory given: 1g). Nothing here imports
the checkout's python/ (VIEWLET_TEST_INSTALLED=1 tells conftest.py).

CREATE and REFRESH on every target the package runs by default, a view refreshed from a new
Python process with another PYTHONHASHSEED, EXPLAIN, and (at pip's choice of pyspark) the
spark-sql shell."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(os.environ.get("VIEWLET_TEST_INSTALLED") != "1",
                                reason="runs against the installed wheel (scripts/test.sh)")

QUERY = ("SELECT o.k, COUNT(*) AS n, SUM(o.v) AS total, MIN(o.ts) AS first_ts "
         "FROM orders o JOIN customers c ON o.k = c.k WHERE c.active GROUP BY o.k")


def _session_script(warehouse: str, *parts: str) -> str:
    """A Python program with a default-settings Viewlet session (nothing but the master),
    then `parts` (each dedented on its own)."""
    return textwrap.dedent(f"""
        import sys, viewlet
        from pyspark.sql import SparkSession
        assert "site-packages" in viewlet.__file__, viewlet.__file__
        spark = viewlet.configure_spark(SparkSession.builder.master("local[2]"),
                                        warehouse={warehouse!r}).getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        vl = viewlet.enable(spark)
    """) + "".join(textwrap.dedent(p) for p in parts)


def _run(script: str, seed: int) -> str:
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=900, env=dict(os.environ, PYTHONHASHSEED=str(seed)))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-6000:]
    return out.stdout


def _write(path, rows, mode):
    import datetime as dt
    import pyarrow as pa
    from deltalake import write_deltalake
    epoch = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    write_deltalake(path, pa.table({
        "k": pa.array([r[0] for r in rows], pa.int64()),
        "v": pa.array([r[1] for r in rows], pa.int64()),
        "ts": pa.array([epoch + dt.timedelta(hours=r[1]) for r in rows], pa.timestamp("us", "UTC")),
    }), mode=mode, configuration={"delta.enableChangeDataFeed": "true"})


CHECK = """
    from chispa import assert_df_equality
    def check(view, query):
        assert_df_equality(spark.sql(f"SELECT * FROM {view}"), spark.sql(query),
                           ignore_row_order=True, ignore_nullable=True, ignore_metadata=True)
"""


def test_create_refresh_restart_explain_with_spark_defaults(tmp_path):
    import pyarrow as pa
    from deltalake import write_deltalake
    warehouse, orders, customers = (str(tmp_path / n) for n in ("wh", "orders", "customers"))
    _write(orders, [(1, 10), (1, 5), (2, 7), (3, 1)], "append")
    write_deltalake(customers, pa.table({"k": pa.array([1, 2, 3], pa.int64()),
                                         "active": [True, True, False]}),
                    configuration={"delta.enableChangeDataFeed": "true"})
    register = f"""
        vl.register_table("orders", {orders!r})
        vl.register_table("customers", {customers!r})
    """
    # the process that creates the views: each target a batch can run on by default
    out = _run(_session_script(warehouse, register, CHECK, f"""
        for engine in ("auto", "local", "spark", "distributed"):
            spark.sql(f"CREATE INCREMENTAL VIEW v_{{engine}} WITH (engine = '{{engine}}') AS {QUERY}")
            check(f"v_{{engine}}", {QUERY!r})
        print("CREATED")
    """), seed=1)
    assert "CREATED" in out
    # one refreshing process, another hash seed (the restart part refreshes each view from
    # several, tests/spark): the views as the catalog stores them
    _write(orders, [(2, 3), (4, 8), (1, -1)], "append")
    out = _run(_session_script(warehouse, register, CHECK, f"""
        for engine in ("auto", "local", "spark", "distributed"):
            r = spark.sql(f"REFRESH INCREMENTAL VIEW v_{{engine}}").first()
            assert r["status"] == "refreshed", r
            check(f"v_{{engine}}", {QUERY!r})
            last = vl.ctx.load(f"v_{{engine}}").manifest.last_committed().stats
            print("ENGINE", engine, last["engine"], last.get("engine_reason"))
        plan = "\\n".join(r.plan for r in spark.sql("EXPLAIN INCREMENTAL VIEW v_auto").collect())
        assert "Maps:" in plan and "ON BATCH" in plan, plan
        print("REFRESHED")
    """), seed=2)
    assert "REFRESHED" in out
    engines = dict(line.split()[1:3] for line in out.splitlines() if line.startswith("ENGINE"))
    # DuckDB is a dependency: the default engine runs small batches in the driver
    assert engines == {"auto": "local", "local": "local", "spark": "spark",
                       "distributed": "distributed"}, out


@pytest.mark.skipif(os.environ.get("VIEWLET_TEST_INSTALLED_PYSPARK") == "lowest",
                    reason="the wheel's shell runs at pip's choice of pyspark; at the lowest "
                           "pyspark the shell runs in the main part (integration/shell)")
def test_the_shell_runs_viewlet_statements(tmp_path):
    import pyarrow as pa
    from deltalake import write_deltalake
    table = str(tmp_path / "t")
    write_deltalake(table, pa.table({"a": [1, 1, 2], "b": [3, 4, 5]}),
                    configuration={"delta.enableChangeDataFeed": "true"})
    statements = (f"CREATE INCREMENTAL VIEW s AS SELECT a,\n SUM(b) AS sb\nFROM delta.`{table}`"
                  "\nGROUP BY a;\nSELECT a, sb FROM s ORDER BY a;\nSHOW INCREMENTAL VIEWS;")
    out = subprocess.run(["viewlet", "sql", "--warehouse", str(tmp_path / "wh"), "-e", statements],
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-6000:]
    rows = [line.split("\t") for line in out.stdout.splitlines() if "\t" in line]
    assert ["a", "sb"] in rows and ["1", "7"] in rows and ["2", "5"] in rows, out.stdout
    # SHOW: a header, then one line per view (the query's line breaks as spaces)
    header = rows.index(["view", "depth", "tables", "batch", "query", "refresh", "last_error"])
    assert rows[header + 1][0] == "s" and rows[header + 1][4].startswith("SELECT a, SUM(b)"), rows
