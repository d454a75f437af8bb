"""The distributed batch: the same plan on Spark, with nothing collected to the driver.

The Spark target (engine/batch.py `_run_spark`) computes a batch's map deltas on Spark but
reads the changes, collects the deltas and writes every table from the driver: fine while a
batch fits the driver, and the fastest way for small ones. A batch larger than that, an
initial load of large tables and the compaction of a large map run here instead:

  * the changes are read by the executors from the files holding them
    (engine/spark/changes.py), netted per row there;
  * each phase of the plan (plan/batch.py) runs as one Spark query whose packed result is
    staged as Parquet in the batch's scratch directory; each map's delta is its rows of the
    staged phases, summed per key by Spark;
  * each map's delta, the result table's new files and a compacted map are written by the
    executors into the table's directory (engine/spark/files.py) and committed by the driver with
    the batch's transaction id (`TableStore.commit_files`): still one exactly-once commit
    per map per batch, reading only the files' footers on the driver;
  * the result table's touched groups are rewritten copy-on-write: the files holding a
    touched group (found by a Spark join, only file names come back) are replaced by their
    other rows plus the touched groups' new rows, in one commit.

Which batches run here: `engine = 'distributed'` (view option or spark.viewlet.engine), or,
under `auto`, a batch whose changes hold more than spark.viewlet.distributed.minChangeRows
rows (the log's row counts of the files holding them, read before any row is).
"""
from __future__ import annotations

import time
from functools import reduce
from typing import Dict, List, Optional

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..plan.batch import TAG
from .spark.changes import change_frame
from .spark.files import timestamps_as_micros, write_into
from .spark.io import snapshot_frame, union_all
from ..plan.lower import q
from . import hot, maps, targets
from .runtime import faults
from .batch import sum_by_keys
from .leaves import FrameLeaves
from .state.manifest import BatchRecord
from .result import multiset_params

DISTRIBUTED = "distributed"
MIN_ROWS_CONF = "spark.viewlet.distributed.minChangeRows"
DEFAULT_MIN_ROWS = 5_000_000


def min_rows(spark) -> int:
    raw = targets.conf(spark, MIN_ROWS_CONF)
    try:
        return int(raw) if raw is not None else DEFAULT_MIN_ROWS
    except ValueError:
        return DEFAULT_MIN_ROWS


def reason_for(view, record: BatchRecord) -> Optional[str]:
    """Why this batch runs distributed, or None: the engine setting, or its changes'
    size (estimated from the Delta log, before anything is read). A top-N view or one with
    window functions keeps its ordered rows or recomputes partitions in the driver: its
    batches run on the Spark target instead (they still read the changes on Spark)."""
    if view.top_n is not None or view.compiled.spec.window is not None:
        return None
    mode = targets.setting(view)
    if mode == DISTRIBUTED:
        return "engine = 'distributed'"
    if mode != targets.AUTO:
        return None
    limit = min_rows(view.ctx.spark)
    rows = change_rows_estimate(view, record)
    if rows > limit:
        return (f"its changes hold about {rows:,} rows, more than {MIN_ROWS_CONF} = "
                f"{limit:,}: nothing is collected to the driver")
    return None


def too_large_to_collect(view, layout: maps.MapLayout) -> bool:
    """Whether a map (its layout: rows at its last compaction plus rows appended since) is
    compacted on the executors rather than read into the driver."""
    if targets.setting(view) == DISTRIBUTED:
        return True
    return (layout.base_rows or 0) + (layout.appended_rows or 0) > min_rows(view.ctx.spark)


def change_rows_estimate(view, record: BatchRecord) -> int:
    store = view.ctx.store
    total = 0
    for rel, (after, to) in record.ranges.items():
        if to > after:
            total += store.change_rows_estimate(view.table_path(rel), after, to)
    return total


