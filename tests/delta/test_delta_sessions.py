"""Viewlet inside a session with delta-spark (Delta Lake's extension and DeltaCatalog), the
jars fetched from Maven by Spark as a user's session does (conftest.py, VIEWLET_TEST_DELTA_SPARK).

Base tables are catalog tables written by delta-spark's own UPDATE/DELETE/MERGE (change rows
with pre/post-images, deletion vectors); views must equal Spark's answer after every batch,
be catalog tables readable with time travel, refuse writes, and every table Viewlet writes
must read the same through delta-spark as through delta-rs."""
from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import textwrap

import pytest
from chispa import assert_df_equality
from pyspark.errors import AnalysisException

import viewlet
from viewlet.engine.spark.io import arrow_frame
from viewlet.engine.state.retention import INTERNAL_TABLE_PROPERTIES
from tests.spark.oracle import assert_view_matches

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _rows(spark, sql):
    return sorted((tuple(r) for r in spark.sql(sql).collect()), key=repr)   # NULLs sort too


class CatalogWorkload:
    """Random INSERT / UPDATE / DELETE / MERGE statements run by delta-spark on catalog
    tables `db.orders` (deletion vectors on) and `items` (in the current database), with
    NULLs and duplicate rows."""

    def __init__(self, spark, seed: int):
        self.spark, self.rnd = spark, random.Random(seed)
        spark.sql("CREATE DATABASE IF NOT EXISTS db")
        for name in ("db.orders", "items"):
            spark.sql(f"DROP TABLE IF EXISTS {name}")
        spark.sql("CREATE TABLE db.orders (o_id INT, cust INT, status STRING) USING delta "
                  "TBLPROPERTIES (delta.enableChangeDataFeed = true, "
                  "delta.enableDeletionVectors = true)")
        spark.sql("CREATE TABLE items (o_id INT, qty BIGINT, price DECIMAL(10,2)) USING delta "
                  "TBLPROPERTIES (delta.enableChangeDataFeed = true)")
        self.insert(40)

    def _value(self, hi, null=0.15):
        return "NULL" if self.rnd.random() < null else str(self.rnd.randint(0, hi))

    def _price(self):
        if self.rnd.random() < 0.15:
            return "NULL"
        return f"{self.rnd.randint(0, 999)}.{self.rnd.randint(0, 99):02d}"

    def insert(self, n):
        statuses = ["NULL", "'open'", "'done'"]
        orders = ", ".join(f"({self._value(12, 0.05)}, {self._value(4)}, "
                           f"{self.rnd.choice(statuses)})" for _ in range(n))
        items = ", ".join(f"({self._value(12, 0.05)}, {self._value(9)}, "
                          f"{self._price()})"
                          for _ in range(2 * n))
        self.spark.sql(f"INSERT INTO db.orders VALUES {orders}")
        self.spark.sql(f"INSERT INTO items VALUES {items}")

    def batch(self):
        """A few statements of each kind, so one REFRESH consumes several commits."""
        for _ in range(3):
            kind = self.rnd.choice(["insert", "update", "delete", "merge"])
            k = self.rnd.randint(0, 12)
            if kind == "insert":
                self.insert(self.rnd.randint(1, 6))
            elif kind == "update":
                self.spark.sql(f"UPDATE db.orders SET status = 'done', cust = cust + 1 "
                               f"WHERE o_id % 4 = {k % 4}")
                self.spark.sql(f"UPDATE items SET qty = qty + 1 WHERE o_id = {k}")
            elif kind == "delete":
                self.spark.sql(f"DELETE FROM db.orders WHERE o_id = {k} OR cust IS NULL")
                self.spark.sql(f"DELETE FROM items WHERE qty = {k % 10}")
            else:
                self.spark.sql(
                    f"MERGE INTO items t USING (SELECT {k} AS o_id, 5L AS qty, 1.50BD AS price) s "
                    "ON t.o_id = s.o_id WHEN MATCHED AND t.qty > 3 THEN DELETE "
                    "WHEN MATCHED THEN UPDATE SET qty = t.qty + s.qty "
                    "WHEN NOT MATCHED THEN INSERT *")


