"""CREATE INCREMENTAL VIEW, in stages (as Materialize's create_materialized_view.rs is):

  validate  the name is free; the query compiles (every SQL error is raised here) and its
            stored program reads back as the compiled one
  plan      the base tables' versions (their change feeds on, upstream views brought to the
            same versions), Spark's types of the outputs and aggregates, the result's layout,
            each map's physical columns (or the replaced view's map it keeps), where the maps
            load (batch/policy.py): the view's definition, before anything is written
  execute   the maps loaded (ops/load.py), the first result written (computed in the driver
            from maps computed there, else by Spark)
  commit    the manifest's first row, the catalog entry (added, or swapped for the one it
            rebuilds), the view in Spark's catalog, the maps just loaded kept hot

A failure before the catalog entry is written drops the view's directory: nothing is left
half-built. REFRESH ... FULL (ops/rebuild.py) and a new query (ops/replace.py) run the same
stages, `replacing` the view's entry.
"""
from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Tuple

import pyarrow as pa
from pyspark.sql import DataFrame

from ...errors import ViewAlreadyExists
from ...frontend.lexical import quote_identifier
from ...plan.local.types import NotLocal
from ..batch import policy
from ..batch.drift import table_ids
from ..batch.local import LOCAL_FAILURES, failure_text, local_result_rows
from ..batch.result_sql import multiset_params
from ..batch.spark import sum_by_keys
from ..batch.window_sql import window_sql
from ..local.executor import available_engine
from ..maintain.maps import cluster_order, write_initial
from ..maintain.topn import first_rows, prefilter_sql, result_types, sort_keys, visible
from ..maintain.writes import SideBySide
from ..runtime.progress import Progress
from ..spark.catalog_views import result_properties
from ..maintain.grouped import result_arrow_schema
from ..spark.io import arrow_schema, frame_arrow, read_table, spark_schema
from ..state import published
from ..state.catalog import Entry, validate_name
from ..state.definition import MapSchema, ViewDefinition
from ..state.kept import Kept
from ..state.layout import ResultLayout, plain_layout, result_layout, window_layout
from ..state.manifest import Manifest
from ..state.maps import new_hot_map
from ..state.program import (CompiledView, RecordingResolver, compile_definition, parts_key,
                             stored_form)
from ..state.retention import INTERNAL_TABLE_PROPERTIES
from ..state.settings import DISTRIBUTED, LOCAL, Settings, ViewOptions, policy_depth
from ..state.stats import BatchStats, OrderedStats
from ..state.tables import relation_frame
from ..state.view import LoadedView, Resident
from . import probe
from .bases import UNKNOWN_ROWS, load_versions, relation_bytes, relation_rows, total_rows
from .load import (SnapshotSource, collect, create_map, create_result, executor_maps,
                   initial_map, initial_result, load_compiled, local_maps, relation_types,
                   side_by_side, staged, typed_map)
from .results import Created

log = logging.getLogger("viewlet")


@dataclass
class _Creation:
    """A CREATE under way, as validated: what every later stage reads."""
    ctx: object
    name: str
    sql: str
    compiled: CompiledView
    recorder: RecordingResolver       # the tables the query resolved to
    caches: bool
    catalog_name: Optional[List[str]]
    settings: Settings
    view_id: str
    view_dir: str
    progress: Progress
    replacing: Optional[Entry]        # the entry a rebuild or a new query swaps out
    keep: Optional[Kept]              # the maps a new query may keep
    rebuild_reason: Optional[str]


@dataclass
class _Plan:
    """What the plan stage decided, for the execute and commit stages."""
    view: LoadedView                  # the view as it will be: its entry not yet in the catalog
    versions: Dict[str, int]          # relation -> the version its maps are loaded at
    frames: Dict[str, DataFrame]      # table location -> the table at that version
    location_of: Callable
    # the maps to load (not kept): their rows as Spark queries, not yet run (None: typed
    # without Spark, computed in the driver)
    parts: Dict[str, Optional[DataFrame]]
    source: SnapshotSource
    first_batch: int                  # the load's number in the view's history
    carried: Optional[pa.Table]       # the history of the view it rebuilds
    relation_rows: Dict[str, int]     # relation -> its rows at its version (load choices)
    choice: policy.Choice             # where the maps load
    in_driver: Optional[Dict[str, pa.Table]] = None   # the maps computed by the local target
    warm: Dict[str, pa.Table] = field(default_factory=dict)   # maps to keep hot

    @property
    def base_rows(self) -> int:
        return total_rows(self.relation_rows)

    @property
    def txn(self):
        return self.view.txn(self.first_batch)