# -- a batch ------------------------------------------------------------------------------
def apply_batch(view, record: BatchRecord, progress, previous: Dict, reason: str) -> Dict:
    """Run and commit one batch on the executors; the batch's stats."""
    stats: Dict = {"seconds": {}, "engine": DISTRIBUTED, "engine_reason": reason}
    seconds = stats["seconds"]
    progress.spark()
    spark = targets.batch_session(view, change_rows_estimate(view, record))
    scratch = view.scratch_dir(record.batch)
    persisted: List[DataFrame] = []
    try:
        with timestamps_as_micros(spark):
            t0 = time.perf_counter()
            totals = _map_deltas(view, record, spark, scratch, stats, progress, persisted)
            seconds["compute"] = time.perf_counter() - t0
            faults.point("batch.computed")
            _write_maps(view, record, totals, stats, progress, previous)
            _write_result(view, record, spark, totals, stats, progress)
    finally:
        for df in persisted:
            df.unpersist()
        view.ctx.store.drop(scratch)
    return stats


def _stage(df: DataFrame, location: str) -> DataFrame:
    """`df` computed once, as Parquet files in the batch's scratch directory."""
    df.write.mode("overwrite").parquet(location)
    return df.sparkSession.read.schema(df.schema).parquet(location)


def _map_deltas(view, record, spark, scratch, stats, progress, persisted) -> Dict[str, DataFrame]:
    """Every map's delta as a DataFrame (summed per key, zero rows dropped), computed by the
    plan's phases over the changes read and staged by the executors."""
    program = view.compiled.program
    changed = [r for r in program.relations() if record.ranges[r][1] > record.ranges[r][0]]
    deltas: Dict[str, DataFrame] = {}
    rows_in = {}
    for i, rel in enumerate(changed):
        after, to = record.ranges[rel]
        progress.step(f"reading the changes of {rel} (versions {after + 1}..{to}) on the executors")
        frame, _ = change_frame(spark, view.ctx.store, view.table_path(rel), after, to,
                                view.columns_of(rel),
                                from_files=bool(view.compiled.spec.tables[rel].view))
        staged = _stage(frame, f"{scratch}/changes{i}")
        rows_in[rel] = staged.count()
        if rows_in[rel]:
            deltas[rel] = staged
    stats["delta_rows"] = rows_in
    if not deltas:
        return {}
    plan = view.batch_plan(tuple(changed), tuple(r for r in changed if r in deltas))
    inputs = FrameLeaves(view, record, deltas, spark)
    pieces: Dict[str, List[DataFrame]] = {}
    collected: Dict[tuple, List[DataFrame]] = {}
    progress.step(f"computing the deltas of {len(plan.targets)} map(s) (distributed)")
    for i, phase in enumerate(plan.phases):
        frames = {name: inputs.bind(leaf) for name, leaf in phase.leaves.items()}
        packed = _stage(spark.sql(phase.spark_text, **frames), f"{scratch}/phase{i}")
        phase_pieces = _split(view, phase, packed)
        if len(plan.phases) > 1:        # what later phases read of this trigger
            for target, frames_ in phase_pieces.items():
                key = (target, phase.relations[-1])
                collected.setdefault(key, []).extend(frames_)
                inputs.pending[key] = _summed(view, target, collected[key])
        for target, frames_ in phase_pieces.items():
            pieces.setdefault(target, []).extend(frames_)
    stats["map_reads"] = inputs.reads
    stats["phases"] = len(plan.phases)
    out = {}
    for target, frames_ in pieces.items():
        total = _summed(view, target, frames_).persist(StorageLevel.MEMORY_AND_DISK)
        persisted.append(total)
        out[target] = total
    return out


def _split(view, phase, packed: DataFrame) -> Dict[str, List[DataFrame]]:
    """Per map: every member's rows of the staged phase result, as map rows (not summed);
    engine/batch.split_packed on the executors."""
    pieces: Dict[str, List[DataFrame]] = {}
    for b in phase.blocks:
        rows = packed.where(F.col(TAG) == F.lit(b.tag))
        for m in b.members:
            schema = view.map_schema(m.target)
            items = []
            for block_col, key, key_type in zip(m.keys, schema.keys, schema.key_types):
                slot = b.slots[f"p{b.tag}_g{int(block_col[1:])}"]
                items.append(f"CAST({q(slot)} AS {key_type}) AS {q(key)}")
            for c, t in schema.values.items():
                source = q(b.slots[m.out]) if c == m.column else "NULL"
                items.append(f"CAST({source} AS {t}) AS {q(c)}")
            pieces.setdefault(m.target, []).append(rows.selectExpr(*items))
    return pieces


def _summed(view, target: str, frames: List[DataFrame]) -> DataFrame:
    schema = view.map_schema(target)
    return sum_by_keys(union_all(frames), schema.keys, schema.values)


