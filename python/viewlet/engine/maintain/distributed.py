"""A distributed batch's writes: every map's delta and the result table's new files written
by the executors into the table's directory (spark/files.py) and committed by the driver
with the batch's transaction id (`TableStore.commit_files`): still one exactly-once commit
per map per batch, reading only the files' footers on the driver.

  * maps written by appending get the delta's files; `map_writes = 'merge'` rewrites the
    files holding a key of the delta, with the delta added;
  * the result table's touched groups are rewritten copy-on-write: the files holding a
    touched group (found by a Spark join, only file names come back) are replaced by their
    other rows plus the touched groups' new rows, in one commit;
  * a map too large for the driver is compacted here, and a depth-0 view's recompute is
    written here when its result is large.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from functools import reduce
from typing import Dict, List, Optional

from pyspark import StorageLevel
from pyspark.sql import DataFrame, functions as F

from ...errors import ConcurrentUpdate
from ...plan.lower import q
from ..batch.result_sql import multiset_params, result_schema, result_sql
from ..batch.distributed import stage
from ..batch.spark import batch_session, sum_by_keys
from ..runtime import faults
from ..spark.files import timestamps_as_micros, without_broadcasts, write_into
from ..spark.io import snapshot_frame, union_all
from ..state.manifest import COMPACTION, BatchRecord, RESULT, Txn
from ..state.stats import BatchStats, MapLayout, snapshot_rows
from ..state.view import LoadedView
from .maps import rows_per_file


# -- writing the maps ---------------------------------------------------------------------
def write_maps(view: LoadedView, record: BatchRecord, totals: Dict[str, DataFrame],
               stats: BatchStats, progress) -> Dict[str, int]:
    """Every map's delta written by the executors and committed with the batch's transaction
    id (a map already holding it is skipped); the rows written per map."""
    ctx = view.ctx
    txn = view.txn(record.batch)
    meta = {"viewlet.view": view.name, "viewlet.batch": str(record.batch)}
    t0 = time.perf_counter()
    changed_rows: Dict[str, int] = {}
    for i, (name, total) in enumerate(totals.items(), 1):
        path = view.map_path(name)
        ctx.hot_maps.evict(path)         # its rows change without passing the driver
        if txn.done_in(ctx.store, path):
            continue
        progress.step(f"writing the delta of map {name} on the executors ({i}/{len(totals)})")
        if view.settings.merging:
            rows = merge_map(view, name, total, txn, meta, record)
        else:
            files = write_into(ctx.store, total, path, f"b{record.batch}")
            if not files:
                continue
            ctx.store.commit_files(path, files, (), txn, meta)
            rows = sum(f.rows for f in files)
        changed_rows[name] = rows
        faults.point("batch.map_merged")
    stats.map_rows_changed = changed_rows
    stats.seconds["merge"] = time.perf_counter() - t0
    return changed_rows


def merge_map(view: LoadedView, name: str, delta: DataFrame, txn: Txn, meta,
              record: BatchRecord) -> int:
    """`map_writes = 'merge'` on the executors: the files holding a key of the delta are
    rewritten with the delta added (rows whose support sums to 0 dropped), one commit."""
    schema = view.map_schema(name)
    zero = view.zero_columns(name)
    path = view.map_path(name)
    keys = delta.select(*[F.col(q(k)) for k in schema.keys]).distinct()
    old, removed = _files_holding(view.ctx, path, record.map_versions[name], keys, schema.keys)
    summed = sum_by_keys(union_all([old, delta]) if old is not None else delta, schema.keys,
                         schema.values)
    kept = summed.where(" OR ".join(f"{q(c)} <> 0" for c in zero))
    files = write_into(view.ctx.store, kept, path, f"b{record.batch}")
    if files or removed:
        view.ctx.store.commit_files(path, files, removed, txn, meta,
                                    read_version=record.map_versions[name])
    return sum(f.rows for f in files)


def compact_map(view: LoadedView, name: str, batch: int) -> Optional[MapLayout]:
    """Rewrite map `name`'s current files as summed rows sorted by its cluster key (rows
    with a zero support dropped), written by the executors in files of a bounded size; None
    when a concurrent compaction won."""
    ctx = view.ctx
    path = view.map_path(name)
    ctx.hot_maps.evict(path)
    schema = view.map_schema(name)
    zero = view.zero_columns(name)
    snap = ctx.store.snapshot(path, ctx.store.version(path))
    total = snapshot_rows(snap)
    spark = batch_session(view, total)
    with timestamps_as_micros(spark):
        rows = snapshot_frame(spark, snap, schema.keys + list(schema.values))
        summed = sum_by_keys(rows, schema.keys, schema.values) \
            .where(" OR ".join(f"{q(c)} <> 0" for c in zero))
        cluster = schema.cluster or list(range(len(schema.keys)))
        if schema.keys:
            summed = summed.orderBy(*[F.col(q(schema.keys[j])).asc_nulls_first() for j in cluster])
        files = write_into(ctx.store, summed, path, f"c{batch}", rows_per_file(total))
    removed = list(ctx.store.file_paths(path, snap.version).values())
    try:
        ctx.store.commit_files(path, files, removed,
                               metadata={"viewlet.view": view.name, COMPACTION: str(batch)},
                               read_version=snap.version)
    except ConcurrentUpdate:
        return None
    return MapLayout(len(files), sum(f.rows for f in files), 0, 0)


# -- the result table ---------------------------------------------------------------------
@dataclass
class ResultRows:
    """A batch's new result rows for its touched groups (`rows`, staged), the touched groups
    (`groups`: their result key columns `keys`; None for a global aggregate) and their
    count. Computed before any map is written: an error in the rows (a scalar subquery
    returning several rows) then fails a batch that can still be dropped."""
    rows: DataFrame
    groups: Optional[DataFrame]
    keys: List[str]
    touched: int


def result_rows(view: LoadedView, record: BatchRecord, spark, totals: Dict[str, DataFrame],
                stats: BatchStats, progress, location: str,
                held: List[DataFrame]) -> Optional[ResultRows]:
    """The touched groups' result rows computed from their new state on the executors and
    staged as Parquet at `location` (None when no delta touches the result); the frames it
    persists are appended to `held`, for the caller to release when the batch ends."""
    t0 = time.perf_counter()
    ctx = view.ctx
    state_name = view.definition.view_map
    schema = view.map_schema(state_name)
    multisets = multiset_params(view.compiled.spec)
    sources = [m for m in [state_name] + list(multisets) if m in totals]
    stats.result_rows_changed = 0
    if not sources:
        return None
    progress.step("computing the result rows of the touched groups on the executors")
    # the touched groups: the state delta's keys and the groups of the multisets' deltas
    group_cols = [q(k) for k in schema.keys]
    touched_parts = []
    for m in sources:
        m_keys = view.map_schema(m).keys[:len(schema.keys)]
        touched_parts.append(totals[m].selectExpr(*[
            f"CAST({q(mk)} AS {t}) AS {q(k)}"
            for mk, k, t in zip(m_keys, schema.keys, schema.key_types)]))
    touched = union_all(touched_parts).distinct() if group_cols else None
    new_state = _new_state(view, record, spark, totals.get(state_name), touched)
    new_state = new_state.persist(StorageLevel.MEMORY_AND_DISK)
    held.append(new_state)
    frames = {}
    for m, param in multisets.items():
        ms = view.map_schema(m)
        group = ms.keys[:len(schema.keys)]
        old = snapshot_frame(spark, ctx.store.snapshot(view.map_path(m), record.map_versions[m]),
                             ms.keys + list(ms.values))
        if touched is not None:
            old = _join(old, touched, group, schema.keys, "left_semi")
        rows = [old]
        if m in totals:
            rows.append(totals[m].select(*old.columns))
        frames[param] = union_all(rows)
    rows_sql, columns = result_sql(view)
    out_schema = result_schema(view, columns)
    ins = spark.sql(rows_sql, s=new_state, **frames)
    ins = ins.selectExpr(*[f"CAST({q(c)} AS {f.dataType.simpleString()}) AS {q(c)}"
                           for c, f in zip(columns, out_schema.fields)])
    key_of = view.definition.result.key_of()
    keys = [(c, schema.keys[key_of[c]], out_schema[c].dataType.simpleString())
            for c in columns if c in key_of]
    groups = new_state.selectExpr(*[f"CAST({q(sk)} AS {t}) AS {q(c)}" for c, sk, t in keys]) \
        .distinct() if keys else None
    # the deltas are not yet cached, so their size is estimated from their staged files
    with without_broadcasts(spark):
        staged = stage(ins, location)
    stats.result_rows_changed = new_state.count()
    stats.seconds["result"] = time.perf_counter() - t0
    return ResultRows(staged, groups, [c for c, _, _ in keys], stats.result_rows_changed)


def write_result(view: LoadedView, record: BatchRecord, result: Optional[ResultRows],
                 stats: BatchStats, progress) -> None:
    """The result table's files holding a touched group rewritten with the groups' new rows
    (`result_rows`), in one commit."""
    if result is None:
        return
    t0 = time.perf_counter()
    progress.step("rewriting the result table's files of the touched groups")
    _rewrite_result(view, record, result.rows, result.groups, result.keys, result.touched)
    stats.seconds["merge_result"] = time.perf_counter() - t0


def _new_state(view: LoadedView, record: BatchRecord, spark, delta: Optional[DataFrame],
               touched) -> DataFrame:
    """Each touched group's state at batch end: its batch-start row plus its delta (a group
    only a multiset touched has a zero delta), groups no delta touched left out."""
    state_name = view.definition.view_map
    schema = view.map_schema(state_name)
    ctx = view.ctx
    cols = schema.keys + list(schema.values)
    old = snapshot_frame(spark, ctx.store.snapshot(view.map_path(state_name),
                                                   record.map_versions[state_name]), cols)
    if touched is not None:             # only the touched groups' rows are shuffled
        old = _join(old, touched, schema.keys, schema.keys, "left_semi")
    zeros = [f"CAST(0 AS {t}) AS {q(c)}" for c, t in schema.values.items()]
    parts = [old.selectExpr(*[q(c) for c in cols], "0 AS __viewlet_touched")]
    if delta is not None:
        parts.append(delta.selectExpr(*[q(c) for c in cols], "1 AS __viewlet_touched"))
    if touched is not None:
        parts.append(touched.selectExpr(*[q(k) for k in schema.keys], *zeros,
                                        "1 AS __viewlet_touched"))
    else:                               # a global aggregate: its one group is touched
        parts.append(spark.sql(f"SELECT {', '.join(zeros)}, 1 AS __viewlet_touched"))
    sums = [f"CAST(COALESCE(SUM({q(c)}), 0) AS {t}) AS {q(c)}" for c, t in schema.values.items()]
    keys = ", ".join(q(k) for k in schema.keys)
    sql = (f"SELECT {keys + ', ' if keys else ''}{', '.join(sums)} FROM {{d}}"
           + (f" GROUP BY {keys}" if keys else "") + " HAVING MAX(__viewlet_touched) = 1")
    return spark.sql(sql, d=union_all(parts))


def _join(rows: DataFrame, touched: DataFrame, columns, touched_columns, how: str) -> DataFrame:
    """`rows` whose `columns` equal (NULL-safe) the `touched_columns` of a touched row
    (`how`: left_semi), or those whose do not (left_anti)."""
    t = touched.toDF(*[f"__t{i}" for i in range(len(touched_columns))])
    cond = reduce(lambda a, b: a & b, [rows[q(c)].eqNullSafe(t[f"__t{i}"])
                                       for i, c in enumerate(columns)])
    return rows.join(t, cond, how)


def _files_with(snap, keys: DataFrame, key_columns) -> List[str]:
    """The names of the snapshot's files holding a row whose `key_columns` are one of the
    rows of `keys` (found by a Spark join: only file names reach the driver)."""
    rows = snapshot_frame(keys.sparkSession, snap, key_columns) \
        .select("*", F.col("_metadata.file_name").alias("__viewlet_file"))
    return sorted({r[0] for r in _join(rows, keys, key_columns, key_columns, "left_semi")
                   .select("__viewlet_file").distinct().collect()})


def _rewrite_result(view: LoadedView, record: BatchRecord, ins: DataFrame,
                    groups: Optional[DataFrame], keys, touched: int) -> None:
    """Replace the result files holding a touched group by their other rows plus `ins`,
    one commit with the batch's transaction id (a global aggregate, or `touched` groups
    that are most of the result's rows: every file, without a job to find them)."""
    ctx = view.ctx
    path = view.result_path
    txn = view.txn(record.batch)
    if txn.done_in(ctx.store, path):
        return
    version = record.map_versions[RESULT]
    snap = ctx.store.snapshot(path, version)
    spark = ins.sparkSession
    by_name = {f.rsplit("/", 1)[-1]: f for f in snap.files}
    rows = snapshot_rows(snap)              # 0: no statistics, files found by the join
    if groups is None or (rows and touched * 2 >= rows):
        hit = set(by_name)
    else:
        hit = set(_files_with(snap, groups, keys)) if snap.files else set()
    parts = [ins]
    if hit:
        kept = snapshot_frame(spark, replace(snap, files=tuple(by_name[n] for n in sorted(hit)),
                                             stats=None), ins.columns)
        if groups is not None:
            parts.insert(0, _join(kept, groups, keys, keys, "left_anti"))
    files = write_into(ctx.store, union_all(parts), path, f"b{record.batch}")
    if not files and not hit:
        return
    paths = ctx.store.file_paths(path, version)
    ctx.store.commit_files(path, files, [paths[n] for n in sorted(hit)], txn,
                           {"viewlet.view": view.name, "viewlet.batch": str(record.batch)},
                           read_version=version)
    faults.point("batch.result_merged")


