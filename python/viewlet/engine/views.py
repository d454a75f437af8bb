"""Incremental views: create (with the initial load), refresh (one batch), drop."""
from __future__ import annotations

import logging

import pyarrow as pa
import pyarrow.compute as pc
import re
import time
import uuid
from dataclasses import dataclass
from functools import cached_property
from typing import Dict, List, Optional, Tuple

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from ..errors import ChangeFeedError, ViewAlreadyExists, ViewletError, ViewNotFound
from .spark.io import arrow_frame, arrow_schema, frame_arrow, read_table, spark_schema, union_all
from ..plan.lower import AtomSource, SqlBuilder, lower_query, q
from ..frontend.spec import COUNT_COLUMN
from ..frontend.multisets import AVG_DISTINCT
from ..frontend.subqueries import TOO_MANY_ROWS
from ..plan.batch import BatchPlan, build_plan
from ..storage.arrow import add_at_keys, sum_by_key
from .batch import relation_columns, run_triggers, sum_by_keys
from .keyed import pad_groups
from .spark.catalog_views import result_properties
from . import (chain, distributed, drift, faults, hot, initial_load, lease, maps, ordered,
               published, windowed)
from .catalog import Entry
from .kept import Kept, map_location, outside_dirs
from .determinism import reject_nondeterministic, reject_unplannable
from .definition import (CompiledView, RecordingResolver, compile_definition, load_definition,
                         normalize_value_type, parts_key, result_layout, stored_form)
from .manifest import BatchRecord, Manifest
from .progress import Progress
from .result import multiset_params, result_rows_sql
from .tables import bind_tables

log = logging.getLogger("viewlet")
OP = ordered.OP
ORDERED = "__ordered"          # the ordered table's version in a batch record's map_versions


@dataclass
class MapSchema:
    keys: List[str]
    key_types: List[str]
    values: Dict[str, str]

    def ddl(self) -> str:
        cols = list(zip(self.keys, self.key_types)) + list(self.values.items())
        return ", ".join(f"{q(c)} {t}" for c, t in cols)

    def struct(self) -> StructType:
        return StructType.fromDDL(self.ddl())

    def to_json(self):
        return {"keys": self.keys, "key_types": self.key_types, "values": self.values}


def validate_name(name: str) -> str:
    """Any name Spark can write (quoted when it is not plain ASCII letters, digits and
    underscores): names live in the catalog only, never in paths or generated SQL."""
    if not isinstance(name, str) or not name.strip() or any(ord(c) < 32 for c in name):
        raise ViewletError(f"Invalid name {name!r}: a name needs at least one visible character "
                           "and no control characters.")
    return name


def _refuse_taken_name(ctx, name: str, if_not_exists: bool) -> Optional[Dict]:
    """CREATE's name must be free: not a view (IF NOT EXISTS: nothing to do), not a table
    registered with register_table, not a table or view of Spark's catalog (a query naming
    it would read that one, not the incremental view)."""
    from ..frontend.lexical import quote_identifier
    taken = ctx.catalog.find(name)
    if taken is not None and taken.kind == "view":
        if if_not_exists:
            return {"view": name, "status": "exists", "maps": 0, "rows": 0, "seconds": 0.0}
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


class LoadedView:
    def __init__(self, ctx, entry: Entry, compiled: CompiledView):
        self.ctx, self.entry, self.compiled = ctx, entry, compiled
        self.spec = entry.spec

    id = property(lambda self: self.entry.id)
    name = property(lambda self: self.entry.name)

    @cached_property
    def _columns(self):
        return relation_columns(self.compiled.program)

    def columns_of(self, relation: str) -> List[str]:
        return self._columns.get(relation, [])

    def table_path(self, relation: str) -> str:
        return self.compiled.spec.tables[relation].id

    def map_path(self, name: str) -> str:
        return map_location(self.entry.location, name, self.spec["maps"][name])

    def map_schema(self, name: str) -> MapSchema:
        key = ("map_schema", name)
        if key not in self.compiled.cache:
            m = self.spec["maps"][name]
            self.compiled.cache[key] = MapSchema(m["keys"], m["key_types"], m["values"])
        return self.compiled.cache[key]

    def map_arrow_schema(self, name: str) -> pa.Schema:
        key = ("map_arrow_schema", name)
        if key not in self.compiled.cache:
            self.compiled.cache[key] = arrow_schema(self.map_schema(name).struct())
        return self.compiled.cache[key]

    @property
    def result_path(self) -> str:
        return self.ctx.layout.result_table(self.id)

    @property
    def ordered_path(self) -> str:
        return self.ctx.layout.ordered_table(self.id)

    @property
    def top_n(self):
        """ORDER BY ... LIMIT of a top-N view (None otherwise, and at depth 0: recomputed)."""
        return self.compiled.spec.top_n if self.compiled.depth != 0 else None

    @property
    def manifest(self) -> Manifest:
        return Manifest(self.ctx.store, self.ctx.layout.manifest_table(self.id))

    @property
    def app_id(self) -> str:
        return f"viewlet:{self.id}"

    def scratch_dir(self, batch: int) -> str:
        """Where one attempt at a batch keeps its input files (removed when it ends)."""
        return self.ctx.layout.scratch_dir(self.id, f"{batch}-{uuid.uuid4().hex[:12]}")

    def batch_plan(self, changed, active) -> BatchPlan:
        """The batch SQL for these changed relations (built once per view and set)."""
        key = ("plan", changed, active)
        plans = self.compiled.cache
        if key not in plans:
            plans[key] = build_plan(self, changed, active)
        return plans[key]


class _SnapshotSource(AtomSource):
    """Atoms read base tables at fixed versions (the initial load of every map)."""

    def __init__(self, ctx, view_like, versions: Dict[str, int]):
        self.ctx, self.view, self.versions = ctx, view_like, versions
        self._frames = {}

    def relation(self, relation):
        if relation not in self._frames:
            frame = read_table(self.ctx.spark, self.ctx.store, self.view.table_path(relation),
                               self.versions[relation], self.view.columns_of(relation))
            # Every map joins some of the same tables: read each once, keep its columns.
            self._frames[relation] = frame.persist(StorageLevel.MEMORY_AND_DISK)
        return self._frames[relation]

    def release(self):
        for frame in self._frames.values():
            frame.unpersist()
        self._frames.clear()


class _Draft:
    """A view being created: what LoadedView offers, before the catalog knows it."""

    def __init__(self, ctx, view_id: str, compiled: CompiledView):
        self.ctx, self.id, self.compiled = ctx, view_id, compiled
        self.columns = relation_columns(compiled.program)

    def columns_of(self, relation):
        return self.columns.get(relation, [])

    def table_path(self, relation):
        return self.compiled.spec.tables[relation].id


