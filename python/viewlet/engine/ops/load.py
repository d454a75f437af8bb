"""Computing a view's maps and first result at CREATE (and REFRESH ... FULL, and a new
query's maps): in the driver, from Spark in few jobs, or on the executors (batch/policy.py
`for_load` says where).

In the driver (`local_maps`): the maps are the staged load program's batch plan over the
base tables at their load versions (compiler/staged_load.py: in round 0 each map := its
definition, in later rounds maps computed from one relation joined with maps of earlier
rounds, as that relation's trigger computes them; a phase per round), run by the local
target (DuckDB over Arrow, with Spark's types and rounding) when the base tables are within
spark.viewlet.local.maxInputRows and every definition has an exact local translation. No
Spark job and no JVM memory: a six-way join's maps at SF 0.01 (1.5 million rows) used to be
collected into a 1g driver heap, which they outgrew.

From Spark (`collect`), otherwise: every map is a Spark query over the base tables at their
load versions. Collected one query at a time, a wide join's dozens of maps cost a Spark job
each, and the jobs' fixed cost was most of a CREATE (TPC-H Q8's 76 maps: about 40 of its 55
seconds on a 2-core machine, at a scale where each map has a few hundred rows). When the base
tables are small, the maps are collected together: one query whose rows carry their map's
tag, each map's columns in packed columns shared by type (as a batch's blocks are,
plan/batch.py). Larger bases keep one job per map, so the driver never holds more than one
large map at a time.

On the executors (`executor_maps`, `create_map`, `create_result`): written into the tables'
directories by Spark and committed by the driver, for base tables too large to pass through
it. Maps the local typer types are computed as the load program's batch plan on the
distributed target, every phase one Spark query whose blocks share the base tables' scans and
joins and sum their rows by key: TPC-H Q1's map reads lineitem once, where one query per
value column read it once per column (66 million rows read at SF 1, 6 million now). A map
that cannot be typed so is computed by its own queries (`initial_map`, typed by Spark's
analyzer). The maps are written two at a time (`side_by_side`), each sorted in as many
partitions as the files it fills (`create_map`).
"""
from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.util import inheritable_thread_target
from pyspark.sql import DataFrame, functions as F

from ...compiler.staged_load import MapLoad, load_order, load_rounds, staged_load
from ...frontend.spec import COUNT_COLUMN
from ...plan.batch import BatchPlan, build_plan
from ...plan.definitions import definition_types, spark_type_name
from ...plan.local import types as T
from ...plan.lower import AtomSource, SqlBuilder, lower_query, q
from ..batch.distributed import DistributedTarget
from ..batch.leaves import typed_columns
from ..batch.local import LocalTarget
from ..batch.result_sql import multiset_params, result_rows_sql
from ..batch.spark import sum_by_keys
from ..batch.target import run_phases
from ..maintain.maps import rows_per_file
from ..spark.files import timestamps_as_micros, write_into
from ..spark.io import arrow_schema, frame_arrow, read_table, spark_schema, union_all
from ..state.definition import MapSchema, ViewDefinition
from ..state.manifest import BatchRecord, Txn
from ..state.program import CompiledView, normalize_value_type, relation_columns
from ..state.retention import INTERNAL_TABLE_PROPERTIES
from ..state.stats import BatchStats
from ..state.tables import bind_tables
from .bases import relation_rows

#: the maps are collected in one Spark job when the base tables hold at most this many rows
PACK_BELOW_ROWS = 1_000_000
TAG = "__viewlet_map"


class SnapshotSource(AtomSource):
    """Atoms read base tables at fixed versions (the initial load of every map of the view
    `compiled`)."""

    def __init__(self, ctx, compiled: CompiledView, versions: Dict[str, int]):
        self.ctx, self.compiled, self.versions = ctx, compiled, versions
        self._columns = relation_columns(compiled.program)
        self._frames = {}

    def relation(self, relation):
        if relation not in self._frames:
            frame = read_table(self.ctx.spark, self.ctx.store,
                               self.compiled.spec.tables[relation].id, self.versions[relation],
                               self._columns.get(relation, []))
            # Every map joins some of the same tables: read each once, keep its columns.
            self._frames[relation] = frame.persist(StorageLevel.MEMORY_AND_DISK)
        return self._frames[relation]

    def release(self):
        for frame in self._frames.values():
            frame.unpersist()
        self._frames.clear()


def initial_map(ctx, m, source: SnapshotSource) -> Tuple[MapSchema, DataFrame]:
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


def relation_types(compiled: CompiledView) -> Dict[str, List[Tuple[str, T.SparkType]]]:
    """The Spark types of the base columns each relation contributes to the view's program
    (what typed_map types definitions over)."""
    return {rel: typed_columns(compiled.spec.tables[rel], names)
            for rel, names in relation_columns(compiled.program).items()}


