"""The Spark target's phases in one Spark job: one task runs the local target's DuckDB
queries of a batch's phases, in order (batch/in_task.py), and sums what later phases read of
earlier phases' map deltas itself, so a batch of several phases is one job, not one per
phase. Rows the driver holds (the batch's changes, earlier phases' deltas, the rows lookups
kept) reach it as one broadcast of Arrow streams; leaves held in files (relations, whole
maps, most of a map's files) it reads itself when they are plain local Parquet files and the
master is local, and otherwise (an object store, deletion vectors, partition columns) Spark
reads them into one packed stream, the task's input. A leaf that several phases read is
sent once.

Spark's own plan of a phase ran a job per broadcast and re-evaluated shared subqueries
wherever they were referenced: a TPC-H Q20 batch at SF 0.1 took 41 jobs. A phase without an
exact DuckDB translation, or a task that fails (an overflow, a division by zero under ANSI
mode, executors without DuckDB), runs another way (batch/spark.py: phase by phase, then as
Spark SQL, which gives Spark's own result or error); executors without DuckDB are
remembered for the Spark application.
"""
from __future__ import annotations

import functools
import logging
from typing import Dict, List, Optional, Sequence, Tuple

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructField, StructType, _parse_datatype_string

from ...plan.batch import LEAF_PREFIX, TAG, Leaf, Phase
from ...plan.local import types as T
from ...plan.local.types import NotLocal
from ...plan.lower import q
from ..runtime import cancel
from ..spark.io import arrow_schema, snapshot_frame, spark_schema
from ..state.settings import parse_bytes
from . import in_task
from .in_task import CHUNK, ERROR, LEAF, PHASE, FileLeaf, LeafLayout, PhaseStep, TaskQuery
from .leaves import SparkLeaves, leaf_columns, typed_rows
from .local import local_sql
from .target import member_columns, sharing_rows, summed_sql

log = logging.getLogger("viewlet")

#: Spark applications whose executors cannot run a phase's task (no DuckDB), and why
_UNABLE: Dict[str, str] = {}


def local_master(spark: SparkSession) -> bool:
    """Spark runs in this machine (local, local-cluster): its tasks share the driver's file
    system and cores."""
    return spark.sparkContext.master.startswith("local")


def _ship_by_value() -> None:
    """Executors unpickle the task's function from its bytes, without importing Viewlet."""
    from pyspark import cloudpickle
    cloudpickle.register_pickle_by_value(in_task)


_ship_by_value()


def run_in_task(view, spark: SparkSession, phases: Sequence[Phase],
                leaves: SparkLeaves) -> Optional[List[pa.Table]]:
    """The packed rows of each of `phases` (a batch's, in order, or some of them) computed
    in one task, or None when they must run another way (said in the log)."""
    app = spark.sparkContext.applicationId
    if app in _UNABLE:
        return None
    try:
        sqls = [local_sql(view, phase) for phase in phases]
    except NotLocal:
        return None
    steps, inputs = _steps(view, phases, sqls)
    shipped, files, streamed = _inputs(view, spark, inputs, leaves)
    packed, layouts = _packed_leaves(view, spark, streamed)
    payload = spark.sparkContext.broadcast(shipped) if shipped else None
    query = TaskQuery(tuple(steps), tuple(layouts), tuple(files), payload, _threads(spark),
                      _memory(view, spark))
    try:
        rows = packed.coalesce(1).mapInArrow(functools.partial(in_task.run, query),
                                             spark_schema(in_task.RESULT)).toArrow()
    except Exception as e:            # noqa: BLE001 - a failed job: Spark SQL gives the answer
        cancel.check()
        _failed(app, _missing_module(str(e)) or (str(e).splitlines() or [type(e).__name__])[0])
        return None
    finally:
        if payload is not None:
            payload.destroy()
    errors = rows.column(ERROR).drop_null()
    if len(errors):
        _failed(app, errors[0].as_py())
        return None
    return _phase_rows(rows, [step.result for step in steps])


def _phase_rows(rows: pa.Table, schemas: List[pa.Schema]) -> List[pa.Table]:
    """Each phase's packed rows, read from the task's chunks (in the order it wrote them)."""
    chunks: List[List[pa.Table]] = [[] for _ in schemas]
    for phase, chunk in zip(rows.column(PHASE).to_pylist(), rows.column(CHUNK)):
        chunks[phase].append(pa.ipc.open_stream(chunk.as_buffer()).read_all())   # no copy
    return [pa.concat_tables(parts) if parts else schema.empty_table()
            for parts, schema in zip(chunks, schemas)]


