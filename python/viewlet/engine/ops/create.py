"""Incremental views: create (with the initial load), refresh (one batch), drop."""
from __future__ import annotations

import logging
import time
import uuid
from typing import Dict, Optional

import pyarrow as pa
from pyspark.sql import DataFrame

from ...errors import ChangeFeedError, ViewAlreadyExists
from ...frontend.lexical import quote_identifier
from ..batch.drift import table_ids
from ..batch.policy import load_reason
from ..batch.result_sql import multiset_params
from ..batch.window_sql import window_sql
from ..maintain.maps import cluster_order, write_initial
from ..maintain.topn import STATS, first_rows, prefilter_sql, sort_keys, visible
from ..runtime.progress import Progress
from ..spark.catalog_views import result_properties
from ..spark.io import arrow_schema, frame_arrow, read_table
from ..state import published
from ..state.catalog import Entry, validate_name
from ..state.graph import RESULT_VERSION, refuse_cycle, upstream_names, upstream_version
from ..state.kept import Kept
from ..state.layout import inner_types, plain_layout, result_layout, result_types, window_layout
from ..state.manifest import Manifest
from ..state.maps import new_hot_map
from ..state.program import (CompiledView, RecordingResolver, compile_definition, parts_key,
                             stored_form)
from ..state.tables import relation_frame
from ..state.view import MapSchema
from . import probe
from .chains import bring_up
from .load import (Draft, SnapshotSource, collect, create_map, create_result, initial_map,
                   initial_result, local_load, staged)

log = logging.getLogger("viewlet")


def _refuse_taken_name(ctx, name: str, if_not_exists: bool) -> Optional[Dict]:
    """CREATE's name must be free: not a view (IF NOT EXISTS: nothing to do), not a table
    registered with register_table, not a table or view of Spark's catalog (a query naming
    it would read that one, not the incremental view)."""
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
        draft = Draft(ctx, view_id, compiled)
        frames = {spec.tables[r].id: relation_frame(ctx, spec.tables[r], v)
                  for r, v in versions.items()}
        location_of = lambda parts: recorder.refs[parts_key(parts)].id  # noqa: E731
        progress.step("resolving column types")
        output_types = probe.output_types(ctx, sql, frames, location_of)
        agg_types = probe.aggregate_types(ctx, compiled, frames, location_of)
        agg_types.update(probe.subquery_types(ctx, compiled, frames, location_of))
        windows = spec.window is not None and depth != 0
        if spec.window is not None and depth == 0:     # Spark recomputes the query
            layout = plain_layout(output_types)
        elif windows:           # the state's rows are the inner query's (engine/windowed.py)
            inner_output_types = probe.output_types(ctx, spec.window.inner_sql, frames,
                                                    location_of)
            layout = result_layout(spec, inner_output_types)
        else:
            layout = result_layout(spec, output_types) if depth != 0 else \
                dict(result_layout(spec, output_types), keys=[], hidden=[])
        source = SnapshotSource(ctx, draft, versions)
        maps_json: Dict[str, Dict] = {}
        parts: Dict[str, DataFrame] = {}
        if depth != 0:
            fingerprints = {m["name"]: m["fingerprint"] for m in compiled.stored["maps"]}
            for m in compiled.program.maps.values():
                schema, frame = initial_map(ctx, m, source)
                maps_json[m.name] = dict(schema.to_json(),
                                         cluster=cluster_order(compiled.program, m.name))
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
        scale_out = load_reason(ctx, options, base_rows)
        in_driver, on_spark = local_load(ctx, name, view_id, view_dir, compiled, maps_json,
                                          versions, options, base_rows, parts) \
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
                    create_map(ctx, path, parts[part], maps_json[part], arrow[part], txn,
                                           base_rows)
                    if part in sources:
                        read[part] = read_table(ctx.spark, ctx.store, path, 0)
            else:
                loaded = in_driver.items() if in_driver is not None else \
                    collect(parts, arrow, base_rows, progress.step)
                for part, data in loaded:
                    written = write_initial(ctx.store, ctx.layout.map_table(view_id, part),
                                                 data, maps_json[part]["keys"],
                                                 maps_json[part]["cluster"], txn)
                    if part in sources:
                        source_rows[part] = data
                    if ctx.hot_maps.fits(sum(t.nbytes for t in warm.values()) + written.nbytes):
                        warm[part] = written
                    del data, written
                read = staged(ctx, source_rows, scratch)
            for part in (sources - set(parts)) if keep is not None else ():
                # kept from the replaced view: read where they are
                read[part] = read_table(ctx.spark, ctx.store, maps_json[part]["location"],
                                        keep.used[part].version)
            source.release()
            progress.step(f"loading the result table ({len(parts) + 1}/{len(parts) + 1})")
            rows = initial_result(ctx, compiled, layout, agg_types, read, maps_json, sql,
                                   frames, location_of)
            inner = None
            if windows:                # the window layer over the inner rows
                inner = layout
                state_types = maps_json[compiled.program.view_map]["key_types"]
                layout = window_layout(spec, output_types, inner, state_types)
                rows = rows.sparkSession.sql(window_sql(
                    spec, inner, layout, inner_types(inner, state_types)), d=rows)
            if top is not None:        # the first rows in the view's order (engine/ordered.py)
                keys = sort_keys(top, layout)
                rows = rows.sparkSession.sql(prefilter_sql(
                    "SELECT * FROM {d}", top, keys, result_types(layout, maps_json, compiled)),
                    d=rows)
            properties = result_properties(name, ctx.layout.catalog)
            extra = {}
            if scale_out is not None and top is None:
                result_rows = create_result(ctx, ctx.layout.result_table(view_id),
                                                        rows, txn, properties)
            else:
                result = frame_arrow(rows)
                if top is not None:
                    first, complete = first_rows(result, top, keys)
                    ctx.store.create(ctx.layout.ordered_table(view_id), first, txn=txn)
                    result = visible(first, top)
                    extra[STATS] = {"complete": complete, "rows": first.num_rows}
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
                 RESULT_VERSION: ctx.store.version(ctx.layout.result_table(view_id)),
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
            "table_ids": table_ids(ctx, compiled.spec), "caches": caches,
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
            ctx.hot_maps.put(new_hot_map(view, part, 0, rows.select(schema.names).cast(schema)))
    except Exception as e:               # an optimisation only: batches read Delta instead
        log.warning("View %s: maps not kept in memory (%s)", name, e)


def _prepare_base_tables(ctx, name: str, compiled: CompiledView,
                         consent: Optional[bool] = None) -> Dict[str, int]:
    """The version of each relation the view is loaded at. Upstream incremental views are
    first refreshed (with theirs, engine/chain.py) to the same versions of every base table
    as the view's own base tables are read at."""
    versions = {}
    tables = compiled.spec.tables
    uppers = upstream_names({"refs": {k: {"view": t.view} for k, t in tables.items()}})
    until = None
    for table in tables.values():
        if not table.view:
            ctx.store.observe(table.id)      # a table replaced at its path is seen as new
    _turn_on_change_feeds(ctx, name, [t for t in tables.values() if not t.view], consent)
    if uppers:
        refuse_cycle(ctx, name, uppers)
        until = bring_up(ctx, uppers, [t.id for t in tables.values() if not t.view])
    for rel, table in tables.items():
        if table.view:
            versions[rel] = upstream_version(ctx, name, table, until)
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

