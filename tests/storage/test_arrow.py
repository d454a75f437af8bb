"""The Arrow map algebra (storage/arrow.py) against sums computed with plain Python dicts:
NULL keys form one group, decimal and integer sums are exact, value columns keep their
types, zero rows go only where the contract says, empty inputs."""
from __future__ import annotations

import random
from decimal import Decimal

import pyarrow as pa

from viewlet.storage.arrow import add_at_keys, plain_types, prunable, sum_by_key

SCHEMA = pa.schema([("k", pa.int64()), ("s", pa.string()), ("n", pa.int32()),
                    ("d", pa.decimal128(18, 3))])
KEYS, VALUES = ["k", "s"], ["n", "d"]


def _rows(data):
    return pa.table({c: [row[i] for row in data] for i, c in enumerate(SCHEMA.names)},
                    schema=SCHEMA)


def _dict_sums(rows):
    """{key tuple: [sum per value column]} with NULL as 0, in plain Python."""
    out = {}
    for row in rows.to_pylist():
        total = out.setdefault(tuple(row[k] for k in KEYS), [0] * len(VALUES))
        for i, v in enumerate(VALUES):
            total[i] += row[v] if row[v] is not None else 0
    return out


def _as_dict(table):
    return {tuple(row[k] for k in KEYS): [row[v] for v in VALUES] for row in table.to_pylist()}


def _random_rows(seed, n):
    rnd = random.Random(seed)
    return _rows([(rnd.choice([1, 2, None]), rnd.choice(["a", None]),
                   rnd.choice([-1, 1, None]), rnd.choice([Decimal("0.001"), Decimal("-0.001"),
                                                          Decimal("123456789.999"), None]))
                  for _ in range(n)])


def test_sum_by_key_groups_null_keys_together_and_sums_exactly():
    rows = _random_rows(1, 300)
    expected = {k: s for k, s in _dict_sums(rows).items() if s[0] != 0}      # zero rule on n
    out = sum_by_key(rows, KEYS, VALUES, ["n"])
    assert out.schema == SCHEMA                      # int32 and decimal(18,3) stay
    assert out.num_rows == len(expected)             # one row per key, NULLs one key
    assert _as_dict(out) == expected
    assert any(None in k for k in expected)


def test_sum_by_key_drops_a_key_only_when_all_zero_columns_sum_to_zero():
    rows = _rows([(1, "a", 1, Decimal("5.000")), (1, "a", -1, Decimal("-5.000")),
                  (2, "a", 1, Decimal("1.000")), (2, "a", -1, Decimal("0.000")),
                  (None, None, 2, Decimal("0.000")), (None, None, -2, None)])
    by_both = _as_dict(sum_by_key(rows, KEYS, VALUES, VALUES))
    assert by_both == {(2, "a"): [0, Decimal("1.000")]}
    by_count = _as_dict(sum_by_key(rows, KEYS, VALUES, ["n"]))
    assert by_count == {}
    kept = _as_dict(sum_by_key(rows, KEYS, VALUES, []))
    assert kept == {(1, "a"): [0, Decimal("0.000")], (2, "a"): [0, Decimal("1.000")],
                    (None, None): [0, Decimal("0.000")]}


def test_sum_by_key_without_keys_is_the_whole_sum():
    rows = _random_rows(2, 50)
    n = sum(v for v in rows.column("n").to_pylist() if v is not None)
    d = sum((v for v in rows.column("d").to_pylist() if v is not None), Decimal(0))
    out = sum_by_key(rows.select(VALUES), [], VALUES, VALUES)
    assert out.to_pylist() == ([{"n": n, "d": d}] if (n, d) != (0, 0) else [])
    zero = pa.table({"n": pa.array([1, -1], pa.int32()), "d": pa.array([None, None], SCHEMA.field("d").type)})
    assert sum_by_key(zero, [], VALUES, VALUES).num_rows == 0


def test_sum_by_key_of_no_rows_is_no_rows():
    empty = SCHEMA.empty_table()
    assert sum_by_key(empty, KEYS, VALUES, VALUES).equals(empty)
    assert sum_by_key(empty.select(VALUES), [], VALUES, VALUES).num_rows == 0


def test_add_at_keys_gives_the_delta_keys_old_plus_delta_and_keeps_zeros():
    old = _random_rows(3, 200)
    delta = _rows([(1, "a", -1, Decimal("0.001")), (None, None, 1, None), (None, "a", 0, None),
                   (7, "z", 1, Decimal("2.500"))])
    before, change = _dict_sums(old), _dict_sums(delta)
    expected = {k: [before.get(k, [0, 0])[i] + change[k][i] for i in range(len(VALUES))]
                for k in change}
    out = add_at_keys(old, delta, KEYS, VALUES)
    assert out.schema == delta.schema
    assert out.num_rows == len(expected)
    assert _as_dict(out) == expected


def test_add_at_keys_casts_old_to_the_delta_types_and_handles_empty_sides():
    delta = _rows([(1, "a", 1, Decimal("1.000"))])
    wide_old = pa.table({"k": pa.array([1], pa.int64()), "s": ["a"], "n": pa.array([4], pa.int64()),
                         "d": pa.array([Decimal("0.5")], pa.decimal128(38, 1)), "extra": [0]})
    assert add_at_keys(wide_old, delta, KEYS, VALUES).to_pylist() == \
        [{"k": 1, "s": "a", "n": 5, "d": Decimal("1.500")}]
    assert add_at_keys(SCHEMA.empty_table(), delta, KEYS, VALUES).to_pylist() == delta.to_pylist()
    assert add_at_keys(delta, SCHEMA.empty_table(), KEYS, VALUES).num_rows == 0
    no_keys = pa.table({"n": pa.array([3], pa.int32())})
    assert add_at_keys(no_keys, no_keys, [], ["n"]).to_pylist() == [{"n": 6}]
    assert add_at_keys(no_keys, no_keys.slice(0, 0), [], ["n"]).num_rows == 0


def test_plain_types_and_prunable():
    table = pa.table({"s": pa.array(["x"], pa.large_string()), "u": pa.array([1], pa.uint64()),
                      "i": pa.array([1], pa.int8())})
    assert plain_types(table).schema == pa.schema([("s", pa.string()), ("u", pa.int64()),
                                                   ("i", pa.int8())])
    assert [prunable(t) for t in (pa.int32(), pa.string(), pa.decimal128(5, 2), pa.date32(),
                                  pa.bool_(), pa.float64(), pa.timestamp("us"))] == \
        [True, True, True, True, True, False, False]
