"""What one Spark task runs for the Spark target (batch/task_phase.py): a batch's phases, in
order, each the local target's DuckDB query over its leaves. The leaves reach the task as a
broadcast of Arrow streams (rows the driver held), local Parquet files (read here) and the
task's input, one packed Arrow stream (files Spark read); each is an input table, and a
phase's leaf tables are views over them. What later phases read of an earlier phase's map
deltas (its `pending` leaves) is summed here, from that phase's rows, by statements the
driver wrote. The module imports only the standard library, pyarrow and DuckDB: it is
shipped to the executors by value, so they need DuckDB and pyarrow, not Viewlet itself.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Tuple

import pyarrow as pa
import pyarrow.compute as pc

#: the packed stream's column naming the input table of each row (-1: the marker row every
#: stream holds, so that the task runs even when every input is empty)
LEAF = "__viewlet_leaf"
#: the task's result: rows of phase PHASE as one Arrow IPC stream per CHUNK (a phase's
#: packed columns differ from another's); or one row whose ERROR says why the task could
#: not compute the batch, and the driver runs its phases another way
PHASE = "__viewlet_phase"
CHUNK = "__viewlet_chunk"
ERROR = "__viewlet_error"
RESULT = pa.schema([(PHASE, pa.int32()), (CHUNK, pa.binary()), (ERROR, pa.string())])
#: rows of a phase's result per chunk
CHUNK_ROWS = 1 << 16


@dataclass(frozen=True)
class LeafLayout:
    """Where input `table` sits in the packed stream: rows tagged `tag`, its column `name`
    in packed column `slot`, cast to `type` (the plan's)."""
    table: str
    tag: int
    columns: Tuple[Tuple[str, str, pa.DataType], ...]     # (name, slot, type)


@dataclass(frozen=True)
class FileLeaf:
    """Input `table` as local Parquet files the task reads itself (the executors share the
    driver's file system: a local master): its columns cast to the plan's types."""
    table: str
    paths: Tuple[str, ...]
    columns: Tuple[Tuple[str, pa.DataType], ...]


@dataclass(frozen=True)
class PhaseStep:
    """One phase as the task runs it: `views` make its leaf tables (DuckDB statements over
    the input tables and earlier phases' sums), `sql` computes its packed rows (cast to
    `result`), registered as table `rows_table` for `sums`, the statements summing what
    later phases read of its map deltas."""
    views: Tuple[str, ...]
    sql: str
    result: pa.Schema
    rows_table: str
    sums: Tuple[str, ...]


@dataclass(frozen=True)
class TaskQuery:
    """A batch's phases as the task runs them."""
    steps: Tuple[PhaseStep, ...]
    leaves: Tuple[LeafLayout, ...]    # the input tables in the packed stream
    files: Tuple[FileLeaf, ...]       # the input tables read from local files
    shipped: Optional[Any]            # a Spark broadcast: {table: Arrow IPC stream} of the
    #                                   inputs the driver held (None: none)
    threads: int                      # DuckDB's threads (0: the machine's cores)
    memory_limit: Optional[int]       # bytes DuckDB may use before it spills (None: default)


def run(query: TaskQuery, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow's function: each phase's rows in chunks, or (at the end) one ERROR row."""
    try:
        for index, rows in _compute(query, batches):
            for chunk in rows.to_batches(max_chunksize=CHUNK_ROWS) or [rows.schema.empty_table()]:
                yield _result_row(index, ipc_stream(chunk), None)
    except Exception as e:               # noqa: BLE001 - reported to the driver, which reruns
        yield _result_row(None, None, f"{type(e).__name__}: "
                                      f"{str(e).splitlines()[0] if str(e) else ''}")


def _result_row(phase: Optional[int], chunk: Optional[bytes], error: Optional[str]
                ) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([phase], pa.int32()),
                                       pa.array([chunk], pa.binary()),
                                       pa.array([error], pa.string())], schema=RESULT)


def ipc_stream(rows) -> bytes:
    """`rows` (a table or a record batch) as an Arrow IPC stream."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, rows.schema) as writer:
        writer.write(rows)
    return sink.getvalue().to_pybytes()


def _compute(query: TaskQuery, batches: Iterator[pa.RecordBatch]
             ) -> Iterator[Tuple[int, pa.Table]]:
    """(index, packed rows) of each phase, in order. The input tables are DuckDB tables the
    stream's batches are appended to as they come: DuckDB holds them within its memory limit
    and spills the rest, where a list of the batches would hold the whole input in the
    task's memory."""
    import duckdb      # on the executor: its absence is reported as the task's error
    spill = tempfile.mkdtemp(prefix="viewlet-task-duckdb-")
    config = {"threads": query.threads or max(1, os.cpu_count() or 1),
              "preserve_insertion_order": False, "temp_directory": spill}
    if query.memory_limit is not None:
        config["memory_limit"] = f"{max(1, query.memory_limit >> 20)}MiB"
    db = duckdb.connect(":memory:", config=config)
    try:
        for table, stream in (query.shipped.value if query.shipped is not None else {}).items():
            _create(db, table, pa.ipc.open_stream(pa.py_buffer(stream)).read_all())
        for leaf in query.files:
            _read_files(db, leaf)
        by_tag = {leaf.tag: leaf for leaf in query.leaves}
        for leaf in query.leaves:
            _append(db, leaf, _leaf_rows(None, leaf), create=True)
        for batch in batches:
            tags = batch.column(LEAF)
            for tag in pc.unique(tags).to_pylist():
                if tag not in by_tag:         # the marker row
                    continue
                mine = pc.equal(tags, tag)
                one = batch if pc.all(mine).as_py() else batch.filter(mine)
                _append(db, by_tag[tag], _leaf_rows(one, by_tag[tag]))
        for index, step in enumerate(query.steps):
            for statement in step.views:
                db.execute(statement)
            with warnings.catch_warnings():
                # execute() is still the quicker call for a long query (local/executor.py);
                # its Arrow result costs a copy, it warns. In here: the module ships by
                # value, its top level does not run on the executors
                warnings.filterwarnings("ignore", message="Arrow output on a DB-API result")
                result = db.execute(step.sql).to_arrow_table()
            rows = pa.table([result.column(f.name).cast(f.type) for f in step.result],
                            schema=step.result)
            if step.sums:
                db.register(step.rows_table, rows)
                for statement in step.sums:
                    db.execute(statement)
            yield index, rows
    finally:
        db.close()
        shutil.rmtree(spill, ignore_errors=True)


def _append(db, leaf: LeafLayout, rows: pa.Table, create: bool = False) -> None:
    """Append `rows` to the leaf's table (`create`: create it, of their types)."""
    _create(db, leaf.table, rows, "CREATE TABLE {} AS" if create else "INSERT INTO {}")


def _create(db, table: str, rows: pa.Table, how: str = "CREATE TABLE {} AS") -> None:
    """Table `table` of DuckDB as `rows` (`how`: or appended to)."""
    name = '"' + table.replace('"', '""') + '"'
    db.register("__viewlet_rows", rows)
    try:
        db.execute(f"{how.format(name)} SELECT * FROM __viewlet_rows")
    finally:
        db.unregister("__viewlet_rows")


def _read_files(db, leaf: FileLeaf) -> None:
    """The leaf's table of DuckDB, its files' rows appended a batch at a time. Columns are
    matched by name without case, as Spark matches them; a file without one of them (a
    column added since, a table with column mapping) stops the task, and Spark, which
    reads such tables as Delta says, runs the phase."""
    import pyarrow.parquet as pq
    schema = pa.schema(list(leaf.columns))
    _create(db, leaf.table, schema.empty_table() if leaf.columns else _unit(0))
    for path in leaf.paths:
        file = pq.ParquetFile(path)
        if not leaf.columns:
            _create(db, leaf.table, _unit(file.metadata.num_rows), "INSERT INTO {}")
            continue
        physical = {name.lower(): name for name in file.schema_arrow.names}
        missing = [c for c, _ in leaf.columns if c.lower() not in physical]
        if missing:
            raise ValueError(f"{path} has no column {missing[0]}")
        names = [physical[c.lower()] for c, _ in leaf.columns]
        for batch in file.iter_batches(batch_size=1 << 16, columns=sorted(set(names))):
            rows = pa.table([batch.column(n).cast(t) for n, (_, t) in zip(names, leaf.columns)],
                            schema=schema)
            _create(db, leaf.table, rows, "INSERT INTO {}")


def _leaf_rows(packed: Optional[pa.RecordBatch], leaf: LeafLayout) -> pa.Table:
    """The leaf's rows of a packed batch (all of them), in its own column names and types;
    none when `packed` is None."""
    if not leaf.columns:
        return _unit(0 if packed is None else packed.num_rows)
    schema = pa.schema([(name, type_) for name, _, type_ in leaf.columns])
    if packed is None:
        return schema.empty_table()
    return pa.table([packed.column(slot).cast(type_) for _, slot, type_ in leaf.columns],
                    schema=schema)


def _unit(rows: int) -> pa.Table:
    """`rows` rows of a leaf that reads no column (COUNT(*) of a cross join): DuckDB needs
    one, the query reads none."""
    return pa.table({"__viewlet_unit": pa.nulls(rows, pa.int32())})
