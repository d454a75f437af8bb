"""The batch manifest compacted every COMPACT_EVERY batches (engine/state/manifest.py): its
files stay few however long the history, a compaction rewrites the newest rows rather than
the whole history, every reader sees the same rows before and after a compaction (a reader
that cached rows, a fresh one), the plan transactions included, and a batch's reads of the
last records agree with the whole list."""
from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pytest

from viewlet.engine.state import manifest as manifest_module
from viewlet.engine.state.manifest import COMPACT_EVERY, MERGE_RATIO, BatchRecord, Manifest
from viewlet.storage.base import FileStats, Snapshot
from viewlet.storage.deltars import DeltaRsStore


def _fresh_read(m: Manifest):
    """The records as a new process reads them (nothing cached)."""
    with manifest_module._LOCK:
        manifest_module._READ.pop(m.path, None)
    return [(r.batch, r.phase, r.ranges) for r in m.all_records()]


def test_files_stay_few_and_records_are_unchanged(tmp_path):
    store = DeltaRsStore()
    m = Manifest(store, str(tmp_path / "manifest"))
    m.start({"r": 0}, {})
    batches = 2 * COMPACT_EVERY + 3
    before_first = None
    for b in range(1, batches + 1):
        assert m.plan(b, {"r": (b - 1, b)}, {"m": b})
        if b == COMPACT_EVERY - 1:
            before_first = [(r.batch, r.phase) for r in m.all_records()]     # cached here
        assert m.commit(m.latest(), {"batch": b})
    expected = [(0, "committed", {"r": (0, 0)})] + [
        (b, phase, {"r": (b - 1, b)}) for b in range(1, batches + 1)
        for phase in ("planned", "committed")]
    # the reader that cached rows before the compactions follows them
    assert before_first is not None and len(before_first) == 2 * COMPACT_EVERY - 2
    assert [(r.batch, r.phase, r.ranges) for r in m.all_records()] == expected
    assert _fresh_read(m) == expected
    # one file of compacted rows plus the rows appended since the last compaction
    files = store.snapshot(m.path).files
    assert len(files) == 1 + 2 * (batches - 2 * COMPACT_EVERY), files
    # on disk too: the files the first compaction replaced were deleted by the second
    on_disk = [f for f in os.listdir(m.path) if f.endswith(".parquet")]
    assert len(on_disk) == 1 + 2 * COMPACT_EVERY + 1 + 2 * (batches - 2 * COMPACT_EVERY), on_disk
    # a batch planned before a compaction cannot be planned again after it
    assert not m.plan(batches, {"r": (0, 99)}, {})
    assert m.next_planned() == batches + 1


def _history(batches: int) -> pa.Table:
    """The committed rows of `batches` earlier batches, as a rebuild carries them over."""
    rows = [manifest_module._row_table(BatchRecord(b, "committed", {"r": (b, b + 1)}, {}, {}))
            for b in range(batches)]
    return pa.concat_tables(rows)


def test_a_long_history_is_rewritten_rarely(tmp_path):
    """Each compaction rewrites the newest rows, not the whole history: a file holding more
    than MERGE_RATIO times the newer rows stays as it is."""
    store = DeltaRsStore()
    m = Manifest(store, str(tmp_path / "manifest"))
    old = 5 * MERGE_RATIO * 2 * COMPACT_EVERY
    m.start({"r": old}, {}, batch=old, carried=_history(old))
    (history_file,) = store.snapshot(m.path).files
    for b in range(old + 1, old + 2 * COMPACT_EVERY + 1):
        assert m.plan(b, {"r": (b - 1, b)}, {"m": b})
        assert m.commit(m.latest(), {})
    files = store.snapshot(m.path).files
    assert history_file in files and len(files) == 2, files
    expected = [(b, "committed") for b in range(old + 1)] + [
        (b, phase) for b in range(old + 1, old + 2 * COMPACT_EVERY + 1)
        for phase in ("planned", "committed")]
    assert [(r.batch, r.phase) for r in m.all_records()] == expected
    assert [(b, p) for b, p, _ in _fresh_read(m)] == expected


def _snapshot_of(sizes):
    files = tuple(f"f{i}.parquet" for i in range(len(sizes)))
    stats = tuple(FileStats(n, {}, {}, {}) for n in sizes)
    return Snapshot("t", 3, files, pa.schema([]), (), stats)


@pytest.mark.parametrize("sizes,merged", [
    ((1000, 100, 30, 1, 1), ("f3", "f4")),                 # 30 > 4 x 2: the rest stay
    ((1000, 100, 5, 1, 1, 1), ("f2", "f3", "f4", "f5")),   # 5 <= 4 x 3; 100 > 4 x 8
    ((10, 1, 1, 1), ("f0", "f1", "f2", "f3")),             # 10 <= 4 x 3: all of them
    ((7,), ("f0",)),
])
def test_files_to_merge(sizes, merged):
    chosen = manifest_module.files_to_merge(_snapshot_of(sizes))
    assert sorted(f.split(".")[0] for f in chosen.files) == sorted(merged)


def _rec(batch, phase, at):
    return BatchRecord(batch, phase, {}, {}, {},
                       dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=at))


@pytest.mark.parametrize("tail", [
    [],
    [("planned", 10)],                                   # being computed
    [("planned", 10), ("dropped", 11)],                  # failed on its data: not a batch
    [("planned", 10), ("dropped", 11), ("failed", 12)],
    [("failed", 10)],
    [("planned", 10), ("committed", 11)],
])
def test_the_last_records_read_from_the_end_equal_the_whole_list(tail, tmp_path):
    rows = [_rec(0, "committed", 0), _rec(1, "planned", 1), _rec(1, "dropped", 2),
            _rec(2, "planned", 3), _rec(2, "committed", 4), _rec(3, "failed", 5)]
    rows += [_rec(4, phase, at) for phase, at in tail]
    rows = list(manifest_module._merged((), tuple(rows)))
    m = Manifest(DeltaRsStore(), str(tmp_path / "unused"))
    records = m.records(rows)
    assert m.latest(rows) == records[-1]
    assert m.last_committed(rows) == [r for r in records if r.phase == "committed"][-1]
    assert m.next_planned(rows) == max(r.batch for r in rows if r.phase != "failed") + 1
