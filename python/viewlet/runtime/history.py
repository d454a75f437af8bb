"""DESCRIBE INCREMENTAL VIEW v HISTORY: one row per batch from the view's manifest, newest
first (as Delta's DESCRIBE HISTORY), with the statistics each batch recorded."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from .manifest import BatchRecord

COLUMNS = [
    ("batch", "bigint"), ("status", "string"),
    ("started_at", "timestamp"), ("committed_at", "timestamp"),
    ("versions_before", "map<string,bigint>"), ("versions_after", "map<string,bigint>"),
    ("changes", "bigint"), ("rows_changed", "bigint"),
    ("map_rows_changed", "map<string,bigint>"),
    ("seconds", "double"), ("phase_seconds", "map<string,double>"), ("spark_jobs", "int"),
    ("engine", "string"), ("engine_reason", "string"),
]


def history_rows(view, limit: Optional[int] = None) -> List[Sequence]:
    display = {rel: t.display for rel, t in view.compiled.spec.tables.items()}
    planned: Dict[int, BatchRecord] = {}
    committed: Dict[int, BatchRecord] = {}
    failed: Dict[int, BatchRecord] = {}
    for rec in view.manifest.records():
        {"committed": committed, "failed": failed}.get(rec.phase, planned)[rec.batch] = rec
    rows = []
    for batch in sorted(set(planned) | set(committed), reverse=True)[:limit]:
        done = committed.get(batch)
        rec = done or planned[batch]
        status = ("created" if batch == 0 else "committed") if done else \
            f"failed ({failed[batch].stats.get('failed')}), dropped" if batch in failed else \
            "planned, not committed (the next REFRESH re-runs it)"
        stats = rec.stats if done else {}
        seconds = dict(stats.get("seconds", {}))
        total = seconds.pop("total", None) if batch else seconds.pop("create", None)
        started = planned[batch].at if batch in planned else None
        rows.append((
            batch, status, started, done.at if done else None,
            {display.get(r, r): a for r, (a, _) in rec.ranges.items()},
            {display.get(r, r): b for r, (_, b) in rec.ranges.items()},
            sum(stats.get("delta_rows", {}).values()) if done else None,
            stats.get("result_rows_changed"), stats.get("map_rows_changed"),
            None if total is None else round(total, 3),
            {k: round(v, 3) for k, v in seconds.items()} if done else None,
            stats.get("spark_jobs"),
            _engine(batch, stats) if done else None, stats.get("engine_reason") if done else None,
        ))
    return rows


def _engine(batch: int, stats) -> str:
    """The target that computed the batch: CREATE's load and batches recorded before there
    were two targets ran on Spark."""
    return stats.get("engine") or "spark"
