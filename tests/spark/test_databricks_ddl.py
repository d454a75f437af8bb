"""Databricks' materialized-view DDL run through spark.sql as a notebook written for Databricks
would: CREATE [OR REFRESH] MATERIALIZED VIEW, SCHEDULE EVERY (continuous refresh), ALTER ...
ADD | ALTER | DROP SCHEDULE, REFRESH ... [FULL], DROP; every view checked against Spark."""
from __future__ import annotations

import pytest
from pyspark.errors import AnalysisException, ParseException

from .oracle import assert_view_matches
from .workload import registered_workload

QUERY = "SELECT r.a, SUM(r.c) AS sc, COUNT(*) AS n FROM r GROUP BY r.a"
WIDER = "SELECT r.a, SUM(r.c) AS sc, COUNT(*) AS n, MAX(r.b) AS mb FROM r GROUP BY r.a"


@pytest.fixture
def work(spark, vl, tmp_path):
    w = registered_workload(spark, str(tmp_path), seed=211, rows=10)
    yield w
    vl.stop()


def _r_commit(work):
    while "r" not in work.batch():
        pass


def _history(spark, name):
    return spark.sql(f"SELECT batch, status, message FROM viewlet_history('{name}')").collect()


def test_create_refresh_drop_materialized_view(spark, vl, work):
    row = spark.sql(f"CREATE MATERIALIZED VIEW db_mv AS {QUERY}").collect()[0]
    assert row.status == "created" and "db_mv" in vl.view_names()
    assert_view_matches(spark, "db_mv", QUERY)
    _r_commit(work)
    assert spark.sql("REFRESH MATERIALIZED VIEW db_mv").collect()[0].status == "refreshed"
    assert_view_matches(spark, "db_mv", QUERY)
    _r_commit(work)
    full = spark.sql("REFRESH MATERIALIZED VIEW db_mv FULL").collect()[0]
    assert full.status == "rebuilt" and full.batch == 2
    assert_view_matches(spark, "db_mv", QUERY)
    assert [r.view for r in spark.sql("SHOW MATERIALIZED VIEWS").collect()].count("db_mv") == 1
    assert spark.sql("DROP MATERIALIZED VIEW db_mv").collect()[0].status == "dropped"
    assert spark.sql("DROP MATERIALIZED VIEW IF EXISTS db_mv").collect()[0].status == "not found"
    assert "db_mv" not in vl.view_names()


def test_create_or_refresh_creates_refreshes_or_replaces(spark, vl, work):
    first = spark.sql(f"CREATE OR REFRESH MATERIALIZED VIEW db_cor AS {QUERY}").collect()[0]
    assert first.status == "created"
    _r_commit(work)
    again = spark.sql(f"CREATE OR REFRESH MATERIALIZED VIEW db_cor AS {QUERY}").collect()[0]
    assert again.status == "refreshed" and again.rows >= 1      # the same definition: a batch
    assert_view_matches(spark, "db_cor", QUERY)
    same = spark.sql(f"CREATE OR REFRESH MATERIALIZED VIEW db_cor AS {QUERY}").collect()[0]
    assert same.status == "up to date"
    _r_commit(work)
    new = spark.sql(f"CREATE OR REFRESH MATERIALIZED VIEW db_cor AS {WIDER}").collect()[0]
    assert new.status.startswith("replaced: ")   # a new query: its maps kept or loaded
    assert_view_matches(spark, "db_cor", WIDER)
    deeper = spark.sql(f"CREATE OR REFRESH MATERIALIZED VIEW db_cor WITH (depth = 1) AS {WIDER}")
    assert deeper.collect()[0].status.startswith("replaced: ")
    assert vl.catalog.find("db_cor").spec["depth"] == 1
    history = _history(spark, "db_cor")
    # the replaces' refreshes first (the pending commit: batch 2; nothing new: no batch)
    assert [(h.batch, h.status) for h in history] == [
        (4, "replaced"), (3, "replaced"), (2, "committed"), (1, "committed"), (0, "created")]
    assert history[0].message.startswith("CREATE OR REFRESH with a new setting of depth: ")
    assert history[1].message.startswith("CREATE OR REFRESH with a new query: 1 map(s) kept")
    _r_commit(work)
    spark.sql("REFRESH MATERIALIZED VIEW db_cor")
    assert_view_matches(spark, "db_cor", WIDER)
    spark.sql("DROP MATERIALIZED VIEW db_cor")


def test_schedule_is_continuous_refresh(spark, vl, work):
    spark.sql(f"CREATE MATERIALIZED VIEW db_sched SCHEDULE EVERY 1 SECOND AS {QUERY}")
    assert vl.catalog.find("db_sched").spec["refresh"] == 1.0
    _r_commit(work)                     # picked up by the session's background refresh
    assert vl.continuous.wait_for_batches("db_sched", 1, timeout=600)
    vl.stop()                           # waits for the batch in flight
    assert [h.status for h in _history(spark, "db_sched")][0] == "committed"
    spark.sql("REFRESH MATERIALIZED VIEW db_sched")   # commits the loop had not reached yet
    assert_view_matches(spark, "db_sched", QUERY)
    with pytest.raises(AnalysisException, match="already has a schedule.*ALTER SCHEDULE"):
        spark.sql("ALTER MATERIALIZED VIEW db_sched ADD SCHEDULE EVERY 1 HOUR")
    row = spark.sql("ALTER MATERIALIZED VIEW db_sched ALTER SCHEDULE REFRESH EVERY 2 HOURS").collect()[0]
    assert row.refresh == "every 2 hours" and vl.catalog.find("db_sched").spec["refresh"] == 7200
    shown = {r.view: r for r in spark.sql("SHOW MATERIALIZED VIEWS").collect()}
    assert shown["db_sched"].refresh.startswith("every 2 hours")
    assert spark.sql("ALTER MATERIALIZED VIEW db_sched DROP SCHEDULE").collect()[0].refresh == "manual"
    assert vl.catalog.find("db_sched").spec["refresh"] is None
    assert not vl.continuous.running("db_sched")
    with pytest.raises(AnalysisException, match="has no schedule.*ADD SCHEDULE"):
        spark.sql("ALTER MATERIALIZED VIEW db_sched DROP SCHEDULE")
    spark.sql("ALTER MATERIALIZED VIEW db_sched ADD SCHEDULE EVERY 1 DAY")
    assert vl.catalog.find("db_sched").spec["refresh"] == 86400
    vl.stop()
    spark.sql("DROP MATERIALIZED VIEW db_sched")


def test_cron_schedules_are_refused_with_the_remedy(spark, vl, work):
    with pytest.raises(ParseException, match="SCHEDULE CRON is not supported.*EVERY 1 HOUR"):
        spark.sql(f"CREATE MATERIALIZED VIEW db_cron SCHEDULE CRON '0 0 * * * ?' AS {QUERY}")
    assert "db_cron" not in vl.view_names()
