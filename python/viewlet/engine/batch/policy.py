"""Which target runs a batch: the local engine (DuckDB in this process) or Spark.

One plan, two targets (the Hot Dog paper's local and distributed code). The local target
avoids Spark's per-job cost (a small batch used to run as 8 to 130 Spark jobs), so it runs
every batch whose inputs are small enough for the driver; Spark runs the rest, and every
batch the local target cannot reproduce exactly.

The rule, per batch (`choose`):
  * `engine = 'spark'` (view option, else the session's `spark.viewlet.engine`): Spark.
  * the view uses SQL the local target cannot evaluate with Spark's exact results (a
    function without a checked equivalent, a cast whose rounding differs, ...): Spark, and
    EXPLAIN names the construct.
  * `engine = 'local'`: local. `auto` (the default): local when the rows the batch reads
    (its changes, maps and base tables read whole, the files its lookups read) are at most
    `spark.viewlet.local.maxInputRows` (default 10,000,000), else Spark.
A local batch that fails (an overflow, a division by zero under ANSI mode) runs again on
Spark, which gives Spark's own result or error; HISTORY records the target of every batch
and why.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

import pyarrow as pa

from ...plan.local.types import NotLocal
from ..local.executor import unavailable
from ..state.manifest import BatchRecord
from ..state.settings import (AUTO, DISTRIBUTED, ENGINE_CONF, LOCAL, MAX_ROWS_CONF, MIN_ROWS_CONF,
                              SPARK, ansi, conf, max_rows, min_rows, setting)
from ..state.stats import MapLayout
from .local import local_sql, local_window_sql, result_sql_local

@dataclass(frozen=True)
class Choice:
    target: str
    reason: str
    input_rows: int = 0              # the rows the batch reads, as estimated


def choose(view, plan, record, deltas: Dict[str, pa.Table]) -> Choice:
    mode = setting(view)
    rows = input_rows(view, plan, record, deltas)     # also sizes a Spark batch's partitions
    if mode in (SPARK, DISTRIBUTED):
        return Choice(SPARK, "engine = 'spark'", rows)
    blocker = local_blocker(view)
    if blocker is not None:
        return Choice(SPARK, f"the local target cannot run this view: {blocker}", rows)
    if mode == LOCAL:
        return Choice(LOCAL, "engine = 'local'", rows)
    limit = max_rows(view)
    if rows > limit:
        return Choice(SPARK, f"the batch reads about {rows:,} rows, more than {MAX_ROWS_CONF} "
                             f"= {limit:,}", rows)
    return Choice(LOCAL, f"the batch reads about {rows:,} rows (at most {limit:,} run locally)",
                  rows)


def input_rows(view, plan, record, deltas: Dict[str, pa.Table]) -> int:
    """An upper bound of the rows the batch reads: its changes, the maps and base tables it
    reads whole, and the rows of the files its lookups may read (from Delta statistics)."""
    store = view.ctx.store
    total = sum(t.num_rows for t in deltas.values())
    seen = set()
    for phase in plan.phases:
        for leaf in phase.leaves.values():
            if leaf in seen or leaf.kind in ("delta", "pending"):
                continue
            seen.add(leaf)
            if leaf.kind == "rel":
                after, to = record.ranges[leaf.name]
                snap = store.snapshot(view.table_path(leaf.name), to if leaf.detail[0] else after)
            else:
                snap = store.snapshot(view.map_path(leaf.name), record.map_versions[leaf.name])
            total += _rows(snap)
    return total


def _rows(snap) -> int:
    if snap.stats is None:
        return 0
    return sum(s.rows or 0 for s in snap.stats)


def local_blocker(view) -> Optional[str]:
    """Why the local target cannot run this view (None when it can): the first construct
    of its plan (every relation changed) or of its result query without an exact local
    equivalent."""
    key = ("local_blocker", ansi(view))
    cache = view.compiled.cache
    if key not in cache:
        cache[key] = _blocker(view)
    return cache[key]


def _blocker(view) -> Optional[str]:
    if view.compiled.depth == 0:
        return "depth 0 recomputes the view on Spark"
    missing = unavailable()
    if missing is not None:
        return missing
    relations = tuple(view.compiled.program.relations())
    try:
        plan = view.batch_plan(relations, relations)
        for phase in plan.phases:
            local_sql(view, phase)
        result_sql_local(view)
        if view.compiled.spec.window is not None:
            local_window_sql(view)
    except NotLocal as e:
        return str(e)
    return None


def reason_for(view, record: BatchRecord) -> Optional[str]:
    """Why this batch runs distributed, or None: the engine setting, or its changes'
    size (estimated from the Delta log, before anything is read). A top-N view or one with
    window functions keeps its ordered rows or recomputes partitions in the driver: its
    batches run on the Spark target instead (they still read the changes on Spark)."""
    if view.top_n is not None or view.compiled.spec.window is not None:
        return None
    mode = setting(view)
    if mode == DISTRIBUTED:
        return "engine = 'distributed'"
    if mode != AUTO:
        return None
    limit = min_rows(view.ctx.spark)
    rows = change_rows_estimate(view, record)
    if rows > limit:
        return (f"its changes hold about {rows:,} rows, more than {MIN_ROWS_CONF} = "
                f"{limit:,}: nothing is collected to the driver")
    return None


def too_large_to_collect(view, layout: MapLayout) -> bool:
    """Whether a map (its layout: rows at its last compaction plus rows appended since) is
    compacted on the executors rather than read into the driver."""
    if setting(view) == DISTRIBUTED:
        return True
    return (layout.base_rows or 0) + (layout.appended_rows or 0) > min_rows(view.ctx.spark)


def change_rows_estimate(view, record: BatchRecord) -> int:
    store = view.ctx.store
    total = 0
    for rel, (after, to) in record.ranges.items():
        if to > after:
            total += store.change_rows_estimate(view.table_path(rel), after, to)
    return total


# -- depth 0 -------------------------------------------------------------------------------
def recompute_reason(view) -> Optional[str]:
    """Why a depth-0 view's recompute is written by the executors, or None: the engine
    setting, or a result table larger than spark.viewlet.distributed.minChangeRows rows."""
    mode = setting(view)
    if mode == DISTRIBUTED:
        return "engine = 'distributed'"
    if mode != AUTO:
        return None
    snap = view.ctx.store.snapshot(view.result_path)
    rows = sum(s.rows or 0 for s in snap.stats or ())
    limit = min_rows(view.ctx.spark)
    if rows > limit:
        return (f"its result holds about {rows:,} rows, more than {MIN_ROWS_CONF} = {limit:,}: "
                "the recompute is written by the executors")
    return None


# -- CREATE --------------------------------------------------------------------------------
def load_reason(ctx, options: Optional[Dict], base_rows: int) -> Optional[str]:
    """Why CREATE loads the maps on the executors, or None: the engine (view option or
    session setting) is 'distributed', or, under auto, the base tables hold more rows than
    spark.viewlet.distributed.minChangeRows (Delta statistics). The result of a top-N view
    is still cut to its first rows in the driver (views.create_view)."""
    mode = (options or {}).get("engine") or \
        (conf(ctx.spark, ENGINE_CONF) or AUTO).strip().lower()
    if mode == DISTRIBUTED:
        return "engine = 'distributed'"
    limit = min_rows(ctx.spark)
    if mode == AUTO and base_rows > limit:
        return (f"the base tables hold about {base_rows:,} rows, more than {MIN_ROWS_CONF} = "
                f"{limit:,}")
    return None
