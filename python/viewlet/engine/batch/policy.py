"""Where a batch runs, and why: the one place that chooses a target, and the reasons HISTORY
records (`engine_reason`) and EXPLAIN shows.

One plan, three targets (the Hot Dog paper's local and distributed code; batch/target.py).
The local target avoids Spark's per-job cost (a small batch used to run as 8 to 130 Spark
jobs), so it runs every batch whose inputs are small enough for the driver; Spark runs the
rest, and every batch the local target cannot reproduce exactly; the executors run what is
too large to pass through the driver. The rules, each a function below:

  * `scale_out`, before anything is read: `engine = 'distributed'`, or under auto a batch
    whose changes hold more than spark.viewlet.distributed.minChangeRows rows (the log's
    row counts of the files holding them) or would take more than a quarter of
    spark.driver.memory in memory (their rows times a row's Arrow bytes, sampled from their
    files). A top-N view or one with window functions keeps its ordered rows or recomputes
    partitions in the driver: never distributed.
  * `choose`, once the changes are read: `engine = 'spark'` (or 'distributed' for a batch
    that did not scale out): Spark. A view whose SQL the local target cannot evaluate with
    Spark's exact results (a function without a checked equivalent, a cast whose rounding
    differs, ...): Spark, naming the construct. `engine = 'local'`: local. `auto` (the
    default): local when the rows the batch reads (its changes, maps and base tables read
    whole, the maps it reads by lookup) are at most spark.viewlet.local.maxInputRows
    (default 10,000,000), else Spark. Maps held in memory count no rows: hot ones, and
    the batch's maps when they fit the hot-map budget together (the first local batch
    reads them whole, later ones find them hot; counted, a large database's maps kept
    every batch on Spark, which never makes a map hot). When that bound passes the limit,
    the lookups of the maps not held are read (both targets read them in the driver, a
    few files at a time, and the target keeps what was read) and count the rows they
    keep: a batch of a few keys over maps larger than the budget runs locally, where it
    ran on Spark as a job per phase and broadcast over the same looked-up rows.
  * `small_work_in_driver`: under auto, a batch sent to Spark still runs in the driver each
    phase reading at most the local limit's rows, and the result rows.
  * `after_local_failure`: a local batch that fails runs again on Spark.
  * `for_recompute` (depth 0), `for_load` (CREATE's maps), `compacts_on_executors` (a map
    due for compaction): the same settings and bounds, for the other work a view does.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, List, NamedTuple, Optional

import pyarrow as pa

from ...plan.local.types import NotLocal
from ..local.executor import unavailable
from ..state.manifest import BatchRecord
from ..state.maps import held_maps
from ..state.settings import (AUTO, DISTRIBUTED, LOCAL, MAX_ROWS_CONF, MEMORY_CONF, MIN_ROWS_CONF,
                              SPARK, Settings, size_text)
from ..state.stats import MapLayout, snapshot_rows
from .leaves import LeafReader, relation_version
from .local import failure_text, local_sql, local_window_sql, result_sql_local


@dataclass(frozen=True)
class Choice:
    target: str                      # LOCAL, SPARK or DISTRIBUTED
    reason: str                      # why: HISTORY's engine_reason
    input_rows: int = 0              # the rows the batch reads, as estimated


# -- a batch -----------------------------------------------------------------------------------
def scale_out(view, record: BatchRecord) -> Optional[str]:
    """Why this batch runs distributed, or None: the engine setting, or its changes'
    size (estimated from the Delta log, before anything is read). A top-N view or one with
    window functions keeps its ordered rows or recomputes partitions in the driver: its
    batches run on the Spark target instead (they still read the changes on Spark)."""
    if view.top_n is not None or view.compiled.spec.window is not None:
        return None
    settings = view.settings
    if settings.engine == DISTRIBUTED:
        return "engine = 'distributed'"
    if settings.engine != AUTO:
        return None
    limit = settings.min_change_rows
    rows = change_rows_by_relation(view, record)
    total = sum(rows.values())
    if total > limit:
        return (f"its changes hold about {total:,} rows, more than {MIN_ROWS_CONF} = "
                f"{limit:,}: nothing is collected to the driver")
    if total >= WEIGHED_FROM_ROWS:
        size, heap = change_bytes_estimate(view, record, rows), settings.driver_memory
        if size > heap // DRIVER_SHARE:
            return (f"its changes take about {size_text(size)} in memory, more than a quarter "
                    f"of spark.driver.memory ({size_text(heap)}): nothing is collected to the "
                    "driver")
    return None


# a batch's changes may take this share of the driver's heap (Spark holds them there too)
DRIVER_SHARE = 4
# smaller batches are not weighed: a sample read costs more than it could tell
WEIGHED_FROM_ROWS = 50_000


def change_rows_estimate(view, record: BatchRecord) -> int:
    """The rows of the files holding the batch's changes (change_rows_by_relation)."""
    return sum(change_rows_by_relation(view, record).values())