def _files_holding(ctx, path: str, version: int, keys: DataFrame, key_columns):
    """(the rows of the map's files that hold one of `keys`, those files' paths as their add
    actions name them); (None, []) when no file does."""
    snap = ctx.store.snapshot(path, version)
    if not snap.files:
        return None, []
    spark = keys.sparkSession
    by_name = {f.rsplit("/", 1)[-1]: f for f in snap.files}
    hit = _files_with(snap, keys, key_columns) if key_columns else sorted(by_name)
    if not hit:
        return None, []
    old = snapshot_frame(spark, replace(snap, files=tuple(by_name[n] for n in hit), stats=None))
    paths = ctx.store.file_paths(path, version)
    return old, [paths[n] for n in hit]


def recompute(view: LoadedView, record: BatchRecord, txn: Txn, stats: BatchStats,
              frame: DataFrame) -> None:
    """Depth 0: the result table's files replaced by the recomputed rows, written by the
    executors, in one commit with the batch's transaction id."""
    ctx = view.ctx
    t0 = time.perf_counter()
    path = view.result_path
    if txn.done_in(ctx.store, path):
        return
    version = ctx.store.version(path)
    with timestamps_as_micros(frame.sparkSession):
        files = write_into(ctx.store, frame, path, f"b{record.batch}")
    ctx.store.commit_files(path, files, list(ctx.store.file_paths(path, version).values()), txn,
                           {"viewlet.view": view.name, "viewlet.batch": str(record.batch)},
                           read_version=version)
    faults.point("batch.result_merged")
    stats.result_rows_changed = sum(f.rows for f in files)
    stats.seconds["recompute"] = time.perf_counter() - t0
