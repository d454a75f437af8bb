"""Observability: DESCRIBE INCREMENTAL VIEW v HISTORY (one row per batch, newest first, with
what each batch consumed and cost) and progress reporting of long operations."""
from __future__ import annotations

import logging

import pytest

from tests.spark.workload import registered_workload

QUERY = "SELECT r.a, SUM(r.c) AS sc, COUNT(*) AS n FROM r JOIN s ON r.b = s.b GROUP BY r.a"


@pytest.fixture
def work(spark, vl, tmp_path):
    w = registered_workload(spark, str(tmp_path), seed=23, rows=12)
    return w


def _commit(work, table):
    """Append rows to `table`: a commit whose change feed is never empty."""
    from deltalake import write_deltalake
    write_deltalake(work.paths[table], work._rows(table, 3), mode="append")


def _history(spark, name, limit=""):
    return spark.sql(f"DESCRIBE INCREMENTAL VIEW {name} HISTORY {limit}").collect()


def test_history_records_every_batch(spark, vl, work):
    spark.sql(f"CREATE INCREMENTAL VIEW hist_v AS {QUERY}")
    initial_rows = spark.sql("SELECT COUNT(*) FROM hist_v").collect()[0][0]
    refreshed = []
    for table in ("r", "s"):
        _commit(work, table)
        refreshed.append(spark.sql("REFRESH INCREMENTAL VIEW hist_v").collect()[0])
    rows = _history(spark, "hist_v")
    assert [r.batch for r in rows] == [2, 1, 0]
    assert [r.status for r in rows] == ["committed", "committed", "created"]
    now = {t: vl.ctx.store.version(work.paths[t]) for t in ("r", "s")}
    assert rows[0].versions_after == now
    for newer, older in zip(rows, rows[1:]):          # batches chain without gaps
        assert newer.versions_before == older.versions_after
        assert newer.committed_at >= older.committed_at
    for row, cmd in zip(reversed(rows[:2]), refreshed):
        assert row.rows_changed == cmd.rows_changed and row.changes == cmd.changes
        assert row.changes > 0 and row.engine in ("local", "spark") and row.engine_reason
        # a local batch runs no Spark job; a Spark batch at least the one of its query
        assert row.spark_jobs == 0 if row.engine == "local" else row.spark_jobs >= 1
        assert {"compute", "merge"} <= set(row.phase_seconds)
        assert row.seconds >= max(row.phase_seconds.values())
        assert row.started_at <= row.committed_at
        assert set(row.map_rows_changed) <= set(vl.ctx.load("hist_v").definition.maps)
    created = rows[2]
    assert created.versions_before == created.versions_after
    # small bases load in the driver (local), maps and first result, without a Spark job;
    # larger ones on Spark: the reason says which
    assert created.engine in ("local", "spark") and created.engine_reason
    assert created.spark_jobs == 0 if created.engine == "local" else created.spark_jobs >= 1
    assert created.rows_changed == initial_rows
    assert [r.batch for r in _history(spark, "hist_v", "LIMIT 1")] == [2]
    queried = spark.sql("DESCRIBE INCREMENTAL VIEW hist_v HISTORY").where("batch = 1") \
        .select("versions_after.r").collect()
    assert queried[0][0] == rows[1].versions_after["r"]
    spark.sql("DROP INCREMENTAL VIEW hist_v")


def test_history_shows_an_interrupted_batch_until_it_is_rerun(spark, vl, work):
    spark.sql(f"CREATE INCREMENTAL VIEW hist_i AS {QUERY}")
    view = vl.ctx.load("hist_i")
    _commit(work, "r")
    last = view.manifest.last_committed()
    ranges = {rel: (last.watermarks[rel], vl.ctx.store.version(view.table_path(rel)))
              for rel in last.ranges}
    maps = {m: vl.ctx.store.version(view.map_path(m)) for m in view.definition.maps}
    maps["__result"] = vl.ctx.store.version(view.result_path)
    assert view.manifest.plan(1, ranges, maps)      # what a crash after planning leaves
    top = _history(spark, "hist_i")[0]
    assert top.batch == 1 and top.status.startswith("planned, not committed")
    assert top.committed_at is None and top.seconds is None
    spark.sql("REFRESH INCREMENTAL VIEW hist_i")
    top = _history(spark, "hist_i")[0]
    assert top.batch == 1 and top.status == "committed" and top.versions_after["r"] == ranges["r"][1]
    spark.sql("DROP INCREMENTAL VIEW hist_i")


def test_history_errors(spark, vl):
    from pyspark.errors import AnalysisException, ParseException
    with pytest.raises(AnalysisException, match="does not exist"):
        spark.sql("DESCRIBE INCREMENTAL VIEW no_such HISTORY").collect()
    with pytest.raises(ParseException, match="after LIMIT"):
        spark.sql("DESCRIBE INCREMENTAL VIEW no_such HISTORY LIMIT x")


