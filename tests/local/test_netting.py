"""A batch's changes netted per distinct row (batch/changes.py): DuckDB, which nets large
change sets on every core, keeps exactly the rows and types Arrow's netting keeps."""
from __future__ import annotations

import datetime as dt
import random
from collections import Counter
from decimal import Decimal

import pyarrow as pa

from viewlet.engine.batch.changes import netted_by_arrow, netted_by_engine
from viewlet.engine.local.executor import LocalEngine
from viewlet.plan.lower import MULT


def _changes(rng: random.Random, n: int) -> pa.Table:
    def maybe(v):
        return None if rng.random() < 0.1 else v
    schema = pa.schema([("i", pa.int32()), ("s", pa.string()), ("d", pa.decimal128(12, 2)),
                        ("t", pa.date32()), ("ts", pa.timestamp("us", tz="UTC")),
                        ("f", pa.float64()), ("b", pa.bool_()), ("_viewlet_sign", pa.int64())])
    start = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    return pa.table({
        "i": [maybe(rng.randrange(-3, 3)) for _ in range(n)],
        "s": [maybe(rng.choice(["a", "é", "it's", ""])) for _ in range(n)],
        "d": [maybe(Decimal(rng.randrange(-3, 3)) / 4) for _ in range(n)],
        "t": [maybe(dt.date(2024, 1, 1) + dt.timedelta(days=rng.randrange(3))) for _ in range(n)],
        "ts": [maybe(start + dt.timedelta(microseconds=rng.randrange(3))) for _ in range(n)],
        "f": [maybe(rng.choice([0.5, -1.25, 3.0])) for _ in range(n)],
        "b": [maybe(rng.random() < 0.5) for _ in range(n)],
        "_viewlet_sign": [rng.choice([1, -1]) for _ in range(n)]}, schema=schema)


def test_duckdb_nets_changes_exactly_as_arrow_does():
    rng = random.Random(3)
    engine = LocalEngine(threads=2)
    try:
        for case in range(12):
            changes = _changes(rng, rng.choice([50, 400, 3000]))
            cols = rng.sample(["i", "s", "d", "t", "ts", "f", "b"], rng.randrange(1, 5))
            want = netted_by_arrow(changes, cols)
            got = netted_by_engine(engine, changes, cols)
            assert got is not None and got.schema == want.schema, case
            assert 0 not in got.column(MULT).to_pylist()
            assert Counter(map(tuple, (r.values() for r in got.to_pylist()))) == \
                Counter(map(tuple, (r.values() for r in want.to_pylist()))), (case, cols)
        assert netted_by_engine(None, changes, cols) is None
    finally:
        engine.close()