# -- CREATE ------------------------------------------------------------------------------
def create_view(ctx, name: str, sql: str, depth: Optional[int] = None,
                if_not_exists: bool = False, replacing: Optional[Entry] = None,
                options: Optional[Dict] = None, caches: bool = False,
                rebuild_reason: Optional[str] = None, keep: Optional[Kept] = None) -> Dict:
    """`replacing`: REFRESH ... FULL builds a new view directory and swaps the entry; the new
    manifest carries the old one's rows and records the load as a batch `rebuilt` for
    `rebuild_reason`. `keep`: the replaced view's maps (a new query: engine/replace.py);
    a map of the new program with the same content is read where it is, the others are
    loaded at the base-table versions those hold."""
    validate_name(name)
    t_start = time.perf_counter()
    if replacing is None:
        exists = _refuse_taken_name(ctx, name, if_not_exists)
        if exists is not None:
            return exists
    catalog_name = published.reserve(ctx, name) if replacing is None else \
        replacing.spec.get("catalog_name")
    recorder = RecordingResolver(ctx.resolver())
    compiled = compile_definition(sql, recorder, depth, caches)   # all SQL errors happen here
    stored_form(compiled)                     # the program kept with the view, checked first
    spec = compiled.spec
    view_id = uuid.uuid4().hex
    view_dir = ctx.layout.view_dir(view_id)
    progress = Progress(ctx.spark, f"{'rebuild' if replacing else 'create'} {name}")
    source = None
    try:
        progress.__enter__()
        progress.step("checking the base tables' change data feed")
        versions = _prepare_base_tables(ctx, name, compiled,
                                        (options or {}).get("enable_change_data_feed"))
        if keep is not None:        # every map at the versions the kept ones hold
            versions = {rel: keep.versions.get(spec.tables[rel].id, v)
                        for rel, v in versions.items()}
        draft = _Draft(ctx, view_id, compiled)
        frames = {spec.tables[r].id: _relation_frame(ctx, spec.tables[r], v)
                  for r, v in versions.items()}
        location_of = lambda parts: recorder.refs[parts_key(parts)].id  # noqa: E731
        progress.step("resolving column types")
        output_types = _output_types(ctx, sql, frames, location_of)
        agg_types = _aggregate_types(ctx, compiled, frames, location_of)
        agg_types.update(_subquery_types(ctx, compiled, frames, location_of))
        windows = spec.window is not None and depth != 0
        if spec.window is not None and depth == 0:     # Spark recomputes the query
            layout = windowed.plain_layout(output_types)
        elif windows:           # the state's rows are the inner query's (engine/windowed.py)
            inner_types = _output_types(ctx, spec.window.inner_sql, frames, location_of)
            layout = result_layout(spec, inner_types)
        else:
            layout = result_layout(spec, output_types) if depth != 0 else \
                dict(result_layout(spec, output_types), keys=[], hidden=[])
        source = _SnapshotSource(ctx, draft, versions)
        maps_json: Dict[str, Dict] = {}
        parts: Dict[str, DataFrame] = {}
        if depth != 0:
            fingerprints = {m["name"]: m["fingerprint"] for m in compiled.stored["maps"]}
            for m in compiled.program.maps.values():
                schema, frame = _initial_map(ctx, m, source)
                maps_json[m.name] = dict(schema.to_json(),
                                         cluster=maps.cluster_order(compiled.program, m.name))
                old = keep.take(m.name, fingerprints[m.name], maps_json[m.name]) if keep else None
                if old is not None:
                    maps_json[m.name] = dict(old.schema, location=old.location)
                else:
                    parts[m.name] = frame
        # Small bases: every map in one Spark job; else one job per map, so that the driver
        # holds one map at a time (engine/initial_load.py).
        carried = old_manifest = None
        if replacing is not None:       # the history goes on: batch numbers keep counting
            old_manifest = Manifest(ctx.store, ctx.layout.manifest_table(replacing.id))
            carried = old_manifest.rows()
        first_batch = old_manifest.next_batch() if old_manifest is not None else 0
        txn = (f"viewlet:{view_id}", first_batch)
        sources = set(multiset_params(spec)) | {compiled.program.view_map}
        source_rows: Dict[str, pa.Table] = {}  # what the result rows are derived from
        warm: Dict[str, pa.Table] = {}         # maps kept hot in memory for the batches
        arrow = {part: arrow_schema(MapSchema(maps_json[part]["keys"], maps_json[part]["key_types"],
                                              maps_json[part]["values"]).struct())
                 for part in parts}
        base_rows = _base_rows(ctx, compiled, versions)
        progress.base_rows = base_rows if base_rows < _UNKNOWN_ROWS else None
        scale_out = distributed.load_reason(ctx, options, base_rows)
        in_driver, on_spark = _local_load(ctx, name, view_id, view_dir, compiled, maps_json,
                                          versions, options, base_rows, parts, progress.step) \
            if scale_out is None else (None, None)
        scratch = ctx.layout.scratch_dir(view_id, "create")
        top = spec.top_n if depth != 0 else None
        try:
            if scale_out is not None:
                log.info("View %s: loading on the executors: %s", name, scale_out)
                read = {}
                for i, part in enumerate(parts, 1):
                    progress.step(f"loading map {part} on the executors ({i}/{len(parts) + 1})")
                    path = ctx.layout.map_table(view_id, part)
                    distributed.create_map(ctx, path, parts[part], maps_json[part], arrow[part], txn,
                                           base_rows)
                    if part in sources:
                        read[part] = read_table(ctx.spark, ctx.store, path, 0)
            else:
                loaded = in_driver.items() if in_driver is not None else \
                    initial_load.collect(parts, arrow, base_rows, progress.step)
                for part, data in loaded:
                    written = maps.write_initial(ctx.store, ctx.layout.map_table(view_id, part),
                                                 data, maps_json[part]["keys"],
                                                 maps_json[part]["cluster"], txn)
                    if part in sources:
                        source_rows[part] = data
                    if ctx.hot_maps.fits(sum(t.nbytes for t in warm.values()) + written.nbytes):
                        warm[part] = written
                    del data, written
                read = _staged(ctx, source_rows, scratch)
            for part in (sources - set(parts)) if keep is not None else ():
                # kept from the replaced view: read where they are, one row per key (a map
                # table holds the deltas appended since its last compaction)
                read[part] = sum_by_keys(
                    read_table(ctx.spark, ctx.store, maps_json[part]["location"],
                               keep.used[part].version),
                    maps_json[part]["keys"], maps_json[part]["values"])
            source.release()
            progress.step(f"loading the result table ({len(parts) + 1}/{len(parts) + 1})")
            rows = _initial_result(ctx, compiled, layout, agg_types, read, maps_json, sql,
                                   frames, location_of)
            inner = None
            if windows:                # the window layer over the inner rows
                inner = layout
                state_types = maps_json[compiled.program.view_map]["key_types"]
                layout = windowed.window_layout(spec, output_types, inner, state_types)
                rows = rows.sparkSession.sql(windowed.window_sql(
                    spec, inner, layout, windowed.inner_types(inner, state_types)), d=rows)
            if top is not None:        # the first rows in the view's order (engine/ordered.py)
                keys = ordered.sort_keys(top, layout)
                rows = rows.sparkSession.sql(ordered.prefilter_sql(
                    "SELECT * FROM {d}", top, keys, _result_types(layout, maps_json, compiled)),
                    d=rows)
            properties = result_properties(name, ctx.layout.catalog)
            extra = {}
            if scale_out is not None and top is None:
                result_rows = distributed.create_result(ctx, ctx.layout.result_table(view_id),
                                                        rows, txn, properties)
            else:
                result = frame_arrow(rows)
                if top is not None:
                    first, complete = ordered.first_rows(result, top, keys)
                    ctx.store.create(ctx.layout.ordered_table(view_id), first, txn=txn)
                    result = ordered.visible(first, top)
                    extra[ordered.STATS] = {"complete": complete, "rows": first.num_rows}
                ctx.store.create(ctx.layout.result_table(view_id), result, txn=txn,
                                 properties=properties)
                result_rows = result.num_rows
                del result
        finally:
            ctx.store.drop(scratch)
        del source_rows
        engine = ("distributed", scale_out) if scale_out is not None else \
            ("local", "the maps were computed in the driver") if in_driver is not None else \
            ("spark", on_spark)
        stats = {"seconds": {"create": time.perf_counter() - t_start},
                 "engine": engine[0], "engine_reason": engine[1],
                 chain.RESULT_VERSION: ctx.store.version(ctx.layout.result_table(view_id)),
                 "spark_jobs": progress.spark_jobs(), "result_rows_changed": result_rows,
                 "map_rows_changed": {}, **extra}
        if replacing is not None:
            stats["rebuilt"] = rebuild_reason or "REFRESH ... FULL"
        if keep is not None:
            stats["maps_kept"] = {new: old.name for new, old in keep.used.items()}
            stats["maps_loaded"] = sorted(parts)
        Manifest(ctx.store, ctx.layout.manifest_table(view_id)).start(versions, stats, first_batch,
                                                                      carried)
        entry = Entry(view_id, "view", name, view_dir, {
            "sql": sql, "depth": depth, "refs": recorder.record(), "maps": maps_json,
            "result": layout, "agg_types": agg_types, "view_map": compiled.program.view_map,
            **({"inner": inner} if inner is not None else {}),
            "table_ids": drift.table_ids(ctx, compiled.spec), "caches": caches,
            "fused": compiled.fused, "in_filters": compiled.in_filters,
            "program": stored_form(compiled),
            **({"catalog_name": catalog_name} if catalog_name else {}),
            **(options or {}),
        })
        if keep is not None:
            keep.check_unchanged(ctx.store)
        ctx.catalog.add(entry) if replacing is None else ctx.catalog.replace(replacing, entry)
    except BaseException:
        ctx.store.drop(view_dir)
        raise
    finally:
        if source is not None:
            source.release()
        progress.__exit__()
    ctx.remember(entry, compiled)
    published.publish(ctx, entry, ctx.layout.result_table(view_id))
    _keep_hot(ctx, name, warm)
    return {"view": name, "status": "created", "maps": len(compiled.program.maps),
            "rows": result_rows, "seconds": round(time.perf_counter() - t_start, 3),
            "batch": first_batch, "kept": len(keep.used) if keep else 0, "loaded": len(parts)}