VIEWS = {
    "by_status": "SELECT o.status, COUNT(*) AS n, SUM(i.qty * i.price) AS revenue "
                 "FROM db.orders o JOIN items i ON o.o_id = i.o_id GROUP BY o.status",
    "cust_orders": "SELECT cust, COUNT(DISTINCT o_id) AS orders, MAX(status) AS last_status "
                   "FROM spark_catalog.db.orders GROUP BY cust",
    "big_items": "SELECT o_id, qty FROM items WHERE qty >= 5",
}


def test_the_session_has_both_extensions_and_deltas_catalog(spark, vl):
    extensions = spark.conf.get("spark.sql.extensions").split(",")
    assert "io.delta.sql.DeltaSparkSessionExtension" in extensions
    assert viewlet.api.session.EXTENSION in extensions
    assert spark.conf.get("spark.sql.catalog.spark_catalog").endswith("DeltaCatalog")
    spark.sql("CREATE TABLE IF NOT EXISTS probe (a INT) USING delta")
    spark.sql("INSERT INTO probe VALUES (1)")
    assert spark.sql("DESCRIBE HISTORY probe").count() >= 2       # Delta's own SQL parses
    assert spark.sql("SHOW INCREMENTAL VIEWS").columns[0] == "view"  # and Viewlet's
    spark.sql("DROP TABLE probe")


