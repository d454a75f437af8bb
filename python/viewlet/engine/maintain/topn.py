"""Top-N views (`ORDER BY ... LIMIT n [OFFSET m]`, frontend/ordering.py): the ordered rows kept.

The inner query (the view without ORDER BY / LIMIT) is maintained as any view: its state and
maps. Next to them the view keeps its *ordered table*: the first `capacity` rows of the inner
query in the view's order (the wanted offset + limit rows plus slack), and the result table
holds rows offset .. offset + limit of it. A batch produces the new rows of the groups it
touched (maintain/grouped.py `result_source`); here they replace those groups' rows in the
ordered table:

  kept     the ordered rows of untouched groups (still the first rows of the untouched ones)
  added    the touched groups' new rows that sort before the old last ordered row (rows after
           it may have rows the table never held in front of them) -- or all of them while
           the table is `complete` (it holds every row of the inner query)
  new      kept + added in order, cut to `capacity` (then no longer complete)

Only when deletes leave fewer than offset + limit rows and the table is not complete does
the batch recompute the ordered rows from the whole view state. The order is
total: ORDER BY items with Spark's semantics (NULLS FIRST / LAST, NaN above every number,
-0.0 = 0.0, strings by their UTF-8 bytes), then every output column ascending with NULLs
first, then the hidden group keys: Spark breaks ties arbitrarily, Viewlet by those columns.
Arrays, maps and structs take no part in tie-breaking (Arrow cannot sort them).
"""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from ...frontend.ordering import TopN
from ...plan.lower import q
from ..runtime.progress import Progress
from ..state.layout import ResultLayout
from ..state.manifest import BatchRecord, ORDERED, Txn
from ..state.stats import BatchStats, OrderedStats
from ..state.view import LoadedView
from .grouped import (OP, group_tuples, result_arrow_schema, rewrite_result, state_rows,
                      whole_state)

#: slack rows kept beyond offset + limit: at least this many (or offset + limit), at most the cap
SLACK_MIN, SLACK_MAX = 16, 1000
_ORIGIN = "__viewlet_origin"

SortKeys = List[Tuple[str, bool, bool]]        # (column, descending, nulls first)


def capacity(top: TopN) -> int:
    n = top.wanted
    return n + min(max(n, SLACK_MIN), SLACK_MAX)


def sort_keys(top: TopN, layout: ResultLayout) -> SortKeys:
    """The view's total order over result-table rows: the ORDER BY items, then the output
    columns, then the hidden group keys (ascending, NULLs first)."""
    physical = layout.physical
    keys = [(physical[i.column], i.desc, i.nulls_first) for i in top.items]
    keys += [(c, False, True) for c in physical + list(layout.hidden)]
    return keys


def _orderable(t: pa.DataType) -> bool:
    return not (pa.types.is_nested(t) or pa.types.is_dictionary(t) or pa.types.is_null(t))


def sort_rows(rows: pa.Table, keys: SortKeys) -> pa.Table:
    """`rows` in the view's order: each key becomes columns Arrow sorts as Spark orders (a
    NULL flag, for floating point a NaN flag and the value with -0.0 as 0.0); stable."""
    if rows.num_rows <= 1:
        return rows
    columns, order = {}, []
    for i, (name, desc, nulls_first) in enumerate(keys):
        column = rows.column(name)
        if not _orderable(column.type):
            continue
        direction = "descending" if desc else "ascending"
        valid = pc.is_valid(column)
        columns[f"n{i}"] = pc.if_else(valid, 1 if nulls_first else 0, 0 if nulls_first else 1)
        order.append((f"n{i}", "ascending"))
        if pa.types.is_floating(column.type):
            nan = pc.fill_null(pc.is_nan(column), False)
            columns[f"f{i}"] = pc.cast(nan, pa.int8())
            order.append((f"f{i}", direction))
            plain = pc.if_else(pc.or_(nan, pc.invert(valid)), pa.scalar(0.0, column.type), column)
            columns[f"v{i}"] = pc.add(plain, pa.scalar(0.0, column.type))     # -0.0 -> 0.0
        else:
            columns[f"v{i}"] = column
        order.append((f"v{i}", direction))
    if not order:
        return rows
    return rows.take(pc.sort_indices(pa.table(columns), sort_keys=order))


def first_rows(rows: pa.Table, top: TopN, keys: SortKeys) -> Tuple[pa.Table, bool]:
    """The ordered table over all rows of the inner query (`rows`, maybe cut to at least
    capacity + 1 rows by `prefilter_sql`): the first `capacity`, and whether that is all."""
    cap = capacity(top)
    ordered = sort_rows(rows, keys)
    return ordered.slice(0, cap), ordered.num_rows <= cap


