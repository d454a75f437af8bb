"""A phase of the Spark target in one Spark job: one task runs the local target's DuckDB
query over the phase's leaves (batch/in_task.py). Rows the driver holds (the batch's changes,
earlier phases' deltas, the rows lookups kept) reach it as one broadcast of Arrow streams;
leaves held in files (relations, whole maps, most of a map's files) it reads itself when they
are plain local Parquet files and the master is local, and otherwise (an object store,
deletion vectors, partition columns) Spark reads them into one packed stream, the task's
input.

Spark's own plan of a phase ran a job per broadcast and re-evaluated shared subqueries
wherever they were referenced: a TPC-H Q20 batch at SF 0.1 took 41 jobs. A phase without an
exact DuckDB translation, or whose task fails (an overflow, a division by zero under ANSI
mode, executors without DuckDB), runs as Spark SQL, which gives Spark's own result or error;
executors without DuckDB are remembered for the Spark application.
"""
from __future__ import annotations

import functools
import logging
from typing import Dict, List, Optional, Tuple

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StringType, StructField, StructType, _parse_datatype_string

from ...plan.batch import LEAF_PREFIX, TAG, Leaf, Phase
from ...plan.local.types import NotLocal
from ...plan.lower import q
from ..runtime import cancel
from ..spark.io import arrow_schema, snapshot_frame
from ..state.settings import parse_bytes
from . import in_task
from .in_task import ERROR, LEAF, FileLeaf, LeafLayout, TaskQuery
from .leaves import SparkLeaves, leaf_columns, typed_rows
from .local import local_sql

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


def run_in_task(view, spark: SparkSession, phase: Phase,
                leaves: SparkLeaves) -> Optional[pa.Table]:
    """The phase's packed rows computed in one task, or None when it must run as Spark SQL
    (said in the log)."""
    app = spark.sparkContext.applicationId
    if app in _UNABLE:
        return None
    try:
        sql = local_sql(view, phase)
    except NotLocal:
        return None
    shipped, files, streamed = _inputs(view, spark, phase, leaves)
    packed, layouts = _packed_leaves(view, spark, {n: leaf for n, (leaf, _) in streamed.items()},
                                     {n: frame for n, (_, frame) in streamed.items()})
    payload = spark.sparkContext.broadcast(shipped) if shipped else None
    query = TaskQuery(sql, tuple(layouts), tuple(files), payload, _result_schema(phase),
                      _threads(spark), _memory(view, spark))
    out = StructType(_result_fields(phase) + [StructField(ERROR, StringType())])
    try:
        rows = packed.coalesce(1).mapInArrow(functools.partial(in_task.run, query), out).toArrow()
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
    return rows.drop_columns([ERROR])


def _inputs(view, spark: SparkSession, phase: Phase, leaves: SparkLeaves
            ) -> Tuple[Dict[str, bytes], List[FileLeaf], Dict[str, Tuple[Leaf, DataFrame]]]:
    """How each leaf reaches the task: ({table: Arrow stream} of the rows the driver holds,
    [FileLeaf] of the local files the task reads, {leaf name: (leaf, DataFrame)} of the
    files Spark reads)."""
    shipped, files, streamed = {}, [], {}
    local = local_master(spark)
    for name, leaf in phase.leaves.items():
        rows = leaves.held(leaf)
        if rows is not None:
            shipped[LEAF_PREFIX + name] = _stream(typed_rows(view, leaf, rows))
            continue
        snap, columns = leaves.files_of(leaf)
        paths = view.ctx.store.local_parquet(snap) if local else None
        if paths is None:
            streamed[name] = (leaf, snapshot_frame(spark, snap, columns))
        else:
            files.append(FileLeaf(LEAF_PREFIX + name, tuple(paths),
                                  tuple((c, t.arrow()) for c, t in leaf_columns(view, leaf))))
    return shipped, files, streamed


def _stream(rows: pa.Table) -> bytes:
    """`rows` as an Arrow IPC stream."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, rows.schema) as writer:
        writer.write_table(rows)
    return sink.getvalue().to_pybytes()


def _failed(app: str, reason: str) -> None:
    """Say why a phase runs as Spark SQL after its task failed; executors lacking a module
    are remembered for the application."""
    if "No module named" in reason:
        _UNABLE[app] = reason
        log.warning("Viewlet: the executors' Python cannot run the Spark target's phases in a "
                    "task (%s); they run as Spark SQL from now on. Install pyarrow and duckdb "
                    "for the executors' Python (PYSPARK_PYTHON) to run them in one job.", reason)
    else:
        log.info("Viewlet: a phase's task stopped (%s); running it as Spark SQL", reason)


def _missing_module(text: str) -> Optional[str]:
    """The `No module named ...` line of a failed job's error, if it holds one."""
    return next((line.strip() for line in text.splitlines() if "No module named" in line), None)


def _packed_leaves(view, spark: SparkSession, leaves: Dict[str, Leaf],
                   frames: Dict[str, DataFrame]) -> Tuple[DataFrame, List[LeafLayout]]:
    """The rows of `leaves` (read as `frames`) in one DataFrame: LEAF tags each row's leaf, and a leaf's n-th column
    of a Spark type sits in that type's n-th packed column (the width is what the widest
    leaf needs of each type). One marker row (LEAF -1) makes the task run when every leaf
    is empty."""
    typed = {name: leaf_columns(view, leaf) for name, leaf in leaves.items()}
    slots: Dict[str, List[str]] = {}           # Spark type -> its packed columns
    layouts, placed = [], []
    for tag, (name, columns) in enumerate(sorted(typed.items())):
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
        layouts.append(LeafLayout(LEAF_PREFIX + name, tag, tuple(cols)))
        placed.append((name, tag, cols))
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
