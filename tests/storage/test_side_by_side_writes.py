"""A batch's commits side by side (engine/maintain/writes.py), on real Delta tables: results
in the order the writes were given, each commit with its transaction id, and a failed write
raised only after every other write has ended (nothing left running)."""
from __future__ import annotations

import threading
import time

import pyarrow as pa
import pytest

from viewlet.engine.maintain.writes import SideBySide
from viewlet.engine.state.manifest import Txn
from viewlet.storage.deltars import DeltaRsStore

ROWS = pa.table({"k": pa.array([1, 2], pa.int64()), "v": pa.array([10, 20], pa.int64())})


def _tables(tmp_path, store, n):
    paths = [str(tmp_path / f"m{i}") for i in range(n)]
    for path in paths:
        store.create(path, ROWS, txn=Txn("viewlet:test", 0))
    return paths


def test_results_come_in_order_and_every_table_holds_its_commit(tmp_path):
    store = DeltaRsStore()
    paths = _tables(tmp_path, store, 3)
    txn = Txn("viewlet:test", 1)
    threads = set()

    def append(path):
        def write():
            threads.add(threading.get_ident())
            return path, store.add_rows(path, ROWS, txn)
        return write

    with SideBySide([append(p) for p in paths]) as results:
        got = list(results)
    assert [path for path, _ in got] == paths
    assert all(version == 1 for _, version in got), got
    assert threading.get_ident() not in threads          # on the pool, not this thread
    for path in paths:
        assert store.txn_version(path, txn.app) == 1
        assert store.read_arrow(path).num_rows == 4
    # the same batch again (a re-run after a crash) commits nothing twice
    with SideBySide([append(p) for p in paths]) as results:
        assert [version for _, version in results] == [None, None, None]


def test_a_single_write_runs_on_the_calling_thread(tmp_path):
    store = DeltaRsStore()
    (path,) = _tables(tmp_path, store, 1)
    with SideBySide([lambda: (threading.get_ident(),
                              store.add_rows(path, ROWS, Txn("viewlet:test", 1)))]) as results:
        (thread, version), = list(results)
    assert thread == threading.get_ident() and version == 1


def test_a_failed_write_is_raised_after_the_others_have_ended(tmp_path):
    store = DeltaRsStore()
    good, bad = _tables(tmp_path, store, 2)
    ended = threading.Event()

    def slow_append():
        time.sleep(0.3)          # still running when the failed write is raised
        version = store.add_rows(good, ROWS, Txn("viewlet:test", 1))
        ended.set()
        return version

    wrong = pa.table({"other": pa.array(["x"])})          # a schema the table refuses
    with pytest.raises(Exception):
        with SideBySide([lambda: store.add_rows(bad, wrong, Txn("viewlet:test", 1)),
                         slow_append]) as results:
            list(results)
    assert ended.is_set()                                  # the block waited for it
    assert store.txn_version(good, "viewlet:test") == 1
    assert store.txn_version(bad, "viewlet:test") == 0