def change_rows_by_relation(view, record: BatchRecord) -> Dict[str, int]:
    """The rows of the files holding the batch's changes per relation, from the Delta log
    (files without statistics counted exactly once the bound would send the batch to the
    executors)."""
    store = view.ctx.store
    limit = view.settings.min_change_rows
    total, out = 0, {}
    for rel, (after, to) in record.ranges.items():
        if to > after:
            out[rel] = store.change_rows_estimate(view.table_path(rel), after, to,
                                                  exact_above=max(0, limit - total))
            total += out[rel]
    return out


def change_bytes_estimate(view, record: BatchRecord, rows: Dict[str, int]) -> int:
    """The bytes the batch's changes take in memory as Arrow: each relation's rows times a
    row's bytes, sampled from the largest files holding its changes."""
    store, total = view.ctx.store, 0
    for rel, n in rows.items():
        if not n:
            continue
        path = view.table_path(rel)
        after, to = record.ranges[rel]
        files = sorted(store.change_files(path, after, to), key=lambda f: -(f.rows or 0))
        width = store.row_bytes(path, [f.uri for f in files[:3]])
        total += int(n * (width or 0))
    return total


def choose(view, plan, record: BatchRecord, deltas: Dict[str, pa.Table],
           lookups: Optional[LeafReader] = None) -> Choice:
    """The local target or Spark, for a batch whose changes the driver read. `lookups`: a
    reader of the batch; when the batch's bound passes the local limit, the lookups of maps
    not held in memory are read with it (both targets read them in the driver, a few files
    at a time) and count the rows they keep, not the rows of the files they read."""
    settings = view.settings
    held = held_maps(view, map_versions(plan, record)) if settings.engine == AUTO \
        else frozenset()
    rows = input_rows(view, plan, record, deltas, held)
    if settings.engine in (SPARK, DISTRIBUTED):
        return Choice(SPARK, "engine = 'spark'", rows.total)
    blocker = local_blocker(view)
    if blocker is not None:
        return Choice(SPARK, f"the local target cannot run this view: {blocker}", rows.total)
    if settings.engine == LOCAL:
        return Choice(LOCAL, "engine = 'local'", rows.total)
    limit = settings.max_input_rows
    if rows.read > limit and lookups is not None and rows.by_lookup:
        rows = input_rows(view, plan, record, deltas, held, lookups)
    kept = (f"; its lookups keep {rows.kept:,} of their maps' {rows.by_lookup:,} rows"
            if rows.kept is not None else "")
    if rows.read > limit:
        return Choice(SPARK, f"the batch reads about {rows.read:,} rows, more than "
                             f"{MAX_ROWS_CONF} = {limit:,}{kept}", rows.total)
    in_memory = f"; {rows.held:,} map rows held in memory" if rows.held else ""
    return Choice(LOCAL, f"the batch reads about {rows.read:,} rows (at most {limit:,} run "
                         f"locally){kept}{in_memory}", rows.total)


def small_work_in_driver(view) -> bool:
    """Whether a batch the cost rule sent to Spark still computes in the driver's DuckDB the
    parts within the local limit (each phase reading at most spark.viewlet.local.
    maxInputRows rows: SparkTarget.in_driver; the result rows of the touched groups, which
    the driver holds): under auto, for a view the local target can run. The rule weighs
    the whole batch, and a Spark job per phase cost 0.2-0.3 s here beside DuckDB's work. A
    forced `engine = 'spark'` keeps all of a batch on Spark."""
    return view.settings.engine == AUTO and local_blocker(view) is None


