"""Result rows of the groups a batch touched, on the driver: the MERGE source that deletes
their old rows and inserts their new ones. Touched are the groups of the state's delta and
of the multisets' deltas; their new state (batch-start rows plus the delta) is built here,
and the output expressions are evaluated over it by the local target or by Spark.
"""
from __future__ import annotations

import logging
import math
from typing import Dict, List, Optional, Sequence, Tuple

import pyarrow as pa

from ...storage.arrow import add_at_keys, sum_by_key
from ..batch.local import LOCAL_FAILURES, local_result_rows
from ..batch.result_sql import multiset_params, result_schema, result_sql
from ..runtime import faults
from ..runtime.progress import Progress
from ..spark.io import arrow_frame, arrow_schema, frame_arrow
from ..state.manifest import BatchRecord
from ..state.maps import hot_map, rows_by_keys
from ..state.view import LoadedView

log = logging.getLogger("viewlet")


#: the MERGE source's operation column: 'del' (a touched group's old rows) or 'ins'
OP = "__viewlet_op"


def result_maps(view: LoadedView) -> List[str]:
    """The maps a group's result row is derived from: the view state, the multisets the
    outputs read."""
    return [view.definition.view_map] + list(multiset_params(view.compiled.spec))


def group_tuples(rows: pa.Table, columns: Sequence[str]) -> List[tuple]:
    """Each row's values of `columns` as a hashable tuple (NULL equal to NULL, NaN to NaN):
    the group (or window unit) a row belongs to."""
    if not columns:
        return [()] * rows.num_rows
    data = [rows.column(c).to_pylist() for c in columns]
    return [tuple("\x00nan" if isinstance(v, float) and math.isnan(v) else v for v in values)
            for values in zip(*data)]


def rewrite_result(view: LoadedView, rows: pa.Table, txn, meta, progress: Progress,
                   step: str) -> int:
    """The result table's rows replaced by `rows`, in one commit with the batch's transaction
    id; how many rows it holds now."""
    progress.step(step)
    view.ctx.store.overwrite(view.result_path, rows, txn=txn, metadata=meta)
    faults.point("batch.result_merged")
    return rows.num_rows


def tagged(rows: pa.Table, op: str) -> pa.Table:
    """`rows` as MERGE source rows of operation `op` ('ins' or 'del')."""
    return rows.append_column(OP, pa.array([op] * rows.num_rows, pa.string()))


def touched_state(view: LoadedView, deltas: Dict[str, pa.Table]) -> pa.Table:
    """The state's delta, plus a row of zeros for each group only a multiset's delta
    touched (an UPDATE moving a MIN changes a multiset, not the state)."""
    state_name = view.definition.view_map
    keys = view.map_schema(state_name).keys
    return pad_groups(deltas.get(state_name), view.map_arrow_schema(state_name), keys,
                      [(deltas[m], view.map_schema(m).keys[:len(keys)])
                       for m in result_maps(view)[1:] if deltas.get(m) is not None])


def result_source(view: LoadedView, record: BatchRecord, deltas: Dict[str, pa.Table],
                   local: bool = False, progress: Optional[Progress] = None,
                   hold: bool = False) -> pa.Table:
    """MERGE source rewriting the result rows of every group the batch touched: a 'del' row
    per touched group and the group's new rows as 'ins' rows. Touched are the groups of the
    state's delta and the groups of the multisets' deltas (an UPDATE moving a MIN changes a
    multiset, not the state). The touched groups' new state (their batch-start rows plus
    the delta) is built on the driver; Spark evaluates the output expressions over it (a
    projection of a local relation, unless multisets are aggregated or bag copies need a
    generator), with the multisets' batch-start rows of those groups plus their deltas.
    `local`: the output expressions run in the driver's DuckDB (Spark if it fails); `hold`:
    the state and multisets are held in memory when there is room (a local batch)."""
    state_name = view.definition.view_map
    schema = view.map_schema(state_name)
    delta_state = touched_state(view, deltas)
    # on the local target the state is held in memory when there is room (state/maps.py)
    new_state = add_at_keys(rows_by_keys(view, state_name, record.map_versions[state_name],
                                         delta_state, schema.keys, hold=hold),
                            delta_state, schema.keys, list(schema.values))
    multisets = multiset_rows(view, record, deltas, new_state, len(schema.keys), hold=hold)
    _, columns = result_sql(view)
    out_schema = result_arrow_schema(view)
    ins = state_rows(view, new_state, multisets, local, progress)
    dels = {}
    key_of = view.definition.state_layout.key_of()
    for col in columns:
        field = out_schema.field(col)
        dels[col] = new_state.column(schema.keys[key_of[col]]).cast(field.type) if col in key_of \
            else pa.nulls(new_state.num_rows, field.type)
    dels = pa.table(dels, schema=out_schema)
    return pa.concat_tables([tagged(ins, "ins"), tagged(dels, "del")])


