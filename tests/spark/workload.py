"""Random base tables and random change batches (inserts with duplicates, deletes, updates,
NULLs) applied to real Delta tables with delta-rs."""
from __future__ import annotations

import os
import random
from decimal import Decimal
from typing import Dict

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

SCHEMAS = {
    "r": pa.schema([("a", pa.int32()), ("b", pa.int32()), ("c", pa.decimal128(10, 2)),
                    ("d", pa.float64())]),
    "s": pa.schema([("b", pa.int32()), ("e", pa.int32()), ("f", pa.decimal128(10, 2))]),
    "t": pa.schema([("e", pa.int32()), ("g", pa.int32()), ("h", pa.string())]),
}
NULLABLE = {"r": {"b", "c", "d"}, "s": {"f"}, "t": {"g"}}
# NULL-heavy variant: NULLs in every column but r.a (join keys included), a third of them
NULL_HEAVY = {"r": {"b", "c", "d"}, "s": {"b", "e", "f"}, "t": {"e", "g", "h"}}


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
    raise KeyError(col)


class Workload:
    def __init__(self, root: str, seed: int, rows: int = 12, null_heavy: bool = False):
        self.rng = random.Random(seed)
        self.nullable, self.null_rate = (NULL_HEAVY, 0.33) if null_heavy else (NULLABLE, 0.15)
        self.updates = 0
        self.paths: Dict[str, str] = {}
        for name, schema in SCHEMAS.items():
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
        tables = self.rng.sample(sorted(SCHEMAS), self.rng.randint(1, 3))
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
                    col = self.rng.choice(["a", "b"] if table == "r" else ["b", "e"] if table == "s"
                                          else ["e", "g"])
                    v = self.rng.choice(existing)[col]
                    pred = f"{col} IS NULL" if v is None else f"{col} = {v}"
                    DeltaTable(path).delete(pred)
                elif op == "update" and existing:
                    col, expr = {"r": ("c", "c + 1"), "s": ("f", "f - 0.5"), "t": ("g", "g + 1")}[table]
                    if self.null_rate > 0.15:
                        # a value no row had: delta-rs (1.6) drops the change-feed rows of an
                        # UPDATE whose new row equals another updated row's old one
                        self.updates += 1
                        expr = f"{100 + self.updates}" + (".25" if col in ("c", "f") else "")
                    key = "a" if table == "r" else "e"
                    v = self.rng.choice(existing)[key]
                    DeltaTable(path).update(updates={col: expr},
                                            predicate=f"{key} = {v}" if v is not None else f"{key} IS NULL")
        return tables


def registered_workload(spark, root: str, seed: int, rows: int = 12,
                        null_heavy: bool = False) -> "Workload":
    """A Workload whose tables r, s and t are registered under those names (`null_heavy`:
    NULLs in join keys too, a third of the values)."""
    import viewlet
    work = Workload(root, seed, rows, null_heavy)
    for name, path in work.paths.items():
        viewlet.register_table(spark, name, path, replace=True)
    return work