def maintain(table: pa.Table, complete: bool, source: pa.Table, top: TopN, keys: SortKeys,
             identity: Sequence[str]) -> Tuple[pa.Table, bool, bool]:
    """One batch: the ordered table (`table`, in order) with the touched groups' rows
    replaced by their new ones (`source`: maintain/grouped.py's MERGE source, a 'del' row
    per touched group and the new rows as 'ins'). Returns the new table, whether it is complete, and
    whether it is short (fewer rows than offset + limit while rows may be missing: the
    caller recomputes it from the view state)."""
    if not complete and table.num_rows == 0:
        return table, False, True          # nothing to compare new rows with: recompute
    ops = source.column(OP)
    dels = source.filter(pc.equal(ops, "del"))
    ins = source.filter(pc.equal(ops, "ins")).drop_columns([OP]).select(table.schema.names) \
        .cast(table.schema)
    touched = set(group_tuples(dels, identity))
    kept = table.filter(pa.array([i not in touched for i in group_tuples(table, identity)],
                                 pa.bool_())) if touched else table
    parts = [kept.append_column(_ORIGIN, pa.array([0] * kept.num_rows, pa.int8())),
             ins.append_column(_ORIGIN, pa.array([1] * ins.num_rows, pa.int8()))]
    if not complete and table.num_rows:
        # the old last row: new rows after it are left out (rows never held may come first)
        last = table.slice(table.num_rows - 1)
        parts.append(last.append_column(_ORIGIN, pa.array([2], pa.int8())))
    merged = sort_rows(pa.concat_tables(parts), keys)
    origin = merged.column(_ORIGIN).to_numpy()
    if not complete and table.num_rows:
        boundary = int((origin == 2).nonzero()[0][0])
        keep = [o == 0 or (o == 1 and i < boundary) for i, o in enumerate(origin)]
        merged = merged.filter(pa.array(keep, pa.bool_()))
    merged = merged.drop_columns([_ORIGIN])
    cap = capacity(top)
    now_complete = complete and merged.num_rows <= cap
    merged = merged.slice(0, cap)
    return merged, now_complete, (not now_complete) and merged.num_rows < top.wanted


def visible(table: pa.Table, top: TopN) -> pa.Table:
    """The result rows: offset .. offset + limit of the ordered table."""
    return table.slice(top.offset, top.limit)


def prefilter_sql(rows_sql: str, top: TopN, keys: SortKeys, types: Dict[str, str]) -> str:
    """Spark SQL keeping the first capacity + 1 rows of `rows_sql` (every row of the inner
    query) in an order refining the view's (so they are a valid start of it; the driver
    sorts them by the exact order). Columns of types Spark cannot order are left out."""
    order = ", ".join(f"{q(c)} {'DESC' if d else 'ASC'} NULLS {'FIRST' if n else 'LAST'}"
                      for c, d, n in keys if not _complex(types.get(c, "")))
    rank = "__viewlet_rank"
    over = f"ORDER BY {order or 1}"
    return (f"SELECT * EXCEPT ({rank}) FROM (SELECT *, ROW_NUMBER() OVER ({over}) AS {rank} "
            f"FROM ({rows_sql})) WHERE {rank} <= {capacity(top) + 1}")


def _complex(spark_type: str) -> bool:
    return spark_type.startswith(("array", "map", "struct"))


def result_types(view: LoadedView) -> Dict[str, str]:
    """Spark's type of each result-table column (the prefilter leaves out unorderable ones)."""
    definition = view.definition
    return definition.result.column_types(view.map_schema(definition.view_map).key_types)


def apply_ordered(view: LoadedView, record: BatchRecord, deltas, source: pa.Table,
                  stats: BatchStats, txn: Txn, meta, progress: Progress):
    """A top-N view's batch: the touched groups' rows (`source`, the MERGE source a view
    without ORDER BY applies) replace theirs in the ordered table, recomputed from the whole
    state only when deletes leave it short; the ordered and result tables are rewritten
    when they changed. `stats.ordered`: the previous batch's, then this batch's."""
    ctx, top, layout = view.ctx, view.top_n, view.definition.result
    keys = sort_keys(top, layout)
    version = record.map_versions[ORDERED]
    cached = view.runtime.ordered
    old = cached[1] if cached is not None and cached[0] == version else \
        sort_rows(ctx.store.read_arrow(view.ordered_path, version), keys)
    old = old.select(source.schema.names[:-1]).cast(result_arrow_schema(view))
    table, complete, short = maintain(old, stats.ordered.complete, source, top, keys,
                                      layout.key_names)
    if short:
        progress.step("recomputing the ordered rows from the view state")
        state, multisets = whole_state(view, record, deltas)
        local = stats.engine == "local"
        rows = state_rows(view, state, multisets, local, progress, None if local else
                          prefilter_sql("SELECT * FROM {d}", top, keys, result_types(view)))
        table, complete = first_rows(rows, top, keys)
    stats.ordered = OrderedStats(complete, table.num_rows, short)
    if table.equals(old):
        return
    progress.step("writing the ordered rows")
    ctx.store.overwrite(view.ordered_path, table, txn=txn, metadata=meta)
    shown, before = visible(table, top), visible(old, top)
    if not shown.equals(before):
        stats.result_rows_changed = rewrite_result(view, shown, txn, meta, progress,
                                                   "writing the result table")
    view.runtime.ordered = (ctx.store.version(view.ordered_path), table)
