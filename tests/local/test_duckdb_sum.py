"""A large map delta summed by DuckDB (engine/local/executor.py duckdb_sum_by_key) gives what
the Arrow map algebra gives (storage/arrow.py sum_by_key with every value column as a zero
column): one row per key with NULL keys one group, exact integer and decimal sums in the
map's types, NULL values as 0, keys whose values all sum to 0 dropped."""
from __future__ import annotations

import random
from decimal import Decimal

import pyarrow as pa
import pytest

from viewlet.engine.local.executor import LocalEngine, duckdb_sum_by_key
from viewlet.storage.arrow import sum_by_key

SCHEMA = pa.schema([("k", pa.int64()), ("s", pa.string()), ("n", pa.int32()),
                    ("d", pa.decimal128(18, 3))])
KEYS, VALUES = ["k", "s"], ["n", "d"]


@pytest.fixture(scope="module")
def engine():
    e = LocalEngine(threads=2)
    yield e
    e.close()


def _random_rows(seed, n):
    rnd = random.Random(seed)
    data = [(rnd.choice([1, 2, 3, None]), rnd.choice(["a", "b", None]),
             rnd.choice([-1, 1, None]),
             rnd.choice([Decimal("0.001"), Decimal("-0.001"), Decimal("123456789.999"), None]))
            for _ in range(n)]
    return pa.table({c: [row[i] for row in data] for i, c in enumerate(SCHEMA.names)},
                    schema=SCHEMA)


def _by_key(table):
    return {tuple(row[k] for k in KEYS): [row[v] for v in VALUES] for row in table.to_pylist()}


def _python_sums(rows):
    out = {}
    for row in rows.to_pylist():
        total = out.setdefault(tuple(row[k] for k in KEYS), [0, Decimal(0)])
        for i, v in enumerate(VALUES):
            total[i] += row[v] if row[v] is not None else 0
    return {k: s for k, s in out.items() if s != [0, 0]}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_duckdb_sums_a_delta_as_the_arrow_algebra_does(engine, seed):
    rows = _random_rows(seed, 2000)
    out = duckdb_sum_by_key(engine, rows, KEYS, VALUES)
    assert out.schema == SCHEMA
    assert out.num_rows == len(_by_key(out))            # one row per key
    assert _by_key(out) == _python_sums(rows) == _by_key(sum_by_key(rows, KEYS, VALUES, VALUES))
    assert any(None in k for k in _by_key(out))          # NULL keys kept, as one group


def test_keys_summing_to_zero_are_dropped_and_null_values_count_as_zero(engine):
    rows = pa.table({"k": [1, 1, 2, 2, None, None], "s": ["a"] * 6,
                     "n": pa.array([1, -1, 1, -1, 2, None], pa.int32()),
                     "d": pa.array([Decimal("5"), Decimal("-5"), None, None, None, None],
                                   SCHEMA.field("d").type)}, schema=SCHEMA)
    assert _by_key(duckdb_sum_by_key(engine, rows, KEYS, VALUES)) == {(None, "a"): [2, Decimal(0)]}


def test_without_keys_the_whole_sum_or_no_row(engine):
    rows = _random_rows(4, 500).select(VALUES)
    expected = sum_by_key(rows, [], VALUES, VALUES)
    assert duckdb_sum_by_key(engine, rows, [], VALUES).equals(expected)
    zero = pa.table({"n": pa.array([1, -1], pa.int32()),
                     "d": pa.array([None, None], SCHEMA.field("d").type)})
    assert duckdb_sum_by_key(engine, zero, [], VALUES).num_rows == 0