def typed_map(m, relations: Dict[str, List[Tuple[str, T.SparkType]]], ansi: bool) -> MapSchema:
    """A map's physical schema as Spark would decide it (initial_map), typed without Spark
    by the local target's typer (plan/definitions.py) over `relations` (relation_types): a
    wide join's dozens of maps cost a Spark analysis each otherwise. Raises NotLocal when a
    definition cannot be typed so."""
    keys = [f"k{i}" for i in range(len(m.keys))]
    key_types: List[str] = []
    values: Dict[str, str] = {}
    for col, query in m.values.items():
        types = dict(definition_types(query, keys, col, relations, ansi))
        key_types = key_types or [spark_type_name(types[k]) for k in keys]
        values[col] = normalize_value_type(spark_type_name(types[col]))
    return MapSchema(keys, key_types, values)


# -- in the driver ------------------------------------------------------------------------------
def _load_record(versions: Dict[str, int]) -> BatchRecord:
    """The load's batch record: every base table read at its load version."""
    return BatchRecord(-1, "planned", {rel: (v, v) for rel, v in versions.items()}, {}, {})


def local_maps(view, versions: Dict[str, int]) -> Dict[str, pa.Table]:
    """Every map's rows at the base tables' `versions`, computed by the local target.
    `view`: a view whose compiled program is the load program (load_compiled) and whose
    definition holds the maps' schemas. Raises what the local target raises when it
    cannot (batch/local.py LOCAL_FAILURES): the caller loads on Spark then."""
    plan = _load_plan(view)
    record = _load_record(versions)
    with LocalTarget(view, record, {}, summed=True) as target:
        rows = run_phases(view, plan, target, BatchStats())
    out = {}
    for name in view.compiled.program.maps:
        schema = view.map_arrow_schema(name)
        table = rows.get(name, schema.empty_table())
        if table.num_rows:       # a row is gone when its support (or every column) sums to 0
            zero = view.zero_columns(name)
            kept = functools.reduce(pc.or_, [pc.not_equal(table.column(c), 0) for c in zero])
            if kept.null_count or not pc.all(kept).as_py():    # a copy only when one goes
                table = table.filter(kept)
        out[name] = table
    return out


class MapFrame(NamedTuple):
    """A map's rows computed by the executors, and at most how many they are."""
    rows: DataFrame
    at_most: int


@contextmanager
def executor_maps(view, versions: Dict[str, int], base_rows: int) -> Iterator[Dict[str, MapFrame]]:
    """Every map's rows at the base tables' `versions` as DataFrames the executors compute,
    valid inside the block: the load program's batch plan (as `local_maps`), one Spark query
    per phase whose blocks share the scans and joins of the base tables and sum their rows by
    key (a map's value columns over one join are one block), staged once as Parquet.
    `view`: as for local_maps; `base_rows` sizes the shuffles."""
    plan = _load_plan(view)
    record = _load_record(versions)
    with DistributedTarget(view, record, base_rows, summed=True) as target:
        target.bind({})
        totals = run_phases(view, plan, target, BatchStats(), timed=False)
        out = {}
        for name in view.compiled.program.maps:
            frame = totals.get(name)
            if frame is None:
                frame = target.spark.createDataFrame([], view.map_schema(name).struct())
            # a row is gone when its support (or every column) sums to 0 (as local_maps)
            kept = frame.where(" OR ".join(f"{q(c)} <> 0" for c in view.zero_columns(name)))
            out[name] = MapFrame(kept, target.rows_bound(name))
        yield out


def load_compiled(compiled: CompiledView, names: Sequence[str],
                  rows: Optional[Dict[str, int]] = None) -> CompiledView:
    """`compiled` with the staged load program of its maps `names` (local_maps' view;
    compiler/staged_load.py); `rows`: each relation's rows, for its choices."""
    return CompiledView(compiled.spec, staged_load(compiled.program, list(names), rows),
                        compiled.depth)


def load_order_now(view) -> List[MapLoad]:
    """How a load of every map of the view (REFRESH ... FULL) computes each, with its base
    tables' rows at their latest versions (EXPLAIN; CREATE chose alike at its versions)."""
    program, store = view.compiled.program, view.ctx.store
    versions = {rel: store.version(view.table_path(rel)) for rel in program.relations()}
    return load_order(program, list(program.maps),
                      relation_rows(view.ctx, view.compiled, versions))


def _load_plan(view) -> BatchPlan:
    """The batch plan of a load program: its rounds in order, every map empty at the start."""
    rounds = load_rounds(view.compiled.program)
    return build_plan(view, rounds, rounds, fresh=True)


