"""Random base tables and random change batches (inserts with duplicates, deletes, updates,
NULLs) applied to real Delta tables with delta-rs.

Tables r, s and t hold integers, decimals, a double and strings; u (created only when a test
asks for it) holds the other types views group and aggregate: a date, a timestamp, a double
and a string, each nullable."""
from __future__ import annotations

import datetime
import os
import random
from decimal import Decimal
from typing import Dict, Sequence

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

SCHEMAS = {
    "r": pa.schema([("a", pa.int32()), ("b", pa.int32()), ("c", pa.decimal128(10, 2)),
                    ("d", pa.float64())]),
    "s": pa.schema([("b", pa.int32()), ("e", pa.int32()), ("f", pa.decimal128(10, 2))]),
    "t": pa.schema([("e", pa.int32()), ("g", pa.int32()), ("h", pa.string())]),
    "u": pa.schema([("k", pa.int32()), ("d", pa.date32()), ("ts", pa.timestamp("us", tz="UTC")),
                    ("x", pa.float64()), ("tag", pa.string())]),
}
BASIC = ("r", "s", "t")
NULLABLE = {"r": {"b", "c", "d"}, "s": {"f"}, "t": {"g"}, "u": {"d", "ts", "x", "tag"}}
# NULL-heavy variant: NULLs in every column but r.a and u.k (join keys included), a third
NULL_HEAVY = {"r": {"b", "c", "d"}, "s": {"b", "e", "f"}, "t": {"e", "g", "h"},
              "u": {"d", "ts", "x", "tag"}}
_EPOCH = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)


def _value(rng: random.Random, table: str, col: str, nullable=None, rate=0.15):
    if col in (nullable or NULLABLE)[table] and rng.random() < rate:
        return None
    if col in ("a", "b"):
        return rng.randint(0, 4)
    if col in ("e", "g"):
        return rng.randint(0, 3)
    if col in ("c", "f"):
        return Decimal(rng.randint(-500, 900)) / 100
    if col == "d":
        return rng.uniform(-10, 10)
    if col == "h":
        return rng.choice(["x1", "x2", "y", "z z"])
    if col == "k":
        return rng.randint(0, 4)
    if col == "d":                       # few dates: groups by year / month repeat
        return datetime.date(rng.choice([2023, 2024]), rng.randint(1, 3), rng.choice([1, 15, 28]))
    if col == "ts":                      # some instants repeat (ties for MIN / MAX)
        return _EPOCH + datetime.timedelta(hours=rng.choice([0, 7, 30, 800]) + rng.randint(0, 2))
    if col == "x":                       # repeated values, negatives, zero and a fraction
        return rng.choice([-1.5, 0.0, 2.25, 7.0, round(rng.uniform(-5, 5), 3)])
    if col == "tag":
        return rng.choice(["a", "b", "bb", "c"])
    raise KeyError(col)


class Workload:
    def __init__(self, root: str, seed: int, rows: int = 12, null_heavy: bool = False,
                 tables: Sequence[str] = BASIC):
        self.rng = random.Random(seed)
        self.nullable, self.null_rate = (NULL_HEAVY, 0.33) if null_heavy else (NULLABLE, 0.15)
        self.updates = 0
        self.paths: Dict[str, str] = {}
        for name in tables:
            schema = SCHEMAS[name]
            path = os.path.join(root, name)
            self.paths[name] = path
            write_deltalake(path, self._rows(name, rows),
                            configuration={"delta.enableChangeDataFeed": "true"})

    def _rows(self, table: str, n: int) -> pa.Table:
        schema = SCHEMAS[table]
        data = [{c: _value(self.rng, table, c, self.nullable, self.null_rate) for c in schema.names}
                for _ in range(n)]
        return pa.Table.from_pylist(data, schema=schema)

    def current(self, table: str) -> list:
        from deltalake import QueryBuilder
        dt = DeltaTable(self.paths[table])
        return pa.table(QueryBuilder().register("t", dt).execute("SELECT * FROM t").read_all()).to_pylist()

    def batch(self):
        """Change one to three tables: inserts (some duplicating existing rows), deletes and
        updates, each its own Delta commit."""
        tables = self.rng.sample(sorted(self.paths), self.rng.randint(1, min(3, len(self.paths))))
        for table in tables:
            path = self.paths[table]
            existing = self.current(table)
            ops = self.rng.sample(["insert", "delete", "update"], self.rng.randint(1, 3))
            for op in ops:
                if op == "insert":
                    rows = self._rows(table, self.rng.randint(1, 4)).to_pylist()
                    rows += [dict(self.rng.choice(existing)) for _ in range(self.rng.randint(0, 2))
                             if existing]
                    write_deltalake(path, pa.Table.from_pylist(rows, schema=SCHEMAS[table]),
                                    mode="append")
                elif op == "delete" and existing:
                    col = self.rng.choice({"r": ["a", "b"], "s": ["b", "e"], "t": ["e", "g"],
                                           "u": ["k", "tag"]}[table])
                    v = self.rng.choice(existing)[col]
                    pred = f"{col} IS NULL" if v is None else f"{col} = {v!r}"
                    DeltaTable(path).delete(pred)
                elif op == "update" and existing:
                    col, expr = {"r": ("c", "c + 1"), "s": ("f", "f - 0.5"), "t": ("g", "g + 1"),
                                 "u": ("x", "x + 1")}[table]
                    if self.null_rate > 0.15:
                        # a value no row had: delta-rs (1.6) drops the change-feed rows of an
                        # UPDATE whose new row equals another updated row's old one
                        self.updates += 1
                        expr = f"{100 + self.updates}" + (".25" if col in ("c", "f", "x") else "")
                    key = {"r": "a", "u": "k"}.get(table, "e")
                    v = self.rng.choice(existing)[key]
                    DeltaTable(path).update(updates={col: expr},
                                            predicate=f"{key} = {v}" if v is not None else f"{key} IS NULL")
        return tables


def registered_workload(spark, root: str, seed: int, rows: int = 12,
                        null_heavy: bool = False, tables: Sequence[str] = BASIC) -> "Workload":
    """A Workload whose tables (r, s and t unless `tables` says otherwise) are registered
    under their names (`null_heavy`: NULLs in join keys too, a third of the values)."""
    import viewlet
    work = Workload(root, seed, rows, null_heavy, tables)
    for name, path in work.paths.items():
        viewlet.register_table(spark, name, path, replace=True)
    return work