def create_view(ctx, name: str, sql: str, depth: Optional[int] = None,
                if_not_exists: bool = False, replacing: Optional[Entry] = None,
                options: Optional[ViewOptions] = None, caches: bool = False,
                rebuild_reason: Optional[str] = None, keep: Optional[Kept] = None) -> Created:
    """`replacing`: REFRESH ... FULL builds a new view directory and swaps the entry; the new
    manifest carries the old one's rows and records the load as a batch `rebuilt` for
    `rebuild_reason`. `keep`: the replaced view's maps (a new query: ops/replace.py); a map
    of the new program with the same content is read where it is, the others are loaded at
    the base-table versions those hold."""
    t_start = time.perf_counter()
    c = _validate(ctx, name, sql, depth, if_not_exists, replacing, options, caches,
                  rebuild_reason, keep)
    if isinstance(c, Created):          # IF NOT EXISTS of a view that exists
        return c
    plan = None
    try:
        c.progress.__enter__()
        plan = _plan(c)
        result_rows, ordered = _execute(c, plan)
        entry = _commit(c, plan, result_rows, ordered, t_start)
    except BaseException:
        ctx.store.drop(c.view_dir)
        raise
    finally:
        if plan is not None:
            plan.source.release()
        c.progress.__exit__()
    ctx.remember(entry, c.compiled)
    published.publish(ctx, entry, ctx.layout.result_table(c.view_id))
    _keep_hot(ctx, name, plan.warm)
    return Created(name, "created", len(c.compiled.program.maps), result_rows,
                   round(time.perf_counter() - t_start, 3), plan.first_batch,
                   len(keep.used) if keep else 0, len(plan.parts))


# -- validate ---------------------------------------------------------------------------------
def _validate(ctx, name, sql, depth, if_not_exists, replacing, options, caches,
              rebuild_reason, keep):
    """The name is free and the query compiles (all SQL errors are raised here): the
    creation's inputs, or the result of IF NOT EXISTS for a view that exists."""
    validate_name(name)
    depth = policy_depth(options.refresh_policy if options else None, depth)
    if replacing is None:
        exists = _refuse_taken_name(ctx, name, if_not_exists)
        if exists is not None:
            return exists
    catalog_name = published.reserve(ctx, name) if replacing is None else \
        replacing.definition.catalog_name
    recorder = RecordingResolver(ctx.resolver())
    compiled = compile_definition(sql, recorder, depth, caches)   # all SQL errors happen here
    stored_form(compiled)                     # the program kept with the view, checked first
    settings = Settings(ctx.spark, options)
    view_id = uuid.uuid4().hex
    progress = Progress(ctx.spark, f"{'rebuild' if replacing else 'create'} {name}",
                        settings.progress_after)
    return _Creation(ctx, name, sql, compiled, recorder, caches, catalog_name, settings,
                     view_id, ctx.layout.view_dir(view_id), progress, replacing, keep,
                     rebuild_reason)


def _refuse_taken_name(ctx, name: str, if_not_exists: bool) -> Optional[Created]:
    """CREATE's name must be free: not a view (IF NOT EXISTS: nothing to do), not a table
    registered with register_table, not a table or view of Spark's catalog (a query naming
    it would read that one, not the incremental view)."""
    taken = ctx.catalog.find(name)
    if taken is not None and taken.kind == "view":
        if if_not_exists:
            return Created(name, "exists", 0, 0, 0.0)
        raise ViewAlreadyExists(f"Incremental view '{taken.name}' already exists. Drop it first, "
                                "or use CREATE INCREMENTAL VIEW IF NOT EXISTS.")
    if taken is not None:
        raise ViewAlreadyExists(
            f"'{taken.name}' is a base table (registered for {taken.location}), not an "
            "incremental view: give the view another name.")
    if _in_spark_catalog(ctx, quote_identifier(name)):
        raise ViewAlreadyExists(
            f"'{name}' is a table or view in Spark's catalog, so a query naming it would read "
            "that one, not the incremental view: give the view another name.")
    return None


def _in_spark_catalog(ctx, quoted: str) -> bool:
    try:
        return bool(ctx.spark.catalog.tableExists(quoted))
    except Exception:  # noqa: BLE001 - a catalog that cannot answer has no such table for us
        return False


