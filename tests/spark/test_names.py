"""View names by Spark's rules, through spark.sql: a reserved word needs backticks and is then
the same name everywhere (CREATE, SELECT, REFRESH, DROP); non-ASCII names of views and
columns work where Spark accepts them (quoted), also for a view over such a view."""
from __future__ import annotations

import pytest
from pyspark.errors import ParseException

from .oracle import assert_view_matches
from .workload import registered_workload


@pytest.fixture
def work(spark, vl, tmp_path):
    return registered_workload(spark, str(tmp_path), seed=218, rows=10)


def _r_commit(work):
    while "r" not in work.batch():
        pass


def test_reserved_word_needs_backticks_and_is_one_name(spark, vl, work):
    query = "SELECT r.a, COUNT(*) AS n FROM r GROUP BY r.a"
    with pytest.raises(ParseException, match="reserved word.*quote it as `select`"):
        spark.sql(f"CREATE INCREMENTAL VIEW select AS {query}")
    assert "select" not in vl.view_names()
    spark.sql(f"CREATE INCREMENTAL VIEW `select` AS {query}")
    _r_commit(work)
    assert spark.sql("REFRESH INCREMENTAL VIEW `SELECT`").collect()[0].status == "refreshed"
    assert_view_matches(spark, "`select`", query)
    assert [r.view for r in spark.sql("SHOW INCREMENTAL VIEWS").collect()].count("select") == 1
    assert spark.sql("DROP INCREMENTAL VIEW `select`").collect()[0].status == "dropped"
    assert "select" not in vl.view_names()


def test_non_ascii_names_of_views_and_columns(spark, vl, work):
    with pytest.raises(ParseException, match="must be back quoted as: `café`"):
        spark.sql("CREATE INCREMENTAL VIEW café AS SELECT r.a FROM r")
    upper = "SELECT r.a AS `clé`, SUM(r.c) AS `somme`, COUNT(*) AS `nombre` FROM r GROUP BY r.a"
    lower = "SELECT `nombre`, COUNT(*) AS `groupes`, SUM(`somme`) AS `total` FROM `café` GROUP BY `nombre`"
    spark.sql(f"CREATE INCREMENTAL VIEW `café` AS {upper}")
    spark.sql(f"CREATE INCREMENTAL VIEW `über café` AS {lower}")
    try:
        for _ in range(2):
            _r_commit(work)
            spark.sql("REFRESH INCREMENTAL VIEW `über café`")      # refreshes `café` first
            assert_view_matches(spark, "`café`", upper)
            assert_view_matches(spark, "`über café`", lower)
        assert [f.name for f in spark.table("`café`").schema.fields] == ["clé", "somme", "nombre"]
        described = spark.sql("DESCRIBE INCREMENTAL VIEW `über café`").collect()
        assert ("upstream view", "café") in {(r.section, r.name) for r in described}
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS `über café`")
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS `café`")