# -- writing the maps ---------------------------------------------------------------------
def _write_maps(view, record, totals: Dict[str, DataFrame], stats, progress, previous) -> None:
    ctx = view.ctx
    txn = (view.app_id, record.batch)
    meta = {"viewlet.view": view.name, "viewlet.batch": str(record.batch)}
    t0 = time.perf_counter()
    changed_rows: Dict[str, int] = {}
    merging = view.spec.get("map_writes", "append") == "merge"
    for i, (name, total) in enumerate(totals.items(), 1):
        path = view.map_path(name)
        ctx.hot_maps.evict(path)         # its rows change without passing the driver
        if _holds(ctx, path, txn):
            continue
        progress.step(f"writing the delta of map {name} on the executors ({i}/{len(totals)})")
        if merging:
            rows = merge_map(view, name, total, txn, meta, record)
        else:
            files = write_into(ctx.store, total, path, f"b{record.batch}")
            if not files:
                continue
            ctx.store.commit_files(path, files, (), txn, meta)
            rows = sum(f.rows for f in files)
        changed_rows[name] = rows
        faults.point("batch.map_merged")
    stats["map_rows_changed"] = changed_rows
    stats["seconds"]["merge"] = time.perf_counter() - t0
    from .views import timed_compaction
    timed_compaction(view, record, changed_rows, previous, progress, merging, stats)


def _holds(ctx, path, txn) -> bool:
    done = ctx.store.txn_version(path, txn[0])
    return done is not None and done >= txn[1]


def merge_map(view, name: str, delta: DataFrame, txn, meta, record) -> int:
    """`map_writes = 'merge'` on the executors: the files holding a key of the delta are
    rewritten with the delta added (rows whose support sums to 0 dropped), one commit."""
    schema = view.map_schema(name)
    zero = view.compiled.program.maps[name].zero_columns()
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


def compact_map(view, name: str, batch: int) -> Optional[maps.MapLayout]:
    """Rewrite map `name`'s current files as summed rows sorted by its cluster key (rows
    with a zero support dropped), written by the executors in files of a bounded size; None
    when a concurrent compaction won."""
    from ..errors import ConcurrentUpdate
    ctx = view.ctx
    path = view.map_path(name)
    ctx.hot_maps.evict(path)
    schema = view.map_schema(name)
    zero = view.compiled.program.maps[name].zero_columns()
    snap = ctx.store.snapshot(path, ctx.store.version(path))
    spark = targets.batch_session(view, sum(s.rows or 0 for s in snap.stats or ()))
    with timestamps_as_micros(spark):
        rows = snapshot_frame(spark, snap, schema.keys + list(schema.values))
        summed = sum_by_keys(rows, schema.keys, schema.values) \
            .where(" OR ".join(f"{q(c)} <> 0" for c in zero))
        cluster = view.spec["maps"][name].get("cluster") or list(range(len(schema.keys)))
        if schema.keys:
            summed = summed.orderBy(*[F.col(q(schema.keys[j])).asc_nulls_first() for j in cluster])
        total = sum(s.rows or 0 for s in snap.stats or ())
        files = write_into(ctx.store, summed, path, f"c{batch}", maps.rows_per_file(total))
    removed = list(ctx.store.file_paths(path, snap.version).values())
    try:
        ctx.store.commit_files(path, files, removed,
                               metadata={"viewlet.view": view.name, hot.COMPACTION: str(batch)},
                               read_version=snap.version)
    except ConcurrentUpdate:
        return None
    return maps.MapLayout(len(files), sum(f.rows for f in files), 0, 0)


