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


TYPED = pa.schema([("k", pa.int64()), ("d", pa.date32()), ("ts", pa.timestamp("us", "UTC")),
                   ("x", pa.decimal128(12, 2)), ("s", pa.string()), ("part", pa.string())])


def _typed_rows(n, start):
    import datetime as dt
    from decimal import Decimal
    return pa.Table.from_pylist(
        [{"k": start + i, "d": dt.date(2024, 1, 1 + i % 28),
          "ts": dt.datetime(2024, 1, 1, i % 24, tzinfo=dt.timezone.utc),
          "x": Decimal(f"{i}.25") if i % 3 else None, "s": None if i % 4 == 0 else f"s{i}",
          "part": ["a", "b", None][i % 3]} for i in range(n)], schema=TYPED)


@pytest.mark.parametrize("partition_by", [None, ["part"]], ids=["plain", "partitioned"])
def test_appended_files_are_read_as_the_change_feed_reads_them(tmp_path, partition_by,
                                                               monkeypatch):
    """Commits that only add files are read from those files (not through delta-rs's
    change-feed query): the same rows, types and column order as the feed's, with or without
    a projection; a range with any other commit still goes through the feed."""
    path = str(tmp_path / "t")
    write_deltalake(path, _typed_rows(5, 0), partition_by=partition_by,
                    configuration={"delta.enableChangeDataFeed": "true"})
    write_deltalake(path, _typed_rows(7, 100), mode="append")          # version 1
    write_deltalake(path, _typed_rows(3, 200), mode="append")          # version 2
    DeltaTable(path).delete("k = 101")                                 # version 3

    def feed(after, to, columns=None):
        rows = pa.table(DeltaTable(path).load_cdf(starting_version=after + 1, ending_version=to))
        names = TYPED.names if columns is None else columns
        signs = [1 if t == "insert" else -1 for t in rows.column("_change_type").to_pylist()]
        return sorted((tuple(r[c] for c in names) + (n,)
                       for r, n in zip(rows.to_pylist(), signs)), key=repr)

    def read(after, to, columns=None):
        changes = DeltaRsStore().read_changes(path, after, to, columns)
        assert changes.column_names == list(TYPED.names if columns is None else columns) + \
            ["_viewlet_sign"]
        if columns is None:
            assert changes.schema.remove(len(TYPED)) == TYPED
        return sorted((tuple(r.values()) for r in changes.to_pylist()), key=repr)

    want = {(after, to, cols): feed(after, to, None if cols is None else list(cols))
            for after, to in [(0, 1), (0, 2), (1, 3)]
            for cols in (None, ("s", "k"), ("part", "x"), ())}      # (): a COUNT(*)'s read
    from viewlet.storage import deltars

    def no_feed(*args, **kwargs):
        raise RuntimeError("the change-feed query ran")

    monkeypatch.setattr(deltars._dl().DeltaTable, "load_cdf", no_feed)
    for (after, to, cols), rows in want.items():
        if to == 3:                     # the delete: only the feed reads it
            with pytest.raises(Exception, match="change data feed"):
                read(after, to, None if cols is None else list(cols))
        else:
            assert read(after, to, None if cols is None else list(cols)) == rows, (after, to, cols)


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
    for after, to in [(0, 1), (1, 2), (0, 4), (2, 4), (2, 3)]:
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
