"""Map storage without Spark: file statistics and skipping, the clustered writer, rewrite
conflicts, vacuum, appended deltas, cluster order (sums by key: test_arrow.py)."""
from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal

import pyarrow as pa
import pytest

from viewlet.engine.maintain import maps
from viewlet.engine.state import stats
from viewlet.engine.state.keyed import read_keys
from viewlet.storage.arrow import key_lookups
from viewlet.storage.base import FileStats, Snapshot
from viewlet.storage.deltars import DeltaRsStore

SCHEMA = pa.schema([("k0", pa.int64()), ("k1", pa.string()), ("__v", pa.int64())])


def _table(keys, k1=None, values=None):
    n = len(keys)
    return pa.table({"k0": pa.array(keys, pa.int64()),
                     "k1": pa.array(k1 if k1 is not None else [f"s{k % 3}" for k in keys]),
                     "__v": pa.array(values if values is not None else [1] * n, pa.int64())},
                    schema=SCHEMA)


def _parquet_files(path):
    return sorted(f for f in os.listdir(path) if f.endswith(".parquet"))


@pytest.fixture
def store():
    return DeltaRsStore()


def test_clustered_files_carry_statistics_and_skip_by_lookup(store, tmp_path):
    path = str(tmp_path / "m")
    store.create(path, _table(list(range(100))), txn=("t", 0), rows_per_file=30)
    snap = store.snapshot(path)
    assert len(snap.files) == 4
    assert [(s.rows, s.min["k0"], s.max["k0"]) for s in snap.stats] == \
        [(30, 0, 29), (30, 30, 59), (30, 60, 89), (10, 90, 99)]
    assert snap.stats[0].null_count == {"k0": 0, "k1": 0, "__v": 0}
    assert len(snap.restricted({"k0": (pa.array([5, 95]), False)}).files) == 2
    assert len(snap.restricted({"k0": (pa.array([200]), False)}).files) == 0
    assert len(snap.restricted({"k0": (pa.array([5]), False),
                                "k1": (pa.array(["s9"]), False)}).files) == 0
    assert store.read_files(snap.restricted({"k0": (pa.array([31]), False)})).num_rows == 30
    # the table is a plain Delta table: delta-rs reads every row
    assert store.read_arrow(path).num_rows == 100


def test_skipping_keeps_files_that_may_hold_the_value():
    def stats(lo, hi, nulls=0, rows=10):
        return FileStats(rows, {"k": nulls}, {"k": lo}, {"k": hi})

    schema = pa.schema([("k", pa.int64()), ("s", pa.string()), ("d", pa.float64())])
    snap = Snapshot("p", 0, ("a", "b", "c", "d"), schema, (), (
        stats(1, 5), stats(6, 9, nulls=2), stats(None, None, nulls=10),
        FileStats(10, {}, {}, {})))          # no statistics: always kept
    assert snap.restricted({"k": (pa.array([7]), False)}).files == ("b", "d")
    nulls_only = {"k": (pa.array([], pa.int64()), True)}
    assert snap.restricted(nulls_only).files == ("b", "c", "d")     # NULL lookups
    assert snap.restricted({"k": (pa.array([0, 10]), False)}).files == ("d",)
    # doubles are never skipped by (NaN is not in min/max); unknown columns neither
    assert len(snap.restricted({"d": (pa.array([1.0]), False),
                                "x": (pa.array([1]), False)}).files) == 4
    # long string maxima may be truncated by writers: no upper bound then
    long = Snapshot("p", 0, ("a",), schema, (), (
        FileStats(1, {"s": 0}, {"s": "a"}, {"s": "b" * 40}),))
    assert long.restricted({"s": (pa.array(["c"]), False)}).files == ("a",)


def test_statistics_of_dates_strings_and_nulls(store, tmp_path):
    path = str(tmp_path / "d")
    data = pa.table({"d": pa.array([dt.date(2020, 1, 2), None, dt.date(2021, 3, 4)]),
                     "s": pa.array(["b", "a", None]),
                     "x": pa.array([Decimal("1.50"), None, Decimal("2.00")], pa.decimal128(38, 2))})
    store.create(path, data, rows_per_file=10)
    st = store.snapshot(path).stats[0]
    assert (st.min["d"], st.max["d"]) == (dt.date(2020, 1, 2), dt.date(2021, 3, 4))
    assert (st.min["s"], st.max["s"]) == ("a", "b")
    assert st.null_count == {"d": 1, "s": 1, "x": 1}
    assert st.min.get("x") is None     # decimals: no min/max written (JSON numbers are lossy)