# -- from Spark -------------------------------------------------------------------------------
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


def staged(ctx, data: Dict[str, pa.Table], scratch: str) -> Dict[str, DataFrame]:
    """Rows held on the driver as DataFrames over Parquet files in `scratch`."""
    read = {}
    for name, rows in data.items():
        location = ctx.store.write_file(f"{scratch}/{name}.parquet", rows)
        read[name] = ctx.spark.read.schema(spark_schema(rows.schema)).parquet(location)
    return read


def initial_result(ctx, compiled: CompiledView, definition: ViewDefinition,
                   read: Dict[str, DataFrame], frames, location_of) -> DataFrame:
    """The rows of the view's first result (the inner query's, for a view with window
    functions): `read`: the view state and its multisets just loaded, as DataFrames."""
    layout = definition.state_layout
    if compiled.depth == 0:
        text, params = bind_tables(definition.sql, frames, location_of)
        df = ctx.spark.sql(text, **params)
        return df.toDF(*layout.physical)
    # From the view state and multisets just loaded, not by aggregating the tables again.
    state = definition.maps[compiled.program.view_map]
    rows_sql = result_rows_sql(compiled.spec, layout, definition.agg_types, state.keys,
                               COUNT_COLUMN, {m: definition.maps[m].keys
                                              for m in multiset_params(compiled.spec)})
    state_frame = read[compiled.program.view_map]
    if layout.is_global:
        state_frame = _global_state(ctx, state_frame, state)
    return ctx.spark.sql(rows_sql, s=state_frame, **{
        param: read[m] for m, param in multiset_params(compiled.spec).items()})


def _global_state(ctx, state: DataFrame, schema: MapSchema) -> DataFrame:
    """A global aggregate has one result row even over no input: pad a missing state row."""
    zeros = ", ".join(f"CAST(0 AS {t}) AS {q(c)}" for c, t in schema.values.items())
    return ctx.spark.sql(f"SELECT * FROM {{s}} UNION ALL SELECT {zeros} WHERE NOT EXISTS "
                         f"(SELECT 1 FROM {{s}})", s=state)


# -- on the executors -------------------------------------------------------------------------
#: maps the executors write at once: a map's write is a few short Spark jobs (its sum, the
#: sort's sample, the write) and a commit in the driver, which leave the executors idle
#: between them when maps are written one by one
MAP_WRITERS = 2


def side_by_side(spark, write: Callable[[str], object], names: Sequence[str]) -> None:
    """`write(name)` for every name, up to MAP_WRITERS at once. Each thread's Spark jobs
    carry the calling thread's job group and description (cancelled with the statement,
    shown by its progress); the first failure is raised once every write has ended."""
    if len(names) < 2:
        for name in names:
            write(name)
        return
    with ThreadPoolExecutor(MAP_WRITERS, thread_name_prefix="viewlet-map-writer") as pool:
        futures = [pool.submit(inheritable_thread_target(spark)(write), name)
                   for name in names]
    for future in futures:
        future.result()


def create_map(ctx, path: str, frame: DataFrame, schema: MapSchema, arrow: pa.Schema, txn: Txn,
               base_rows: int, rows: Optional[int] = None) -> int:
    """A map's table holding `frame` (its keys then values), written by the executors in
    cluster order, in files sized as for a map of `base_rows` rows; its rows. `rows`: at
    most the frame's rows, when known: the sort then runs in as many partitions as the
    files it writes (one for a small map: no sample, one task), not in the session's."""
    keys, cluster = schema.keys, schema.cluster
    per_file = rows_per_file(min(base_rows, 1 << 32))
    if keys:
        order = [F.col(q(keys[j])).asc_nulls_first() for j in cluster]
        if rows is None:
            frame = frame.orderBy(*order)
        elif rows <= per_file:
            frame = frame.coalesce(1).sortWithinPartitions(*order)
        else:
            frame = frame.repartitionByRange(-(-rows // per_file), *order) \
                .sortWithinPartitions(*order)
    with timestamps_as_micros(frame.sparkSession):
        files = write_into(ctx.store, frame, path, "load", per_file)
    ctx.store.create_from_files(path, arrow, files, txn, properties=INTERNAL_TABLE_PROPERTIES)
    return sum(f.rows for f in files)


def create_result(ctx, path: str, frame: DataFrame, txn: Txn, properties: Dict[str, str]) -> int:
    """The view's result table holding `frame`, written by the executors; its rows."""
    with timestamps_as_micros(frame.sparkSession):
        files = write_into(ctx.store, frame, path, "load")
    ctx.store.create_from_files(path, arrow_schema(frame.schema), files, txn,
                                properties=properties)
    return sum(f.rows for f in files)