def _steps(view, phases: Sequence[Phase], sqls: Sequence[str]
           ) -> Tuple[List[PhaseStep], Dict[Leaf, str]]:
    """The phases as the task runs them, and the input tables they read ({leaf: table}, a
    leaf that several phases read once). A `pending` leaf that an earlier phase of the task
    wrote reads the task's sum of it (as run_phases carries it on the driver: every piece the
    trigger's phases wrote of the map so far); the others are inputs."""
    wanted = {_pending_key(leaf) for phase in phases for leaf in phase.leaves.values()
              if leaf.kind == "pending"}
    inputs: Dict[Leaf, str] = {}
    pieces: Dict[Tuple[str, str], List[str]] = {}    # (map, trigger) -> SELECTs of its rows
    summed: Dict[Tuple[str, str], str] = {}          # ... -> the table of their sum
    steps = []
    for index, (phase, sql) in enumerate(zip(phases, sqls)):
        views = []
        for name, leaf in phase.leaves.items():
            source = summed.get(_pending_key(leaf)) if leaf.kind == "pending" else None
            if source is None:
                source = inputs.setdefault(leaf, f"__viewlet_in{len(inputs)}")
            views.append(f"CREATE OR REPLACE VIEW {_dq(LEAF_PREFIX + name)} AS "
                         f"SELECT * FROM {_dq(source)}")
        rows_table, sums = f"__viewlet_rows{index}", []
        for target, selects in _map_rows(view, phase, rows_table).items():
            key = (target, phase.relations[-1])      # as run_phases keys what it carries
            pieces.setdefault(key, []).extend(selects)
            if key in wanted and index < len(phases) - 1:
                summed[key] = f"__viewlet_sum{index}_{len(sums)}"
                sums.append(f"CREATE TABLE {_dq(summed[key])} AS "
                            f"{_sum_sql(view, target, pieces[key])}")
        steps.append(PhaseStep(tuple(views), sql, _result_schema(phase), rows_table,
                               tuple(sums)))
    return steps, inputs


def _pending_key(leaf: Leaf) -> Tuple[str, str]:
    """The (map, trigger) whose delta a `pending` leaf reads (LeafReader.pending_rows)."""
    return leaf.name, leaf.detail[0]


def _map_rows(view, phase: Phase, rows_table: str) -> Dict[str, List[str]]:
    """Per map the phase writes, DuckDB SELECTs of its rows in the phase's packed rows
    (table `rows_table`) as map rows, typed as the map (ArrowTarget.split in SQL)."""
    out: Dict[str, List[str]] = {}
    for block in phase.blocks:
        for members in sharing_rows(block):
            keys, values = member_columns(view, block, members)
            columns = [f"CAST({_dq(s.packed) if s.packed is not None else 'NULL'} AS "
                       f"{T.parse(s.type).duck_sql()}) AS {_dq(s.column)}"
                       for s in keys + values]
            out.setdefault(members[0].target, []).append(
                f"SELECT {', '.join(columns)} FROM {_dq(rows_table)} "
                f"WHERE {_dq(TAG)} = {int(block.tag)}")
    return out


def _sum_sql(view, target: str, selects: List[str]) -> str:
    """Map `target`'s rows of `selects` summed by its keys (`summed_sql`, in DuckDB)."""
    schema = view.map_schema(target)
    types = {c: T.parse(t).duck_sql() for c, t in schema.values.items()}
    return summed_sql(f"({' UNION ALL '.join(selects)}) AS pieces", schema.keys, types, _dq)


def _dq(name: str) -> str:
    """A DuckDB identifier."""
    return '"' + name.replace('"', '""') + '"'


def _inputs(view, spark: SparkSession, inputs: Dict[Leaf, str], leaves: SparkLeaves
            ) -> Tuple[Dict[str, bytes], List[FileLeaf], Dict[str, Tuple[Leaf, DataFrame]]]:
    """How each input table reaches the task: ({table: Arrow stream} of the rows the driver
    holds, [FileLeaf] of the local files the task reads, {table: (leaf, DataFrame)} of the
    files Spark reads)."""
    shipped, files, streamed = {}, [], {}
    local = local_master(spark)
    for leaf, table in inputs.items():
        rows = leaves.held(leaf)
        if rows is not None:
            shipped[table] = in_task.ipc_stream(typed_rows(view, leaf, rows))
            continue
        snap, columns = leaves.files_of(leaf)
        paths = view.ctx.store.local_parquet(snap) if local else None
        if paths is None:
            streamed[table] = (leaf, snapshot_frame(spark, snap, columns))
        else:
            files.append(FileLeaf(table, tuple(paths),
                                  tuple((c, t.arrow()) for c, t in leaf_columns(view, leaf))))
    return shipped, files, streamed