_UNKNOWN_ROWS = 1 << 62


def _local_load(ctx, name: str, view_id: str, view_dir: str, compiled: CompiledView,
                maps_json: Dict, versions: Dict[str, int], options: Optional[Dict],
                base_rows: int, parts: Dict,
                step=lambda text: None) -> Tuple[Optional[Dict[str, pa.Table]], str]:
    """(the rows of the maps `parts` computed in the driver by the local target
    (engine/initial_load.py local_maps), None); or (None, why Spark loads them): the engine
    is 'spark' or 'distributed', the base tables hold more than
    spark.viewlet.local.maxInputRows rows, or a definition has no exact local translation."""
    from . import targets
    draft = LoadedView(ctx, Entry(view_id, "view", name, view_dir,
                                  dict(options or {}, maps=maps_json)),
                       CompiledView(compiled.spec, initial_load.load_program(
                           compiled.program, list(parts)), compiled.depth))
    mode, limit = targets.setting(draft), targets.max_rows(draft)
    if mode in (targets.SPARK, targets.DISTRIBUTED):
        return None, f"engine = '{mode}'"
    if base_rows > limit:
        return None, (f"the base tables hold about {base_rows:,} rows, more than "
                      f"{targets.MAX_ROWS_CONF} = {limit:,}")
    missing = targets.unavailable()
    if missing is not None:
        return None, missing
    if not parts:
        return {}, ""
    step(f"loading the {len(parts)} map(s) in the driver (1-{len(parts)}/{len(parts) + 1})")
    try:
        return initial_load.local_maps(draft, versions), ""
    except targets.LOCAL_FAILURES as e:
        log.info("View %s: maps loaded on Spark (the local target cannot: %s)", name,
                 targets.failure_text(e))
        return None, f"the local target cannot run this view: {targets.failure_text(e)}"


def _base_rows(ctx, compiled: CompiledView, versions: Dict[str, int]) -> int:
    """Rows of the base tables at the versions a view is loaded at (from Delta statistics;
    a table without them counts as large)."""
    total = 0
    for rel, version in versions.items():
        snap = ctx.store.snapshot(compiled.spec.tables[rel].id, version)
        if snap.stats is None:
            return _UNKNOWN_ROWS
        total += sum(s.rows or 0 for s in snap.stats)
    return total


def _keep_hot(ctx, name: str, rows_by_map: Dict[str, pa.Table]):
    """Keep the maps just loaded hot in memory (version 0 of each map table), so the first
    batches need not read them back."""
    try:
        view = ctx.load(name)
        for part, rows in rows_by_map.items():
            schema = view.map_arrow_schema(part)
            ctx.hot_maps.put(hot.new_hot_map(view, part, 0, rows.select(schema.names).cast(schema)))
    except Exception as e:               # an optimisation only: batches read Delta instead
        log.warning("View %s: maps not kept in memory (%s)", name, e)