def driver_phases_text(view, in_driver: int, phases: int) -> str:
    """What HISTORY's engine_reason adds for a Spark batch some of whose phases ran in the
    driver (small_work_in_driver)."""
    if not in_driver:
        return ""
    limit = view.settings.max_input_rows
    return (f"; {in_driver} of its {phases} phase(s) read at most {limit:,} rows and ran in "
            "the driver")


def after_local_failure(e: BaseException) -> Choice:
    """A local batch that failed (an overflow, a division by zero under ANSI mode) runs
    again on Spark, which gives Spark's own result or error."""
    return Choice(SPARK, f"the local target failed ({failure_text(e)}); ran on Spark")


class InputRows(NamedTuple):
    total: int          # every row of the batch's inputs (sizes a Spark batch's shuffles)
    read: int           # what the local limit weighs: `total` less the maps held, and less
                        # what lookups leave once they are read
    held: int = 0       # of `total`, the rows of the maps held in memory
    by_lookup: int = 0  # of `total`, the rows of maps not held that the batch reads by lookup
    kept: Optional[int] = None  # the rows those lookups keep, once read (in `read` for them)


def input_rows(view, plan, record: BatchRecord, deltas: Dict[str, pa.Table],
               held: FrozenSet[str] = frozenset(),
               lookups: Optional[LeafReader] = None) -> InputRows:
    """An upper bound of the rows the batch reads: its changes, the maps and base tables it
    reads whole, and every row of the maps it reads by lookup; the maps `held` in memory
    (held_maps) count in `total` only. With `lookups` (a reader of the batch), the maps not
    held count the rows their lookups keep, read with it."""
    store = view.ctx.store
    total = read = sum(t.num_rows for t in deltas.values())
    held_rows, by_lookup, kept = 0, 0, None if lookups is None else 0
    seen = set()
    for phase in plan.phases:
        for leaf in phase.leaves.values():
            if leaf in seen or leaf.kind in ("delta", "pending"):
                continue
            seen.add(leaf)
            if leaf.kind == "map" and leaf.name in held:
                rows = _held_rows(view, leaf.name, record.map_versions[leaf.name])
                total += rows
                held_rows += rows
                continue
            if leaf.kind == "rel":
                snap = store.snapshot(view.table_path(leaf.name), relation_version(record, leaf))
            else:
                snap = store.snapshot(view.map_path(leaf.name), record.map_versions[leaf.name])
            rows = snapshot_rows(snap)
            total += rows
            if leaf.kind == "map" and leaf.detail:
                by_lookup += rows
                if lookups is not None:
                    rows = lookups.matching(leaf).num_rows
                    kept += rows
            read += rows
    return InputRows(total, read, held_rows, by_lookup, kept)


def _held_rows(view, name: str, version: int) -> int:
    """The rows of map `name` at `version`, held in memory: counted there when it is hot at
    that version, not from its table's statistics (the batches' map writes commit on other
    threads, so this thread's handle of each map would be brought up to date to count
    them: six log reads a batch for TPC-H Q22a's maps)."""
    hot = view.ctx.hot_maps.get(view.map_path(name), version)
    if hot is not None:
        return hot.rows
    return snapshot_rows(view.ctx.store.snapshot(view.map_path(name), version))


def map_versions(plan, record: BatchRecord) -> Dict[str, int]:
    """The maps the plan's phases read (whole or by lookup), at the batch's start versions."""
    return {leaf.name: record.map_versions[leaf.name] for phase in plan.phases
            for leaf in phase.leaves.values() if leaf.kind == "map"}


def local_blocker(view) -> Optional[str]:
    """Why the local target cannot run this view (None when it can): the first construct
    of its plan (every relation changed) or of its result query without an exact local
    equivalent."""
    cache, ansi = view.derived.local_blocker, view.settings.ansi
    if ansi not in cache:
        cache[ansi] = _blocker(view)
    return cache[ansi]


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


# -- the other work of a view ----------------------------------------------------------------
def for_recompute(view) -> Choice:
    """Depth 0: the recompute's rows written by the executors (the engine setting, or a
    result table larger than spark.viewlet.distributed.minChangeRows rows), else by Spark
    through the driver."""
    settings = view.settings
    if settings.engine == DISTRIBUTED:
        return Choice(DISTRIBUTED, "engine = 'distributed'")
    if settings.engine == AUTO:
        rows = snapshot_rows(view.ctx.store.snapshot(view.result_path))
        limit = settings.min_change_rows
        if rows > limit:
            return Choice(DISTRIBUTED, f"its result holds about {rows:,} rows, more than "
                                       f"{MIN_ROWS_CONF} = {limit:,}: the recompute is written "
                                       "by the executors")
    return Choice(SPARK, "the local target cannot run this view: depth 0 recomputes the view "
                         "on Spark")


