"""Viewlet's commits skip delta-rs's per-commit log cleanup (it lists the whole log at every
commit, so writes slowed as a table's history grew) and clean the log when a commit reaches
a multiple of CLEAN_LOG_EVERY versions, under the table's delta.logRetentionDuration."""
from __future__ import annotations

import os
import time

import pyarrow as pa

from viewlet.engine.state.manifest import Txn
from viewlet.storage import deltars
from viewlet.storage.deltars import DeltaRsStore

ROWS = pa.table({"k": pa.array([1], pa.int64())})


def _json_entries(path):
    return sorted(int(f.split(".")[0]) for f in os.listdir(os.path.join(path, "_delta_log"))
                  if f.endswith(".json") and f[0].isdigit())


def _age_log(path, seconds):
    """Make every log entry `seconds` old (what the retention compares with)."""
    log = os.path.join(path, "_delta_log")
    then = time.time() - seconds
    for f in os.listdir(log):
        os.utime(os.path.join(log, f), (then, then))


def test_expired_log_entries_go_when_a_commit_reaches_a_multiple(tmp_path, monkeypatch):
    monkeypatch.setattr(deltars, "CLEAN_LOG_EVERY", 20)
    store = DeltaRsStore()
    path = str(tmp_path / "t")
    store.create(path, ROWS, txn=Txn("viewlet:test", 0),
                 properties={"delta.logRetentionDuration": "interval 1 hours"})
    for batch in range(1, 16):                       # versions 1-15: a checkpoint at 10
        store.append_once(path, ROWS, Txn("viewlet:test", batch))
    _age_log(path, 2 * 3600)                         # all of them past the retention
    store.append_once(path, ROWS, Txn("viewlet:test", 16))
    assert _json_entries(path)[0] == 0, "the log was cleaned before a multiple of 20"
    for batch in range(17, 21):                      # version 20: a multiple, a checkpoint
        store.append_once(path, ROWS, Txn("viewlet:test", batch))
    entries = _json_entries(path)
    # delta-rs keeps the entry just before the checkpoint it cleans up to
    assert 0 < entries[0] <= 10, f"expired entries are still there: {entries[:5]}"
    assert entries[-1] == 20
    assert store.read_arrow(path).num_rows == 21     # the table reads whole from its checkpoint


def test_entries_within_the_retention_stay(tmp_path, monkeypatch):
    monkeypatch.setattr(deltars, "CLEAN_LOG_EVERY", 20)
    store = DeltaRsStore()
    path = str(tmp_path / "t")
    store.create(path, ROWS, txn=Txn("viewlet:test", 0))     # Delta's default: 30 days
    for batch in range(1, 21):
        store.append_once(path, ROWS, Txn("viewlet:test", batch))
    assert _json_entries(path) == list(range(21))


def test_rewrites_clean_the_log_and_know_their_version(tmp_path, monkeypatch):
    """A rewrite commits through create_write_transaction, which leaves its handle where it
    was: the log is still cleaned when the rewrite reaches a multiple, and the table's
    version is the rewrite's."""
    monkeypatch.setattr(deltars, "CLEAN_LOG_EVERY", 20)
    store = DeltaRsStore()
    path = str(tmp_path / "t")
    store.create(path, ROWS, txn=Txn("viewlet:test", 0),
                 properties={"delta.logRetentionDuration": "interval 1 hours"})
    for _ in range(15):
        assert store.rewrite(path, ROWS, store.version(path), 10)
    _age_log(path, 2 * 3600)
    for expected in range(16, 21):                   # version 20: a multiple
        assert store.rewrite(path, ROWS, store.version(path), 10)
        assert store.version(path) == expected == deltars._dl().DeltaTable(path).version()
    entries = _json_entries(path)
    assert entries[0] > 0, f"expired entries are still there: {entries[:5]}"
    assert entries[-1] == 20
    assert store.read_arrow(path).num_rows == 1
