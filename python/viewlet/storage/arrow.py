"""Map algebra and type rules on Arrow tables, shared by the storage and engine layers.

A map is a table of key columns and value columns whose value for a key is the sum of its
rows' values. Sums group by Arrow's hash group-by, which puts NULL keys in one group (as SQL
GROUP BY does, and as map keys require); integer and decimal sums are exact, and every value
column keeps its type (its sums are cast back to it).
"""
from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc

_TOUCHED = "__viewlet_touched"


def sum_by_key(rows: pa.Table, keys: Sequence[str], values: Sequence[str],
               zero_columns: Sequence[str]) -> pa.Table:
    """One row per distinct key of `rows` (whose columns are `keys` and `values`) with each
    value column summed, NULL counting as 0; a key whose `zero_columns` all sum to 0 is
    dropped (a map row that is gone; none dropped when `zero_columns` is empty). Without
    keys, the one row of the whole table's sums. Empty `rows` come back as they are."""
    if rows.num_rows == 0:
        return rows
    summed, _ = _summed(rows, keys, values, rows.schema)
    return without_zero_rows(summed, zero_columns)


def without_zero_rows(summed: pa.Table, zero_columns: Sequence[str]) -> pa.Table:
    """`summed` (one row per key) without the rows whose `zero_columns` are all 0 (none
    dropped when `zero_columns` is empty)."""
    kept = None
    for c in zero_columns:
        test = pc.not_equal(summed.column(c), pa.scalar(0, summed.schema.field(c).type))
        kept = test if kept is None else pc.or_(kept, test)
    return summed if kept is None else summed.filter(kept)


def add_at_keys(old: pa.Table, delta: pa.Table, keys: Sequence[str],
                values: Sequence[str]) -> pa.Table:
    """The map rows of `delta`'s keys after adding `delta` (columns `keys` then `values`)
    to `old`: one row per key of `delta`, its `old` values plus its delta values; rows of
    `old` with other keys are left out, and sums of 0 are kept (the caller's zero rule
    decides). In `delta`'s schema; `old` is cast to it."""
    schema = delta.schema
    columns = list(keys) + list(values)
    data = pa.concat_tables([
        _tagged(old.select(columns).cast(schema), 0),
        _tagged(delta.select(columns), 1),
    ])
    summed, groups = _summed(data, keys, values, schema, [(_TOUCHED, "max")])
    return summed.filter(pc.equal(groups.column(f"{_TOUCHED}_max"), 1))


def _tagged(table: pa.Table, tag: int) -> pa.Table:
    return table.append_column(_TOUCHED, pa.array([tag] * table.num_rows, pa.int8()))


def _summed(rows: pa.Table, keys: Sequence[str], values: Sequence[str], schema: pa.Schema,
            more=()):
    """(each key's summed values in `schema`, the raw group-by output with `more`'s
    aggregates). The single-threaded group-by keeps the keys in order of first occurrence."""
    groups = rows.group_by(list(keys), use_threads=False).aggregate(
        [(v, "sum") for v in values] + list(more))
    columns = {k: groups.column(k) for k in keys}
    for v in values:
        total = groups.column(f"{v}_sum")            # NULL: a group without a value
        columns[v] = pc.fill_null(total, pa.scalar(0, total.type)).cast(schema.field(v).type)
    return pa.table(columns, schema=schema), groups


def plain_types(table: pa.Table) -> pa.Table:
    """Cast Arrow types Spark cannot take (string_view, uint64, ...) to plain ones."""
    fields = []
    changed = False
    for f in table.schema:
        t = f.type
        if pa.types.is_string_view(t) or pa.types.is_large_string(t):
            t, changed = pa.string(), True
        elif pa.types.is_binary_view(t) or pa.types.is_large_binary(t):
            t, changed = pa.binary(), True
        elif pa.types.is_uint64(t) or pa.types.is_uint32(t):
            t, changed = pa.int64(), True
        fields.append(pa.field(f.name, t, f.nullable))
    return table.cast(pa.schema(fields)) if changed else table


#: key column -> (the distinct non-NULL values looked up, whether NULL is looked up): which
#: rows of a map a read by key keeps. The values stay Arrow arrays: a large batch looks up
#: hundreds of thousands of values per column, and Python sets of them cost more than the
#: batch's query.
KeyLookups = Dict[str, Tuple[pa.Array, bool]]


def distinct_values(column) -> pa.Array:
    """The distinct non-NULL values of `column` (an Array or ChunkedArray)."""
    values = pc.unique(column)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    return pc.drop_null(values) if values.null_count else values


def merged_values(parts: Sequence[pa.Array], t: pa.DataType) -> Optional[pa.Array]:
    """The distinct values of every part as type `t`; None when a part's values do not all
    convert to `t` exactly (the caller then filters nothing by them)."""
    try:
        typed = [p.cast(t) if p.type != t else p for p in parts if len(p)]
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None
    if not typed:
        return pa.array([], t)
    return typed[0] if len(typed) == 1 else distinct_values(pa.chunked_array(typed, t))


def key_lookups(rows: pa.Table, keys: Sequence[str]) -> KeyLookups:
    """The lookups of `rows`' keys: each key column's distinct values, and whether NULL
    occurs."""
    return {k: (distinct_values(rows.column(k)), rows.column(k).null_count > 0) for k in keys}


def is_in(column, values: pa.Array, has_null: bool):
    """Whether each value of `column` is one of `values` (or NULL, when `has_null`): the
    rows of a map a lookup of those key values reads."""
    test = pc.fill_null(pc.is_in(column, value_set=values), False)
    return pc.or_(test, pc.is_null(column)) if has_null else test


def prunable(t: pa.DataType) -> bool:
    """Whether values of type `t` compare exactly, both with each other (a row filter by
    value set) and with a Delta file's min/max statistics (file skipping): strings,
    integers, dates, decimals and booleans. Not floating point (min/max ignore NaN) nor
    timestamps (statistics are truncated to milliseconds)."""
    return (pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_decimal(t)
            or pa.types.is_string(t) or pa.types.is_boolean(t))