# -- plan -------------------------------------------------------------------------------------
def _plan(c: _Creation) -> _Plan:
    """The versions the maps load at, Spark's types of the query's outputs and aggregates,
    the result's layout; then the maps (`_plan_maps`)."""
    ctx, compiled = c.ctx, c.compiled
    spec, depth = compiled.spec, compiled.depth
    c.progress.step("checking the base tables' change data feed")
    versions = load_versions(ctx, c.name, compiled, c.settings.options.enable_change_data_feed)
    if c.keep is not None:        # every map at the versions the kept ones hold
        versions = {rel: c.keep.versions.get(spec.tables[rel].id, v)
                    for rel, v in versions.items()}
    frames = {spec.tables[r].id: relation_frame(ctx, spec.tables[r], v)
              for r, v in versions.items()}
    location_of = lambda parts: c.recorder.refs[parts_key(parts)].id  # noqa: E731
    c.progress.step("resolving column types")
    output_types = probe.output_types(ctx, c.sql, frames, location_of)
    agg_types = probe.aggregate_types(ctx, compiled, frames, location_of)
    agg_types.update(probe.subquery_types(ctx, compiled, frames, location_of))
    if spec.window is not None and depth == 0:     # Spark recomputes the query
        layout = plain_layout(output_types)
    elif spec.window is not None:   # the state's rows are the inner query's (maintain/window.py)
        inner_output_types = probe.output_types(ctx, spec.window.inner_sql, frames,
                                                location_of)
        layout = result_layout(spec, inner_output_types)
    else:
        layout = result_layout(spec, output_types) if depth != 0 else \
            result_layout(spec, output_types).without_keys()
    source = SnapshotSource(ctx, compiled, versions)
    try:
        return _plan_maps(c, source, frames, location_of, output_types, agg_types, layout)
    except BaseException:
        source.release()
        raise


def _plan_maps(c: _Creation, source: SnapshotSource, frames: Dict[str, DataFrame],
               location_of: Callable, output_types, agg_types, layout: ResultLayout) -> _Plan:
    """Where the maps load (batch/policy.py for_load), then each map's physical columns and
    the view's definition: typed without Spark and computed in the driver when the local
    target can (a wide join's dozens of maps cost a Spark analysis each otherwise), else
    typed by Spark's analyzer and loaded by Spark."""
    each = relation_rows(c.ctx, c.compiled, source.versions)
    rows = total_rows(each)
    c.progress.base_rows = rows if rows < UNKNOWN_ROWS else None
    choice = policy.for_load(c.settings, rows,
                             lambda: relation_bytes(c.ctx, c.compiled, source.versions, each))
    args = (c, source, frames, location_of, output_types, agg_types, layout, each)
    if choice.target == DISTRIBUTED:
        try:        # the maps typed here load in one plan (ops/load.py executor_maps)
            return _planned(*args, choice, typed=True)
        except NotLocal as e:
            log.info("View %s: each map loads by its own queries (%s)", c.name, e)
    if choice.target == LOCAL:
        try:
            plan = _planned(*args, choice, typed=True)
        except NotLocal as e:
            choice = policy.after_failed_load(e)
        else:
            plan.in_driver = _local_load(c, plan)
            if plan.in_driver is not None:
                return plan
            choice = plan.choice
    return _planned(*args, choice, typed=False)