def _prepare_base_tables(ctx, name: str, compiled: CompiledView,
                         consent: Optional[bool] = None) -> Dict[str, int]:
    """The version of each relation the view is loaded at. Upstream incremental views are
    first refreshed (with theirs, engine/chain.py) to the same versions of every base table
    as the view's own base tables are read at."""
    versions = {}
    tables = compiled.spec.tables
    uppers = chain.upstream_names({"refs": {k: {"view": t.view} for k, t in tables.items()}})
    until = None
    for table in tables.values():
        if not table.view:
            ctx.store.observe(table.id)      # a table replaced at its path is seen as new
    _turn_on_change_feeds(ctx, name, [t for t in tables.values() if not t.view], consent)
    if uppers:
        chain.refuse_cycle(ctx, name, uppers)
        until = chain.bring_up(ctx, uppers, [t.id for t in tables.values() if not t.view])
    for rel, table in tables.items():
        if table.view:
            versions[rel] = chain.upstream_version(ctx, name, table, until)
        else:
            versions[rel] = until[table.id] if until else ctx.store.version(table.id)
    return versions


def _turn_on_change_feeds(ctx, name: str, tables, consent: Optional[bool]):
    """Base tables must have their change data feed on. Turning it on is a commit to a table
    the user owns, so it happens only with consent (the view's enable_change_data_feed
    option, else the context's / session's setting); without it CREATE fails before
    anything is written, naming every such table and the remedies."""
    off = [t for t in tables if not ctx.store.change_feed_enabled(t.id)]
    if not off:
        return
    if not (ctx.auto_enable_change_feed if consent is None else consent):
        from ..frontend.lexical import quote_identifier
        shown = ", ".join(t.display for t in off)
        alters = "; ".join(f"ALTER TABLE delta.`{t.id}` SET TBLPROPERTIES "
                           "(delta.enableChangeDataFeed = true)" for t in off)
        raise ChangeFeedError(
            f"The change data feed of {shown} is off, and Viewlet reads a table's changes from "
            f"it. Turn it on yourself ({alters}), or let CREATE turn it on (a commit to the "
            f"table): CREATE INCREMENTAL VIEW {quote_identifier(name)} WITH "
            "(enable_change_data_feed = true) AS ..., or for the session SET "
            "spark.viewlet.enableChangeDataFeed = true.")
    for t in off:
        log.warning("Turning on the change data feed of %s", t.display)
        ctx.store.enable_change_feed(t.id)


def _relation_frame(ctx, table, version: int) -> DataFrame:
    """A relation at a version, for queries over the defining SQL: an upstream view's
    result table without its hidden key columns."""
    columns = [c.name for c in table.columns] if table.view else None
    return read_table(ctx.spark, ctx.store, table.id, version, columns)


def _output_types(ctx, sql, frames, location_of):
    text, params = bind_tables(sql, frames, location_of)
    df = ctx.spark.sql(text, **params)
    reject_nondeterministic(df, sql)         # UDFs: what the front end cannot know
    reject_unplannable(df, sql)              # errors Spark raises while planning
    return [(f.name, f.dataType.simpleString()) for f in df.schema.fields]


def _aggregate_types(ctx, compiled, frames, location_of) -> Dict[str, Dict[str, str]]:
    spec = compiled.spec
    if not spec.aggregates:
        return {}
    items = []
    for a in spec.aggregates:
        items.append(f"{a.sql} AS {q(a.placeholder)}")
        if a.kind in ("avg", AVG_DISTINCT):
            items.append(f"{re.sub('^AVG', 'SUM', a.sql, flags=re.I)} AS {q(a.placeholder + '_sum')}")
    text, params = bind_tables(f"SELECT {', '.join(items)} {spec.from_sql}", frames, location_of)
    fields = {f.name: f.dataType.simpleString() for f in ctx.spark.sql(text, **params).schema.fields}
    return {a.placeholder: {"type": fields[a.placeholder],
                            "sum_type": fields.get(a.placeholder + "_sum", fields[a.placeholder])}
            for a in spec.aggregates}


def _subquery_types(ctx, compiled, frames, location_of) -> Dict[str, Dict[str, str]]:
    """Spark's type of each subquery in the view's SELECT / HAVING."""
    probe = compiled.spec.subquery_probe
    if probe is None:
        return {}
    text, params = bind_tables(probe, frames, location_of)
    return {f.name: {"type": f.dataType.simpleString()}
            for f in ctx.spark.sql(text, **params).schema.fields}


def _initial_map(ctx, m, source):
    """A map's content at the base versions, and its physical schema (decided by Spark)."""
    keys = [f"k{i}" for i in range(len(m.keys))]
    frames = {}
    key_types: List[str] = []
    values: Dict[str, str] = {}
    for col, query in m.values.items():
        sb = SqlBuilder()
        df = ctx.spark.sql(lower_query(query, source, sb, keys, col), **sb.params)
        types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
        key_types = key_types or [types[k] for k in keys]
        values[col] = normalize_value_type(types[col])
        frames[col] = df
    schema = MapSchema(keys, key_types, values)
    parts = []
    for col, df in frames.items():
        cols = [q(k) for k in keys] + [q(c) if c == col else f"CAST(0 AS {t}) AS {q(c)}"
                                       for c, t in values.items()]
        parts.append(df.selectExpr(*cols))
    union = union_all(parts)
    total = sum_by_keys(union, keys, values)
    return schema, total.where(" OR ".join(f"{q(c)} <> 0" for c in m.zero_columns()))


def _staged(ctx, data: Dict[str, pa.Table], scratch: str) -> Dict[str, DataFrame]:
    """Rows held on the driver as DataFrames over Parquet files in `scratch`."""
    read = {}
    for name, rows in data.items():
        location = ctx.store.write_file(f"{scratch}/{name}.parquet", rows)
        read[name] = ctx.spark.read.schema(spark_schema(rows.schema)).parquet(location)
    return read


def _initial_result(ctx, compiled, layout, agg_types, read: Dict[str, DataFrame], maps_json,
                    sql, frames, location_of) -> DataFrame:
    """`read`: the view state and its multisets just loaded, as DataFrames."""
    if compiled.depth == 0:
        text, params = bind_tables(sql, frames, location_of)
        df = ctx.spark.sql(text, **params)
        return df.toDF(*[c["physical"] for c in layout["columns"]])
    # From the view state and multisets just loaded, not by aggregating the tables again.
    state_json = maps_json[compiled.program.view_map]
    rows_sql = result_rows_sql(compiled.spec, layout, agg_types, state_json["keys"], COUNT_COLUMN,
                               {m: maps_json[m]["keys"] for m in multiset_params(compiled.spec)})
    state_frame = read[compiled.program.view_map]
    if layout["global"]:
        state_frame = _global_state(ctx, state_frame, state_json)
    return ctx.spark.sql(rows_sql, s=state_frame, **{
        param: read[m] for m, param in multiset_params(compiled.spec).items()})