def test_rewrite_replaces_the_files_it_read_and_vacuum_keeps_pinned_versions(store, tmp_path):
    path = str(tmp_path / "m")
    store.create(path, _table(list(range(50))), txn=("t", 0), rows_per_file=20)     # v0: 3 files
    assert store.add_rows(path, _table([1, 2]), ("viewlet:x", 1)) == 1              # v1
    assert store.add_rows(path, _table([1, 2]), ("viewlet:x", 1)) is None           # same txn
    # A rewrite replaces the files of the version it read; later appends stay.
    assert store.rewrite(path, _table(list(range(10))), 0, 4) is True               # v2
    assert store.read_arrow(path).num_rows == 10 + 2
    before = _parquet_files(path)
    assert store.rewrite(path, _table([0]), 0, 20) is False    # version 0's files are gone
    assert _parquet_files(path) == before                      # its own files were removed
    assert store.vacuum(path, 0) == 0            # version 0 still needed: nothing deleted
    assert store.vacuum(path, 2) == 3            # version 0's three files go
    assert len(_parquet_files(path)) == 3 + 1
    assert store.read_arrow(path).num_rows == 12


def test_key_lookups_give_each_key_column_its_values_and_whether_null_occurs():
    delta = pa.table({"k": pa.array([None, 1, 1, 4], pa.int64())})
    (values, has_null), = key_lookups(delta, ["k"]).values()
    assert sorted(values.to_pylist()) == [1, 4] and values.type == pa.int64() and has_null


def test_merged_values_are_distinct_values_of_the_key_type_or_none():
    from viewlet.storage.arrow import distinct_values, merged_values
    parts = [distinct_values(pa.chunked_array([[3, 1, None, 3], [2]], pa.int32())),
             pa.array([2, 7], pa.int64())]
    merged = merged_values(parts, pa.int64())
    assert merged.type == pa.int64() and sorted(merged.to_pylist()) == [1, 2, 3, 7]
    assert merged_values([], pa.date32()).equals(pa.array([], pa.date32()))
    # a value the key type cannot hold exactly: no filter on that column (None)
    assert merged_values([pa.array([2**40])], pa.int32()) is None
    assert merged_values([pa.array(["x"])], pa.int64()) is None
    assert merged_values([pa.array([Decimal("1.25")])], pa.decimal128(10, 1)) is None


def test_read_keys_returns_the_rows_of_the_keys_not_whole_files(store, tmp_path):
    path = str(tmp_path / "m")
    store.create(path, _table(list(range(100))), rows_per_file=25)
    got = read_keys(store, path, 0, _table([3, 4, 90]), ["k0"])
    assert sorted(got.column("k0").to_pylist()) == [3, 4, 90]


def test_sort_rows_puts_the_cluster_key_first_and_nulls_first():
    data = pa.table({"a": [2, 1, None, 1], "b": [1, 2, 3, 1]})
    assert maps.sort_rows(data, ["a", "b"], [1, 0]).column("b").to_pylist() == [1, 1, 2, 3]
    assert maps.sort_rows(data, ["a", "b"], [0, 1]).column("a").to_pylist() == [None, 1, 1, 2]