def _planned(c: _Creation, source: SnapshotSource, frames: Dict[str, DataFrame],
             location_of: Callable, output_types, agg_types, layout: ResultLayout,
             each: Dict[str, int], choice: policy.Choice, typed: bool) -> _Plan:
    """Each map's physical columns (`typed`: by the local typer, else decided by Spark from
    the maps' queries, not yet run) or the replaced view's map it keeps; the definition."""
    ctx, compiled = c.ctx, c.compiled
    spec, depth = compiled.spec, compiled.depth
    maps: Dict[str, MapSchema] = {}
    parts: Dict[str, Optional[DataFrame]] = {}
    if depth != 0:
        fingerprints = compiled.stored.map_fingerprints
        relations = relation_types(compiled) if typed else {}
        for m in compiled.program.maps.values():
            if typed:
                schema, frame = typed_map(m, relations, c.settings.ansi), None
            else:
                schema, frame = initial_map(ctx, m, source)
            maps[m.name] = replace(schema, cluster=cluster_order(compiled.program, m.name))
            old = c.keep.take(m.name, fingerprints[m.name], maps[m.name]) if c.keep else None
            if old is not None:
                maps[m.name] = replace(old.schema, location=old.location)
            else:
                parts[m.name] = frame
    inner = None
    if spec.window is not None and depth != 0:     # the result holds the window layer's rows
        inner = layout
        layout = window_layout(spec, output_types, maps[compiled.program.view_map].key_types)
    options = c.settings.options
    definition = ViewDefinition(
        c.sql, depth, dict(c.recorder.refs), maps, layout, agg_types, compiled.program.view_map,
        inner=inner, caches=c.caches, fused=compiled.fused, in_filters=compiled.in_filters,
        program=compiled.stored, catalog_name=c.catalog_name, map_writes=options.map_writes,
        engine=options.engine, enable_change_data_feed=options.enable_change_data_feed,
        refresh_policy=options.refresh_policy, **_carried_refresh(c.replacing))
    view = LoadedView(ctx, Entry.of_view(c.view_id, c.name, c.view_dir, definition),
                      Resident(compiled), c.settings)
    carried, first_batch = None, 0
    if c.replacing is not None:     # the history goes on: batch numbers keep counting
        old_manifest = Manifest(ctx.store, ctx.layout.manifest_table(c.replacing.id))
        carried, first_batch = old_manifest.rows(), old_manifest.next_batch()
    return _Plan(view, source.versions, frames, location_of, parts, source, first_batch, carried,
                 each, choice)


def _carried_refresh(replacing: Optional[Entry]) -> Dict:
    """A rebuilt view keeps its refresh interval (recorded as manual, when it was)."""
    if replacing is None or "refresh" not in replacing.spec:
        return {}
    every = replacing.definition.refresh
    return {"refresh": every, "raw": {"refresh": every}}


def _local_load(c: _Creation, plan: _Plan) -> Optional[Dict[str, pa.Table]]:
    """The rows of the maps to load computed in the driver by the local target, or None when
    a definition has no exact local translation (they load on Spark: `plan.choice` says so)."""
    if not plan.parts:
        return {}
    draft = LoadedView(c.ctx, plan.view.entry,
                       Resident(load_compiled(plan.view.compiled, list(plan.parts),
                                              plan.relation_rows)),
                       c.settings)
    n = len(plan.parts)
    c.progress.step(f"loading the {n} map(s) in the driver (1-{n}/{n + 1})")
    try:
        return local_maps(draft, plan.versions)
    except LOCAL_FAILURES as e:
        log.info("View %s: maps loaded on Spark (the local target cannot: %s)", c.name,
                 failure_text(e))
        plan.choice = policy.after_failed_load(e)
        return None


# -- execute ----------------------------------------------------------------------------------
def _written_maps(c: _Creation, plan: _Plan, loaded: Iterable[Tuple[str, pa.Table]]
                  ) -> Iterator[Tuple[str, pa.Table, pa.Table]]:
    """Each loaded map's table created: (map, its rows, the rows as written). Maps already in
    the driver are written side by side (maintain/writes.py); maps collected one at a time
    are written as they come, so the driver holds one at a time."""
    definition, txn = plan.view.definition, plan.txn

    def write(part: str, data: pa.Table) -> Callable[[], pa.Table]:
        return lambda: write_initial(c.ctx.store, c.ctx.layout.map_table(plan.view.id, part),
                                     data, definition.maps[part].keys,
                                     definition.maps[part].cluster, txn,
                                     available_engine(c.ctx))

    if plan.in_driver is None:
        for part, data in loaded:
            yield part, data, write(part, data)()
        return
    items = list(loaded)
    with SideBySide([write(part, data) for part, data in items],
                    [c.ctx.layout.map_table(plan.view.id, part) for part, _ in items]) as results:
        for (part, data), written in zip(items, results):
            yield part, data, written


