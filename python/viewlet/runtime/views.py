"""Incremental views: create (with the initial load), refresh (one batch), drop."""
from __future__ import annotations

import logging

import pyarrow.compute as pc
import re
import time
import uuid
from dataclasses import dataclass
from functools import cached_property
from typing import Dict, List, Optional

from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from ..compiler.program import VALUE
from ..errors import ViewAlreadyExists, ViewletError, ViewNotFound
from ..spark.io import frame_arrow, read_table, union_all
from ..spark.lower import AtomSource, SqlBuilder, lower_query, q
from ..spark.pack import collect_parts
from ..sql.frontend import COUNT_COLUMN
from .batch import relation_columns, run_triggers, sum_by_keys
from . import drift, faults
from .catalog import Entry
from .determinism import reject_nondeterministic
from .definition import (CompiledView, RecordingResolver, StoredTables, compile_definition,
                         normalize_value_type, parts_key, result_layout)
from .manifest import BatchRecord, Manifest
from .progress import Progress
from .result import result_rows_sql
from .tables import bind_tables

log = logging.getLogger("viewlet")
OP = "__viewlet_op"
RESULT_PART = "__result"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


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
    if not _NAME.match(name or ""):
        raise ViewletError(f"Invalid incremental view name {name!r}: use letters, digits and "
                           "underscores, starting with a letter or underscore.")
    return name


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
        return self.ctx.layout.map_table(self.id, name)

    def map_schema(self, name: str) -> MapSchema:
        m = self.spec["maps"][name]
        return MapSchema(m["keys"], m["key_types"], m["values"])

    @property
    def result_path(self) -> str:
        return self.ctx.layout.result_table(self.id)

    @property
    def manifest(self) -> Manifest:
        return Manifest(self.ctx.store, self.ctx.layout.manifest_table(self.id))

    @property
    def app_id(self) -> str:
        return f"viewlet:{self.id}"


class _SnapshotSource(AtomSource):
    """Atoms read base tables at fixed versions (the initial load of every map)."""

    def __init__(self, ctx, view_like, versions: Dict[str, int]):
        self.ctx, self.view, self.versions = ctx, view_like, versions
        self._frames = {}

    def relation(self, relation):
        if relation not in self._frames:
            self._frames[relation] = read_table(self.ctx.spark, self.ctx.store,
                                                self.view.table_path(relation),
                                                self.versions[relation], self.view.columns_of(relation))
        return self._frames[relation]


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
                options: Optional[Dict] = None, caches: bool = False) -> Dict:
    """`replacing`: REFRESH ... FULL builds a new view directory and swaps the entry."""
    validate_name(name)
    t_start = time.perf_counter()
    if replacing is None and ctx.catalog.find(name) is not None:
        if if_not_exists:
            return {"view": name, "status": "exists", "maps": 0, "rows": 0, "seconds": 0.0}
        raise ViewAlreadyExists(f"Incremental view '{name}' already exists. Drop it first, or "
                                "use CREATE INCREMENTAL VIEW IF NOT EXISTS.")
    recorder = RecordingResolver(ctx.resolver())
    compiled = compile_definition(sql, recorder, depth, caches)   # all SQL errors happen here
    spec = compiled.spec
    view_id = uuid.uuid4().hex
    view_dir = ctx.layout.view_dir(view_id)
    progress = Progress(ctx.spark, f"{'rebuild' if replacing else 'create'} {name}")
    try:
        progress.__enter__()
        progress.step("checking the base tables' change data feed")
        versions = _prepare_base_tables(ctx, compiled)
        draft = _Draft(ctx, view_id, compiled)
        frames = {spec.tables[r].id: read_table(ctx.spark, ctx.store, spec.tables[r].id, v)
                  for r, v in versions.items()}
        location_of = lambda parts: recorder.refs[parts_key(parts)].id  # noqa: E731
        progress.step("resolving column types")
        output_types = _output_types(ctx, sql, frames, location_of)
        agg_types = _aggregate_types(ctx, compiled, frames, location_of)
        agg_types.update(_subquery_types(ctx, compiled, frames, location_of))
        layout = result_layout(spec, output_types) if depth != 0 else \
            dict(result_layout(spec, output_types), keys=[], hidden=[])
        source = _SnapshotSource(ctx, draft, versions)
        maps_json: Dict[str, Dict] = {}
        parts: Dict[str, DataFrame] = {}
        state_frame = None
        if depth != 0:
            for m in compiled.program.maps.values():
                schema, frame = _initial_map(ctx, m, source)
                maps_json[m.name] = schema.to_json()
                parts[m.name] = frame
                if m.name == compiled.program.view_map:
                    state_frame = frame
        parts[RESULT_PART] = _initial_result(ctx, compiled, layout, agg_types, state_frame,
                                             maps_json, sql, frames, location_of)
        # One job per map: maps can be as large as the base tables, and one packed collect
        # of all of them (fine for a batch's small deltas) would hold every map at once.
        result_rows = 0
        for i, (part, frame) in enumerate(parts.items(), 1):
            what = "the result table" if part == RESULT_PART else f"map {part}"
            progress.step(f"loading {what} ({i}/{len(parts)})")
            data = frame_arrow(frame)
            path = ctx.layout.result_table(view_id) if part == RESULT_PART \
                else ctx.layout.map_table(view_id, part)
            ctx.store.create(path, data, txn=(f"viewlet:{view_id}", 0))
            if part == RESULT_PART:
                result_rows = data.num_rows
            del data
        stats = {"seconds": {"create": time.perf_counter() - t_start},
                 "spark_jobs": progress.spark_jobs(), "result_rows_changed": result_rows,
                 "map_rows_changed": {}}
        Manifest(ctx.store, ctx.layout.manifest_table(view_id)).start(versions, stats)
        entry = Entry(view_id, "view", name, view_dir, {
            "sql": sql, "depth": depth, "refs": recorder.record(), "maps": maps_json,
            "result": layout, "agg_types": agg_types, "view_map": compiled.program.view_map,
            "table_ids": drift.table_ids(ctx, compiled.spec), "caches": caches, **(options or {}),
        })
        ctx.catalog.add(entry) if replacing is None else ctx.catalog.replace(replacing, entry)
    except BaseException:
        ctx.store.drop(view_dir)
        raise
    finally:
        progress.__exit__()
    ctx.remember(entry, compiled)
    return {"view": name, "status": "created", "maps": len(compiled.program.maps),
            "rows": result_rows, "seconds": round(time.perf_counter() - t_start, 3)}


