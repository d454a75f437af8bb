"""merge_replace by rewriting the files that hold a deleted key (storage/replace.py), checked
against delta-rs's MERGE on the same operations (a table with the change data feed on takes
the MERGE): the same rows, NULL keys equal, duplicate rows kept, untouched files kept."""
from __future__ import annotations

import datetime as dt
import random
from collections import Counter
from dataclasses import replace
from decimal import Decimal

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from viewlet.storage.deltars import DeltaRsStore
from viewlet.storage.replace import matching

SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.string()), ("d", pa.date32()),
                    ("x", pa.decimal128(12, 2)), ("t", pa.timestamp("us", "UTC")),
                    ("f", pa.bool_()), ("v", pa.int64())])
KEYS = ["a", "b", "d", "x", "t", "f"]


def _key(rng):
    return {"a": rng.choice([1, 2, None]), "b": rng.choice(["p", "q", None]),
            "d": rng.choice([dt.date(2024, 1, 1), None]), "x": rng.choice([Decimal("1.50"), None]),
            "t": rng.choice([dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc), None]),
            "f": rng.choice([True, None])}


def _rows(path):
    return Counter(tuple(r.values()) for r in DeltaRsStore().read_arrow(path).to_pylist())


def _operations(rng, n):
    for _ in range(n):
        dels = [_key(rng) for _ in range(rng.randint(0, 3))]
        ins = [dict(_key(rng), v=rng.randint(0, 9)) for _ in range(rng.randint(0, 3))]
        if dels or ins:
            yield pa.Table.from_pylist([dict(k, v=None, op="del") for k in dels] +
                                       [dict(r, op="ins") for r in ins],
                                       schema=SCHEMA.append(pa.field("op", pa.string())))


@pytest.mark.parametrize("seed", range(4))
def test_a_rewrite_replaces_the_rows_a_merge_replaces(tmp_path, seed):
    rng = random.Random(seed)
    start = pa.Table.from_pylist([dict(_key(rng), v=i) for i in range(40)], schema=SCHEMA)
    rewritten, merged = str(tmp_path / "rewritten"), str(tmp_path / "merged")
    for path, feed in ((rewritten, "false"), (merged, "true")):
        for i in range(4):           # several files, duplicate rows among them
            write_deltalake(path, start.slice(i * 10, 10), mode="append",
                            configuration={"delta.enableChangeDataFeed": feed})
    store = DeltaRsStore()
    for batch, source in enumerate(_operations(rng, 12), 1):
        before = set(store.snapshot(rewritten).files)
        for path in (rewritten, merged):
            store.merge_replace(path, source, KEYS, "op", txn=("viewlet:t", batch))
            store.merge_replace(path, source, KEYS, "op", txn=("viewlet:t", batch))  # a re-run
        assert _rows(rewritten) == _rows(merged), batch
        # the files left alone hold no deleted key
        now = store.snapshot(rewritten)
        deleted = source.filter(pa.compute.equal(source["op"], "del")).select(KEYS)
        for f in before & set(now.files):
            rows = store.read_files(replace(now, files=(f,), stats=None))
            assert not pa.compute.any(matching(rows, deleted, KEYS)).as_py(), (batch, f)
    assert store.txn_version(rewritten, "viewlet:t") == batch
    operations = {p: Counter(h["operation"] for h in DeltaTable(p).history()) for p in (rewritten, merged)}
    assert "MERGE" not in operations[rewritten] and operations[merged]["MERGE"] > 5, operations


def test_a_global_row_is_replaced_and_other_tables_take_the_merge(tmp_path):
    store = DeltaRsStore()
    path = str(tmp_path / "global")
    write_deltalake(path, pa.table({"n": [3]}))
    store.merge_replace(path, pa.table({"n": [None, 5], "op": ["del", "ins"]}), [], "op")
    assert store.read_arrow(path).column("n").to_pylist() == [5]
    assert DeltaTable(path).history(1)[0]["operation"] == "WRITE"
    # floating point keys (NaN) and partitioned tables: the MERGE
    for name, table, keys, partition in (
            ("float", pa.table({"k": [1.5, float("nan")], "v": [1, 2]}), ["k"], None),
            ("parts", pa.table({"k": [1, 2], "v": [1, 2]}), ["k"], ["k"])):
        path = str(tmp_path / name)
        write_deltalake(path, table, partition_by=partition)
        source = pa.table({"k": table.column("k").slice(1, 1).to_pylist() * 2, "v": [None, 7],
                           "op": ["del", "ins"]}).cast(table.schema.append(pa.field("op", pa.string())))
        store.merge_replace(path, source, keys, "op")
        assert DeltaTable(path).history(1)[0]["operation"] == "MERGE", name
        assert sorted(store.read_arrow(path).column("v").to_pylist()) == [1, 7], name


def test_matching_takes_null_as_equal_to_null():
    rows = pa.table({"a": [1, None, 1, 2], "b": ["x", "y", None, None]})
    keys = pa.table({"a": [None, 1], "b": ["y", None]})
    assert matching(rows, keys, ["a", "b"]).to_pylist() == [False, True, True, False]
    assert matching(pa.table({"a": [0.5]}), pa.table({"a": [0.5]}), ["a"]) is None