def _load_on_executors(c: _Creation, plan: _Plan, sources) -> Dict[str, DataFrame]:
    """Every map to load written by the executors; the `sources` among them (what the
    first result is derived from), read back. Maps typed without Spark load from one plan
    (ops/load.py executor_maps: every phase one query); others by their own queries."""
    ctx, parts, definition = c.ctx, plan.parts, plan.view.definition
    arrow = {part: arrow_schema(definition.maps[part].struct()) for part in parts}
    read = {}

    def write(frames: Dict[str, DataFrame], verb: str):
        for i, part in enumerate(parts, 1):
            c.progress.step(f"{verb} map {part} on the executors ({i}/{len(parts) + 1})")
            path = ctx.layout.map_table(plan.view.id, part)
            create_map(ctx, path, frames[part], definition.maps[part], arrow[part], plan.txn,
                       plan.base_rows)
            if part in sources:
                read[part] = read_table(ctx.spark, ctx.store, path, 0)

    if parts and all(frame is None for frame in parts.values()):
        draft = LoadedView(ctx, plan.view.entry,
                           Resident(load_compiled(plan.view.compiled, list(parts),
                                                  plan.relation_rows)),
                           c.settings)
        c.progress.step(f"computing the {len(parts)} map(s) on the executors "
                        f"(1-{len(parts)}/{len(parts) + 1})")
        with executor_maps(draft, plan.versions, plan.base_rows) as frames:
            c.progress.step(f"writing the {len(parts)} map(s) on the executors "
                            f"(1-{len(parts)}/{len(parts) + 1})")
            side_by_side(ctx.spark, lambda part: create_map(
                ctx, ctx.layout.map_table(plan.view.id, part), frames[part].rows,
                definition.maps[part], arrow[part], plan.txn, plan.base_rows,
                frames[part].at_most), list(parts))
        for part in parts:
            if part in sources:
                read[part] = read_table(ctx.spark, ctx.store,
                                        ctx.layout.map_table(plan.view.id, part), 0)
    else:
        write(parts, "loading")
    return read


def _execute(c: _Creation, plan: _Plan):
    """Load the maps and write the first result; (its rows, a top-N view's ordered rows)."""
    ctx, compiled, progress, keep = c.ctx, c.compiled, c.progress, c.keep
    view, definition, parts = plan.view, plan.view.definition, plan.parts
    spec, txn, base_rows = compiled.spec, plan.txn, plan.base_rows
    sources = set(multiset_params(spec)) | {compiled.program.view_map}
    source_rows: Dict[str, pa.Table] = {}  # what the result rows are derived from
    arrow = {part: arrow_schema(definition.maps[part].struct()) for part in parts}
    scratch = ctx.layout.scratch_dir(view.id, "create")
    top = spec.top_n if compiled.depth != 0 else None
    scale_out = plan.choice.target == DISTRIBUTED
    ordered = None
    try:
        if scale_out:
            log.info("View %s: loading on the executors: %s", c.name, plan.choice.reason)
            read = _load_on_executors(c, plan, sources)
        else:
            # Small bases: every map in one Spark job; else one job per map, so that the
            # driver holds one map at a time (ops/load.py).
            loaded = plan.in_driver.items() if plan.in_driver is not None else \
                collect(parts, arrow, base_rows, progress.step)
            for part, data, written in _written_maps(c, plan, loaded):
                if part in sources:
                    source_rows[part] = data
                if ctx.hot_maps.fits(sum(t.nbytes for t in plan.warm.values()) + written.nbytes):
                    plan.warm[part] = written
                del data, written
        properties = result_properties(c.name, ctx.layout.catalog)
        if plan.in_driver is not None and sources <= set(source_rows) and top is None \
                and definition.inner is None:
            progress.step(f"loading the result table ({len(parts) + 1}/{len(parts) + 1})")
            result = _first_result_in_driver(c, view, source_rows)
            if result is not None:
                plan.source.release()
                ctx.store.create(view.result_path, result, txn=txn, properties=properties)
                return result.num_rows, None
        if not scale_out:
            read = staged(ctx, source_rows, scratch)
        for part in (sources - set(parts)) if keep is not None else ():
            # kept from the replaced view: read where they are, one row per key (a map
            # table holds the deltas appended since its last compaction)
            kept = definition.maps[part]
            read[part] = sum_by_keys(
                read_table(ctx.spark, ctx.store, kept.location, keep.used[part].version),
                kept.keys, kept.values)
        plan.source.release()
        progress.step(f"loading the result table ({len(parts) + 1}/{len(parts) + 1})")
        rows = initial_result(ctx, compiled, definition, read, plan.frames, plan.location_of)
        if definition.inner is not None:        # the window layer over the inner rows
            state_types = definition.maps[compiled.program.view_map].key_types
            rows = rows.sparkSession.sql(window_sql(
                spec, definition.inner, definition.result,
                definition.inner.column_types(state_types)), d=rows)
        if top is not None:        # the first rows in the view's order (maintain/topn.py)
            keys = sort_keys(top, definition.result)
            rows = rows.sparkSession.sql(prefilter_sql(
                "SELECT * FROM {d}", top, keys, result_types(view)), d=rows)
        if scale_out and top is None:
            result_rows = create_result(ctx, view.result_path, rows, txn, properties)
        else:
            result = frame_arrow(rows)
            if top is not None:
                first, complete = first_rows(result, top, keys)
                ctx.store.create(view.ordered_path, first, txn=txn,
                                 properties=INTERNAL_TABLE_PROPERTIES)
                result = visible(first, top)
                ordered = OrderedStats(complete, first.num_rows)
            ctx.store.create(view.result_path, result, txn=txn, properties=properties)
            result_rows = result.num_rows
            del result
    finally:
        ctx.store.drop(scratch)
    del source_rows
    return result_rows, ordered


