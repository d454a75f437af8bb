"""One batch applied: its map deltas computed on the target the policy picks
(batch/policy.py), written to every map with the batch's transaction id (so a re-run writes
only what a crash left unwritten; the maps side by side: maintain/writes.py), maps compacted,
and the result maintained by the view's strategy:

  grouped     the touched groups' rows replaced (a MERGE; maintain/grouped.py)
  window      the touched window units' rows replaced, or every row (maintain/window.py)
  top-N       the ordered rows kept in order, the visible ones rewritten (maintain/topn.py)
  recompute   depth 0: the defining query's rows replace the table's (maintain/recompute.py)

A batch the executors run (distributed) writes its maps and the result's files there
(maintain/distributed.py).
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable, Optional

import pyarrow.compute as pc

from ..batch import policy
from ..batch.distributed import DistributedTarget
from ..batch.run import distributed_deltas, driver_deltas
from ..runtime import faults
from ..runtime.progress import Progress
from ..state.manifest import BatchRecord
from ..state.settings import DISTRIBUTED, LOCAL
from ..state.stats import BatchStats, OrderedStats
from ..state.view import LoadedView
from . import distributed
from .compaction import timed_compaction
from .grouped import OP, result_maps, result_source, rewrite_result
from .maps import write_deltas
from .recompute import overwrite, recompute_frame
from .topn import apply_ordered
from .window import window_source


def apply_batch(view: LoadedView, record: BatchRecord,
                previous: Optional[BatchRecord] = None,
                before_writes: Callable[[], None] = lambda: None) -> BatchStats:
    """Run one batch and commit every map, each with the batch's transaction id, so that a
    re-run commits only what a crash left uncommitted. `previous`: the last committed batch
    (its stats carry the maps' layouts). `before_writes` is called before the batch writes
    anything (its planned row, committed meanwhile: ops/planning.py); it raises to stop a
    batch that is not this refresher's."""
    with Progress(view.ctx.spark, f"refresh {view.name} batch {record.batch}",
                  view.settings.progress_after, lazy=True) as progress:
        stats = _apply_batch(view, record, progress,
                             previous.batch_stats if previous else BatchStats(), before_writes)
        stats.spark_jobs = progress.spark_jobs()
    return stats


def _apply_batch(view: LoadedView, record: BatchRecord, progress: Progress,
                 previous: BatchStats, before_writes: Callable[[], None]) -> BatchStats:
    if view.compiled.depth == 0:
        before_writes()
        return _recompute(view, record, progress)
    scale_out = policy.scale_out(view, record)
    if scale_out is not None:                    # the executors stage files from the start
        before_writes()
        return _apply_distributed(view, record, progress, previous, scale_out)
    stats = BatchStats()
    ctx = view.ctx
    txn = view.txn(record.batch)
    deltas = driver_deltas(view, record, stats, progress)
    result = rewrite = None
    if any(deltas.get(m) is not None and deltas[m].num_rows for m in result_maps(view)):
        progress.step("computing the result rows of the touched groups")
        t0 = time.perf_counter()
        local = stats.engine == LOCAL
        if view.compiled.spec.window is not None:
            result, rewrite = window_source(view, record, deltas, local, progress)
        else:      # the touched groups' rows are in the driver: under auto DuckDB runs them
            result = result_source(view, record, deltas,
                                   local or policy.small_work_in_driver(view), progress,
                                   hold=local)
        stats.seconds["result"] = time.perf_counter() - t0
    before_writes()
    faults.point("batch.computed")
    t0 = time.perf_counter()
    changed_rows = write_deltas(view, record, deltas, progress)
    stats.seconds["merge"] = time.perf_counter() - t0
    timed_compaction(view, record, changed_rows, previous, progress, stats)
    t0 = time.perf_counter()
    meta = {"viewlet.view": view.name, "viewlet.batch": str(record.batch)}
    if view.top_n is not None:
        stats.ordered = replace(previous.ordered) if previous.ordered else OrderedStats()
        stats.result_rows_changed = 0
        if result is not None and result.num_rows:
            apply_ordered(view, record, deltas, result, stats, txn, meta, progress)
    elif rewrite is not None:                     # a window over every row: all rows anew
        stats.result_rows_changed = rewrite_result(view, rewrite, txn, meta, progress,
                                                   "rewriting the result table")
    elif result is not None and result.num_rows:  # skipped when the table holds txn already
        progress.step("merging the result table")
        ctx.store.merge_replace(view.result_path, result, view.definition.result.key_names,
                                OP, txn=txn, metadata=meta)
        faults.point("batch.result_merged")
    # Groups of the result the batch rewrote (each has one 'del' row in the MERGE source).
    if view.top_n is None and rewrite is None:
        stats.result_rows_changed = 0 if result is None else \
            pc.sum(pc.equal(result.column(OP), "del")).as_py() or 0
    stats.map_rows_changed = changed_rows
    stats.seconds["merge_result"] = time.perf_counter() - t0
    return stats


def _recompute(view: LoadedView, record: BatchRecord, progress: Progress) -> BatchStats:
    """Depth 0: the defining query over the batch's end versions replaces the result."""
    progress.spark().step("recomputing the defining query")
    choice = policy.for_recompute(view)
    stats = BatchStats(engine=choice.target, engine_reason=choice.reason)
    txn = view.txn(record.batch)
    if choice.target == DISTRIBUTED:
        distributed.recompute(view, record, txn, stats, recompute_frame(view, record))
    else:
        overwrite(view, record, txn, stats)
    return stats


def _apply_distributed(view: LoadedView, record: BatchRecord, progress: Progress,
                       previous: BatchStats, reason: str) -> BatchStats:
    """Run and commit one batch on the executors; its stats."""
    stats = BatchStats(engine=DISTRIBUTED, engine_reason=reason)
    progress.spark()
    with DistributedTarget(view, record, policy.change_rows_estimate(view, record)) as target:
        t0 = time.perf_counter()
        totals = distributed_deltas(view, record, target, stats, progress)
        stats.seconds["compute"] = time.perf_counter() - t0
        faults.point("batch.computed")
        # the result rows first: an error in them fails the batch before any map holds it
        result = distributed.result_rows(view, record, target.spark, totals, stats, progress,
                                         f"{target.scratch}/result", target.persisted)
        changed_rows = distributed.write_maps(view, record, totals, stats, progress)
        timed_compaction(view, record, changed_rows, previous, progress, stats)
        distributed.write_result(view, record, result, stats, progress)
    return stats
