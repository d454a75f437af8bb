"""A batch's committed row is appended after its REFRESH returned (engine/ops/committing.py):
the statement does not wait for it, the process's next reads of the manifest do (and a
process ending without its exit handlers: api/attach.py), another process finds the batch
under a live lease meanwhile, and a row that never lands is appended by the next refresh,
which applies nothing twice."""
from __future__ import annotations

import threading

from viewlet.engine.state import lease
from viewlet.engine.state.manifest import Manifest, _records, settle_all

from .oracle import assert_view_matches
from .workload import registered_workload

QUERY = "SELECT r.a, SUM(r.c * s.f) AS x, COUNT(*) AS n FROM r JOIN s ON r.b = s.b GROUP BY r.a"


def _changed_batch(work):
    while not {"r", "s"} & set(work.batch()):
        pass


def _stored_phases(vl, view, batch):
    """The phases of `batch`'s rows as the manifest table holds them now (no waiting)."""
    store = vl.ctx.store
    rows = _records(store.read_files(store.snapshot(view.manifest.path)))
    return sorted(r.phase for r in rows if r.batch == batch)


def test_refresh_returns_before_its_committed_row_and_reads_wait_for_it(
        spark, vl, tmp_path, monkeypatch):
    work = registered_workload(spark, str(tmp_path), seed=13, rows=20)
    spark.sql(f"CREATE INCREMENTAL VIEW cr_later AS {QUERY}")
    try:
        gate, original = threading.Event(), Manifest.commit

        def held_commit(self, planned, stats):
            assert gate.wait(120), "the committed row was waited for by its REFRESH"
            return original(self, planned, stats)

        monkeypatch.setattr(Manifest, "commit", held_commit)
        _changed_batch(work)
        batch = vl.refresh("cr_later")["batch"]
        view = vl.ctx.load("cr_later")
        # returned with the row still held back: planned only, under this process's lease
        assert _stored_phases(vl, view, batch) == ["planned"]
        assert [h.batch for h in lease.holders(view, batch)] == [batch]
        gate.set()
        settle_all()       # what a process ending without its exit handlers waits for
        assert _stored_phases(vl, view, batch) == ["committed", "planned"]
        assert lease.holders(view, batch) == []           # released once the row landed
        assert view.manifest.latest().batch == batch
        assert view.manifest.latest().phase == "committed"
        assert_view_matches(spark, "cr_later", QUERY)
    finally:
        gate.set()
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS cr_later")


def test_a_committed_row_that_failed_is_appended_by_the_next_refresh(
        spark, vl, tmp_path, monkeypatch):
    work = registered_workload(spark, str(tmp_path), seed=14, rows=20)
    spark.sql(f"CREATE INCREMENTAL VIEW cr_failed AS {QUERY}")
    try:
        original = Manifest.commit

        def failing_commit(self, planned, stats):
            raise OSError("no space left on device")

        monkeypatch.setattr(Manifest, "commit", failing_commit)
        _changed_batch(work)
        batch = vl.refresh("cr_failed")["batch"]
        view = vl.ctx.load("cr_failed")
        assert view.manifest.latest().phase == "planned"     # the row never landed
        monkeypatch.setattr(Manifest, "commit", original)
        assert_view_matches(spark, "cr_failed", QUERY)        # the result holds the batch
        _changed_batch(work)
        refreshed = vl.refresh("cr_failed")
        assert refreshed["status"] == f"refreshed after recovering batch {batch}"
        committed = [r.batch for r in view.manifest.records() if r.phase == "committed"]
        assert committed == sorted(set(committed)) and committed[-2:] == [batch, batch + 1]
        assert_view_matches(spark, "cr_failed", QUERY)        # nothing applied twice
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS cr_failed")