def _result_types(layout: Dict, maps_json: Dict, compiled: CompiledView) -> Dict[str, str]:
    """Spark type of each result-table column (hidden keys: their state key's)."""
    types = {c["physical"]: c["type"] for c in layout["columns"]}
    key_types = maps_json[compiled.program.view_map]["key_types"]
    types.update({name: key_types[gi] for name, gi in layout["keys"] if name in layout["hidden"]})
    return types


def _global_state(ctx, state: DataFrame, schema_json) -> DataFrame:
    """A global aggregate has one result row even over no input: pad a missing state row."""
    zeros = ", ".join(f"CAST(0 AS {t}) AS {q(c)}" for c, t in schema_json["values"].items())
    return ctx.spark.sql(f"SELECT * FROM {{s}} UNION ALL SELECT {zeros} WHERE NOT EXISTS "
                         f"(SELECT 1 FROM {{s}})", s=state)


# -- REFRESH -----------------------------------------------------------------------------
def refresh_view(ctx, name: str, max_commits: Optional[int] = None,
                 until: Optional[Dict[str, int]] = None) -> Dict:
    """One batch over every base commit since the watermark (at most `max_commits` commits
    per table when given: continuous mode's back-pressure). A view that reads other views
    refreshes them first (engine/chain.py), unless `until` (the chain's base-table
    versions) says that this is one step of such a chain refresh."""
    view = ctx.load(name)
    if view.compiled.stored is None:
        return _rebuild_unproven(ctx, view)
    if until is None and chain.upstream_names(view.spec):
        return chain.refresh_chain(ctx, name, max_commits)
    t0 = time.perf_counter()
    manifest = view.manifest
    waited = recovered = None
    recovered_stats: Dict = {}
    while True:
        # One read of the manifest: the batch planned below continues exactly from it (its
        # number, ranges and map versions), so a batch another refresher planned meanwhile
        # makes plan() fail instead of being applied again.
        rows = manifest.all_records()
        records = manifest.records(rows)
        latest = records[-1]
        last = [r for r in records if r.phase == "committed"][-1]
        if latest.phase == "planned":
            # Planned, not committed: another refresher is computing it (wait for it), or
            # its refresher stopped (run it again, with exactly its recorded inputs).
            if _wait_for(view, latest.batch) == lease.COMMITTED:
                waited = latest.batch
                continue
            last = _take_over(view, latest, last)
            if last is None:             # another refresher took it over first
                continue
            recovered, recovered_stats = latest.batch, last.stats
        ranges = drift.batch_ranges(view, last.watermarks, max_commits, until)
        if all(a == b for a, b in ranges.values()):
            status = f"recovered batch {recovered}" if recovered is not None else \
                WAITED if waited is not None else "up to date"
            changes, rows = _applied(recovered_stats)     # what the re-run batch applied
            return {"view": name, "batch": last.batch, "changes": changes, "rows_changed": rows,
                    "seconds": round(time.perf_counter() - t0, 3), "status": status}
        map_versions = {m: ctx.store.version(view.map_path(m)) for m in view.spec["maps"]}
        map_versions["__result"] = ctx.store.version(view.result_path)
        if view.top_n is not None:
            map_versions[ORDERED] = ctx.store.version(view.ordered_path)
        record = BatchRecord(manifest.next_planned(rows), "planned", ranges, map_versions, {})
        with lease.Lease(view, record.batch):    # written before the planned row is visible
            if not manifest.plan(record.batch, ranges, map_versions):
                continue                 # another refresher planned it first: wait for it
            faults.point("batch.planned")
            stats = _apply_or_drop(view, record, last)
            stats["seconds"]["total"] = time.perf_counter() - t0
            stats[chain.RESULT_VERSION] = ctx.store.version(view.result_path)
            manifest.commit(record, stats)
            faults.point("batch.committed")
        # both batches this REFRESH applied when it re-ran an interrupted one first
        changes, rows = (a + b for a, b in zip(_applied(stats), _applied(recovered_stats)))
        return {"view": name, "batch": record.batch, "changes": changes, "rows_changed": rows,
                "seconds": round(time.perf_counter() - t0, 3),
                "status": f"refreshed after recovering batch {recovered}" if recovered is not None
                else "refreshed" if waited is None else
                "refreshed after waiting for a concurrent refresh"}


def _applied(stats: Dict) -> Tuple[int, int]:
    """A batch's (changes, rows_changed) as REFRESH reports them: its change rows read, the
    result rows it rewrote; (0, 0) for no batch."""
    return sum((stats.get("delta_rows") or {}).values()), stats.get("result_rows_changed") or 0


#: REFRESH's status when another refresher computed the batch this one would have
WAITED = "waited for a concurrent refresh"
#: why a view created before programs were stored is rebuilt at its next REFRESH
UNPROVEN = ("created by a Viewlet that did not store its trigger program, so its maps cannot be "
            "proven to be the ones this version maintains: rebuilt once from the base tables")


def _rebuild_unproven(ctx, view: "LoadedView") -> Dict:
    """A view without a stored program is never refreshed against its maps: REFRESH rebuilds
    it (REFRESH ... FULL, which stores this version's program) and says so."""
    from .rebuild import rebuild_view
    log.warning("View %s: %s", view.name, UNPROVEN)
    result = rebuild_view(ctx, view.name, reason=UNPROVEN)
    return dict(result, status=f"{result['status']}: {UNPROVEN}")


def _wait_for(view: LoadedView, batch: int) -> str:
    """Wait while another refresher holds planned `batch` (engine/lease.py)."""
    with Progress(view.ctx.spark, f"refresh {view.name}", lazy=True) as progress:
        return lease.wait_for_batch(view, batch, progress)


def _take_over(view: LoadedView, planned: BatchRecord, last: BatchRecord):
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
        stats["seconds"]["total"] = time.perf_counter() - t0      # the re-run's time
        stats[chain.RESULT_VERSION] = view.ctx.store.version(view.result_path)
        view.manifest.commit(planned, stats)
    lease.clear(view, planned.batch)
    return BatchRecord(planned.batch, "committed", planned.ranges, planned.map_versions, stats)