def _prepare_base_tables(ctx, compiled: CompiledView) -> Dict[str, int]:
    versions = {}
    for rel, table in compiled.spec.tables.items():
        if not ctx.store.change_feed_enabled(table.id):
            if not ctx.auto_enable_change_feed:
                raise ViewletError(
                    f"The change data feed of {table.display} is off. Turn it on with: ALTER TABLE "
                    f"{table.display} SET TBLPROPERTIES (delta.enableChangeDataFeed = true)")
            log.warning("Turning on the change data feed of %s", table.display)
            ctx.store.enable_change_feed(table.id)
        versions[rel] = ctx.store.version(table.id)
    return versions


def _output_types(ctx, sql, frames, location_of):
    text, params = bind_tables(sql, frames, location_of)
    df = ctx.spark.sql(text, **params)
    reject_nondeterministic(df, sql)         # UDFs: what the front end cannot know
    return [(f.name, f.dataType.simpleString()) for f in df.schema.fields]


def _aggregate_types(ctx, compiled, frames, location_of) -> Dict[str, Dict[str, str]]:
    spec = compiled.spec
    if not spec.aggregates:
        return {}
    items = []
    for a in spec.aggregates:
        items.append(f"{a.sql} AS {q(a.placeholder)}")
        if a.kind == "avg":
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
    zero = COUNT_COLUMN if COUNT_COLUMN in values else VALUE
    total = sum_by_keys(union, keys, values)
    return schema, total.where(f"{q(zero)} <> 0")


def _initial_result(ctx, compiled, layout, agg_types, state_frame, maps_json, sql, frames,
                    location_of) -> DataFrame:
    if compiled.depth == 0:
        text, params = bind_tables(sql, frames, location_of)
        df = ctx.spark.sql(text, **params)
        return df.toDF(*[c["physical"] for c in layout["columns"]])
    keys = maps_json[compiled.program.view_map]["keys"]
    rows_sql = result_rows_sql(compiled.spec, layout, agg_types, keys, COUNT_COLUMN)
    if layout["global"] and state_frame is not None:
        state_frame = _global_state(ctx, state_frame, maps_json[compiled.program.view_map])
    return ctx.spark.sql(rows_sql, s=state_frame)