def test_progress_is_quiet_until_the_threshold(spark, vl, work, capsys, caplog):
    spark.conf.set("spark.viewlet.progress.afterSeconds", "3600")
    try:
        spark.sql(f"CREATE INCREMENTAL VIEW prog_v AS {QUERY}")
        assert "[viewlet]" not in capsys.readouterr().err
        spark.conf.set("spark.viewlet.progress.afterSeconds", "0")     # every step, to stderr
        _commit(work, "r")
        spark.sql("REFRESH INCREMENTAL VIEW prog_v").collect()
        lines = [l for l in capsys.readouterr().err.splitlines() if l.startswith("[viewlet]")]
        assert lines and all(l.startswith("[viewlet] refresh prog_v batch 1: ") for l in lines)
        assert any("reading the changes of r" in l for l in lines)
        # the maps' deltas (one step for all of them, named when there is one)
        assert any(" the deltas of " in l and " maps (" in l for l in lines)
        assert lines.index(next(l for l in lines if "reading" in l)) < \
            lines.index(next(l for l in lines if "the deltas of" in l))
        spark.sql("REFRESH INCREMENTAL VIEW prog_v FULL").collect()
        rebuilt = capsys.readouterr().err
        n_maps = len(vl.ctx.load("prog_v").definition.maps)
        loads = [l for l in rebuilt.splitlines() if l.startswith("[viewlet] rebuild prog_v: loading ")]
        assert loads[-1].startswith("[viewlet] rebuild prog_v: loading the result table")
        # small tables: every map computed in the driver (engine/ops/load.py), one step
        assert len(loads) == 2 and "in the driver" in loads[0], loads
        with caplog.at_level(logging.INFO, logger="viewlet.progress"):   # logging shows it:
            _commit(work, "s")                                            # no second copy
            spark.sql("REFRESH INCREMENTAL VIEW prog_v").collect()
        assert "[viewlet]" not in capsys.readouterr().err
        # batch numbers go on across the rebuild (0 created, 1, 2 rebuilt, 3)
        assert any("refresh prog_v batch 3: reading the changes of s" in r.getMessage()
                   for r in caplog.records)
    finally:
        spark.conf.unset("spark.viewlet.progress.afterSeconds")
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS prog_v")


def test_a_callers_job_group_is_kept_and_metered(spark, vl, work):
    spark.sql(f"CREATE INCREMENTAL VIEW hist_g WITH (engine = 'spark') AS {QUERY}")
    sc = spark.sparkContext
    sc.setJobGroup("callers-group", "the caller meters its own group")
    try:
        before = set(sc.statusTracker().getJobIdsForGroup("callers-group"))
        _commit(work, "r")
        vl.refresh("hist_g")
        assert sc.getLocalProperty("spark.jobGroup.id") == "callers-group"
        gained = set(sc.statusTracker().getJobIdsForGroup("callers-group")) - before
        top = _history(spark, "hist_g")[0]
        assert top.batch == 1 and 1 <= top.spark_jobs == len(gained)
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
        spark.sql("DROP INCREMENTAL VIEW hist_g")


def test_history_survives_full_rebuilds_and_records_failures(spark, vl, work):
    import shutil
    from pyspark.errors import AnalysisException
    from .oracle import assert_view_matches
    spark.sql(f"CREATE INCREMENTAL VIEW hist_full AS {QUERY}")
    _commit(work, "r")
    spark.sql("REFRESH INCREMENTAL VIEW hist_full")
    before = _history(spark, "hist_full")
    full = spark.sql("REFRESH INCREMENTAL VIEW hist_full FULL").collect()[0]
    assert (full.batch, full.status) == (2, "rebuilt")
    _commit(work, "s")
    assert spark.sql("REFRESH INCREMENTAL VIEW hist_full").collect()[0].batch == 3
    assert_view_matches(spark, "hist_full", QUERY)
    rows = _history(spark, "hist_full")
    assert [(r.batch, r.status) for r in rows] == [
        (3, "committed"), (2, "rebuilt"), (1, "committed"), (0, "created")]
    assert rows[1].message == "REFRESH ... FULL" and rows[1].rows_changed == full.rows_changed
    assert rows[0].versions_before == rows[1].versions_after      # the rebuild is a watermark
    assert rows[2:] == before                                    # the old batches, unchanged
    # a refresh that fails is an entry too, and the table function filters like any table
    saved = str(work.paths["s"]) + ".saved"
    shutil.move(work.paths["s"], saved)
    try:
        with pytest.raises(AnalysisException, match="no longer exists"):
            spark.sql("REFRESH INCREMENTAL VIEW hist_full")
    finally:
        shutil.move(saved, work.paths["s"])
    failed = spark.sql("SELECT batch, message FROM viewlet_history('hist_full') "
                       "WHERE status = 'failed'").collect()
    assert [f.batch for f in failed] == [4] and "no longer exists" in failed[0].message
    _commit(work, "r")
    assert spark.sql("REFRESH INCREMENTAL VIEW hist_full").collect()[0].batch == 4
    statuses = [(r.batch, r.status) for r in _history(spark, "hist_full", "LIMIT 2")]
    assert statuses == [(4, "committed"), (4, "failed")]     # newest first
    spark.sql("DROP INCREMENTAL VIEW hist_full")


def test_an_interrupted_batch_a_rebuild_replaced_is_abandoned(spark, vl, work):
    spark.sql(f"CREATE INCREMENTAL VIEW hist_ab AS {QUERY}")
    view = vl.ctx.load("hist_ab")
    _commit(work, "r")
    last = view.manifest.last_committed()
    ranges = {rel: (last.watermarks[rel], vl.ctx.store.version(view.table_path(rel)))
              for rel in last.ranges}
    assert view.manifest.plan(1, ranges, {m: 0 for m in view.definition.maps})
    spark.sql("REFRESH INCREMENTAL VIEW hist_ab FULL")
    rows = _history(spark, "hist_ab")
    assert [r.batch for r in rows] == [2, 1, 0]
    assert rows[0].status == "rebuilt" and rows[1].status.startswith("abandoned")
    spark.sql("DROP INCREMENTAL VIEW hist_ab")
