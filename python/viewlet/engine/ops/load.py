"""Computing a view's maps at CREATE (and REFRESH ... FULL): in the driver, or from Spark in
few jobs.

In the driver (`local_maps`): every map's definition is one statement of a batch plan over
the base tables at their load versions (a one-trigger program: each map := its definition),
run by the local target (DuckDB over Arrow, with Spark's types and rounding: engine/targets.py)
when the base tables are within spark.viewlet.local.maxInputRows and every definition has an
exact local translation. No Spark job and no JVM memory: a six-way join's maps at SF 0.01
(1.5 million rows) used to be collected into a 1g driver heap, which they outgrew.

From Spark (`collect`), otherwise:

Every map is a Spark query over the base tables at their load versions. Collected one query
at a time, a wide join's dozens of maps cost a Spark job each, and the jobs' fixed cost was
most of a CREATE (TPC-H Q8's 76 maps: about 40 of its 55 seconds on a 2-core machine, at a
scale where each map has a few hundred rows). When the base tables are small, the maps are
collected together: one query whose rows carry their map's tag, each map's columns in packed
columns shared by type (as a batch's blocks are, plan/batch.py). Larger bases keep one job
per map, so the driver never holds more than one large map at a time.
"""
from __future__ import annotations

import functools
import logging
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import DataFrame, functions as F

from ...compiler.program import Program, Statement
from ...frontend.spec import COUNT_COLUMN
from ...plan.lower import AtomSource, SqlBuilder, lower_query, q
from ..batch.local import LOCAL_FAILURES, failure_text, run_local
from ..batch.result_sql import multiset_params, result_rows_sql
from ..batch.spark import sum_by_keys
from ..local.executor import unavailable
from ..maintain.maps import rows_per_file
from ..spark.files import timestamps_as_micros, write_into
from ..spark.io import arrow_schema, frame_arrow, read_table, spark_schema, union_all
from ..state.catalog import Entry
from ..state.manifest import BatchRecord
from ..state.program import CompiledView, normalize_value_type, relation_columns
from ..state.settings import DISTRIBUTED, MAX_ROWS_CONF, SPARK, max_rows, setting
from ..state.tables import bind_tables
from ..state.view import LoadedView, MapSchema

#: the pseudo relation of the load program's one trigger
LOAD = "__viewlet_load"

#: the maps are collected in one Spark job when the base tables hold at most this many rows
PACK_BELOW_ROWS = 1_000_000
TAG = "__viewlet_map"

log = logging.getLogger("viewlet")


def collect(frames: Dict[str, object], schemas: Dict[str, pa.Schema], base_rows: int,
            step: Callable[[str], None] = lambda text: None) -> Iterator[Tuple[str, pa.Table]]:
    """(map, its rows as Arrow) for every map of `frames` (DataFrames whose columns are the
    map's keys then values); `schemas`: each map's Arrow schema. `step(text)` before each
    Spark job (progress.py; the result table is the last of `len(frames) + 1` parts)."""
    names = list(frames)
    if len(names) < 2 or base_rows > PACK_BELOW_ROWS:
        for i, name in enumerate(names, 1):
            step(f"loading map {name} ({i}/{len(names) + 1})")
            yield name, frame_arrow(frames[name]).select(schemas[name].names).cast(schemas[name])
        return
    step(f"loading the {len(names)} maps in one Spark job (1-{len(names)}/{len(names) + 1})")
    slots = _slots(names, schemas)
    columns: Dict[str, str] = {}
    for name in names:
        for field in schemas[name]:
            columns.setdefault(slots[name][field.name], _spark_type(frames[name], field.name))
    parts = []
    for i, name in enumerate(names):
        own = {slots[name][f.name]: f.name for f in schemas[name]}
        items = [f"CAST({i} AS INT) AS {TAG}"] + [
            f"CAST({q(own[c])} AS {t}) AS {q(c)}" if c in own else f"CAST(NULL AS {t}) AS {q(c)}"
            for c, t in columns.items()]
        parts.append(frames[name].selectExpr(*items))
    packed = frame_arrow(union_all(parts))
    tags = packed.column(TAG)
    for i, name in enumerate(names):
        rows = packed.filter(pc.equal(tags, i))
        cols = {f.name: rows.column(slots[name][f.name]).cast(f.type) for f in schemas[name]}
        yield name, pa.table(cols, schema=schemas[name])


def _slots(names: List[str], schemas: Dict[str, pa.Schema]) -> Dict[str, Dict[str, str]]:
    """Per map, per column: the packed column holding it (n-th column of a type -> that
    type's n-th packed column)."""
    out = {}
    for name in names:
        used: Dict[str, int] = {}
        out[name] = {}
        for f in schemas[name]:
            key = str(f.type)
            n = used.get(key, 0)
            used[key] = n + 1
            out[name][f.name] = "c_" + "".join(ch if ch.isalnum() else "_" for ch in key) + f"_{n}"
    return out


def _spark_type(frame, column: str) -> str:
    return frame.schema[column].dataType.simpleString()


def load_program(program: Program, names: Sequence[str]) -> Program:
    """A program with one trigger, on LOAD, whose statements set each column of the maps
    `names` to its definition (over base relations only): their load as one batch plan."""
    load = Program(program.view_map, program.depth, {n: program.maps[n] for n in names})
    for m in load.maps.values():
        for column, definition in m.values.items():
            load.add_statement(LOAD, Statement(m.name, column, definition, "reevaluate"))
    return load