def _apply_or_drop(view: LoadedView, record: BatchRecord, last: BatchRecord) -> Dict:
    """apply_batch; a batch that fails on its data (a scalar subquery without an aggregate
    returned several rows, which Spark's query raises too) before writing any map or the
    result is dropped from the manifest, so that the next REFRESH plans anew and sees the
    commits that fix the data (re-running the same inputs would fail forever)."""
    try:
        return apply_batch(view, record, last)
    except Exception as e:                     # noqa: BLE001 - re-raised
        if TOO_MANY_ROWS not in str(e):
            raise
        store = view.ctx.store
        paths = {"__result": view.result_path, ORDERED: view.ordered_path if view.top_n else None}
        written = [m for m, v in record.map_versions.items()
                   if store.version(paths.get(m) or view.map_path(m)) != v]
        if not written:
            view.manifest.drop(record, TOO_MANY_ROWS)
        raise


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
        scale_out = distributed.recompute_reason(view)
        if scale_out is not None:
            stats["engine"], stats["engine_reason"] = distributed.DISTRIBUTED, scale_out
            distributed.recompute(view, record, txn, stats, _recompute_frame(view, record))
            return stats
        stats["engine"], stats["engine_reason"] = "spark", \
            "the local target cannot run this view: depth 0 recomputes the view on Spark"
        _recompute(view, record, txn, stats)
        return stats
    scale_out = distributed.reason_for(view, record)
    if scale_out is not None:
        return distributed.apply_batch(view, record, progress, previous, scale_out)
    deltas = run_triggers(view, record, stats, progress)
    result = rewrite = None
    if any(deltas.get(m) is not None and deltas[m].num_rows for m in _result_maps(view)):
        progress.step("computing the result rows of the touched groups")
        t0 = time.perf_counter()
        local = stats.get("engine") == "local"
        if view.compiled.spec.window is not None:
            result, rewrite = _window_source(view, record, deltas, local, progress)
        else:
            result = _result_source(view, record, deltas, local, progress)
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
                                          list(schema.values), _zero_columns(view, name), txn,
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
        stats[ordered.STATS] = ordered.stats_of(previous)
        stats["result_rows_changed"] = 0
        if result is not None and result.num_rows:
            _apply_ordered(view, record, deltas, result, stats, txn, meta, progress)
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


def timed_compaction(view, record, changed_rows, previous, progress, merging: bool, stats):
    """Compact maps written by appending (not by MERGE), into stats' layout and timings."""
    t0 = time.perf_counter()
    if not merging:
        stats["layout"] = compact_appended(view, record, changed_rows,
                                           previous.get("layout") or {}, progress)
    stats["seconds"]["compact"] = time.perf_counter() - t0


def compact_appended(view: LoadedView, record: BatchRecord, appended: Dict[str, int],
                     layouts: Dict, progress: Progress) -> Dict:
    """Compact the maps this batch appended to (`appended`: map -> rows) whose appended rows
    or files outgrew their base (maps.py), vacuum what no version in use needs; the maps'
    layouts for the next batch. A map too large for the driver (or any map of a view whose
    engine is 'distributed') is compacted by Spark's executors."""
    ctx = view.ctx
    out = dict(layouts)
    for name in appended:
        path = view.map_path(name)
        layout = maps.MapLayout.of(layouts.get(name), None) if name in layouts else \
            maps.MapLayout.of(None, ctx.store.snapshot(path, record.map_versions[name]))
        if layout.counted():             # this batch's append counted: no look at the files
            layout = layout.after_append(appended[name])
            due = layout.due()
        else:
            due = layout.due(ctx.store.snapshot(path))
        if due and distributed.too_large_to_collect(view, layout):
            progress.spark().step(f"compacting map {name} on the executors")
            compacted = distributed.compact_map(view, name, record.batch)
            if compacted is not None:
                layout = compacted
                ctx.store.vacuum(path, record.map_versions[name])
        elif due:
            progress.step(f"compacting map {name}")
            schema = view.map_schema(name)
            zero = _zero_columns(view, name)
            cluster = view.spec["maps"][name].get("cluster") or list(range(len(schema.keys)))
            in_memory = ctx.hot_maps.peek(path)      # its rows, when hot: no read of the files
            compacted = maps.compact(ctx.store, path, schema.keys, list(schema.values), zero,
                                     cluster, {"viewlet.view": view.name,
                                               hot.COMPACTION: str(record.batch)},
                                     rows=in_memory.all_rows() if in_memory else None,
                                     rows_version=in_memory.version if in_memory else None)
            if compacted is not None:
                layout, read_version, version, rows = compacted
                hot.replace_after_compaction(view, name, read_version, version, rows)
                # Files of the batch-start version stay: a re-run of this batch reads them.
                ctx.store.vacuum(path, record.map_versions[name])
                in_memory = ctx.hot_maps.peek(path)
                if in_memory is not None:
                    hot.sync_after_writes(view, name, in_memory.version, record.batch, None)
        out[name] = layout.to_json()
    return out


def _zero_columns(view: LoadedView, name: str) -> List[str]:
    """The columns whose sums all 0 mean a map row is gone."""
    return view.compiled.program.maps[name].zero_columns()


def _committed(ctx, path, txn) -> bool:
    done = ctx.store.txn_version(path, txn[0])
    return done is not None and done >= txn[1]


def _result_maps(view: LoadedView) -> List[str]:
    """The maps a group's result row is derived from: the view state, the multisets the
    outputs read."""
    return [view.spec["view_map"]] + list(multiset_params(view.compiled.spec))


def _result_source(view: LoadedView, record: BatchRecord, deltas: Dict[str, pa.Table],
                   local: bool = False, progress: Optional[Progress] = None) -> pa.Table:
    """MERGE source rewriting the result rows of every group the batch touched: a 'del' row
    per touched group and the group's new rows as 'ins' rows. Touched are the groups of the
    state's delta and the groups of the multisets' deltas (an UPDATE moving a MIN changes a
    multiset, not the state). The touched groups' new state (their batch-start rows plus
    the delta) is built on the driver; Spark evaluates the output expressions over it (a
    projection of a local relation, unless multisets are aggregated or bag copies need a
    generator), with the multisets' batch-start rows of those groups plus their deltas."""
    state_name = view.spec["view_map"]
    schema = view.map_schema(state_name)
    delta_state = pad_groups(deltas.get(state_name), view.map_arrow_schema(state_name), schema.keys,
                             [(deltas[m], view.map_schema(m).keys[:len(schema.keys)])
                              for m in _result_maps(view)[1:] if deltas.get(m) is not None])
    new_state = add_at_keys(hot.rows_by_keys(view, state_name, record.map_versions[state_name],
                                             delta_state, schema.keys),
                            delta_state, schema.keys, list(schema.values))
    multisets = _multiset_rows(view, record, deltas, new_state, len(schema.keys))
    _, columns = result_sql(view)
    out_schema = _result_arrow_schema(view, columns)
    ins = _state_rows(view, new_state, multisets, local, progress)
    dels = {}
    key_of = {name: gi for name, gi in inner_layout(view.spec)["keys"]}
    for col in columns:
        field = out_schema.field(col)
        dels[col] = new_state.column(schema.keys[key_of[col]]).cast(field.type) if col in key_of \
            else pa.nulls(new_state.num_rows, field.type)
    dels = pa.table(dels, schema=out_schema)
    return pa.concat_tables([
        ins.append_column(OP, pa.array(["ins"] * ins.num_rows, pa.string())),
        dels.append_column(OP, pa.array(["del"] * dels.num_rows, pa.string()))])


