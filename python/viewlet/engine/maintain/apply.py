"""One batch applied: its map deltas computed on the target the policy picks, written to
every map with the batch's transaction id (so a re-run writes only what a crash left
unwritten), maps compacted, and the result maintained by the view's strategy (grouped rows,
window units, top-N order, or recompute).
"""
from __future__ import annotations

import time
from typing import Dict, List, Optional

import pyarrow.compute as pc
from pyspark.sql import DataFrame

from ..batch.distributed import map_deltas
from ..batch.policy import change_rows_estimate, reason_for, recompute_reason
from ..batch.run import run_triggers
from ..batch.spark import batch_session
from ..runtime import faults
from ..runtime.progress import Progress
from ..spark.files import timestamps_as_micros
from ..state.manifest import BatchRecord
from ..state.settings import DISTRIBUTED
from ..state.view import LoadedView
from . import distributed, hot, topn
from .compaction import timed_compaction
from .grouped import OP, result_maps, result_source, zero_columns
from .recompute import overwrite, recompute_frame
from .topn import apply_ordered
from .window import window_source


def apply_batch(view: LoadedView, record: BatchRecord, previous: Optional[BatchRecord] = None) -> Dict:
    """Run one batch and commit every map, each with the batch's transaction id, so that a
    re-run commits only what a crash left uncommitted. `previous`: the last committed batch
    (its stats carry the maps' layouts)."""
    with Progress(view.ctx.spark, f"refresh {view.name} batch {record.batch}",
                  lazy=True) as progress:
        stats = _apply_batch(view, record, progress, (previous.stats if previous else {}) or {})
        stats["spark_jobs"] = progress.spark_jobs()
    return stats


def _apply_batch(view: LoadedView, record: BatchRecord, progress: Progress, previous: Dict) -> Dict:
    stats: Dict = {"seconds": {}}
    ctx = view.ctx
    txn = (view.app_id, record.batch)
    if view.compiled.depth == 0:
        progress.spark().step("recomputing the defining query")
        scale_out = recompute_reason(view)
        if scale_out is not None:
            stats["engine"], stats["engine_reason"] = DISTRIBUTED, scale_out
            distributed.recompute(view, record, txn, stats, recompute_frame(view, record))
            return stats
        stats["engine"], stats["engine_reason"] = "spark", \
            "the local target cannot run this view: depth 0 recomputes the view on Spark"
        overwrite(view, record, txn, stats)
        return stats
    scale_out = reason_for(view, record)
    if scale_out is not None:
        return _apply_distributed(view, record, progress, previous, scale_out)
    deltas = run_triggers(view, record, stats, progress)
    result = rewrite = None
    if any(deltas.get(m) is not None and deltas[m].num_rows for m in result_maps(view)):
        progress.step("computing the result rows of the touched groups")
        t0 = time.perf_counter()
        local = stats.get("engine") == "local"
        if view.compiled.spec.window is not None:
            result, rewrite = window_source(view, record, deltas, local, progress)
        else:
            result = result_source(view, record, deltas, local, progress)
        stats["seconds"]["result"] = time.perf_counter() - t0
    faults.point("batch.computed")
    t0 = time.perf_counter()
    meta = {"viewlet.view": view.name, "viewlet.batch": str(record.batch)}
    changed_rows = {}
    maps = [name for name, total in deltas.items() if total.num_rows]
    merging = view.spec.get("map_writes", "append") == "merge"
    for i, name in enumerate(maps, 1):
        total = deltas[name]
        progress.step(f"{'merging' if merging else 'appending'} the delta of map {name} "
                      f"({i}/{len(maps)}, {total.num_rows} rows)")
        changed_rows[name] = total.num_rows
        if merging:
            schema = view.map_schema(name)
            written = ctx.store.merge_add(view.map_path(name), total, schema.keys,
                                          list(schema.values), zero_columns(view, name), txn,
                                          metadata=meta)
        else:
            written = ctx.store.add_rows(view.map_path(name), total, txn, metadata=meta)
        if written:
            faults.point("batch.map_merged")
        hot.sync_after_writes(view, name, record.map_versions[name], record.batch, total,
                              written if isinstance(written, int) else None)
    stats["seconds"]["merge"] = time.perf_counter() - t0
    timed_compaction(view, record, changed_rows, previous, progress, merging, stats)
    t0 = time.perf_counter()
    if view.top_n is not None:
        stats[topn.STATS] = topn.stats_of(previous)
        stats["result_rows_changed"] = 0
        if result is not None and result.num_rows:
            apply_ordered(view, record, deltas, result, stats, txn, meta, progress)
    elif rewrite is not None:                     # a window over every row: all rows anew
        progress.step("rewriting the result table")
        ctx.store.overwrite(view.result_path, rewrite, txn=txn, metadata=meta)
        faults.point("batch.result_merged")
        stats["result_rows_changed"] = rewrite.num_rows
    elif result is not None and result.num_rows:  # skipped when the table holds txn already
        progress.step("merging the result table")
        keys = [name for name, _ in view.spec["result"]["keys"]]
        ctx.store.merge_replace(view.result_path, result, keys, OP, txn=txn, metadata=meta)
        faults.point("batch.result_merged")
    # Groups of the result the batch rewrote (each has one 'del' row in the MERGE source).
    if view.top_n is None and rewrite is None:
        stats["result_rows_changed"] = 0 if result is None else \
            pc.sum(pc.equal(result.column(OP), "del")).as_py() or 0
    stats["map_rows_changed"] = changed_rows
    stats["seconds"]["merge_result"] = time.perf_counter() - t0
    return stats


def _apply_distributed(view, record: BatchRecord, progress, previous: Dict, reason: str) -> Dict:
    """Run and commit one batch on the executors (maintain/distributed.py); its stats."""
    stats: Dict = {"seconds": {}, "engine": DISTRIBUTED, "engine_reason": reason}
    seconds = stats["seconds"]
    progress.spark()
    spark = batch_session(view, change_rows_estimate(view, record))
    scratch = view.scratch_dir(record.batch)
    persisted: List[DataFrame] = []
    try:
        with timestamps_as_micros(spark):
            t0 = time.perf_counter()
            totals = map_deltas(view, record, spark, scratch, stats, progress, persisted)
            seconds["compute"] = time.perf_counter() - t0
            faults.point("batch.computed")
            changed_rows = distributed.write_maps(view, record, totals, stats, progress)
            merging = view.spec.get("map_writes", "append") == "merge"
            timed_compaction(view, record, changed_rows, previous, progress, merging, stats)
            distributed.write_result(view, record, spark, totals, stats, progress)
    finally:
        for df in persisted:
            df.unpersist()
        view.ctx.store.drop(scratch)
    return stats
