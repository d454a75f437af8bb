"""Kept delta-rs handles (storage/deltars.py `_table`): a handle of a local table only
Viewlet writes is taken as the latest while its log has no later entry, for a while after
delta-rs last brought it up to date; everything else is brought up to date by delta-rs.
Another process's commit is always seen."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from viewlet.engine.state.manifest import Txn
from viewlet.storage import deltars
from viewlet.storage.deltars import FRESH_HANDLE_SECONDS, DeltaRsStore

ROWS = pa.table({"k": pa.array([1], pa.int64())})


@pytest.fixture
def updates(monkeypatch):
    """Counts delta-rs bringing a handle up to date."""
    calls = []
    original = DeltaTable.update_incremental

    def counted(self, *args, **kwargs):
        calls.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(DeltaTable, "update_incremental", counted)
    return calls


def _owned_table(tmp_path):
    path = str(tmp_path / "views" / "t")
    writer = DeltaRsStore()                  # another process
    writer.create(path, ROWS, txn=Txn("viewlet:test", 0))
    reader = DeltaRsStore()
    reader.own(str(tmp_path / "views"))
    return path, writer, reader


def test_an_owned_handle_is_not_brought_up_to_date_while_no_commit_follows(tmp_path, updates):
    path, _, reader = _owned_table(tmp_path)
    assert reader.version(path) == 0         # opened: up to date
    for _ in range(5):
        assert reader.version(path) == 0
    assert updates == []


def test_another_processs_commit_is_seen_at_once(tmp_path, updates):
    path, writer, reader = _owned_table(tmp_path)
    assert reader.version(path) == 0
    writer.add_rows(path, ROWS, Txn("viewlet:test", 1))
    assert reader.version(path) == 1
    assert reader.read_arrow(path).num_rows == 2
    assert len(updates) == 1


def test_a_handle_not_updated_for_long_is_brought_up_to_date(tmp_path, updates, monkeypatch):
    path, _, reader = _owned_table(tmp_path)
    assert reader.version(path) == 0
    later = deltars._clock() + FRESH_HANDLE_SECONDS + 1
    monkeypatch.setattr(deltars, "_clock", lambda: later)
    assert reader.version(path) == 0
    assert len(updates) == 1
    assert reader.version(path) == 0         # fresh again
    assert len(updates) == 1


def test_a_table_viewlet_does_not_own_is_always_brought_up_to_date(tmp_path, updates):
    path = str(tmp_path / "base")
    DeltaRsStore().create(path, ROWS)
    reader = DeltaRsStore()
    reader.own(str(tmp_path / "views"))
    reader.version(path)
    reader.version(path)
    reader.version(path)
    assert len(updates) == 2                 # every read after the first, which opened it


def _on_other_thread(work):
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(work).result()


def test_a_commit_on_another_thread_gives_this_threads_version_without_an_update(
        tmp_path, updates):
    """Each thread keeps handles of its own; a commit of this process on another thread
    (a batch's map writes, its manifest rows) is the latest version for every thread."""
    path, _, store = _owned_table(tmp_path)
    assert store.version(path) == 0
    assert _on_other_thread(lambda: store.add_rows(path, ROWS, Txn("viewlet:test", 1))) == 1
    before = len(updates)
    assert store.version(path) == 1           # without bringing this thread's handle up
    assert len(updates) == before
    # this thread's reads of that version follow the commit on its kept handle
    assert store.read_arrow(path, 1).num_rows == 2
    # another process's commit after it is seen at once
    DeltaRsStore().add_rows(path, ROWS, Txn("viewlet:test", 2))
    assert store.version(path) == 2


def test_a_dropped_tables_known_version_is_forgotten(tmp_path):
    path, _, store = _owned_table(tmp_path)
    store.add_rows(path, ROWS, Txn("viewlet:test", 1))
    assert store.version(path) == 1
    store.drop(path)
    DeltaRsStore().create(path, ROWS)         # the same path again, from version 0
    assert store.version(path) == 0
