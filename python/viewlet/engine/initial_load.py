"""Collecting a view's maps at CREATE (and REFRESH ... FULL) from Spark, in few jobs.

Every map is a Spark query over the base tables at their load versions. Collected one query
at a time, a wide join's dozens of maps cost a Spark job each, and the jobs' fixed cost was
most of a CREATE (TPC-H Q8's 76 maps: about 40 of its 55 seconds on a 2-core machine, at a
scale where each map has a few hundred rows). When the base tables are small, the maps are
collected together: one query whose rows carry their map's tag, each map's columns in packed
columns shared by type (as a batch's blocks are, plan/batch.py). Larger bases keep one job
per map, so the driver never holds more than one large map at a time.
"""
from __future__ import annotations

from typing import Callable, Dict, Iterator, List, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from .spark.io import frame_arrow, union_all
from ..plan.lower import q

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