def assert_delta_spark_reads_as_delta_rs(spark, vl, view_name):
    """Every table of the view (its result, maps and manifest) reads the same through
    delta-spark as through delta-rs, at the same version, with the lowest protocol."""
    view = vl.ctx.load(view_name)
    view.manifest.settle()    # the last batch's committed row lands after REFRESH returns
    own = [vl.ctx.layout.map_table(view.id, m) for m in view.definition.maps] + \
        [view.manifest.path]
    for path in [view.result_path] + own:
        by_delta_spark = spark.read.format("delta").load(path)
        by_delta_rs = arrow_frame(spark, vl.ctx.store.read_arrow(path), by_delta_spark.schema)
        assert_df_equality(by_delta_spark, by_delta_rs, ignore_row_order=True,
                           ignore_nullable=True)
        history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`")
        assert history.agg({"version": "max"}).first()[0] == vl.ctx.store.version(path)
        detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()
        # the lowest protocol that works: no table features a reader must know
        assert (detail.minReaderVersion, detail.minWriterVersion) == (1, 2), path
        # the view's own tables keep an hour of history (state/retention.py), as
        # delta-spark reads their properties; the result table keeps Delta's defaults
        kept = {k: detail.properties.get(k) for k in INTERNAL_TABLE_PROPERTIES}
        assert kept == (INTERNAL_TABLE_PROPERTIES if path in own else
                        {k: None for k in INTERNAL_TABLE_PROPERTIES}), path


#: the view of the DML test that also runs every batch on the executors (engine =
#: 'distributed'): it reads both tables, db.orders with deletion vectors
DISTRIBUTED = ("by_status",)


@pytest.mark.parametrize("seed", [3])
def test_catalog_tables_changed_by_delta_spark_dml_are_maintained_exactly(spark, vl, seed):
    """After every batch each view equals Spark's answer, on the local target and (views
    named *_d) distributed: changes read by the executors from delta-spark's files (change
    data files, deletion vectors), map deltas and result files written by the executors and
    committed with delta-rs. After the last batch, delta-spark reads every table Viewlet
    wrote for a view of each as delta-rs does."""
    work = CatalogWorkload(spark, seed)
    views = dict(VIEWS, **{f"{v}_d": VIEWS[v] for v in DISTRIBUTED})
    for view, query in VIEWS.items():
        spark.sql(f"CREATE INCREMENTAL VIEW {view} AS {query}")
    for view in DISTRIBUTED:
        spark.sql(f"CREATE INCREMENTAL VIEW {view}_d WITH (engine = 'distributed') "
                  f"AS {VIEWS[view]}")
    try:
        deletion_vectors_seen = False
        for i in range(3):
            if i:
                work.batch()
                for view in views:
                    spark.sql(f"REFRESH INCREMENTAL VIEW {view}")
            for view, query in views.items():
                if view.endswith("_d"):
                    if i:
                        stats = vl.ctx.load(view).manifest.last_committed().stats
                        assert stats["engine"] == "distributed", stats
                    assert_view_matches(spark, view, query, engine=False)
                else:
                    assert_view_matches(spark, view, query)
            deletion_vectors_seen |= bool(vl.ctx.store.snapshot(
                vl.ctx.resolver().location(["db", "orders"])[0]).deleted)
        # delta-spark wrote deletion vectors, which every read above had to apply
        assert deletion_vectors_seen
        assert_delta_spark_reads_as_delta_rs(spark, vl, "by_status")
        assert_delta_spark_reads_as_delta_rs(spark, vl, "by_status_d")
    finally:
        for view in views:
            spark.sql(f"DROP INCREMENTAL VIEW IF EXISTS {view}")


def test_a_view_is_a_delta_table_of_the_catalog(spark, vl):
    work = CatalogWorkload(spark, 5)
    query = VIEWS["by_status"]
    spark.sql(f"CREATE INCREMENTAL VIEW status_view AS {query}")
    try:
        assert "status_view" in [r.tableName for r in spark.sql("SHOW TABLES").collect()]
        details = {r.col_name: r.data_type for r in
                   spark.sql("DESCRIBE TABLE EXTENDED status_view").collect()}
        assert details["Provider"] == "delta"
        assert "viewlet.incrementalView=true" in details["Table Properties"]
        assert f"viewlet.definition={vl.ctx.layout.catalog}" in details["Table Properties"]
        version_before = spark.sql("DESCRIBE HISTORY status_view").agg({"version": "max"}).first()[0]
        before = spark.sql("SELECT * FROM status_view")
        before_rows = sorted((tuple(r) for r in before.collect()), key=repr)
        work.batch()
        spark.sql("REFRESH INCREMENTAL VIEW status_view")
        assert_view_matches(spark, "status_view", query)
        history = spark.sql("DESCRIBE HISTORY status_view")
        assert history.agg({"version": "max"}).first()[0] > version_before
        assert _rows(spark, f"SELECT * FROM status_view VERSION AS OF {version_before}") == before_rows
        stamp = history.where(f"version = {version_before}").first().timestamp
        assert _rows(spark, f"SELECT * FROM status_view TIMESTAMP AS OF '{stamp}'") == before_rows
        qualified = "spark_catalog.default.status_view"     # the catalog table's full name
        for write in ["INSERT INTO status_view VALUES ('x', 1, 1.00)",
                      "UPDATE status_view SET n = 0",
                      "DELETE FROM status_view WHERE n > 0",
                      "MERGE INTO status_view t USING (SELECT 'open' AS status) s "
                      "ON t.status = s.status WHEN MATCHED THEN DELETE",
                      f"INSERT INTO {qualified} VALUES ('x', 1, 1.00)",
                      f"DELETE FROM {qualified} WHERE n > 0",
                      f"UPDATE {qualified} SET n = 0"]:
            with pytest.raises(AnalysisException, match="incremental view status_view.*only "
                                                        "Viewlet writes|status_view is an "
                                                        "incremental view: only Viewlet writes"):
                spark.sql(write).collect()
        assert_view_matches(spark, "status_view", query)
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS status_view")
    assert "status_view" not in [r.tableName for r in spark.sql("SHOW TABLES").collect()]


def test_a_view_whose_columns_delta_cannot_name_is_a_temporary_view(spark, vl):
    CatalogWorkload(spark, 9)
    query = "SELECT o_id, SUM(qty) FROM items GROUP BY o_id"      # a column named sum(qty)
    spark.sql(f"CREATE INCREMENTAL VIEW unnamed_sum AS {query}")
    try:
        tables = {r.tableName: r.isTemporary for r in spark.sql("SHOW TABLES").collect()}
        assert tables.get("unnamed_sum") is True
        details = {r.col_name: r.data_type for r in
                   spark.sql("DESCRIBE TABLE EXTENDED unnamed_sum").collect()}
        assert details["Type"] == "INCREMENTAL VIEW" and "sum(qty)" in details
        assert_view_matches(spark, "unnamed_sum", query)      # Spark's column names
        assert spark.sql("DESCRIBE HISTORY unnamed_sum").first().version == \
            vl.ctx.store.version(vl.ctx.load("unnamed_sum").result_path)
    finally:
        spark.sql("DROP INCREMENTAL VIEW unnamed_sum")


def test_a_name_the_catalog_holds_cannot_become_a_view(spark, vl):
    CatalogWorkload(spark, 1)
    with pytest.raises(AnalysisException, match="'items' is a table or view in Spark's catalog"):
        spark.sql("CREATE INCREMENTAL VIEW items AS SELECT o_id FROM items")
    assert spark.sql("SELECT COUNT(*) FROM items").first()[0] > 0


def test_delta_spark_reads_a_table_past_the_checkpoints_delta_rs_wrote(spark, vl, tmp_path):
    """Viewlet's tables are checkpointed every 10 commits by delta-rs (storage/deltars.py
    OWN_TABLE_PROPERTIES): delta-spark reads them from those checkpoints."""
    import pyarrow as pa
    from viewlet.engine.state.manifest import Txn
    path = str(tmp_path / "checkpointed")
    rows = pa.table({"k": pa.array([1], pa.int64()), "v": pa.array([2], pa.int64())})
    vl.ctx.store.create(path, rows, txn=Txn("viewlet:test", 0))
    for batch in range(1, 25):
        vl.ctx.store.add_rows(path, rows, Txn("viewlet:test", batch))
    log = os.listdir(os.path.join(path, "_delta_log"))
    assert any(f.endswith(".checkpoint.parquet") for f in log), log
    by_delta_spark = spark.read.format("delta").load(path)
    assert by_delta_spark.count() == 25
    assert_df_equality(by_delta_spark, arrow_frame(spark, vl.ctx.store.read_arrow(path),
                                                   by_delta_spark.schema),
                       ignore_row_order=True, ignore_nullable=True)


def test_the_change_feed_remedy_is_a_statement_that_runs(spark, vl):
    spark.sql("DROP TABLE IF EXISTS no_feed")
    spark.sql("CREATE TABLE no_feed (a INT) USING delta")
    spark.sql("INSERT INTO no_feed VALUES (1), (2)")
    vl.auto_enable_change_feed = False
    try:
        with pytest.raises(AnalysisException, match="change data feed") as caught:
            spark.sql("CREATE INCREMENTAL VIEW fed AS SELECT a, COUNT(*) AS n FROM no_feed GROUP BY a")
        remedy = re.search(r"ALTER TABLE \S+ SET TBLPROPERTIES \(delta.enableChangeDataFeed = "
                           r"true\)", str(caught.value)).group(0)
        spark.sql(remedy)
        spark.sql("CREATE INCREMENTAL VIEW fed AS SELECT a, COUNT(*) AS n FROM no_feed GROUP BY a")
        spark.sql("INSERT INTO no_feed VALUES (2)")
        spark.sql("REFRESH INCREMENTAL VIEW fed")
        assert_view_matches(spark, "fed", "SELECT a, COUNT(*) AS n FROM no_feed GROUP BY a")
    finally:
        vl.auto_enable_change_feed = None
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS fed")


def test_a_fresh_driver_configured_in_the_other_order_then_viewlet_sql_with_delta(tmp_path):
    """Two fresh drivers on one warehouse. First a PySpark session configured with Viewlet's
    configure_spark first and delta's pip helper after it. Then `viewlet sql --delta` (the
    spark-sql shell with both extensions, Delta's jar from Viewlet's own coordinates): it
    finds the first driver's view in the (in-memory) catalog again, and a catalog table made
    and changed with Delta's SQL becomes a view's base table, in SHOW TABLES with Delta's
    history. One driver each: a JVM's session settings are fixed at its start. Both keep
    delta-spark's table state in 2 partitions, as the suite's session does (its default, 50
    tasks per snapshot, costs seconds per statement on tables of a few rows)."""
    first = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.join(ROOT, 'python')!r})
        from pyspark.sql import SparkSession
        from delta.pip_utils import configure_spark_with_delta_pip
        import viewlet
        b = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false") \\
            .config("spark.databricks.delta.snapshotPartitions", "2") \\
            .config("spark.sql.warehouse.dir", {str(tmp_path / 'sw')!r}) \\
            .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension") \\
            .config("spark.sql.catalog.spark_catalog",
                    "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        b = viewlet.configure_spark(b, warehouse={str(tmp_path / 'wh')!r})
        spark = configure_spark_with_delta_pip(b).getOrCreate()
        viewlet.enable(spark)
        spark.sql("CREATE TABLE t (k INT) USING delta LOCATION '{tmp_path / 't'}' "
                  "TBLPROPERTIES (delta.enableChangeDataFeed = true)")
        spark.sql("INSERT INTO t VALUES (1), (1), (2)")
        spark.sql("CREATE INCREMENTAL VIEW kv AS SELECT k, COUNT(*) AS n FROM t GROUP BY k")
        spark.sql("UPDATE t SET k = 3 WHERE k = 2")
        spark.sql("REFRESH INCREMENTAL VIEW kv")
        print("FIRST", sorted(tuple(r) for r in spark.sql("SELECT * FROM kv").collect()))
        print("FIRST", sorted(tuple(r) for r in spark.sql(
            "SELECT k, COUNT(*) AS n FROM t GROUP BY k").collect()))
        spark.stop()
    """)
    res = subprocess.run([sys.executable, "-c", first], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    printed = [line for line in res.stdout.splitlines() if line.startswith("FIRST")]
    assert len(printed) == 2 and printed[0] == printed[1], res.stdout  # the view, Spark's answer

    statements = [
        # the rows CREATE loaded (the view's version 0), by time travel, as Spark computes
        # them over the base table's version then (1: created, then one INSERT)
        "SELECT 'kv0' AS tag, k, n FROM kv VERSION AS OF 0 ORDER BY k",
        f"SELECT 'kvs' AS tag, k, COUNT(*) FROM delta.`{tmp_path / 't'}` VERSION AS OF 1 "
        "GROUP BY k ORDER BY k",
        "CREATE TABLE sales (region STRING, amount DECIMAL(12,2)) USING delta "
        "TBLPROPERTIES (delta.enableChangeDataFeed = true)",
        "INSERT INTO sales VALUES ('north', 10.00), ('south', 4.50), ('north', 1.25)",
        "CREATE INCREMENTAL VIEW by_region AS SELECT region, SUM(amount) AS total, "
        "COUNT(*) AS n FROM sales GROUP BY region",
        "UPDATE sales SET amount = amount * 2 WHERE region = 'north'",
        "DELETE FROM sales WHERE amount < 3",
        "MERGE INTO sales t USING (SELECT 'east' AS region, 7.00 AS amount) s "
        "ON t.region = s.region WHEN NOT MATCHED THEN INSERT *",
        "REFRESH INCREMENTAL VIEW by_region",
        # tagged by alias: `viewlet sql` prints column names above each result, and a tag must
        # not be a header's first column (CREATE's and REFRESH's begin with `view`)
        "SELECT 'vrow' AS tag, region, total, n FROM by_region ORDER BY region",
        "SELECT 'srow' AS tag, region, SUM(amount), COUNT(*) FROM sales GROUP BY region "
        "ORDER BY region",
        "SHOW TABLES",
        "DESCRIBE HISTORY by_region",
    ]
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    res = subprocess.run([sys.executable, "-m", "viewlet", "sql", "--delta", "--warehouse",
                          str(tmp_path / "wh"), "-S", "--conf", "spark.ui.enabled=false",
                          "--conf", "spark.databricks.delta.snapshotPartitions=2",
                          "--driver-memory", "1g", "-e", ";\n".join(statements)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    lines = [line.split("\t") for line in res.stdout.splitlines()]
    rows = {tag: [line[1:] for line in lines if line[0] == tag]
            for tag in ("kv0", "kvs", "vrow", "srow")}
    assert rows["kv0"] == rows["kvs"] and len(rows["kv0"]) == 2, res.stdout
    assert rows["vrow"] == rows["srow"] and len(rows["vrow"]) == 3, res.stdout
    # SHOW TABLES: the first driver's view, this one's, and the catalog table
    assert all(name in lines for name in (["kv"], ["by_region"], ["sales"])), res.stdout
    # Delta's history of the view: its versions, newest first, with their operations
    versions = [int(line[0]) for line in lines if len(line) > 5 and line[0].isdigit()]
    assert versions and versions == sorted(versions, reverse=True) and versions[-1] == 0, res.stdout