def multiset_rows(view: LoadedView, record: BatchRecord, deltas: Dict[str, pa.Table],
                   groups: pa.Table, group_width: int,
                   hold: bool = False) -> Dict[str, pa.Table]:
    """{multiset parameter: its rows at `groups` before the batch, plus the batch's delta}:
    the state's and the multiset's group key columns are both k0, k1, ... (`hold`: as
    rows_by_keys)."""
    multisets = {}
    for name, param in multiset_params(view.compiled.spec).items():
        ms_schema = view.map_arrow_schema(name)
        group = view.map_schema(name).keys[:group_width]
        before = rows_by_keys(view, name, record.map_versions[name], groups, group, hold)
        rows = [before.select(ms_schema.names).cast(ms_schema)]
        if deltas.get(name) is not None:
            rows.append(deltas[name].select(ms_schema.names).cast(ms_schema))
        multisets[param] = pa.concat_tables(rows)
    return multisets


def state_rows(view: LoadedView, state: pa.Table, multisets: Dict[str, pa.Table], local: bool,
                progress: Optional[Progress], wrap=None, wrapped_schema=None) -> pa.Table:
    """The result rows of the groups in `state` (new state rows) given their multisets'
    rows, on the local target when `local` (Spark if it fails), else on Spark; `wrap`:
    Spark SQL over the rows query (`{d}`) the Spark target evaluates instead."""
    ctx = view.ctx
    rows_sql, _ = result_sql(view)
    out_schema = result_arrow_schema(view)
    if local:
        try:
            return local_result_rows(view, state, multisets, out_schema)
        except LOCAL_FAILURES as e:
            log.warning("View %s: result rows on Spark, the local target failed: %s", view.name, e)
    if progress is not None:
        progress.spark()
    frames = {p: arrow_frame(ctx.spark, rows) for p, rows in multisets.items()}
    df = ctx.spark.sql(rows_sql, s=arrow_frame(ctx.spark, state), **frames)
    if wrap is not None:
        df = ctx.spark.sql(wrap, d=df)
    # through Arrow, not Python rows: collect() gives timestamps as naive datetimes in the
    # driver's local time zone, which Arrow would take for UTC
    schema = wrapped_schema or out_schema
    return frame_arrow(df).select(schema.names).cast(schema)


def whole_state(view: LoadedView, record: BatchRecord, deltas: Dict[str, pa.Table]):
    """The whole view state and multisets after the batch (their batch-start rows, from
    memory when hot, plus the batch's deltas), for recomputing a top-N view's order."""
    out = {}
    for name in result_maps(view):
        schema, arrow = view.map_schema(name), view.map_arrow_schema(name)
        version = record.map_versions[name]
        in_memory = hot_map(view, name, version)
        rows = in_memory.all_rows() if in_memory is not None else \
            view.ctx.store.read_files(view.ctx.store.snapshot(view.map_path(name), version))
        parts = [rows.select(arrow.names).cast(arrow)]
        if deltas.get(name) is not None:
            parts.append(deltas[name].select(arrow.names).cast(arrow))
        out[name] = sum_by_key(pa.concat_tables(parts), schema.keys, list(schema.values),
                               view.zero_columns(name))
    state = out.pop(view.definition.view_map)
    if view.definition.state_layout.is_global and state.num_rows == 0:    # one row, over none
        state = pa.table({f.name: pa.array([0], f.type) for f in state.schema}, schema=state.schema)
    params = multiset_params(view.compiled.spec)
    return state, {params[name]: rows for name, rows in out.items()}


def result_arrow_schema(view: LoadedView) -> pa.Schema:
    """The Arrow schema of the state's result rows (result_sql's columns); built once."""
    if view.derived.result_arrow is None:
        view.derived.result_arrow = arrow_schema(result_schema(view, result_sql(view)[1]))
    return view.derived.result_arrow


def pad_groups(delta: Optional[pa.Table], schema: pa.Schema, keys: Sequence[str],
               others: Sequence[Tuple[pa.Table, Sequence[str]]]) -> pa.Table:
    """The delta of a map with `schema` and key columns `keys` (None: no rows), plus a row
    of zero values for each key given by the `others` (a table, its columns holding the
    key): every key touched by either, as a delta of the map."""
    parts = [delta.select(schema.names).cast(schema)] if delta is not None else []
    for table, columns in others:
        if table.num_rows == 0:
            continue
        if keys:
            found = table.group_by(list(columns), use_threads=False).aggregate([])
            n = found.num_rows
            cols = {k: found.column(c).cast(schema.field(k).type) for k, c in zip(keys, columns)}
        else:                              # a global aggregate: its one group
            n, cols = 1, {}
        for f in schema:
            if f.name not in cols:
                cols[f.name] = pa.array([0] * n, f.type)
        parts.append(pa.table(cols, schema=schema))
    return pa.concat_tables(parts) if parts else schema.empty_table()