def _multiset_rows(view: LoadedView, record: BatchRecord, deltas: Dict[str, pa.Table],
                   groups: pa.Table, group_width: int) -> Dict[str, pa.Table]:
    """{multiset parameter: its rows at `groups` before the batch, plus the batch's delta}:
    the state's and the multiset's group key columns are both k0, k1, ..."""
    multisets = {}
    for name, param in multiset_params(view.compiled.spec).items():
        ms_schema = view.map_arrow_schema(name)
        group = view.map_schema(name).keys[:group_width]
        before = hot.rows_by_keys(view, name, record.map_versions[name], groups, group)
        rows = [before.select(ms_schema.names).cast(ms_schema)]
        if deltas.get(name) is not None:
            rows.append(deltas[name].select(ms_schema.names).cast(ms_schema))
        multisets[param] = pa.concat_tables(rows)
    return multisets


def inner_layout(spec: Dict) -> Dict:
    """The layout of the state's rows (the inner query's for a view with window functions,
    whose result table holds the window layer's rows)."""
    return spec.get("inner") or spec["result"]


def _window_source(view: LoadedView, record: BatchRecord, deltas: Dict[str, pa.Table],
                   local: bool, progress: Progress):
    """A windowed view's batch (engine/windowed.py): (MERGE source replacing the rows of the
    units the batch touched, None), or (None, every result row) when the window has one
    unit."""
    layout = view.spec["result"]
    state_name = view.spec["view_map"]
    schema = view.map_schema(state_name)
    out_schema = _window_arrow_schema(view)
    if not layout["unit"]:
        state, multisets = _whole_state(view, record, deltas)
        return None, _window_rows(view, state, multisets, local, progress, out_schema)
    delta_state = pad_groups(deltas.get(state_name), view.map_arrow_schema(state_name), schema.keys,
                             [(deltas[m], view.map_schema(m).keys[:len(schema.keys)])
                              for m in _result_maps(view)[1:] if deltas.get(m) is not None])
    unit_keys = [schema.keys[gi] for gi in layout["unit"]]
    units = windowed.touched_units(delta_state, schema.keys, layout["unit"])
    old = hot.rows_by_keys(view, state_name, record.map_versions[state_name], units, unit_keys)
    old = windowed.rows_in_units(old, unit_keys, units, unit_keys)
    arrow = view.map_arrow_schema(state_name)
    state = sum_by_key(pa.concat_tables([old.select(arrow.names).cast(arrow),
                                         delta_state.select(arrow.names).cast(arrow)]),
                       schema.keys, list(schema.values), _zero_columns(view, state_name))
    multisets = _multiset_rows(view, record, deltas, state, len(schema.keys))
    ins = _window_rows(view, state, multisets, local, progress, out_schema)
    dels = windowed.deletes(units, unit_keys, layout, out_schema, OP)
    source = pa.concat_tables([
        ins.append_column(OP, pa.array(["ins"] * ins.num_rows, pa.string())), dels])
    return source, None


def _window_rows(view, state, multisets, local, progress, out_schema) -> pa.Table:
    """The window layer's rows over the inner rows of `state`'s groups."""
    if local:
        from .targets import LOCAL_FAILURES
        try:
            rows = _state_rows(view, state, multisets, True, progress)
            return windowed.local_window_rows(view, rows, out_schema)
        except LOCAL_FAILURES as e:
            log.warning("View %s: window rows on Spark, the local target failed: %s", view.name, e)
    rows = _state_rows(view, state, multisets, False, progress, windowed.spark_window_sql(view),
                       out_schema)
    return rows


def _window_arrow_schema(view: LoadedView) -> pa.Schema:
    cache = view.compiled.cache
    if "window_arrow" not in cache:
        layout = view.spec["result"]
        cols = [(c["physical"], c["type"]) for c in layout["columns"]] + \
            [(name, t) for (name, _), t in zip(layout["keys"], layout["unit_types"])]
        cache["window_arrow"] = arrow_schema(StructType.fromDDL(
            ", ".join(f"{q(c)} {t}" for c, t in cols)))
    return cache["window_arrow"]


def _state_rows(view: LoadedView, state: pa.Table, multisets: Dict[str, pa.Table], local: bool,
                progress: Optional[Progress], wrap=None, wrapped_schema=None) -> pa.Table:
    """The result rows of the groups in `state` (new state rows) given their multisets'
    rows, on the local target when `local` (Spark if it fails), else on Spark; `wrap`:
    Spark SQL over the rows query (`{d}`) the Spark target evaluates instead."""
    ctx = view.ctx
    rows_sql, columns = result_sql(view)
    out_schema = _result_arrow_schema(view, columns)
    if local:
        from .result_local import local_result_rows
        from .targets import LOCAL_FAILURES
        try:
            return local_result_rows(view, state, multisets, out_schema)
        except LOCAL_FAILURES as e:
            log.warning("View %s: result rows on Spark, the local target failed: %s", view.name, e)
    if progress is not None:
        progress.spark()
    frames = {p: arrow_frame(ctx.spark, rows) for p, rows in multisets.items()}
    df = ctx.spark.sql(rows_sql, s=arrow_frame(ctx.spark, state), **frames)
    if wrap is not None:
        df = ctx.spark.sql(wrap, d=df)
    # through Arrow, not Python rows: collect() gives timestamps as naive datetimes in the
    # driver's local time zone, which Arrow would take for UTC
    schema = wrapped_schema or out_schema
    return frame_arrow(df).select(schema.names).cast(schema)


def _whole_state(view: LoadedView, record: BatchRecord, deltas: Dict[str, pa.Table]):
    """The whole view state and multisets after the batch (their batch-start rows, from
    memory when hot, plus the batch's deltas), for recomputing a top-N view's order."""
    out = {}
    for name in _result_maps(view):
        schema, arrow = view.map_schema(name), view.map_arrow_schema(name)
        version = record.map_versions[name]
        in_memory = hot.hot_map(view, name, version)
        rows = in_memory.all_rows() if in_memory is not None else \
            view.ctx.store.read_files(view.ctx.store.snapshot(view.map_path(name), version))
        parts = [rows.select(arrow.names).cast(arrow)]
        if deltas.get(name) is not None:
            parts.append(deltas[name].select(arrow.names).cast(arrow))
        out[name] = sum_by_key(pa.concat_tables(parts), schema.keys, list(schema.values),
                               _zero_columns(view, name))
    state = out.pop(view.spec["view_map"])
    if inner_layout(view.spec)["global"] and state.num_rows == 0:     # one row, over no rows
        state = pa.table({f.name: pa.array([0], f.type) for f in state.schema}, schema=state.schema)
    params = multiset_params(view.compiled.spec)
    return state, {params[name]: rows for name, rows in out.items()}


