"""Continuous mode: ALTER ... SET REFRESH EVERY starts background batches that pick up new
commits in bounded batches; errors are recorded and shown; stop waits for the batch."""
from __future__ import annotations

import shutil

import pytest
from pyspark.errors import AnalysisException

import viewlet
from tests.spark.oracle import assert_view_matches
from tests.spark.workload import registered_workload

QUERY = "SELECT r.a, SUM(r.c) AS sc, COUNT(*) AS n FROM r GROUP BY r.a"


@pytest.fixture
def work(spark, vl, tmp_path):
    w = registered_workload(spark, str(tmp_path), seed=41, rows=10)
    yield w
    vl.stop()


def _r_commits(work, n):
    for _ in range(n):
        while "r" not in work.batch():
            pass


def test_continuous_refresh_with_bounded_batches(spark, vl, work):
    spark.sql(f"CREATE INCREMENTAL VIEW ct_v WITH (refresh = '1 hour') AS {QUERY}")
    vl.stop()                 # CREATE started the loop; halt it so no batch races the commits
    view = vl.ctx.load("ct_v")
    start = view.manifest.last_committed().watermarks["r"]
    _r_commits(work, 2)
    end = vl.ctx.store.version(work.paths["r"])
    assert end - start >= 2
    vl.start("ct_v", max_commits=1)        # back-pressure: one commit of r per batch
    assert vl.ctx.continuous.wait_for_batches("ct_v", end - start, timeout=600)
    vl.stop()
    records = [r for r in view.manifest.records() if r.phase == "committed" and r.batch > 0]
    assert all(r.ranges["r"][1] - r.ranges["r"][0] <= 1 for r in records)
    assert max(r.ranges["r"][1] for r in records) == end
    assert_view_matches(spark, "ct_v", QUERY)
    shown = {r.view: r for r in spark.sql("SHOW INCREMENTAL VIEWS").collect()}
    assert shown["ct_v"].refresh.startswith("every 1 hour")
    row = spark.sql("ALTER INCREMENTAL VIEW ct_v SET REFRESH MANUAL").collect()[0]
    assert row.refresh == "manual"
    assert vl.ctx.catalog.find("ct_v").spec["refresh"] is None
    spark.sql("DROP INCREMENTAL VIEW ct_v")


def test_loop_errors_are_recorded_and_shown(spark, vl, work):
    spark.sql(f"CREATE INCREMENTAL VIEW ct_err AS {QUERY}")
    spark.sql("ALTER INCREMENTAL VIEW ct_err SET REFRESH EVERY '1 second'")
    _r_commits(work, 1)
    assert vl.ctx.continuous.wait_for_batches("ct_err", 1, timeout=600)
    vl.stop()                                # waits for the batch in flight
    shutil.rmtree(work.paths["r"])           # every later batch fails until FULL or DROP
    vl.start("ct_err")
    statuses = vl.ctx.continuous.status
    with vl.ctx.continuous._cv:
        assert vl.ctx.continuous._cv.wait_for(
            lambda: "ct_err" in statuses and statuses["ct_err"].failures >= 1, timeout=600)
    shown = {r.view: r for r in spark.sql("SHOW INCREMENTAL VIEWS").collect()}
    assert "no longer exists" in shown["ct_err"].last_error
    described = {(r.section, r.name): r.value
                 for r in spark.sql("DESCRIBE INCREMENTAL VIEW ct_err").collect()}
    assert "no longer exists" in described[("refresh", "last error")]
    assert "running in this session" in described[("refresh", "mode")]
    failed = spark.sql("SELECT message FROM viewlet_history('ct_err') WHERE status = 'failed'")
    assert "no longer exists" in failed.collect()[0].message     # the history keeps the errors
    vl.stop()
    assert not vl.ctx.continuous.running("ct_err")
    spark.sql("DROP INCREMENTAL VIEW ct_err")


def test_start_needs_an_existing_view(vl):
    with pytest.raises(viewlet.ViewNotFound):
        vl.start("no_such_view")
    with pytest.raises(AnalysisException, match="does not exist"):
        vl.spark.sql("ALTER INCREMENTAL VIEW no_such_view SET REFRESH EVERY '5 seconds'")
