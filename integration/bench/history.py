"""What a view's batch costs after a long history (the per-refresh floor, the manifest).

    PYTHONPATH=python .venv/bin/python integration/bench/history.py [--floor-batches 1000]
        [--internal-retention "interval 5 seconds"] [--manifest-batches 40000]

* The floor (tools/bench/floor.py's view: one changed row per batch, local target) refreshed
  `--floor-batches` times: the median refresh per hundred batches. A view's own tables keep an
  hour of history (engine/state/retention.py), longer than this run lasts; with
  `--internal-retention` they keep that long instead, which shows the steady state a view
  refreshed for days reaches (its tables' logs and checkpoints hold that much history).
* The manifest of a view with `--manifest-batches` batches of history: reading its records in
  a new process, and a batch's manifest work (its reads of the last records, its planned and
  committed rows, the compactions every 16 batches) over 64 batches.

Prints a Markdown table per part. Compare two checkouts by running each one's copy.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import pyarrow as pa


def floor_history(batches: int, retention: str | None) -> list:
    from deltalake import write_deltalake
    from pyspark.sql import SparkSession

    import viewlet
    from viewlet.tools.bench import floor

    if retention:
        from viewlet.engine.state import retention as own
        for key in own.INTERNAL_TABLE_PROPERTIES:
            own.INTERNAL_TABLE_PROPERTIES[key] = retention
    work = tempfile.mkdtemp(prefix="viewlet-history-")
    builder = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
    spark = viewlet.configure_spark(builder, warehouse=f"{work}/wh").getOrCreate()
    vl = viewlet.enable(spark, warehouse=f"{work}/wh")
    path = os.path.join(work, "floor_table")
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64())])
    write_deltalake(path, pa.table({"k": list(range(100)), "v": [1] * 100}, schema=schema),
                    mode="overwrite", configuration={"delta.enableChangeDataFeed": "true"})
    vl.create_view(floor.VIEW, floor.SQL.format(path=path), engine="local")
    seconds, rows = [], []
    for i in range(batches):
        write_deltalake(path, pa.table({"k": [i % 100], "v": [i]}, schema=schema), mode="append")
        t0 = time.perf_counter()
        vl.refresh(floor.VIEW)
        seconds.append(time.perf_counter() - t0)
        if (i + 1) % 100 == 0:
            rows.append((i + 1, statistics.median(seconds[-100:]) * 1000))
    vl.drop_view(floor.VIEW)
    spark.stop()
    return rows


def manifest_history(batches: int) -> dict:
    from viewlet.engine.state import manifest as m
    from viewlet.storage.deltars import DeltaRsStore

    stats = {"seconds": {"total": 0.05, "compute": 0.01}, "engine": "local",
             "engine_reason": "its inputs hold 1 row", "changes": 1, "rows_changed": 1,
             "map_reads": [["m0", 0, None, 1, 100, 1, "memory"]]}
    store = DeltaRsStore()
    man = m.Manifest(store, tempfile.mkdtemp(prefix="viewlet-manifest-") + "/batches")
    history = [m._row_table(m.BatchRecord(b, phase, {"t": (b, b + 1)}, {"m0": b},
                                          stats if phase == "committed" else {}))
               for b in range(batches) for phase in ("planned", "committed")]
    man.start({"t": batches}, stats, batch=batches, carried=pa.concat_tables(history))
    m._READ.clear()                         # as a new process finds it
    t0 = time.perf_counter()
    man.all_records()
    cold = time.perf_counter() - t0
    per_batch = []
    for b in range(batches + 1, batches + 65):
        t0 = time.perf_counter()
        rows = man.all_records()
        latest, last = _last_records(man, rows)
        planned = m.BatchRecord(man.next_planned(rows), "planned", {"t": (b - 1, b)},
                                {"m0": b}, {})
        assert latest.batch < planned.batch and last.phase == "committed"
        man.plan(planned.batch, planned.ranges, planned.map_versions)
        man.commit(planned, stats)
        per_batch.append(time.perf_counter() - t0)
    return {"cold": cold, "median": statistics.median(per_batch),
            "mean": statistics.mean(per_batch), "max": max(per_batch),
            "files": len(store.snapshot(man.path).files)}


def _last_records(man, rows):
    """The latest record and the last committed one, as a batch reads them (checkouts before
    2026-11-29's long-history work read them from the whole list)."""
    try:
        return man.latest(rows), man.last_committed(rows)
    except TypeError:
        records = man.records(rows)
        return records[-1], [r for r in records if r.phase == "committed"][-1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--floor-batches", type=int, default=1000)
    parser.add_argument("--internal-retention", default=None,
                        help="the maps' and manifest's log and tombstone retention "
                             "(a Delta interval, e.g. 'interval 5 seconds')")
    parser.add_argument("--manifest-batches", type=int, default=40000)
    args = parser.parse_args(argv)
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores")
    if args.manifest_batches:
        r = manifest_history(args.manifest_batches)
        print(f"\n| manifest with {args.manifest_batches:,} batches of history | ms |\n|---|--:|")
        print(f"| reading its records in a new process | {r['cold'] * 1000:.0f} |")
        for key in ("median", "mean", "max"):
            print(f"| a batch's manifest work, {key} of 64 | {r[key] * 1000:.1f} |")
        print(f"| (files after them: {r['files']}) | |")
    if args.floor_batches:
        rows = floor_history(args.floor_batches, args.internal_retention)
        print(f"\n| floor after batches (own tables' retention: "
              f"{args.internal_retention or 'an hour'}) | median refresh ms |\n|--:|--:|")
        for n, ms in rows:
            print(f"| {n} | {ms:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