def _failed(app: str, reason: str) -> None:
    """Say why a phase runs as Spark SQL after its task failed; executors lacking a module
    are remembered for the application."""
    if "No module named" in reason:
        _UNABLE[app] = reason
        log.warning("Viewlet: the executors' Python cannot run the Spark target's phases in a "
                    "task (%s); they run as Spark SQL from now on. Install pyarrow and duckdb "
                    "for the executors' Python (PYSPARK_PYTHON) to run them in one job.", reason)
    else:
        log.info("Viewlet: the Spark target's task stopped (%s); its phases run "
                 "another way (one by one, or as Spark SQL)", reason)


def _missing_module(text: str) -> Optional[str]:
    """The `No module named ...` line of a failed job's error, if it holds one."""
    return next((line.strip() for line in text.splitlines() if "No module named" in line), None)


def _packed_leaves(view, spark: SparkSession, streamed: Dict[str, Tuple[Leaf, DataFrame]]
                   ) -> Tuple[DataFrame, List[LeafLayout]]:
    """The rows of the input tables Spark reads (`streamed`: {table: (leaf, DataFrame)}) in
    one DataFrame: LEAF tags each row's table, and a table's n-th column of a Spark type
    sits in that type's n-th packed column (the width is what the widest table needs of
    each type). One marker row (LEAF -1) makes the task run when every input is empty."""
    typed = {table: leaf_columns(view, leaf) for table, (leaf, _) in streamed.items()}
    slots: Dict[str, List[str]] = {}           # Spark type -> its packed columns
    layouts, placed, frames = [], [], {}
    for tag, (table, columns) in enumerate(sorted(typed.items())):
        used: Dict[str, int] = {}
        cols = []
        for column, type_ in columns:
            spark_type = type_.spark_sql()
            n = used.get(spark_type, 0)
            used[spark_type] = n + 1
            names = slots.setdefault(spark_type, [])
            if n == len(names):
                names.append(f"s{list(slots).index(spark_type)}_{n}")
            cols.append((column, names[n], type_.arrow()))
        layouts.append(LeafLayout(table, tag, tuple(cols)))
        placed.append((f"t{tag}", tag, cols))
        frames[f"t{tag}"] = streamed[table][1]
    types = {slot: t for t, names in slots.items() for slot in names}
    selects = [_packed(f"{{{name}}}", tag, {slot: column for column, slot, _ in cols}, types)
               for name, tag, cols in placed]
    selects.append(_packed("(SELECT 1)", -1, {}, types))
    # one statement: a DataFrame call per leaf cost as much as the task's work
    return spark.sql(" UNION ALL ".join(selects), **frames), layouts


def _packed(source: str, tag: int, columns: Dict[str, str], types: Dict[str, str]) -> str:
    """A SELECT of `source`'s rows in the packed columns `types` (slot -> Spark type):
    `columns` (slot -> the source's column) filled, the others NULL (the text is a format
    string for spark.sql: braces doubled)."""
    items = [f"CAST({tag} AS INT) AS {LEAF}"] + [
        f"CAST({_quoted(columns[slot]) if slot in columns else 'NULL'} AS {t}) AS {slot}"
        for slot, t in types.items()]
    return f"SELECT {', '.join(items)} FROM {source}"


def _quoted(name: str) -> str:
    """A column name in a spark.sql format string: backquoted, braces doubled."""
    return q(name).replace("{", "{{").replace("}", "}}")


def _result_fields(phase: Phase) -> List[StructField]:
    return list(_fields(((TAG, "int"),) + tuple(phase.columns())))


@functools.lru_cache(maxsize=1024)
def _fields(columns: Tuple[Tuple[str, str], ...]) -> Tuple[StructField, ...]:
    """StructFields of (name, Spark type) pairs: each type parsed once (a JVM call each)."""
    return tuple(StructField(name, _parse_datatype_string(t)) for name, t in columns)


def _result_schema(phase: Phase) -> pa.Schema:
    return arrow_schema(StructType(_result_fields(phase)))


def _threads(spark: SparkSession) -> int:
    """DuckDB's threads in the task: the executor's cores (a local master's), 0 where unset
    (the task takes its machine's)."""
    cores = spark.conf.get("spark.executor.cores", None)
    if cores:
        return int(cores)
    if local_master(spark):
        return max(1, spark.sparkContext.defaultParallelism)
    return 0


def _memory(view, spark: SparkSession) -> Optional[int]:
    """What DuckDB may use in the task before spilling: the executors' Python memory when
    set (spark.executor.pyspark.memory); on a local master, what the driver's DuckDB may
    use (idle while Spark runs the batch); else DuckDB's default."""
    raw = spark.conf.get("spark.executor.pyspark.memory", None)
    if raw:
        return parse_bytes(raw, "spark.executor.pyspark.memory")
    if local_master(spark):
        return view.settings.engine_memory
    return None
