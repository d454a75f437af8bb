"""Files written by another engine and committed by the store (the distributed target's
writes), without Spark: footer statistics equal the ones Viewlet records for its own files,
file skipping works on them, the commit is exactly once per transaction id and removes what
it names, and change files follow the Delta protocol (change data files when trusted, else
removed and added files)."""
from __future__ import annotations

import datetime as dt
import json
import os
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from viewlet.errors import ConcurrentUpdate
from viewlet.storage.deltars import DeltaRsStore, _stats
from viewlet.storage.footers import footer_stats

DATA = pa.table({
    "k": pa.array([5, None, 2, 9, 2], pa.int64()),
    "s": pa.array(["b", "a", None, "zz", "a"], pa.string()),
    "d": pa.array([dt.date(2024, 1, 2), None, dt.date(2023, 5, 6), dt.date(2025, 1, 1),
                   dt.date(2024, 1, 1)], pa.date32()),
    "x": pa.array([1.5, 2.5, None, 0.5, 3.0], pa.float64()),
})


def _write(table_path, data, folder="b1", row_group_size=None):
    os.makedirs(os.path.join(table_path, folder), exist_ok=True)
    rel = f"{folder}/part-{uuid.uuid4()}.parquet"
    pq.write_table(data, os.path.join(table_path, rel), row_group_size=row_group_size)
    return rel


def test_footer_statistics_are_the_ones_viewlet_records(tmp_path):
    path = str(tmp_path / "f.parquet")
    pq.write_table(DATA, path, row_group_size=2)       # several row groups, merged
    assert footer_stats(pq.read_metadata(path)) == json.loads(json.dumps(_stats(DATA)))


def test_committed_files_are_read_skipped_and_committed_once(tmp_path):
    store = DeltaRsStore()
    table = str(tmp_path / "t")
    write_deltalake(table, DATA.slice(0, 0))
    low, high = DATA.filter(pa.compute.less(DATA["k"], 5)), DATA.filter(pa.compute.greater_equal(DATA["k"], 5))
    files = store.describe_files(table, [_write(table, low), _write(table, high)])
    assert [f.rows for f in files] == [low.num_rows, high.num_rows]
    txn = ("view-x", 1)
    version = store.commit_files(table, files, (), txn, {"viewlet.batch": "1"})
    assert version == 1 and store.txn_version(table, "view-x") == 1
    got = DeltaTable(table).to_pyarrow_table().sort_by("k")
    assert got.equals(pa.concat_tables([low, high]).cast(got.schema).sort_by("k"))
    # statistics from the footers skip files as those of Viewlet's own writes do
    snap = store.snapshot(table, version)
    assert len(snap.restricted({"k": (pa.array([9]), False)}).files) == 1
    # the same transaction again: nothing committed, its files deleted
    again = store.describe_files(table, [_write(table, low, "b1again")])
    assert store.commit_files(table, again, (), txn) is None
    assert store.version(table) == 1
    assert not os.path.exists(os.path.join(table, again[0].path))
    # a rewrite removes exactly the files it names
    paths = store.file_paths(table, version)
    first = next(p for name, p in paths.items() if name == files[0].path.rsplit("/", 1)[-1])
    rewritten = store.describe_files(table, [_write(table, low.slice(0, 1), "b2")])
    store.commit_files(table, rewritten, [first], ("view-x", 2), read_version=version)
    assert DeltaTable(table).to_pyarrow_table().num_rows == 1 + high.num_rows


def test_a_rewrite_of_files_another_commit_removed_conflicts(tmp_path):
    store = DeltaRsStore()
    table = str(tmp_path / "t")
    write_deltalake(table, DATA)
    version = store.version(table)
    paths = list(store.file_paths(table, version).values())
    DeltaTable(table).delete("k = 9")                  # removes the file, adds a rewritten one
    mine = store.describe_files(table, [_write(table, DATA.slice(0, 1))])
    with pytest.raises(ConcurrentUpdate):
        store.commit_files(table, mine, paths, read_version=version)
    assert not os.path.exists(os.path.join(table, mine[0].path))


def test_change_files_follow_the_protocol(tmp_path):
    store = DeltaRsStore()
    table = str(tmp_path / "t")
    write_deltalake(table, DATA, configuration={"delta.enableChangeDataFeed": "true"})
    write_deltalake(table, DATA.slice(0, 2), mode="append")
    DeltaTable(table).delete("k = 2")                  # delta-rs writes change data files
    kinds = [(f.kind, f.rows) for f in store.change_files(table, 0, 1)]
    assert kinds == [("add", 2)]
    deleted = store.change_files(table, 1, 2)
    assert {f.kind for f in deleted} == {"cdc"}
    # from_files (an upstream view's result table): the files removed and added instead
    assert {f.kind for f in store.change_files(table, 1, 2, from_files=True)} <= {"add", "remove"}
    assert store.change_rows_estimate(table, 0, 2) >= 2


def test_change_rows_are_counted_exactly_when_the_bound_would_decide(tmp_path):
    """delta-rs's change data files carry no statistics: their size in bytes bounds their
    rows, and once that bound passes the limit given, their footers count them."""
    store = DeltaRsStore()
    table = str(tmp_path / "t")
    n = 20_000
    write_deltalake(table, pa.table({"k": pa.array(range(n), pa.int64()),
                                     "g": pa.array([i % 10 for i in range(n)], pa.int64())}),
                    configuration={"delta.enableChangeDataFeed": "true"})
    DeltaTable(table).delete("g = 3")                  # rewrites the file: 2,000 rows deleted
    deleted = n // 10
    bound = store.change_rows_estimate(table, 0, 1)
    assert bound > deleted                             # bytes, at least one a row
    assert store.change_rows_estimate(table, 0, 1, exact_above=bound) == bound
    assert store.change_rows_estimate(table, 0, 1, exact_above=bound - 1) == deleted


def test_a_row_is_weighed_as_it_will_be_in_memory(tmp_path):
    """Repeated long strings compress to almost nothing on disk (dictionary pages); in
    memory (Arrow) each row holds its string whole: row_bytes weighs that, from a sample of
    the changes' own files (a change data file here)."""
    store = DeltaRsStore()
    table = str(tmp_path / "t")
    n, width = 20_000, 1000
    tags = ["x" * width, "y" * width]
    write_deltalake(table, pa.table({"k": pa.array(range(n), pa.int64()),
                                     "tag": pa.array([tags[i % 2] for i in range(n)])}),
                    configuration={"delta.enableChangeDataFeed": "true"})
    DeltaTable(table).delete("k % 2 = 0")
    files = store.change_files(table, 0, 1)
    on_disk = sum(os.path.getsize(f.uri.replace("file://", "")) for f in files)
    weight = store.row_bytes(table, [f.uri for f in files])
    # each row: its int64, its string's bytes and offset; a change data file adds the change
    # type (a short string)
    assert width + 8 + 4 <= weight <= width + 8 + 4 + 64
    assert weight * (n // 2) > 50 * on_disk
    assert store.row_bytes(table, [str(tmp_path / "vacuumed.parquet")]) is None
