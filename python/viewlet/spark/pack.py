"""Collecting several DataFrames with one Spark job.

A batch produces one small result per map (and the view's result rows). Each collect is a
Spark job with a fixed cost, so the parts are laid side by side in one wide union (each part
fills its own columns, NULL elsewhere, tagged with its index), collected once, and split
again in Arrow.
"""
from __future__ import annotations

from typing import Dict, List

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from .io import frame_arrow
from .lower import q

TAG = "__viewlet_part"


def collect_parts(parts: Dict[str, DataFrame]) -> Dict[str, pa.Table]:
    if not parts:
        return {}
    names = list(parts)
    layouts: List[List[tuple]] = []   # per part: (packed column, original column, type)
    for i, name in enumerate(names):
        df = parts[name]
        layouts.append([(f"p{i}_{j}", f.name, f.dataType.simpleString())
                        for j, f in enumerate(df.schema.fields)])
    union = None
    for i, name in enumerate(names):
        cols = [f"CAST({i} AS INT) AS {TAG}"]
        for k, layout in enumerate(layouts):
            for packed, orig, typ in layout:
                cols.append(f"{q(orig)} AS {q(packed)}" if k == i else f"CAST(NULL AS {typ}) AS {q(packed)}")
        part = parts[name].selectExpr(*cols)
        union = part if union is None else union.unionByName(part)
    table = frame_arrow(union)
    out = {}
    tags = table.column(TAG)
    for i, name in enumerate(names):
        rows = table.filter(pc.equal(tags, i))
        out[name] = rows.select([p for p, _, _ in layouts[i]]).rename_columns([o for _, o, _ in layouts[i]])
    return out
