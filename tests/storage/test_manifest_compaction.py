"""The batch manifest compacted every COMPACT_EVERY batches (engine/state/manifest.py): its
files stay few however long the history, and every reader sees the same rows before and
after a compaction (a reader that cached rows, a fresh one), the plan transactions
included."""
from __future__ import annotations

import os

from viewlet.engine.state import manifest as manifest_module
from viewlet.engine.state.manifest import COMPACT_EVERY, Manifest
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
