"""Incremental views as objects of Spark's catalog in a session without delta-spark (the
embedded default): a temporary view over the result table, with DESCRIBE, DESCRIBE
HISTORY, time travel and writes answered by Viewlet (api/relations.py, ViewletRelations.scala).
tests/delta/ checks the same SQL in a session with delta-spark."""
from __future__ import annotations

import pytest
from chispa import assert_df_equality
from pyspark.errors import AnalysisException

from .oracle import assert_view_matches
from .workload import registered_workload

QUERY = "SELECT r.a, SUM(s.f) AS sf, COUNT(*) AS n FROM r JOIN s ON r.b = s.b GROUP BY r.a"


@pytest.fixture
def work(spark, vl, tmp_path):
    return registered_workload(spark, str(tmp_path), seed=11, rows=15)


def _tables(spark):
    return {r.tableName: r.isTemporary for r in spark.sql("SHOW TABLES").collect()}


def _version(vl, view):
    return vl.ctx.store.version(vl.ctx.load(view).result_path)


def test_a_view_is_listed_described_and_dropped_like_a_table(spark, vl, work):
    spark.sql(f"CREATE INCREMENTAL VIEW listed AS {QUERY}")
    try:
        assert _tables(spark).get("listed") is True
        columns = [(r.col_name, r.data_type) for r in spark.sql("DESCRIBE TABLE listed").collect()]
        assert columns == [(f.name, f.dataType.simpleString())
                           for f in spark.sql(QUERY).schema.fields]
        details = {r.col_name: r.data_type
                   for r in spark.sql("DESCRIBE TABLE EXTENDED listed").collect()}
        assert details["Type"] == "INCREMENTAL VIEW"
        assert details["Location"] == vl.ctx.load("listed").result_path
        assert "viewlet.incrementalView=true" in details["Table Properties"]
        assert f"viewlet.definition={vl.ctx.layout.catalog}" in details["Table Properties"]
        assert [r.col_name for r in spark.sql("SHOW COLUMNS IN listed").collect()] == ["a", "sf", "n"]
        assert spark.catalog.tableExists("listed")
    finally:
        spark.sql("DROP INCREMENTAL VIEW listed")
    assert "listed" not in _tables(spark)


def test_time_travel_and_history_of_a_view(spark, vl, work):
    spark.sql(f"CREATE INCREMENTAL VIEW travelled AS {QUERY}")
    try:
        first = _version(vl, "travelled")
        before = spark.sql(QUERY)                     # what the view holds at `first`
        expected = spark.createDataFrame(before.collect(), before.schema)
        work.batch()
        spark.sql("REFRESH INCREMENTAL VIEW travelled")
        assert_view_matches(spark, "travelled", QUERY)
        assert _version(vl, "travelled") > first
        assert_df_equality(spark.sql(f"SELECT * FROM travelled VERSION AS OF {first}"), expected,
                           ignore_row_order=True, ignore_nullable=True, ignore_metadata=True)
        history = spark.sql("DESCRIBE HISTORY travelled")
        assert history.columns[:5] == ["version", "timestamp", "userId", "userName", "operation"]
        versions = [r.version for r in history.collect()]
        assert versions == sorted(versions, reverse=True) and versions[0] == _version(vl, "travelled")
        stamp = history.where(f"version = {first}").first().timestamp
        assert_df_equality(spark.sql(f"SELECT * FROM travelled TIMESTAMP AS OF '{stamp}'"),
                           expected, ignore_row_order=True, ignore_nullable=True,
                           ignore_metadata=True)
        # in a subquery too, and a version that does not exist says which do
        assert spark.sql(f"SELECT COUNT(*) FROM (SELECT * FROM travelled VERSION AS OF {first})"
                         ).first()[0] == expected.count()
        with pytest.raises(AnalysisException, match="travelled has no version 999: its versions are 0 to"):
            spark.sql("SELECT * FROM travelled VERSION AS OF 999").collect()
        with pytest.raises(AnalysisException, match="did not exist yet at that time"):
            spark.sql("SELECT * FROM travelled TIMESTAMP AS OF '2000-01-01'").collect()
    finally:
        spark.sql("DROP INCREMENTAL VIEW travelled")