def test_rows_per_file_caps_the_number_of_files():
    assert maps.rows_per_file(10) == maps.ROWS_PER_FILE
    assert -(-10_000_000 // maps.rows_per_file(10_000_000)) <= maps.MAX_FILES


def test_layout_is_due_when_appends_outgrow_the_base():
    def snap(rows):
        return Snapshot("p", 0, tuple(str(i) for i in range(len(rows))), SCHEMA, (),
                        tuple(FileStats(r, {}, {}, {}) for r in rows))

    half = stats.COMPACT_MIN_ROWS // 2
    layout = stats.MapLayout(4, 4 * half)
    assert not layout.due(snap([half] * 4 + [10, 10]))
    assert layout.due(snap([half] * 4 + [1] * stats.COMPACT_FILES))
    assert layout.due(snap([half] * 4 + [half + 1] * 4))
    assert stats.MapLayout.of(None, snap([3, 4])).to_json() == \
        {"base_files": 2, "base_rows": 7, "appended_files": 0, "appended_rows": 0}
    # batches count what they append: due without a look at the files
    counted = stats.MapLayout.of(None, snap([half] * 4))
    counted = counted.after_append(10).after_append(10)
    assert counted.counted() and not counted.due()
    assert counted.after_append(5 * half).due()              # rows outgrew the base
    # a map smaller than a file: rows outgrowing it do not pay for a commit, files do
    small = stats.MapLayout(1, 1, 0, 0).after_append(2).after_append(3)
    assert not small.due() and not small.after_append(stats.COMPACT_MIN_ROWS - 6).due()
    assert small.after_append(stats.COMPACT_MIN_ROWS).due()
    for _ in range(stats.COMPACT_FILES - 2):
        small = small.after_append(1)
    assert small.due()
    many = stats.MapLayout(2, 1000, 0, 0)
    for _ in range(stats.COMPACT_FILES):
        many = many.after_append(1)
    assert many.due()                                        # files reached COMPACT_FILES
    assert not stats.MapLayout.of({"base_files": 2, "base_rows": 7}, None).counted()


def test_vacuum_yields_to_a_concurrent_commit(store, tmp_path, monkeypatch):
    """Two refreshers of one batch may both compact and vacuum a map: the vacuum that loses
    Delta's conflict check deletes nothing and raises nothing (the next batch vacuums)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import CommitFailedError

    def conflicting(self, *args, **kwargs):
        raise CommitFailedError("a concurrent transaction deleted data this operation read")

    path = str(tmp_path / "m")
    store.create(path, _table(list(range(10))), txn=("t", 0), rows_per_file=4)
    files = _parquet_files(path)
    monkeypatch.setattr(DeltaTable, "vacuum", conflicting)
    assert store.vacuum(path, 0) == 0
    assert _parquet_files(path) == files
    monkeypatch.setattr(DeltaTable, "vacuum", lambda self, *a, **k: (_ for _ in ()).throw(
        ValueError("other errors still surface")))
    with pytest.raises(ValueError, match="still surface"):
        store.vacuum(path, 0)


@pytest.fixture(params=["arrow", "duckdb"])
def reader(request, store, monkeypatch):
    """The engine read_matching reads with: None (Arrow), or DuckDB; with DuckDB, reading
    whole files fails the test, so every lookup is shown to go through DuckDB."""
    if request.param == "arrow":
        yield None
        return
    from viewlet.engine.local.executor import LocalEngine

    def whole_files(snapshot, read=store.read_files):
        assert not snapshot.files, "read whole files, not through DuckDB"
        return read(snapshot)
    engine = LocalEngine(threads=2)
    monkeypatch.setattr(store, "read_files", whole_files)
    yield engine
    engine.close()


def test_read_matching_keeps_exactly_the_rows_of_the_looked_up_keys(store, tmp_path, monkeypatch,
                                                                     reader):
    from viewlet.engine.state import keyed
    monkeypatch.setattr(keyed, "FILES_PER_READ", 2)       # several chunks
    path = str(tmp_path / "m")
    keys = list(range(40)) + [None, None]
    k1 = [f"s{k % 4}" if k is not None else None for k in keys]
    store.create(path, _table(keys, k1=k1), txn=("t", 0), rows_per_file=5)
    snap = store.snapshot(path)
    rows = keyed.read_matching(store, snap, {"k0": (pa.array([3, 17, 38, 99]), False)}, reader)
    assert sorted(rows.column("k0").to_pylist()) == [3, 17, 38]
    assert rows.schema == SCHEMA
    # NULL is kept only when the lookup says so; two columns must both match
    rows = keyed.read_matching(store, snap, {"k0": (pa.array([1, 2, 5]), True),
                                             "k1": (pa.array(["s1"]), True)}, reader)
    assert sorted(rows.column("k0").to_pylist(), key=str) == [1, 5, None, None]
    nothing = {"k0": (pa.array([], pa.int64()), False)}
    assert keyed.read_matching(store, snap, nothing, reader).num_rows == 0
    if reader is None:
        # values that do not convert to the column's type filter nothing but NULL, which is
        # not looked up (a superset)
        rows = keyed.read_matching(store, snap, {"k0": (pa.array(["s1"]), False)}, reader)
        assert rows.num_rows == len([k for k in keys if k is not None])


def test_duckdb_and_arrow_keep_the_same_rows_of_every_key_type(store, tmp_path):
    """Random lookups (integers, strings, decimals, dates, booleans, NULLs, one or two
    columns) over a map of many files: DuckDB's semi join keeps exactly Arrow's rows, typed
    alike; a map with a deletion vector, or a path DuckDB would take for a glob, is left to
    Arrow."""
    import random
    from viewlet.engine.local.executor import LocalEngine
    from viewlet.engine.state import keyed
    rng = random.Random(7)
    n = 600

    def maybe(v):
        return None if rng.random() < 0.05 else v
    schema = pa.schema([("i", pa.int32()), ("s", pa.string()), ("d", pa.decimal128(12, 2)),
                        ("t", pa.date32()), ("b", pa.bool_()), ("__v", pa.int64())])
    table = pa.table({
        "i": [maybe(rng.randrange(-50, 50)) for _ in range(n)],
        "s": [maybe(rng.choice(["a", "b", "é", "a b", "A", "it's"])) for _ in range(n)],
        "d": [maybe(Decimal(rng.randrange(-500, 500)) / 100) for _ in range(n)],
        "t": [maybe(dt.date(2024, 1, 1) + dt.timedelta(days=rng.randrange(30))) for _ in range(n)],
        "b": [maybe(rng.random() < 0.5) for _ in range(n)],
        "__v": list(range(n))}, schema=schema)
    plain = str(tmp_path / "it's a map")           # quoted in DuckDB's SQL
    store.create(plain, table, txn=("t", 0), rows_per_file=50)
    plain_snap = store.snapshot(plain)
    engine = LocalEngine(threads=2)
    try:
        globbed = [p.replace("part-", "part-*") for p in store.local_parquet(plain_snap)]
        with pytest.MonkeyPatch.context() as m:
            m.setattr(store, "local_parquet", lambda snapshot: globbed)
            assert keyed._semi_joined(store, engine, plain_snap, [("i", pa.array([1]), False)]) \
                is None
        checked = 0
        for _ in range(40):
            columns = rng.sample(["i", "s", "d", "t", "b"], rng.choice([1, 2]))
            lookups = {}
            for c in columns:
                values = {v for v in rng.sample(table.column(c).to_pylist(), 8) if v is not None}
                lookups[c] = (pa.array(sorted(values), schema.field(c).type), rng.random() < 0.3)
            want = keyed.read_matching(store, plain_snap, lookups)
            got = keyed._semi_joined(store, engine, plain_snap.restricted(lookups), [
                (c, v, null) for c, (v, null) in lookups.items()])
            if not plain_snap.restricted(lookups).files:
                continue
            assert got is not None and got.schema == want.schema
            assert sorted(got.column("__v").to_pylist()) == sorted(want.column("__v").to_pylist())
            checked += 1
        assert checked > 20
        deleted = Snapshot(plain_snap.path, plain_snap.version, plain_snap.files, plain_snap.schema,
                           (), plain_snap.stats, {plain_snap.files[0].rsplit("/", 1)[-1]: (0,)})
        assert store.local_parquet(deleted) is None
        assert store.local_parquet(plain_snap) is not None
    finally:
        engine.close()


def test_duckdb_sorts_large_maps_in_the_order_arrow_does(monkeypatch):
    """A map of at least ENGINE_SORT_FROM_ROWS rows is sorted by the local engine: the same
    key order as Arrow's sort (NULLs first, strings by their bytes, decimals, dates), the
    same rows and schema; smaller maps are left to Arrow."""
    import random
    from viewlet.engine.local.executor import LocalEngine
    rng = random.Random(11)
    n = 2000

    def maybe(v):
        return None if rng.random() < 0.1 else v
    schema = pa.schema([("k0", pa.string()), ("k1", pa.decimal128(12, 2)), ("k2", pa.date32()),
                        ("k3", pa.int32()), ("__v", pa.int64())])
    data = pa.table({
        "k0": [maybe(rng.choice(["a", "B", "b", "é", "z", "a b", "it's", ""])) for _ in range(n)],
        "k1": [maybe(Decimal(rng.randrange(-300, 300)) / 100) for _ in range(n)],
        "k2": [maybe(dt.date(2024, 1, 1) + dt.timedelta(days=rng.randrange(9))) for _ in range(n)],
        "k3": [maybe(rng.randrange(-5, 5)) for _ in range(n)],
        "__v": list(range(n))}, schema=schema)
    data = pa.concat_tables([data.slice(0, 700), data.slice(700)])        # two chunks
    keys = ["k0", "k1", "k2", "k3"]
    engine = LocalEngine(threads=2)
    sorted_by_engine = []
    original = engine.sorted_rows

    def counted(table, columns):
        sorted_by_engine.append(list(columns))
        return original(table, columns)

    monkeypatch.setattr(engine, "sorted_rows", counted)
    try:
        for order in ([0, 1, 2, 3], [3, 2, 0, 1], [1, 0, 3, 2]):
            want = maps.sort_rows(data, keys, order)
            below = maps.sort_rows(data, keys, order, engine)        # too small: Arrow's
            assert below.select(keys).equals(want.select(keys))
            monkeypatch.setattr(maps, "ENGINE_SORT_FROM_ROWS", 1)
            got = maps.sort_rows(data, keys, order, engine)
            monkeypatch.setattr(maps, "ENGINE_SORT_FROM_ROWS", n + 1)
            assert got.schema == data.schema
            for j in order:         # ties may differ in order: compare the keys, then the rows
                assert got.column(keys[j]).to_pylist() == want.column(keys[j]).to_pylist()
            assert sorted(got.column("__v").to_pylist()) == list(range(n))
            assert sorted(got.to_pylist(), key=lambda r: r["__v"]) == \
                sorted(data.to_pylist(), key=lambda r: r["__v"])
        assert sorted_by_engine == [[keys[j] for j in order]
                                    for order in ([0, 1, 2, 3], [3, 2, 0, 1], [1, 0, 3, 2])]
    finally:
        engine.close()
