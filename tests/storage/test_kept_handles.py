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


def test_another_writers_appends_are_followed_from_its_log(tmp_path, updates):
    """A base table's appends are seen by reading their log entries, without delta-rs
    bringing the kept handle up to date; a commit that changes the metadata, one past
    FOLLOW_COMMITS, a delete or a table created again at the path brings it up to date."""
    from deltalake import write_deltalake
    path = str(tmp_path / "base")
    write_deltalake(path, ROWS, configuration={"delta.enableChangeDataFeed": "true"})
    store = DeltaRsStore()
    first = store.observe(path)
    for i in range(3):
        write_deltalake(path, pa.table({"k": pa.array([10 + i], pa.int64())}), mode="append")
    assert store.observe(path).version == 3 and not updates
    changes = store.read_changes(path, 0, 3, ["k"])
    assert sorted(changes.column("k").to_pylist()) == [10, 11, 12] and not updates
    assert store.change_rows_estimate(path, 0, 3) == 3 and not updates
    # a new column: the metadata changed, so the handle is brought up to date
    write_deltalake(path, pa.table({"k": pa.array([20], pa.int64()), "w": ["x"]}),
                    mode="append", schema_mode="merge")
    state = store.observe(path)
    assert state.version == 4 and "w" in state.schema.names and len(updates) == 1
    # a delete is read from the change feed, whose query needs the handle at its version
    DeltaTable(path).delete("k = 10")
    assert store.observe(path).version == 5
    gone = store.read_changes(path, 4, 5, ["k"])
    assert gone.column("k").to_pylist() == [10] and gone.column("_viewlet_sign").to_pylist() == [-1]
    # more appends than a handle is followed across
    for i in range(deltars.FOLLOW_COMMITS + 2):
        write_deltalake(path, pa.table({"k": pa.array([i], pa.int64()), "w": ["y"]}), mode="append")
    before = len(updates)
    assert store.observe(path).version == 5 + deltars.FOLLOW_COMMITS + 2
    assert len(updates) == before + 1
    # a table created again at the path: another table, whatever its versions
    import shutil
    shutil.rmtree(path)
    write_deltalake(path, pa.table({"z": [1]}))
    for _ in range(2):
        write_deltalake(path, pa.table({"z": [2]}), mode="append")
    again = store.observe(path)
    assert again.version == 2 and again.table_id != first.table_id and again.schema.names == ["z"]


def test_a_table_created_again_is_kept_as_itself(tmp_path, monkeypatch):
    """After a table is created again at the path (delta-spark's DROP TABLE and CREATE
    TABLE of a managed table), nothing learnt of the old table is kept: the commit mark and
    the commits followed past the old handle (to version 3) are forgotten with it, so the
    new table's handle is kept (not opened again at every read) and its own commits are
    followed (its latest is 2, not the old table's 3)."""
    import shutil
    from deltalake import write_deltalake
    opened = []
    original = DeltaRsStore._open

    def counted(self, path, version):
        opened.append(version)
        return original(self, path, version)

    monkeypatch.setattr(DeltaRsStore, "_open", counted)
    path = str(tmp_path / "base")
    one = pa.table({"k": pa.array([1], pa.int64())})
    write_deltalake(path, one)
    write_deltalake(path, one, mode="append")
    store = DeltaRsStore()
    assert store.observe(path).version == 1
    for _ in range(2):
        write_deltalake(path, one, mode="append")
    assert store.observe(path).version == 3       # followed from the log, past the handle
    shutil.rmtree(path)
    new = pa.table({"k": pa.array([1], pa.int64()), "p": pa.array([0], pa.int64())})
    write_deltalake(path, new, partition_by=["p"])
    # the new table's version 1 differs from the old one's: two files (another commit mark)
    write_deltalake(path, pa.table({"k": pa.array([1, 2], pa.int64()),
                                    "p": pa.array([0, 1], pa.int64())}), mode="append")
    before = len(opened)
    for _ in range(3):
        assert store.observe(path).version == 1
    assert len(opened) == before + 1                 # opened once, then kept
    write_deltalake(path, new, mode="append")
    state = store.observe(path)
    assert state.version == 2 == DeltaTable(path).version() and state.schema.names == ["k", "p"]
    assert len(opened) == before + 1                 # its commit followed from the log
    assert store.snapshot(path, 2).version == 2