def _global_state(ctx, state: DataFrame, schema_json) -> DataFrame:
    """A global aggregate has one result row even over no input: pad a missing state row."""
    zeros = ", ".join(f"CAST(0 AS {t}) AS {q(c)}" for c, t in schema_json["values"].items())
    return ctx.spark.sql(f"SELECT * FROM {{s}} UNION ALL SELECT {zeros} WHERE NOT EXISTS "
                         f"(SELECT 1 FROM {{s}})", s=state)


# -- REFRESH -----------------------------------------------------------------------------
def refresh_view(ctx, name: str, max_commits: Optional[int] = None) -> Dict:
    """One batch over every base commit since the watermark (at most `max_commits` commits
    per table when given: continuous mode's back-pressure)."""
    view = ctx.load(name)
    t0 = time.perf_counter()
    manifest = view.manifest
    latest = manifest.latest()
    recovered = None
    if latest.phase == "planned":
        log.warning("View %s: batch %d was interrupted; re-running it with the same inputs",
                    name, latest.batch)
        stats = apply_batch(view, latest)
        manifest.commit(latest, stats)
        recovered = latest.batch
    last = manifest.last_committed()
    ranges = drift.batch_ranges(view, last.watermarks, max_commits)
    if all(a == b for a, b in ranges.values()):
        return {"view": name, "batch": last.batch, "changes": 0, "rows_changed": 0,
                "seconds": round(time.perf_counter() - t0, 3),
                "status": f"recovered batch {recovered}" if recovered else "up to date"}
    map_versions = {m: ctx.store.version(view.map_path(m)) for m in view.spec["maps"]}
    map_versions["__result"] = ctx.store.version(view.result_path)
    if not manifest.plan(last.batch + 1, ranges, map_versions):
        # Another refresher planned this batch first: join it (a re-run is idempotent).
        return refresh_view(ctx, name, max_commits)
    faults.point("batch.planned")
    record = BatchRecord(last.batch + 1, "planned", ranges, map_versions, {})
    stats = apply_batch(view, record)
    stats["seconds"]["total"] = time.perf_counter() - t0
    manifest.commit(record, stats)
    faults.point("batch.committed")
    return {"view": name, "batch": record.batch, "changes": sum(stats.get("delta_rows", {}).values()),
            "rows_changed": stats.get("result_rows_changed", 0),
            "seconds": round(time.perf_counter() - t0, 3), "status": "refreshed"}


def apply_batch(view: LoadedView, record: BatchRecord) -> Dict:
    """Run one batch and commit every map, each with the batch's transaction id, so that a
    re-run commits only what a crash left uncommitted."""
    with Progress(view.ctx.spark, f"refresh {view.name} batch {record.batch}") as progress:
        stats = _apply_batch(view, record, progress)
        stats["spark_jobs"] = progress.spark_jobs()
    return stats


