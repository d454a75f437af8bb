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
from typing import Callable, Dict, Iterator, List, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from ..compiler.program import Program, Statement
from ..plan.lower import q
from .spark.io import frame_arrow, union_all

#: the pseudo relation of the load program's one trigger
LOAD = "__viewlet_load"

#: the maps are collected in one Spark job when the base tables hold at most this many rows
PACK_BELOW_ROWS = 1_000_000
TAG = "__viewlet_map"


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
    cannot (targets.LOCAL_FAILURES): the caller loads on Spark then."""
    from .batch import run_local
    from .state.manifest import BatchRecord
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