def test_time_travel_and_history_of_a_base_table_by_path(spark, vl, work):
    path = work.paths["r"]
    latest = vl.ctx.store.version(path)
    old = spark.sql(f"SELECT * FROM delta.`{path}` VERSION AS OF 0")
    assert old.count() == vl.ctx.store.read_arrow(path, 0).num_rows
    assert spark.sql(f"SELECT * FROM r VERSION AS OF {latest}").count() == \
        vl.ctx.store.read_arrow(path, latest).num_rows
    assert spark.sql(f"DESCRIBE HISTORY delta.`{path}`").first().version == latest


@pytest.mark.parametrize("write", [
    "INSERT INTO guarded VALUES (1, 2.5, 3)",
    "INSERT OVERWRITE guarded SELECT * FROM guarded",
    "UPDATE guarded SET n = 0",
    "DELETE FROM guarded WHERE n > 0",
    "MERGE INTO guarded t USING (SELECT 1 AS a) s ON t.a = s.a WHEN MATCHED THEN DELETE",
])
def test_writing_to_a_view_is_refused_and_changes_nothing(spark, vl, work, write):
    spark.sql(f"CREATE INCREMENTAL VIEW guarded AS {QUERY}")
    try:
        version = _version(vl, "guarded")
        with pytest.raises(AnalysisException,
                           match="guarded is an incremental view: only Viewlet writes its result "
                                 "table.*REFRESH INCREMENTAL VIEW guarded"):
            spark.sql(write).collect()
        assert _version(vl, "guarded") == version
        assert_view_matches(spark, "guarded", QUERY)
    finally:
        spark.sql("DROP INCREMENTAL VIEW guarded")


def test_a_name_a_temporary_view_holds_cannot_become_a_view(spark, vl, work):
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW taken AS SELECT 1 AS x")
    try:
        with pytest.raises(AnalysisException, match="'taken' is a table or view in Spark's catalog"):
            spark.sql(f"CREATE INCREMENTAL VIEW taken AS {QUERY}")
        assert spark.sql("SELECT * FROM taken").collect()[0].x == 1
        assert "taken" not in vl.view_names()
    finally:
        spark.sql("DROP VIEW IF EXISTS taken")


def test_statements_about_other_tables_are_left_to_spark(spark, vl, work):
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW plain AS SELECT 1 AS x")
    try:
        assert [r.col_name for r in spark.sql("DESCRIBE TABLE plain").collect()] == ["x"]
        with pytest.raises(AnalysisException, match="TIME_TRAVEL"):
            spark.sql("SELECT * FROM plain VERSION AS OF 0").collect()
    finally:
        spark.sql("DROP VIEW plain")


def test_the_change_feed_remedy_runs_without_delta_spark(spark, vl, tmp_path):
    """The error for a table without its change data feed names an ALTER TABLE statement;
    without delta-spark Spark cannot run it, so Viewlet does (and only for its tables)."""
    import re

    import pyarrow as pa
    from deltalake import write_deltalake
    path = str(tmp_path / "no_feed")
    write_deltalake(path, pa.table({"a": pa.array([1, 2, 2], pa.int64())}))
    query = f"SELECT a, COUNT(*) AS n FROM delta.`{path}` GROUP BY a"
    with pytest.raises(AnalysisException, match="change data feed") as caught:
        spark.sql(f"CREATE INCREMENTAL VIEW fed AS {query}")
    remedy = re.search(r"ALTER TABLE \S+ SET TBLPROPERTIES \(delta.enableChangeDataFeed = "
                       r"true\)", str(caught.value)).group(0)
    assert "fed" not in vl.view_names()
    spark.sql(remedy)
    assert vl.ctx.store.properties(path)["delta.enableChangeDataFeed"] == "true"
    spark.sql(f"CREATE INCREMENTAL VIEW fed AS {query}")
    try:
        write_deltalake(path, pa.table({"a": pa.array([3], pa.int64())}), mode="append")
        spark.sql("REFRESH INCREMENTAL VIEW fed")
        assert_view_matches(spark, "fed", query)
    finally:
        spark.sql("DROP INCREMENTAL VIEW fed")
