"""Changes of UPDATE commits written by delta-rs on tables with duplicate rows.

delta-rs writes such an UPDATE's change data as a set difference (rows whose new value equals
another updated row's old value vanish from the feed); the store reads those commits from the
files they replaced instead. The expected change is the multiset difference of the two table
versions, computed independently of any change feed."""
from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from viewlet.storage.deltars import DeltaRsStore
from tests.spark.oracle import assert_view_matches

SCHEMA = pa.schema([("e", pa.int32()), ("g", pa.int32()), ("p", pa.string())])


def _table(path, rows, partition_by=None):
    write_deltalake(path, pa.Table.from_pylist(rows, schema=SCHEMA), partition_by=partition_by,
                    configuration={"delta.enableChangeDataFeed": "true"})


def _rows_at(path, version):
    from deltalake import QueryBuilder
    dt = DeltaTable(path, version=version)
    table = pa.table(QueryBuilder().register("t", dt).execute("SELECT e, g, p FROM t").read_all())
    return Counter(tuple(r.values()) for r in table.to_pylist())


def _net_changes(path, after, to):
    changes = DeltaRsStore().read_changes(path, after, to).to_pylist()
    net = Counter()
    for r in changes:
        net[(r["e"], r["g"], r["p"])] += r["_viewlet_sign"]
    return {k: v for k, v in net.items() if v}


def _net_of(path, after, to, columns):
    """The net change per value of `columns` from a read of only those columns."""
    changes = DeltaRsStore().read_changes(path, after, to, columns)
    assert changes.column_names == list(columns) + ["_viewlet_sign"]
    net = Counter()
    for r in changes.to_pylist():
        net[tuple(r[c] for c in columns)] += r["_viewlet_sign"]
    return {k: v for k, v in net.items() if v}


def _projected(net, columns):
    out = Counter()
    for row, n in net.items():
        out[tuple(row[SCHEMA.names.index(c)] for c in columns)] += n
    return {k: v for k, v in out.items() if v}


def test_a_read_of_some_columns_takes_any_column_name(tmp_path):
    """Column names delta-rs would parse otherwise as SQL (a quote, a double quote, a
    backtick, a space, capitals, a non-ASCII letter) are read by a projection like any."""
    names = ["Ab", "it's", 'q"x', "t`b", "c d", "ü"]
    path = str(tmp_path / "odd")
    write_deltalake(path, pa.table({n: [1, 2] for n in names}),
                    configuration={"delta.enableChangeDataFeed": "true"})
    write_deltalake(path, pa.table({n: [i + 3] for i, n in enumerate(names)}), mode="append")
    for name in names:
        changes = DeltaRsStore().read_changes(path, 0, 1, [name, "Ab"] if name != "Ab" else [name])
        want = [name, "Ab"] if name != "Ab" else [name]
        assert changes.column_names == want + ["_viewlet_sign"], name
        assert changes.column(name).to_pylist() == [names.index(name) + 3]


def _difference(path, after, to):
    before, now = _rows_at(path, after), _rows_at(path, to)
    out = {k: now[k] - before[k] for k in set(before) | set(now)}
    return {k: v for k, v in out.items() if v}


ROWS = [{"e": 1, "g": 4, "p": "a"}, {"e": 1, "g": 4, "p": "a"}, {"e": 1, "g": 5, "p": "a"},
        {"e": 2, "g": 5, "p": "b"}, {"e": 1, "g": None, "p": "b"}]


def _through_storage_handler(table_path, files, options):
    """What `_filesystem` gives object stores (a filesystem carrying the store's options),
    used here for a local table so the repair's object-store path runs."""
    import pyarrow.fs as pa_fs
    from deltalake.fs import DeltaStorageHandler
    root = table_path.rstrip("/") + "/"
    return pa_fs.PyFileSystem(DeltaStorageHandler(root, options)), \
        [f[len(root):] if f.startswith(root) else f for f in files]


@pytest.mark.parametrize("partition_by", [None, ["p"]], ids=["plain", "partitioned"])
@pytest.mark.parametrize("log_access", ["local", "storage-handler"])
def test_update_changes_are_the_multiset_difference(tmp_path, partition_by, log_access,
                                                    monkeypatch):
    if log_access == "storage-handler":
        from viewlet.storage import deltars
        monkeypatch.setattr(deltars, "_filesystem", _through_storage_handler)
    path = str(tmp_path / "t")
    _table(path, ROWS, partition_by)
    DeltaTable(path).update(updates={"g": "g + 1"}, predicate="e = 1")     # 4,4,5 -> 5,5,6
    DeltaTable(path).delete("g = 6")                                       # a correct feed
    write_deltalake(path, pa.Table.from_pylist(ROWS[:2], schema=SCHEMA), mode="append")
    DeltaTable(path).update(updates={"g": "g - 1"}, predicate="g >= 5")
    for after, to in [(0, 1), (1, 2), (0, 4), (2, 4)]:
        want = _difference(path, after, to)
        assert _net_changes(path, after, to) == want, (after, to)
        # a read of some columns (the repaired commits' files read alike): the same net
        for columns in (["g"], ["p", "e"]):
            assert _net_of(path, after, to, columns) == _projected(want, columns), \
                (after, to, columns)


def test_view_over_updated_duplicates_equals_recompute(spark, vl, tmp_path):
    import viewlet
    path = str(tmp_path / "dups")
    _table(path, ROWS)
    viewlet.register_table(spark, "dups", path, replace=True)
    query = "SELECT g, COUNT(*) AS n, SUM(e) AS se FROM dups GROUP BY g"
    spark.sql(f"CREATE INCREMENTAL VIEW dups_by_g AS {query}")
    try:
        DeltaTable(path).update(updates={"g": "g + 1"}, predicate="e = 1")
        spark.sql("REFRESH INCREMENTAL VIEW dups_by_g")
        assert_view_matches(spark, "dups_by_g", query)
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS dups_by_g")
