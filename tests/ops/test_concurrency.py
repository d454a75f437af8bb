"""Concurrency: base tables written while views refresh (batches pin versions), two
refreshers of one view, two CREATEs of one name, and the Delta-log primitives under them."""
from __future__ import annotations

import threading

import pyarrow as pa
import pytest
from chispa import assert_df_equality
from deltalake import DeltaTable

from viewlet.errors import ConcurrentUpdate, ViewAlreadyExists, ViewletError
from viewlet.engine.batch import drift
from viewlet.engine.state.manifest import Manifest
from viewlet.engine.spark.io import read_table

from tests.spark.oracle import assert_view_matches
from tests.spark.workload import SCHEMAS, registered_workload

TEMPLATE = "SELECT r.a, SUM(s.f) AS sf, COUNT(*) AS n FROM {r} r JOIN {s} s ON r.b = s.b GROUP BY r.a"
QUERY = TEMPLATE.format(r="r", s="s")


@pytest.fixture
def work(spark, vl, tmp_path):
    w = registered_workload(spark, str(tmp_path), seed=23, rows=15)
    return w


def _expected_at(spark, vl, work, versions):
    frames = {rel: read_table(spark, vl.ctx.store, work.paths[rel], v) for rel, v in versions.items()}
    return spark.sql(TEMPLATE, **frames)


def _merge_upsert(path, rng):
    """Another writer's MERGE: bump f of some s rows, insert a new one."""
    src = pa.Table.from_pylist([{"b": rng.randint(0, 4), "e": rng.randint(0, 3), "f": None}],
                               schema=SCHEMAS["s"])
    DeltaTable(path).merge(src, "t.b = s.b AND t.e = s.e", source_alias="s", target_alias="t") \
        .when_matched_update({"f": "t.f + 1"}).when_not_matched_insert_all().execute()


def test_refresh_pins_versions_while_tables_are_written(spark, vl, work):
    spark.sql(f"CREATE INCREMENTAL VIEW cc_pinned AS {QUERY}")
    done = threading.Event()
    errors = []

    def writer():
        try:
            for _ in range(6):
                work.batch()
                _merge_upsert(work.paths["s"], work.rng)
        except BaseException as e:  # noqa: BLE001 - reported by the test thread
            errors.append(e)
        finally:
            done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    batches = 0
    try:
        while True:
            finished = done.is_set()          # read before refreshing: one more after the end
            if vl.refresh("cc_pinned")["status"] == "refreshed":
                batches += 1
            view = vl.ctx.load("cc_pinned")
            last = view.manifest.last_committed()
            expected = _expected_at(spark, vl, work, {rel: r[1] for rel, r in last.ranges.items()})
            assert_df_equality(vl.read_view("cc_pinned"), expected, ignore_nullable=True,
                               ignore_row_order=True)
            if finished:
                break
    finally:
        thread.join()
    assert not errors, errors
    assert batches >= 1
    assert_view_matches(spark, "cc_pinned", QUERY)     # the last batch reached the end
    spark.sql("DROP INCREMENTAL VIEW cc_pinned")


def test_two_refreshers_of_one_view(spark, vl, work):
    spark.sql(f"CREATE INCREMENTAL VIEW cc_two AS {QUERY}")
    for _ in range(3):
        while not {"r", "s"} & set(work.batch()):    # a batch the view reads
            pass
        start = threading.Barrier(2)
        outcomes = []

        def refresher():
            start.wait()
            try:
                outcomes.append(vl.refresh("cc_two")["status"])
            except ConcurrentUpdate as e:       # the clean loser: nothing applied twice
                outcomes.append(f"conflict: {e.message}")

        threads = [threading.Thread(target=refresher) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(outcomes) == 2 and any(o == "refreshed" or o.startswith("recovered")
                                          for o in outcomes), outcomes
        vl.refresh("cc_two")                    # finishes a batch a conflict interrupted
        records = vl.ctx.load("cc_two").manifest.records()
        for phase in ("planned", "committed"):
            batches = [r.batch for r in records if r.phase == phase]
            assert len(batches) == len(set(batches)), records   # one row per batch and phase
        assert_view_matches(spark, "cc_two", QUERY)
    spark.sql("DROP INCREMENTAL VIEW cc_two")


def test_a_batch_another_refresher_commits_meanwhile_is_applied_once(spark, vl, work,
                                                                    monkeypatch):
    # A refresher that read the manifest, then lost the processor while another refresher
    # planned and committed the batch, must not plan the same commits again under the next
    # batch number (they would be applied twice).
    spark.sql(f"CREATE INCREMENTAL VIEW cc_late AS {QUERY}")
    while not {"r", "s"} & set(work.batch()):
        pass
    real_ranges = drift.batch_ranges
    interleaved = []

    def ranges_then_another_refresh(view, *args, **kwargs):
        out = real_ranges(view, *args, **kwargs)
        if not interleaved and view.name == "cc_late":
            interleaved.append(True)
            other = threading.Thread(target=lambda: interleaved.append(
                vl.refresh("cc_late")["status"]))
            other.start()
            other.join()
        return out

    def committed():
        return [r.batch for r in vl.ctx.load("cc_late").manifest.records() if r.phase == "committed"]

    before = committed()
    monkeypatch.setattr(drift, "batch_ranges", ranges_then_another_refresh)
    vl.refresh("cc_late")
    assert interleaved[1:] == ["refreshed"]          # the other refresher ran the batch
    assert committed() == before + [before[-1] + 1]  # one batch, committed once
    assert_view_matches(spark, "cc_late", QUERY)
    spark.sql("DROP INCREMENTAL VIEW cc_late")


def test_two_creates_of_one_name(spark, vl, work):
    start = threading.Barrier(2)
    outcomes = []

    def creator():
        start.wait()
        try:
            outcomes.append(vl.create_view("cc_same", QUERY)["status"])
        except ViewAlreadyExists as e:
            outcomes.append(e.message)

    threads = [threading.Thread(target=creator) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(o == "created" for o in outcomes) == [False, True], outcomes
    assert [e.name for e in vl.ctx.catalog.entries()].count("cc_same") == 1
    spark.sql("DROP INCREMENTAL VIEW cc_same")


def test_stale_writers_of_the_same_transaction_conflict(vl, tmp_path):
    """The primitive under manifests and the catalog: of two writers that read the same
    snapshot and commit the same transaction app id, the second fails; a writer that reads
    after the first sees the transaction and skips."""
    path = str(tmp_path / "m")
    manifest = Manifest(vl.ctx.store, path)
    manifest.start({"r": 0}, {})
    row = pa.table({"x": [1]})
    v = vl.ctx.store.version(path)
    other = str(tmp_path / "o")
    vl.ctx.store.create(other, row)
    v = vl.ctx.store.version(other)
    assert vl.ctx.store.append_once(other, row, ("app", 1), read_version=v)
    with pytest.raises(ConcurrentUpdate, match="run the statement again"):
        vl.ctx.store.append_once(other, row, ("app", 2), read_version=v)
    assert not vl.ctx.store.append_once(other, row, ("app", 1))
    assert manifest.plan(1, {"r": (0, 1)}, {}) is True
    assert manifest.plan(1, {"r": (0, 2)}, {}) is False        # batch 1 is already planned
    assert [r.ranges for r in manifest.records() if r.phase == "planned"] == [{"r": (0, 1)}]
    assert isinstance(ConcurrentUpdate("x"), ViewletError)
