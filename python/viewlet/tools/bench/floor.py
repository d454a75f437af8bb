"""The per-refresh floor: what a refresh costs when its batch touches one map row.

A grouped count over a small Delta table, refreshed after each single-row insert, on the
local target. Everything a batch does beyond computing is in it: reading the table's new
commit and its change feed, the batch's manifest rows, one map append, the result table's
MERGE."""
from __future__ import annotations

import os
import statistics
import time
from typing import Dict

import pyarrow as pa

VIEW = "bench_floor"
SQL = "SELECT k, SUM(v) AS total, COUNT(*) AS n FROM delta.`{path}` GROUP BY k"


def measure(vl, directory: str, refreshes: int = 20, warmup: int = 3,
            history: int = 200) -> Dict:
    """The median of `refreshes` refreshes after `warmup`, and of the last `refreshes` of
    `history` batches: a batch's cost must not grow with the view's history (its manifest,
    its tables' logs)."""
    from deltalake import write_deltalake
    path = os.path.join(directory, "floor_table")
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64())])
    write_deltalake(path, pa.table({"k": list(range(100)), "v": [1] * 100}, schema=schema),
                    mode="overwrite", configuration={"delta.enableChangeDataFeed": "true"})
    vl.drop_view(VIEW, if_exists=True)
    vl.create_view(VIEW, SQL.format(path=path), engine="local")
    seconds = []
    try:
        for i in range(max(warmup + refreshes, history)):
            write_deltalake(path, pa.table({"k": [i % 100], "v": [i]}, schema=schema), mode="append")
            t0 = time.perf_counter()
            r = vl.refresh(VIEW)
            seconds.append(time.perf_counter() - t0)
            if r.get("changes") != 1:
                raise RuntimeError(f"the floor's refresh saw {r.get('changes')} changes, not 1")
        engine = vl.ctx.load(VIEW).manifest.last_committed().stats.get("engine")
    finally:
        vl.drop_view(VIEW, if_exists=True)
    first, last = seconds[warmup:warmup + refreshes], seconds[-refreshes:]
    return {"view": "floor (one row changes one group)", "at": f"{refreshes} refreshes, engine {engine}",
            "median_seconds": statistics.median(first), "min_seconds": min(first),
            "max_seconds": max(first), "engine": engine, "refreshes": refreshes,
            "history": len(seconds),
            # the last refreshes measured apart from the first ones only on a longer history
            "history_measured": len(seconds) >= warmup + 2 * refreshes,
            "median_seconds_after_history": statistics.median(last)}
