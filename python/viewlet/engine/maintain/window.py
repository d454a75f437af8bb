"""Views with window functions (frontend/windows.py): the window layer over the inner rows.

The inner query (the window query without its window functions) is maintained like any view:
its state and maps. The result table holds the window layer's rows: the window functions,
the outer items and the outer WHERE evaluated over the inner query's rows. A batch
recomputes them for the *units* it touched: a unit is the set of inner rows sharing the
values of the state's group keys every window partitions by (the keys the PARTITION BY lists
of all window functions have in common), so each window partition lies within one unit. The
unit's rows are the state rows holding those key values (read by key, from memory when the
state is hot), plus the batch's delta; the result table keeps each row's unit as hidden
columns, and one MERGE replaces the touched units' rows. A window without PARTITION BY, or
partitioned by values that are no group key (an aggregate, an expression), has one unit:
the batch recomputes the window over every row of the state and rewrites the result table.

The window SQL (batch/window_sql.py) is built once per view, as Spark SQL over the inner
rows; the local target runs its translation for DuckDB, which refuses a window function it
cannot reproduce exactly (then the view's batches run on Spark).
"""
from __future__ import annotations

import logging
from typing import Dict, List, Sequence

import pyarrow as pa
import sqlglot
from pyspark.sql.types import StructType

from ...frontend.windows import fill
from ...plan.lower import q
from ...storage.arrow import sum_by_key
from ..batch.local import LOCAL_FAILURES, local_window_rows
from ..batch.window_sql import spark_window_sql
from ..runtime.progress import Progress
from ..spark.io import arrow_schema
from ..state.layout import ResultLayout, unit_keys
from ..state.manifest import BatchRecord
from ..state.maps import rows_by_keys
from ..state.view import LoadedView
from .grouped import group_tuples, multiset_rows, state_rows, tagged, touched_state, whole_state

log = logging.getLogger("viewlet")


def touched_units(delta_state: pa.Table, state_keys: Sequence[str], unit: Sequence[int]) -> pa.Table:
    """The distinct unit key values of the groups a batch touched (state key columns)."""
    columns = [state_keys[gi] for gi in unit]
    return delta_state.group_by(columns, use_threads=False).aggregate([]).select(columns)


def rows_in_units(rows: pa.Table, columns: Sequence[str], units: pa.Table,
                  unit_columns: Sequence[str]) -> pa.Table:
    """The rows of `rows` whose `columns` hold one of the units' values (NULL equal NULL)."""
    wanted = set(group_tuples(units, unit_columns))
    if not rows.num_rows:
        return rows
    return rows.filter(pa.array([t in wanted for t in group_tuples(rows, columns)], pa.bool_()))


def deletes(units: pa.Table, unit_columns: Sequence[str], layout: ResultLayout,
            schema: pa.Schema) -> pa.Table:
    """A 'del' row per touched unit: its unit columns set, the rest NULL."""
    cols = {}
    names = layout.key_names
    for f in schema:
        if f.name in names:
            cols[f.name] = units.column(unit_columns[names.index(f.name)]).cast(f.type)
        else:
            cols[f.name] = pa.nulls(units.num_rows, f.type)
    return tagged(pa.table(cols, schema=schema), "del")


def describe(spec, depth) -> List[str]:
    """EXPLAIN's lines on how the window functions are maintained."""
    layer = spec.window
    lines = ["", "Window functions (recomputed per partition over the view state's rows):"]
    for f in layer.functions:
        tie = " (rows tied on its ORDER BY are ordered by every inner column, ascending, NULLs " \
              "first)" if f.tie_broken else ""
        lines.append(f"  {f.node.sql(dialect='spark')}{tie}")
    for kind, index, name in layer.columns:
        if kind == "expr":      # as written: inputs and calls put back
            text = fill(layer.expressions[index],
                        lambda i: sqlglot.parse_one(layer.hidden[i - layer.visible], read="spark"),
                        lambda j: layer.functions[j].node.copy()).sql(dialect="spark")
            lines.append(f"  {text}: computed over the window values")
    if depth == 0:
        return lines + ["  every batch recomputes the query, window functions included"]
    unit = unit_keys(spec)
    if unit:
        names = [_key_text(spec, gi) for gi in unit]
        lines.append(f"  a batch recomputes the windows only over the rows of the partitions it "
                     f"touches: the rows of the view state with the touched values of "
                     f"{', '.join(names)} (read by key), and replaces their rows in the result")
    else:
        lines.append("  no PARTITION BY on group keys: a batch that changes the view state "
                     "recomputes the windows over every row of the view state and rewrites the "
                     "result table")
    if layer.where is not None:
        lines.append(f"  then the filter {layer.where.sql(dialect='spark')}")
    return lines


def _key_text(spec, gi: int) -> str:
    """A state group key as the query writes it (an output's name or a window's input)."""
    layer, var = spec.window, spec.group[gi]
    for i, out in enumerate(spec.outputs):
        if out.expr.is_var() and next(iter(out.expr.vars)) == var:
            return out.name if i < layer.visible else layer.hidden[i - layer.visible]
    return var


def window_source(view: LoadedView, record: BatchRecord, deltas: Dict[str, pa.Table],
                   local: bool, progress: Progress):
    """A windowed view's batch: (MERGE source replacing the rows of the units the batch
    touched, None), or (None, every result row) when the window has one unit."""
    layout = view.definition.result
    state_name = view.definition.view_map
    schema = view.map_schema(state_name)
    out_schema = window_arrow_schema(view)
    if not layout.unit:
        state, multisets = whole_state(view, record, deltas)
        return None, window_rows(view, state, multisets, local, progress, out_schema)
    delta_state = touched_state(view, deltas)
    unit_keys = [schema.keys[gi] for gi in layout.unit]
    units = touched_units(delta_state, schema.keys, layout.unit)
    old = rows_by_keys(view, state_name, record.map_versions[state_name], units, unit_keys)
    old = rows_in_units(old, unit_keys, units, unit_keys)
    arrow = view.map_arrow_schema(state_name)
    state = sum_by_key(pa.concat_tables([old.select(arrow.names).cast(arrow),
                                         delta_state.select(arrow.names).cast(arrow)]),
                       schema.keys, list(schema.values), view.zero_columns(state_name))
    multisets = multiset_rows(view, record, deltas, state, len(schema.keys))
    ins = window_rows(view, state, multisets, local, progress, out_schema)
    dels = deletes(units, unit_keys, layout, out_schema)
    return pa.concat_tables([tagged(ins, "ins"), dels]), None


def window_rows(view, state, multisets, local, progress, out_schema) -> pa.Table:
    """The window layer's rows over the inner rows of `state`'s groups."""
    if local:
        try:
            rows = state_rows(view, state, multisets, True, progress)
            return local_window_rows(view, rows, out_schema)
        except LOCAL_FAILURES as e:
            log.warning("View %s: window rows on Spark, the local target failed: %s", view.name, e)
    rows = state_rows(view, state, multisets, False, progress, spark_window_sql(view),
                       out_schema)
    return rows


def window_arrow_schema(view: LoadedView) -> pa.Schema:
    """The Arrow schema of the result table's rows (the window layer's); built once."""
    if view.derived.window_arrow is None:
        layout = view.definition.result
        cols = [(c.physical, c.type) for c in layout.columns] + \
            [(name, t) for (name, _), t in zip(layout.keys, layout.unit_types)]
        view.derived.window_arrow = arrow_schema(StructType.fromDDL(
            ", ".join(f"{q(c)} {t}" for c, t in cols)))
    return view.derived.window_arrow
