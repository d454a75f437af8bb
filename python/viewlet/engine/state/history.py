"""DESCRIBE INCREMENTAL VIEW v HISTORY (and `SELECT * FROM viewlet_history('v')`): one row per
batch from the view's manifest, newest first (as Delta's DESCRIBE HISTORY), with the
statistics each batch recorded, the rebuilds with their reason and the refreshes that failed.

Statuses:
  created      the initial load of CREATE
  committed    a batch of REFRESH (or continuous refresh) that was applied
  rebuilt      the load of REFRESH ... FULL; `message` says why
  replaced     the load of a new query (CREATE OR REPLACE, ALTER ... AS, CREATE OR REFRESH
               with a new definition); `message` names the maps kept and loaded
  failed       a refresh that ended in an error before committing; `message` is the error
  planned, not committed   an interrupted batch; the next REFRESH re-runs it
  abandoned    an interrupted batch a rebuild made moot
"""
from __future__ import annotations

import logging
from typing import Dict, List, Optional, Sequence

from ...errors import Cancelled
from ..runtime import cancel
from .lease import holders
from .manifest import BatchRecord, DROPPED
from .stats import BatchStats

log = logging.getLogger("viewlet")

COLUMNS = [
    ("batch", "bigint"), ("status", "string"),
    ("started_at", "timestamp"), ("committed_at", "timestamp"),
    ("versions_before", "map<string,bigint>"), ("versions_after", "map<string,bigint>"),
    ("changes", "bigint"), ("rows_changed", "bigint"),
    ("map_rows_changed", "map<string,bigint>"),
    ("seconds", "double"), ("phase_seconds", "map<string,double>"), ("spark_jobs", "int"),
    ("engine", "string"), ("engine_reason", "string"), ("message", "string"),
]
STATUSES = ("created", "committed", "rebuilt", "replaced", "failed", "failed (...), dropped",
            "planned, not committed", "abandoned")


def history_rows(view, limit: Optional[int] = None) -> List[Sequence]:
    display = {rel: t.display for rel, t in view.compiled.spec.tables.items()}
    planned: Dict[int, BatchRecord] = {}
    committed: Dict[int, BatchRecord] = {}
    entries = []                       # (batch, time, row)
    records = view.manifest.all_records()
    last_committed = max((r.batch for r in records if r.phase == "committed"), default=-1)
    dropped = {r.batch: r for r in records if r.phase == DROPPED}
    errors: Dict[int, str] = {}        # a dropped batch's failed refresh: one row, the batch's
    for rec in records:
        if rec.phase == "committed":
            committed[rec.batch] = rec
        elif rec.phase == "planned":
            planned[rec.batch] = rec
        elif rec.phase == "failed" and rec.batch in dropped:
            errors[rec.batch] = rec.batch_stats.error
        elif rec.phase == "failed":
            entries.append((rec.batch, rec.at, _failure_row(rec)))
    for batch in set(planned) | set(committed):
        done = committed.get(batch)
        rec = done or planned[batch]
        started = planned[batch].at if batch in planned else None
        row = _batch_row(view, rec, done, started, display, batch < last_committed)
        if batch in dropped and not done:
            reason = dropped[batch].batch_stats.dropped
            row = row[:1] + (f"failed ({reason}), dropped",) + row[2:-1] + (errors.get(batch),)
        entries.append((batch, rec.at, row))
    entries.sort(key=lambda e: (e[0], e[1] is not None, e[1]), reverse=True)
    return [row for _, _, row in entries[:limit]]


def _batch_row(view, rec: BatchRecord, done: Optional[BatchRecord], started, display,
               superseded: bool):
    stats = rec.batch_stats if done else BatchStats()
    seconds = dict(stats.seconds)
    load = "create" in seconds                 # an initial load: CREATE's or a rebuild's
    total = seconds.pop("create", None) if load else seconds.pop("total", None)
    if done:
        status = "replaced" if stats.maps_kept is not None else "rebuilt" if stats.rebuilt \
            else "created" if load else "committed"
    else:
        status = "abandoned (a rebuild replaced the view before it was re-run)" if superseded \
            else _uncommitted(view, rec.batch)
    return (
        rec.batch, status, started if not load else rec.at, done.at if done else None,
        {display.get(r, r): a for r, (a, _) in rec.ranges.items()},
        {display.get(r, r): b for r, (_, b) in rec.ranges.items()},
        sum((stats.delta_rows or {}).values()) if done else None,
        stats.result_rows_changed, stats.map_rows_changed,
        None if total is None else round(total, 3),
        {k: round(v, 3) for k, v in seconds.items()} if done else None,
        stats.spark_jobs,
        _engine(stats) if done else None, stats.engine_reason if done else None,
        _load_message(stats),
    )


def _load_message(stats: BatchStats) -> Optional[str]:
    """Why a view was loaded again, and for a new query which maps it kept and loaded."""
    reason = stats.rebuilt
    if stats.maps_kept is None:
        return reason
    kept, loaded = stats.maps_kept, stats.maps_loaded or []
    return (f"{reason}: {len(kept)} map(s) kept ("
            + ", ".join(f"{new} = {old}" if new != old else new for new, old in kept.items())
            + f"), {len(loaded)} loaded (" + ", ".join(loaded) + ")")


def _failure_row(rec: BatchRecord):
    return (rec.batch, "failed", rec.at, None, None, None, None, None, None, None, None, None,
            None, None, rec.batch_stats.error)


def _uncommitted(view, batch: int) -> str:
    """A planned batch: being computed by a refresher that holds its lease, else left by one
    that stopped (state/lease.py)."""
    live = holders(view, batch)
    if live:
        return f"running: {live[0].owner} is computing it (other refreshes wait for it)"
    return "planned, not committed (the next REFRESH re-runs it)"


def _engine(stats: BatchStats) -> str:
    """The target that computed the batch: loads and batches recorded before there were two
    targets ran on Spark."""
    return stats.engine or "spark"


def record_failure(ctx, name: str, error: BaseException):
    """Write a failed refresh of `name` into its history (never raises: the error the user
    sees is the refresh's own). A cancelled refresh (Ctrl-C) is not a failure: its planned
    batch, if any, shows as planned and not committed."""
    token = cancel.current()
    if isinstance(error, Cancelled) or (token is not None and token.cancelled):
        return
    try:
        view = ctx.load(name)
        message = getattr(error, "message", None) or f"{type(error).__name__}: {error}"
        manifest = view.manifest
        last = manifest.last_committed().batch
        # a batch planned (or dropped) after the last commit is the one that failed
        manifest.record_failure(max(last + 1, manifest.next_planned() - 1), message)
    except Exception as e:  # noqa: BLE001 - a view that cannot be loaded has no history
        log.debug("Could not record the failed refresh of %s: %s", name, e)