# -- the result table ---------------------------------------------------------------------
def _write_result(view, record, spark, totals: Dict[str, DataFrame], stats, progress) -> None:
    """The touched groups' result rows computed from their new state on the executors, and
    the result table's files holding those groups rewritten in one commit."""
    from .views import result_schema, result_sql
    t0 = time.perf_counter()
    ctx = view.ctx
    state_name = view.spec["view_map"]
    schema = view.map_schema(state_name)
    multisets = multiset_params(view.compiled.spec)
    sources = [m for m in [state_name] + list(multisets) if m in totals]
    stats["result_rows_changed"] = 0
    if not sources:
        return
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
    try:
        frames = {}
        for m, param in multisets.items():
            ms = view.map_schema(m)
            group = ms.keys[:len(schema.keys)]
            old = snapshot_frame(spark, ctx.store.snapshot(view.map_path(m), record.map_versions[m]),
                                 ms.keys + list(ms.values))
            if touched is not None:
                old = _semi(old, touched, group, schema.keys)
            rows = [old]
            if m in totals:
                rows.append(totals[m].select(*old.columns))
            frames[param] = union_all(rows)
        rows_sql, columns = result_sql(view)
        out_schema = result_schema(view, columns)
        ins = spark.sql(rows_sql, s=new_state, **frames)
        ins = ins.selectExpr(*[f"CAST({q(c)} AS {f.dataType.simpleString()}) AS {q(c)}"
                               for c, f in zip(columns, out_schema.fields)])
        key_of = {name: gi for name, gi in view.spec["result"]["keys"]}
        keys = [(c, schema.keys[key_of[c]], out_schema[c].dataType.simpleString())
                for c in columns if c in key_of]
        groups = new_state.selectExpr(*[f"CAST({q(sk)} AS {t}) AS {q(c)}" for c, sk, t in keys]) \
            .distinct() if keys else None
        stats["result_rows_changed"] = new_state.count()
        progress.step("rewriting the result table's files of the touched groups")
        _rewrite_result(view, record, ins, groups, [c for c, _, _ in keys])
    finally:
        new_state.unpersist()
    stats["seconds"]["merge_result"] = time.perf_counter() - t0


def _new_state(view, record, spark, delta: Optional[DataFrame], touched) -> DataFrame:
    """Each touched group's state at batch end: its batch-start row plus its delta (a group
    only a multiset touched has a zero delta), groups no delta touched left out."""
    state_name = view.spec["view_map"]
    schema = view.map_schema(state_name)
    ctx = view.ctx
    cols = schema.keys + list(schema.values)
    old = snapshot_frame(spark, ctx.store.snapshot(view.map_path(state_name),
                                                   record.map_versions[state_name]), cols)
    if touched is not None:             # only the touched groups' rows are shuffled
        old = _semi(old, touched, schema.keys, schema.keys)
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


def _semi(rows: DataFrame, touched: DataFrame, columns, touched_columns) -> DataFrame:
    """`rows` whose `columns` equal (NULL-safe) the `touched_columns` of a touched row."""
    t = touched.toDF(*[f"__t{i}" for i in range(len(touched_columns))])
    cond = reduce(lambda a, b: a & b, [rows[q(c)].eqNullSafe(t[f"__t{i}"])
                                       for i, c in enumerate(columns)])
    return rows.join(t, cond, "left_semi")


def _rewrite_result(view, record, ins: DataFrame, groups: Optional[DataFrame], keys) -> None:
    """Replace the result files holding a touched group by their other rows plus `ins`,
    one commit with the batch's transaction id (a global aggregate: every file)."""
    ctx = view.ctx
    path = view.result_path
    txn = (view.app_id, record.batch)
    if _holds(ctx, path, txn):
        return
    version = record.map_versions["__result"]
    snap = ctx.store.snapshot(path, version)
    spark = ins.sparkSession
    by_name = {f.rsplit("/", 1)[-1]: f for f in snap.files}
    if groups is None:
        hit = set(by_name)
    else:
        rows = snapshot_frame(spark, snap, keys) if snap.files else None
        hit = set() if rows is None else {r[0] for r in _semi(
            rows.select("*", F.col("_metadata.file_name").alias("__viewlet_file")),
            groups, keys, keys).select("__viewlet_file").distinct().collect()}
    parts = [ins]
    if hit:
        from dataclasses import replace
        kept = snapshot_frame(spark, replace(snap, files=tuple(by_name[n] for n in sorted(hit)),
                                             stats=None), ins.columns)
        if groups is not None:
            t = groups.toDF(*[f"__t{i}" for i in range(len(keys))])
            cond = reduce(lambda a, b: a & b, [kept[q(c)].eqNullSafe(t[f"__t{i}"])
                                               for i, c in enumerate(keys)])
            kept = kept.join(t, cond, "left_anti")
            parts.insert(0, kept)
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
    if key_columns:
        rows = snapshot_frame(spark, snap, key_columns) \
            .select("*", F.col("_metadata.file_name").alias("__viewlet_file"))
        hit = sorted({r[0] for r in _semi(rows, keys, key_columns, key_columns)
                      .select("__viewlet_file").distinct().collect()})
    else:
        hit = sorted(by_name)
    if not hit:
        return None, []
    from dataclasses import replace
    old = snapshot_frame(spark, replace(snap, files=tuple(by_name[n] for n in hit), stats=None))
    paths = ctx.store.file_paths(path, version)
    return old, [paths[n] for n in hit]