def for_load(settings: Settings, base_rows: int, base_bytes: Callable[[], int]) -> Choice:
    """Where CREATE computes the maps: on the executors (the engine setting, or under auto
    base tables holding more rows than spark.viewlet.distributed.minChangeRows, from Delta
    statistics, when they also hold more than spark.viewlet.local.maxInputRows or the
    columns the view reads would take more than the hot-map budget in memory:
    `base_bytes()`), on Spark (the engine setting, base tables holding more than
    spark.viewlet.local.maxInputRows rows, no DuckDB), else in the driver (ops/load.py; a
    definition the local target cannot translate loads on Spark: `after_failed_load`).
    In the driver DuckDB computes the maps with no Spark job, and they stay hot for the
    first batches: TPC-H Q5's fifteen maps at SF 1 (7.7 million base rows) load in about a
    quarter of the executors' time. The result of a top-N view is still cut to its first rows
    in the driver."""
    engine = settings.engine
    if engine == DISTRIBUTED:
        return Choice(DISTRIBUTED, "engine = 'distributed'")
    most, limit = settings.min_change_rows, settings.max_input_rows
    if engine == AUTO and base_rows > most:
        if base_rows > limit:
            return Choice(DISTRIBUTED, f"the base tables hold about {base_rows:,} rows, more "
                                       f"than {MIN_ROWS_CONF} = {most:,} and {MAX_ROWS_CONF} "
                                       f"= {limit:,}")
        size, budget = base_bytes(), settings.memory_budget
        if size > budget:
            return Choice(DISTRIBUTED, f"the base tables hold about {base_rows:,} rows, more "
                                       f"than {MIN_ROWS_CONF} = {most:,}, and the columns the "
                                       f"view reads take about {size_text(size)} in memory, "
                                       f"more than the hot maps' budget ({MEMORY_CONF}, "
                                       f"{size_text(budget)})")
    if engine == SPARK:
        return Choice(SPARK, f"engine = '{engine}'")
    if base_rows > limit:
        return Choice(SPARK, f"the base tables hold about {base_rows:,} rows, more than "
                             f"{MAX_ROWS_CONF} = {limit:,}")
    missing = unavailable()
    if missing is not None:
        return Choice(SPARK, missing)
    return Choice(LOCAL, "the maps were computed in the driver")


def after_failed_load(e: BaseException) -> Choice:
    return Choice(SPARK, f"the local target cannot run this view: {failure_text(e)}")


def compacts_on_executors(view, layout: MapLayout) -> bool:
    """Whether a map (its layout: rows at its last compaction plus rows appended since) is
    compacted on the executors rather than read into the driver."""
    settings = view.settings
    return settings.engine == DISTRIBUTED or layout.rows > settings.min_change_rows


# -- EXPLAIN ---------------------------------------------------------------------------------
def explain(view) -> List[str]:
    """EXPLAIN's lines on where the view's batches run."""
    settings = view.settings
    mode = settings.engine
    blocker = local_blocker(view)
    lines = ["Execution (one plan, two targets: local = DuckDB in the driver, spark = Spark):",
             f"  engine: {mode} ({settings.engine_source})",
             "  local target: " + (f"cannot run this view: {blocker}" if blocker else
                                   "can run this view (Spark's types, rounding and NULLs)")]
    if mode == AUTO and not blocker:
        lines.append(f"  rule: a batch runs locally when it reads at most "
                     f"{settings.max_input_rows:,} rows ({MAX_ROWS_CONF}): its changes, the maps "
                     "and base tables it reads whole and the rows its lookups keep; "
                     "otherwise on Spark, where each phase reading at most that many rows "
                     "and the result rows still run locally")
    if blocker is None and mode != SPARK:
        lines.append("  a local batch that fails (an overflow, a division by zero under ANSI "
                     "mode) runs again on Spark")
        lines.append(f"  hot maps: up to {size_text(view.ctx.hot_maps.budget)} of maps kept in "
                     f"memory ({MEMORY_CONF}), checked against their Delta versions")
    return lines