def _first_result_in_driver(c: _Creation, view: LoadedView,
                            maps: Dict[str, pa.Table]) -> Optional[pa.Table]:
    """The first result computed in the driver from the view state and multisets just
    computed there, by the result SQL a batch runs for the groups it touches (here every
    group), in the schema Spark gives that SQL (an analysis, no job); None when the local
    target cannot run it: Spark computes it then."""
    compiled, definition = c.compiled, view.definition
    state_name = compiled.program.view_map
    state_schema = view.map_arrow_schema(state_name)
    state = maps[state_name].select(state_schema.names).cast(state_schema)
    if definition.state_layout.is_global and state.num_rows == 0:
        # a global aggregate has one result row even over no input
        state = pa.table({f.name: pa.array([0], f.type) for f in state_schema}, schema=state_schema)
    multisets = {}
    for m, param in multiset_params(compiled.spec).items():
        schema = view.map_arrow_schema(m)
        multisets[param] = maps[m].select(schema.names).cast(schema)
    try:
        rows = local_result_rows(view, state, multisets, result_arrow_schema(view))
    except LOCAL_FAILURES as e:
        log.info("View %s: first result on Spark (the local target cannot: %s)", c.name,
                 failure_text(e))
        return None
    # the result SQL reads the view state and the multisets only: a wide join has dozens of
    # other maps, and each empty frame is a round trip to the JVM
    read = [state_name, *multiset_params(compiled.spec)]
    empty = {name: c.ctx.spark.createDataFrame([], spark_schema(maps[name].schema))
             for name in read}
    spark_rows = initial_result(c.ctx, compiled, definition, empty, None, None)
    if sorted(spark_rows.columns) != sorted(rows.column_names):  # pragma: no cover - a bug
        raise AssertionError(f"result columns {rows.column_names} are not Spark's "
                             f"{spark_rows.columns}")
    return rows.select(spark_rows.columns).cast(arrow_schema(spark_rows.schema))


# -- commit -----------------------------------------------------------------------------------
def _commit(c: _Creation, plan: _Plan, result_rows: int, ordered: Optional[OrderedStats],
            t_start: float) -> Entry:
    """The manifest's first row, then the catalog entry (added, or swapped for the replaced
    one): the view exists from here."""
    ctx, view = c.ctx, plan.view
    stats = BatchStats(seconds={"create": time.perf_counter() - t_start},
                       engine=plan.choice.target, engine_reason=plan.choice.reason,
                       result_version=ctx.store.version(view.result_path),
                       spark_jobs=c.progress.spark_jobs(), result_rows_changed=result_rows,
                       map_rows_changed={}, ordered=ordered)
    if c.replacing is not None:
        stats.rebuilt = c.rebuild_reason or "REFRESH ... FULL"
    if c.keep is not None:
        stats.maps_kept = {new: old.name for new, old in c.keep.used.items()}
        stats.maps_loaded = sorted(plan.parts)
    view.manifest.start(plan.versions, stats.to_json(), plan.first_batch, plan.carried)
    definition = replace(view.definition, table_ids=table_ids(ctx, c.compiled.spec))
    entry = Entry.of_view(view.id, view.name, view.entry.location, definition)
    if c.keep is not None:
        c.keep.check_unchanged(ctx.store)
    ctx.catalog.add(entry) if c.replacing is None else ctx.catalog.replace(c.replacing, entry)
    return entry


def _keep_hot(ctx, name: str, rows_by_map: Dict[str, pa.Table]):
    """Keep the maps just loaded hot in memory (version 0 of each map table), so the first
    batches need not read them back."""
    try:
        view = ctx.load(name)
        for part, rows in rows_by_map.items():
            schema = view.map_arrow_schema(part)
            ctx.hot_maps.put(new_hot_map(view, part, 0, rows.select(schema.names).cast(schema)))
    except Exception as e:               # an optimisation only: batches read Delta instead
        log.warning("View %s: maps not kept in memory (%s)", name, e)

