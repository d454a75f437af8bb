"""Delta add-action statistics of Parquet files another engine wrote, from their footers.

Spark's executors write a batch's large map deltas and result rows as Parquet files; the
driver commits them with delta-rs. Their add actions need the statistics Viewlet's lookups
skip files by (row count, NULL counts, min/max of integer, date and string columns, as
`deltars._stats` records for files Viewlet writes itself): every Parquet footer has them per
row group, so the driver reads footers only, never the rows.
"""
from __future__ import annotations

import datetime
import json
from typing import Dict, Optional

import pyarrow as pa
import pyarrow.parquet as pq


def footer_stats(metadata: pq.FileMetaData) -> Dict:
    """{numRecords, minValues, maxValues, nullCount} over the file's row groups."""
    schema = metadata.schema.to_arrow_schema()
    mins: Dict[str, object] = {}
    maxs: Dict[str, object] = {}
    nulls: Dict[str, Optional[int]] = {}
    for j, field in enumerate(schema):
        if pa.types.is_nested(field.type):
            continue
        count: Optional[int] = 0
        lo = hi = None
        bounded = _bounded(field.type)
        for g in range(metadata.num_row_groups):
            st = metadata.row_group(g).column(j).statistics
            if st is None or not st.has_null_count:
                count = None
            elif count is not None:
                count += st.null_count
            if not bounded:
                continue
            if st is None or not st.has_min_max:
                if metadata.row_group(g).num_rows > (st.null_count if st is not None
                                                     and st.has_null_count else 0):
                    bounded = False        # rows without bounds: no min/max for the file
                continue
            lo = st.min if lo is None else min(lo, st.min)
            hi = st.max if hi is None else max(hi, st.max)
        if count is not None:
            nulls[field.name] = count
        if bounded and lo is not None:
            mins[field.name], maxs[field.name] = _json(lo), _json(hi)
    return {"numRecords": metadata.num_rows, "minValues": mins, "maxValues": maxs,
            "nullCount": nulls}


def footer_stats_json(metadata: pq.FileMetaData) -> str:
    return json.dumps(footer_stats(metadata))


def _bounded(t: pa.DataType) -> bool:
    # the types whose Parquet order is the order Viewlet's lookups compare in
    return pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_string(t)


def _json(value):
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value