def local_maps(view, versions: Dict[str, int]) -> Dict[str, pa.Table]:
    """Every map's rows at the base tables' `versions`, computed by the local target.
    `view`: a view whose compiled program is the load program (load_program) and whose
    catalog `maps` hold the maps' schemas. Raises what the local target raises when it
    cannot (LOCAL_FAILURES): the caller loads on Spark then."""
    plan = view.batch_plan((LOAD,), (LOAD,))
    record = BatchRecord(-1, "planned", {rel: (v, v) for rel, v in versions.items()},
                         {}, {})
    rows = run_local(view, plan, record, {}, {"seconds": {}})
    out = {}
    for name in view.compiled.program.maps:
        schema = view.map_arrow_schema(name)
        table = rows.get(name, schema.empty_table())
        if table.num_rows:       # a row is gone when its support (or every column) sums to 0
            zero = view.compiled.program.maps[name].zero_columns()
            table = table.filter(functools.reduce(
                pc.or_, [pc.not_equal(table.column(c), 0) for c in zero]))
        out[name] = table
    return out


class SnapshotSource(AtomSource):
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


class Draft:
    """A view being created: what LoadedView offers, before the catalog knows it."""

    def __init__(self, ctx, view_id: str, compiled: CompiledView):
        self.ctx, self.id, self.compiled = ctx, view_id, compiled
        self.columns = relation_columns(compiled.program)

    def columns_of(self, relation):
        return self.columns.get(relation, [])

    def table_path(self, relation):
        return self.compiled.spec.tables[relation].id


def local_load(ctx, name: str, view_id: str, view_dir: str, compiled: CompiledView,
                maps_json: Dict, versions: Dict[str, int], options: Optional[Dict],
                base_rows: int, parts: Dict) -> Tuple[Optional[Dict[str, pa.Table]], str]:
    """(the rows of the maps `parts` computed in the driver by the local target
    (engine/initial_load.py local_maps), None); or (None, why Spark loads them): the engine
    is 'spark' or 'distributed', the base tables hold more than
    spark.viewlet.local.maxInputRows rows, or a definition has no exact local translation."""
    draft = LoadedView(ctx, Entry(view_id, "view", name, view_dir,
                                  dict(options or {}, maps=maps_json)),
                       CompiledView(compiled.spec, load_program(
                           compiled.program, list(parts)), compiled.depth))
    mode, limit = setting(draft), max_rows(draft)
    if mode in (SPARK, DISTRIBUTED):
        return None, f"engine = '{mode}'"
    if base_rows > limit:
        return None, (f"the base tables hold about {base_rows:,} rows, more than "
                      f"{MAX_ROWS_CONF} = {limit:,}")
    missing = unavailable()
    if missing is not None:
        return None, missing
    if not parts:
        return {}, ""
    try:
        return local_maps(draft, versions), ""
    except LOCAL_FAILURES as e:
        log.info("View %s: maps loaded on Spark (the local target cannot: %s)", name,
                 failure_text(e))
        return None, f"the local target cannot run this view: {failure_text(e)}"


def initial_map(ctx, m, source):
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


def staged(ctx, data: Dict[str, pa.Table], scratch: str) -> Dict[str, DataFrame]:
    """Rows held on the driver as DataFrames over Parquet files in `scratch`."""
    read = {}
    for name, rows in data.items():
        location = ctx.store.write_file(f"{scratch}/{name}.parquet", rows)
        read[name] = ctx.spark.read.schema(spark_schema(rows.schema)).parquet(location)
    return read


def initial_result(ctx, compiled, layout, agg_types, read: Dict[str, DataFrame], maps_json,
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


def _global_state(ctx, state: DataFrame, schema_json) -> DataFrame:
    """A global aggregate has one result row even over no input: pad a missing state row."""
    zeros = ", ".join(f"CAST(0 AS {t}) AS {q(c)}" for c, t in schema_json["values"].items())
    return ctx.spark.sql(f"SELECT * FROM {{s}} UNION ALL SELECT {zeros} WHERE NOT EXISTS "
                         f"(SELECT 1 FROM {{s}})", s=state)


def create_map(ctx, path: str, frame: DataFrame, schema_json: Dict, arrow, txn,
               base_rows: int) -> int:
    """A map's table holding `frame` (its keys then values), written by the executors in
    cluster order, in files sized as for a map of `base_rows` rows; its rows."""
    keys, cluster = schema_json["keys"], schema_json["cluster"]
    if keys:
        frame = frame.orderBy(*[F.col(q(keys[j])).asc_nulls_first() for j in cluster])
    with timestamps_as_micros(frame.sparkSession):
        files = write_into(ctx.store, frame, path, "load",
                           rows_per_file(min(base_rows, 1 << 32)))
    ctx.store.create_from_files(path, arrow, files, txn)
    return sum(f.rows for f in files)


def create_result(ctx, path: str, frame: DataFrame, txn, properties: Dict[str, str]) -> int:
    """The view's result table holding `frame`, written by the executors; its rows."""
    with timestamps_as_micros(frame.sparkSession):
        files = write_into(ctx.store, frame, path, "load")
    ctx.store.create_from_files(path, arrow_schema(frame.schema), files, txn,
                                properties=properties)
    return sum(f.rows for f in files)
