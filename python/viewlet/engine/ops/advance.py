"""One view advanced by one batch, exactly once: the manifest's planned row (ranges and map
versions), the batch applied under the batch's lease, the committed row (appended after the
statement returns: ops/committing.py). A batch another refresher is computing is waited
for; one whose refresher stopped is taken over and run again with exactly its recorded
inputs; a batch that fails on its data before writing anything is dropped, so that the next
REFRESH plans anew.
"""
from __future__ import annotations

import logging
import time
from typing import Callable, Dict, Optional

from ...frontend.subqueries import TOO_MANY_ROWS
from ..batch import drift
from ..maintain.apply import apply_batch
from ..maintain.writes import on_manifest_thread_now
from ..runtime.progress import Progress
from ..state import lease
from ..state.manifest import BatchRecord, ORDERED, RESULT
from ..state.stats import BatchStats
from ..state.view import LoadedView
from .committing import commit_after_return
from .planning import NotPlanned, PlannedRow
from .results import Refreshed

log = logging.getLogger("viewlet")


def advance_view(ctx, view: LoadedView, max_commits: Optional[int] = None,
                 until: Optional[Dict[str, int]] = None) -> Refreshed:
    """One batch of `view` over every base commit since the watermark (at most
    `max_commits` commits per table when given: continuous mode's back-pressure); `until`
    (location -> version): the base-table versions of a chain refresh (ops/chains.py)."""
    name = view.name
    t0 = time.perf_counter()
    manifest = view.manifest
    waited = recovered = None
    recovered_stats = BatchStats()
    while True:
        # One read of the manifest: the batch planned below continues exactly from it (its
        # number, ranges and map versions), so a batch another refresher planned meanwhile
        # makes plan() fail instead of being applied again.
        rows = manifest.all_records()
        latest, last = manifest.latest(rows), manifest.last_committed(rows)
        if latest.phase == "planned":
            # Planned, not committed: another refresher is computing it (wait for it), or
            # its refresher stopped (run it again, with exactly its recorded inputs).
            if _wait_for(view, latest.batch) == lease.COMMITTED:
                waited = latest.batch
                continue
            last = _take_over(view, latest, last)
            if last is None:             # another refresher took it over first
                continue
            recovered, recovered_stats = latest.batch, last.batch_stats
        ranges = drift.batch_ranges(view, last.watermarks, max_commits, until)
        if all(a == b for a, b in ranges.values()):
            status = f"recovered batch {recovered}" if recovered is not None else \
                WAITED if waited is not None else "up to date"
            changes, rows = recovered_stats.applied()     # what the re-run batch applied
            return Refreshed(name, last.batch, changes, rows, round(time.perf_counter() - t0, 3),
                             status)
        map_versions = {m: ctx.store.version(view.map_path(m)) for m in view.definition.maps}
        map_versions[RESULT] = ctx.store.version(view.result_path)
        if view.top_n is not None:
            map_versions[ORDERED] = ctx.store.version(view.ordered_path)
        record = BatchRecord(manifest.next_planned(rows), "planned", ranges, map_versions, {})
        held = lease.Lease(view, record.batch).acquire()  # before the planned row is visible
        try:
            stats = _planned_batch(view, record, last)
            if stats is not None:
                stats.seconds["total"] = time.perf_counter() - t0
                stats.result_version = ctx.store.version(view.result_path)
        except BaseException:
            held.release()
            raise
        if stats is None:                # another refresher planned it first: wait for it
            held.release()
            continue
        # the committed row, and the lease's release, after this statement returns
        commit_after_return(manifest, record, stats.to_json(), held, name)
        # both batches this REFRESH applied when it re-ran an interrupted one first
        changes, rows = (a + b for a, b in zip(stats.applied(), recovered_stats.applied()))
        return Refreshed(name, record.batch, changes, rows, round(time.perf_counter() - t0, 3),
                         f"refreshed after recovering batch {recovered}" if recovered is not None
                         else "refreshed" if waited is None else
                         "refreshed after waiting for a concurrent refresh")


def _planned_batch(view: LoadedView, record: BatchRecord,
                   last: BatchRecord) -> Optional[BatchStats]:
    """Plan `record` (its row commits while the batch reads and computes: ops/planning.py)
    and apply it; None when another refresher planned that batch first."""
    planned = PlannedRow(view.manifest, record)
    try:
        stats = _apply_or_drop(view, record, last, planned.wait)
        planned.wait()                   # a batch that wrote nothing has not waited yet
        return stats
    except NotPlanned:
        return None
    except Exception:
        if planned.lost():               # it failed on a batch another refresher owns
            return None
        raise
    finally:
        planned.settle()


#: REFRESH's status when another refresher computed the batch this one would have
WAITED = "waited for a concurrent refresh"


def _wait_for(view: LoadedView, batch: int) -> str:
    """Wait while another refresher holds planned `batch` (state/lease.py)."""
    with Progress(view.ctx.spark, f"refresh {view.name}", view.settings.progress_after,
                  lazy=True) as progress:
        return lease.wait_for_batch(view, batch, progress)


def _take_over(view: LoadedView, planned: BatchRecord,
               last: BatchRecord) -> Optional[BatchRecord]:
    """Re-run planned batch whose refresher stopped; its committed record, or None when
    another refresher took it over at the same moment (it comes first: wait for it)."""
    with lease.Lease(view, planned.batch) as held:
        if not held.first() or any(r.batch == planned.batch and r.phase == "committed"
                                   for r in view.manifest.records()):
            return None
        log.warning("View %s: batch %d was interrupted; re-running it with the same inputs",
                    view.name, planned.batch)
        t0 = time.perf_counter()
        stats = _apply_or_drop(view, planned, last)
        stats.seconds["total"] = time.perf_counter() - t0      # the re-run's time
        stats.result_version = view.ctx.store.version(view.result_path)
        row = stats.to_json()
        on_manifest_thread_now(lambda: view.manifest.commit(planned, row))
    lease.clear(view, planned.batch)
    return BatchRecord(planned.batch, "committed", planned.ranges, planned.map_versions, row)


def _apply_or_drop(view: LoadedView, record: BatchRecord, last: BatchRecord,
                   before_writes: Callable[[], None] = lambda: None) -> BatchStats:
    """apply_batch (`before_writes`: as there); a batch that fails on its data (a scalar
    subquery without an aggregate returned several rows, which Spark's query raises too)
    before writing any map or the result is dropped from the manifest, so that the next
    REFRESH plans anew and sees the commits that fix the data (re-running the same inputs
    would fail forever)."""
    try:
        return apply_batch(view, record, last, before_writes)
    except Exception as e:                     # noqa: BLE001 - re-raised
        if TOO_MANY_ROWS not in str(e):
            raise
        before_writes()                        # the planned row a drop follows
        store = view.ctx.store
        paths = {RESULT: view.result_path, ORDERED: view.ordered_path if view.top_n else None}
        written = [m for m, v in record.map_versions.items()
                   if store.version(paths.get(m) or view.map_path(m)) != v]
        if not written:
            view.manifest.drop(record, TOO_MANY_ROWS)
        raise
