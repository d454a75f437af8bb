"""A batch's commits side by side (engine/maintain/writes.py), on real Delta tables: results
in the order the writes were given, each commit with its transaction id, each table always
written from the same thread, and a failed write raised only after every other write has
ended (nothing left running)."""
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
    threads = {}

    def append(path):
        def write():
            threads.setdefault(path, set()).add(threading.get_ident())
            return path, store.add_rows(path, ROWS, txn)
        return write

    with SideBySide([append(p) for p in paths], paths) as results:
        got = list(results)
    assert [path for path, _ in got] == paths
    assert all(version == 1 for _, version in got), got
    for path in paths:
        assert store.txn_version(path, txn.app) == 1
        assert store.read_arrow(path).num_rows == 4
    # the same batch again (a re-run after a crash) commits nothing twice
    with SideBySide([append(p) for p in paths], paths) as results:
        assert [version for _, version in results] == [None, None, None]
    # each table from one thread both times, not this one; the three on different threads
    assert all(len(seen) == 1 for seen in threads.values()), threads
    ran = [next(iter(seen)) for seen in threads.values()]
    assert threading.get_ident() not in ran and len(set(ran)) == 3


def test_a_table_is_written_from_its_own_thread_even_alone(tmp_path):
    store = DeltaRsStore()
    first, second = _tables(tmp_path, store, 2)

    def append(path, batch):
        return lambda: (threading.get_ident(),
                        store.add_rows(path, ROWS, Txn("viewlet:test", batch)))

    with SideBySide([append(first, 1)], [first]) as results:
        (alone, version), = list(results)
    assert alone != threading.get_ident() and version == 1
    with SideBySide([append(second, 2), append(first, 2)], [second, first]) as results:
        (_, _), (beside, version) = list(results)
    assert beside == alone and version == 2


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
                         slow_append], [bad, good]) as results:
            list(results)
    assert ended.is_set()                                  # the block waited for it
    assert store.txn_version(good, "viewlet:test") == 1
    assert store.txn_version(bad, "viewlet:test") == 0