def _apply_ordered(view: LoadedView, record: BatchRecord, deltas, source: pa.Table, stats: Dict,
                   txn, meta, progress: Progress):
    """A top-N view's batch: the touched groups' rows (`source`, the MERGE source a view
    without ORDER BY applies) replace theirs in the ordered table, recomputed from the whole
    state only when deletes leave it short; the ordered and result tables are rewritten
    when they changed (engine/ordered.py)."""
    ctx, top, layout = view.ctx, view.top_n, view.spec["result"]
    keys = ordered.sort_keys(top, layout)
    version = record.map_versions[ORDERED]
    cached = view.compiled.cache.get(ORDERED)
    old = cached[1] if cached is not None and cached[0] == version else \
        ordered.sort_rows(ctx.store.read_arrow(view.ordered_path, version), keys)
    old = old.select(source.schema.names[:-1]).cast(_result_arrow_schema(view, result_sql(view)[1]))
    previous = stats[ordered.STATS]
    table, complete, short = ordered.maintain(old, previous.get("complete", False), source, top,
                                              keys, ordered.identity_columns(layout))
    if short:
        progress.step("recomputing the ordered rows from the view state")
        state, multisets = _whole_state(view, record, deltas)
        local = stats.get("engine") == "local"
        rows = _state_rows(view, state, multisets, local, progress, None if local else
                           ordered.prefilter_sql("SELECT * FROM {d}", top, keys, _result_types(
                               layout, view.spec["maps"], view.compiled)))
        table, complete = ordered.first_rows(rows, top, keys)
    stats[ordered.STATS] = {"complete": complete, "rows": table.num_rows, "recomputed": short}
    if table.equals(old):
        return
    progress.step("writing the ordered rows")
    ctx.store.overwrite(view.ordered_path, table, txn=txn, metadata=meta)
    shown, before = ordered.visible(table, top), ordered.visible(old, top)
    if not shown.equals(before):
        progress.step("writing the result table")
        ctx.store.overwrite(view.result_path, shown, txn=txn, metadata=meta)
        faults.point("batch.result_merged")
        stats["result_rows_changed"] = shown.num_rows
    view.compiled.cache[ORDERED] = (ctx.store.version(view.ordered_path), table)


def result_sql(view: LoadedView):
    """SQL over `{s}` (the touched groups' new state) giving their result rows, and the
    result table's columns; built once per view."""
    cache = view.compiled.cache
    if "result_sql" not in cache:
        layout = inner_layout(view.spec)
        schema = view.map_schema(view.spec["view_map"])
        rows_sql = result_rows_sql(view.compiled.spec, layout, view.spec["agg_types"],
                                   schema.keys, COUNT_COLUMN,
                                   {m: view.map_schema(m).keys
                                    for m in multiset_params(view.compiled.spec)})
        columns = [c["physical"] for c in layout["columns"]] + \
            [name for name, _ in layout["keys"] if name in layout["hidden"]]
        cache["result_sql"] = (rows_sql, columns)
    return cache["result_sql"]


def result_schema(view: LoadedView, columns) -> StructType:
    """The state rows' columns (`columns`, from result_sql) with their Spark types (the
    result table's, but for a view with window functions: its inner query's)."""
    layout = inner_layout(view.spec)
    schema = view.map_schema(view.spec["view_map"])
    types = {c["physical"]: c["type"] for c in layout["columns"]}
    key_of = {name: gi for name, gi in layout["keys"]}
    return StructType.fromDDL(", ".join(f"{q(c)} {types.get(c) or schema.key_types[key_of[c]]}"
                                        for c in columns))


def _result_arrow_schema(view: LoadedView, columns) -> pa.Schema:
    cache = view.compiled.cache
    if "result_arrow" not in cache:
        cache["result_arrow"] = arrow_schema(result_schema(view, columns))
    return cache["result_arrow"]


def _recompute_frame(view: LoadedView, record: BatchRecord) -> DataFrame:
    """The defining query over the batch's end versions, with the result table's columns."""
    ctx = view.ctx
    frames = {view.table_path(r): _relation_frame(ctx, view.compiled.spec.tables[r], to)
              for r, (_, to) in record.ranges.items()}
    refs = view.spec["refs"]
    text, params = bind_tables(view.spec["sql"], frames, lambda parts: refs[parts_key(parts)]["id"])
    return ctx.spark.sql(text, **params).toDF(*[c["physical"] for c in view.spec["result"]["columns"]])


def _recompute(view: LoadedView, record: BatchRecord, txn, stats):
    """Depth 0: evaluate the defining query over the batch's end versions, replace the rows."""
    ctx = view.ctx
    t0 = time.perf_counter()
    if _committed(ctx, view.result_path, txn):
        return
    data = frame_arrow(_recompute_frame(view, record))
    ctx.store.overwrite(view.result_path, data, txn=txn,
                        metadata={"viewlet.view": view.name, "viewlet.batch": str(record.batch)})
    faults.point("batch.result_merged")
    stats["result_rows_changed"] = data.num_rows
    stats["seconds"]["recompute"] = time.perf_counter() - t0


# -- DROP --------------------------------------------------------------------------------
def drop_view(ctx, name: str, if_exists: bool = False) -> Dict:
    entry = ctx.catalog.find(name, "view")
    if entry is None:
        if if_exists:
            return {"view": name, "status": "not found"}
        raise ViewNotFound(f"Incremental view '{name}' does not exist. SHOW INCREMENTAL VIEWS "
                           "lists the views of this warehouse.")
    readers = chain.dependents(ctx, entry.name)
    if readers:
        raise ViewletError(f"Incremental view '{entry.name}' is read by "
                           f"{', '.join(readers)}. DROP INCREMENTAL VIEW those first, then "
                           f"drop {entry.name}.")
    ctx.catalog.remove(entry.id)      # first: a half-dropped view is never visible
    ctx.forget(entry.id)
    published.withdraw(ctx, entry, ctx.layout.result_table(entry.id))
    ctx.store.drop(entry.location)
    for held in outside_dirs(entry.location, entry.spec["maps"]):   # maps kept from before
        ctx.store.drop(held)
    return {"view": name, "status": "dropped"}


def load_compiled(ctx, entry: Entry) -> CompiledView:
    from ..frontend.lexical import quote_identifier
    return load_definition(entry.spec, quote_identifier(entry.name))