def _apply_batch(view: LoadedView, record: BatchRecord, progress: Progress) -> Dict:
    stats: Dict = {"seconds": {}}
    ctx = view.ctx
    txn = (view.app_id, record.batch)
    if view.compiled.depth == 0:
        progress.step("recomputing the defining query")
        _recompute(view, record, txn, stats)
        return stats
    pending = run_triggers(view, record, stats, progress.step)
    progress.step(f"computing the deltas of {len(pending)} map(s)")
    t0 = time.perf_counter()
    state_name = view.spec["view_map"]
    totals: Dict[str, DataFrame] = {}
    for name, pieces in pending.items():
        schema = view.map_schema(name)
        totals[name] = sum_by_keys(union_all(pieces), schema.keys, schema.values)
    parts = dict(totals)
    if state_name in totals:
        parts[RESULT_PART] = _result_source(view, record, totals[state_name])
    collected = collect_parts(parts)          # the batch's one Spark job
    faults.point("batch.computed")
    stats["seconds"]["compute"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    meta = {"viewlet.view": view.name, "viewlet.batch": str(record.batch)}
    changed_rows = {}
    maps = [name for name in collected if name != RESULT_PART]
    for i, name in enumerate(maps, 1):
        total = collected[name]
        progress.step(f"merging map {name} ({i}/{len(maps)}, {total.num_rows} rows)")
        schema = view.map_schema(name)
        changed_rows[name] = total.num_rows
        path = view.map_path(name)
        zero = COUNT_COLUMN if name == state_name else VALUE
        if total.num_rows and not _committed(ctx, path, txn):
            ctx.store.merge_add(path, total, schema.keys, list(schema.values), zero, txn=txn,
                                metadata=meta)
            faults.point("batch.map_merged")
    result = collected.get(RESULT_PART)
    if result is not None and result.num_rows and not _committed(ctx, view.result_path, txn):
        progress.step("merging the result table")
        keys = [name for name, _ in view.spec["result"]["keys"]]
        ctx.store.merge_replace(view.result_path, result, keys, OP, txn=txn, metadata=meta)
        faults.point("batch.result_merged")
    # Groups of the result the batch rewrote (each has one 'del' row in the MERGE source).
    stats["result_rows_changed"] = 0 if result is None else \
        pc.sum(pc.equal(result.column(OP), "del")).as_py() or 0
    stats["map_rows_changed"] = changed_rows
    stats["seconds"]["merge"] = time.perf_counter() - t0
    return stats


def _committed(ctx, path, txn) -> bool:
    done = ctx.store.txn_version(path, txn[0])
    return done is not None and done >= txn[1]


def _result_source(view: LoadedView, record: BatchRecord, delta_state: DataFrame) -> DataFrame:
    """MERGE source rewriting the result rows of every group the batch touched: a 'del' row
    per touched group and the group's new rows as 'ins' rows."""
    ctx, spark = view.ctx, view.ctx.spark
    layout = view.spec["result"]
    state_name = view.spec["view_map"]
    schema = view.map_schema(state_name)
    old = read_table(spark, ctx.store, view.map_path(state_name), record.map_versions[state_name])
    on = " AND ".join(f"d.{q(k)} <=> o.{q(k)}" for k in schema.keys) or "TRUE"
    new_state = spark.sql(
        "SELECT " + ", ".join([f"d.{q(k)} AS {q(k)}" for k in schema.keys] +
                              [f"CAST(COALESCE(o.{q(c)}, 0) + d.{q(c)} AS {t}) AS {q(c)}"
                               for c, t in schema.values.items()]) +
        f" FROM {{d}} d LEFT JOIN {{o}} o ON {on}", d=delta_state, o=old)
    ins = spark.sql(result_rows_sql(view.compiled.spec, layout, view.spec["agg_types"],
                                    schema.keys, COUNT_COLUMN), s=new_state)
    ins = ins.selectExpr("*", f"'ins' AS {q(OP)}")
    key_of = {name: gi for name, gi in layout["keys"]}
    types = {c["physical"]: c["type"] for c in layout["columns"]}
    dels = []
    for col in ins.columns[:-1]:
        if col in key_of:
            typ = types.get(col) or schema.key_types[key_of[col]]
            dels.append(f"CAST({q(schema.keys[key_of[col]])} AS {typ}) AS {q(col)}")
        else:
            dels.append(f"CAST(NULL AS {types[col]}) AS {q(col)}")
    return ins.unionByName(delta_state.selectExpr(*dels, f"'del' AS {q(OP)}"))


def _recompute(view: LoadedView, record: BatchRecord, txn, stats):
    """Depth 0: evaluate the defining query over the batch's end versions, replace the rows."""
    ctx = view.ctx
    t0 = time.perf_counter()
    if _committed(ctx, view.result_path, txn):
        return
    frames = {view.table_path(r): read_table(ctx.spark, ctx.store, view.table_path(r), to)
              for r, (_, to) in record.ranges.items()}
    refs = view.spec["refs"]
    text, params = bind_tables(view.spec["sql"], frames, lambda parts: refs[parts_key(parts)]["id"])
    df = ctx.spark.sql(text, **params).toDF(*[c["physical"] for c in view.spec["result"]["columns"]])
    data = frame_arrow(df)
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
    ctx.catalog.remove(entry.id)      # first: a half-dropped view is never visible
    ctx.forget(entry.id)
    ctx.store.drop(entry.location)
    return {"view": name, "status": "dropped"}


def load_compiled(ctx, entry: Entry) -> CompiledView:
    spec = entry.spec
    return compile_definition(spec["sql"], StoredTables(spec["refs"]), spec["depth"],
                              spec.get("caches", False))