# -- depth 0 -------------------------------------------------------------------------------
def recompute_reason(view) -> Optional[str]:
    """Why a depth-0 view's recompute is written by the executors, or None: the engine
    setting, or a result table larger than spark.viewlet.distributed.minChangeRows rows."""
    mode = targets.setting(view)
    if mode == DISTRIBUTED:
        return "engine = 'distributed'"
    if mode != targets.AUTO:
        return None
    snap = view.ctx.store.snapshot(view.result_path)
    rows = sum(s.rows or 0 for s in snap.stats or ())
    limit = min_rows(view.ctx.spark)
    if rows > limit:
        return (f"its result holds about {rows:,} rows, more than {MIN_ROWS_CONF} = {limit:,}: "
                "the recompute is written by the executors")
    return None


def recompute(view, record: BatchRecord, txn, stats: Dict, frame: DataFrame) -> None:
    """Depth 0: the result table's files replaced by the recomputed rows, written by the
    executors, in one commit with the batch's transaction id."""
    ctx = view.ctx
    t0 = time.perf_counter()
    path = view.result_path
    if _holds(ctx, path, txn):
        return
    version = ctx.store.version(path)
    with timestamps_as_micros(frame.sparkSession):
        files = write_into(ctx.store, frame, path, f"b{record.batch}")
    ctx.store.commit_files(path, files, list(ctx.store.file_paths(path, version).values()), txn,
                           {"viewlet.view": view.name, "viewlet.batch": str(record.batch)},
                           read_version=version)
    faults.point("batch.result_merged")
    stats["result_rows_changed"] = sum(f.rows for f in files)
    stats["seconds"]["recompute"] = time.perf_counter() - t0


# -- CREATE --------------------------------------------------------------------------------
def load_reason(ctx, options: Optional[Dict], base_rows: int) -> Optional[str]:
    """Why CREATE loads the maps on the executors, or None: the engine (view option or
    session setting) is 'distributed', or, under auto, the base tables hold more rows than
    spark.viewlet.distributed.minChangeRows (Delta statistics). The result of a top-N view
    is still cut to its first rows in the driver (views.create_view)."""
    mode = (options or {}).get("engine") or \
        (targets.conf(ctx.spark, targets.ENGINE_CONF) or targets.AUTO).strip().lower()
    if mode == DISTRIBUTED:
        return "engine = 'distributed'"
    limit = min_rows(ctx.spark)
    if mode == targets.AUTO and base_rows > limit:
        return (f"the base tables hold about {base_rows:,} rows, more than {MIN_ROWS_CONF} = "
                f"{limit:,}")
    return None


def create_map(ctx, path: str, frame: DataFrame, schema_json: Dict, arrow, txn,
               base_rows: int) -> int:
    """A map's table holding `frame` (its keys then values), written by the executors in
    cluster order, in files sized as for a map of `base_rows` rows; its rows."""
    keys, cluster = schema_json["keys"], schema_json["cluster"]
    if keys:
        frame = frame.orderBy(*[F.col(q(keys[j])).asc_nulls_first() for j in cluster])
    with timestamps_as_micros(frame.sparkSession):
        files = write_into(ctx.store, frame, path, "load",
                           maps.rows_per_file(min(base_rows, 1 << 32)))
    ctx.store.create_from_files(path, arrow, files, txn)
    return sum(f.rows for f in files)


def create_result(ctx, path: str, frame: DataFrame, txn, properties: Dict[str, str]) -> int:
    """The view's result table holding `frame`, written by the executors; its rows."""
    from .spark.io import arrow_schema
    with timestamps_as_micros(frame.sparkSession):
        files = write_into(ctx.store, frame, path, "load")
    ctx.store.create_from_files(path, arrow_schema(frame.schema), files, txn,
                                properties=properties)
    return sum(f.rows for f in files)
