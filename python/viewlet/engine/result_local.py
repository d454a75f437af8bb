"""Result rows of the touched groups on the local target: the view's output query
(result.py, Spark SQL over the state rows and the multisets) translated for DuckDB with
Spark's result types and rounding, evaluated in this process."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import sqlglot

from ..plan.local.translate import Translator
from ..plan.local.types import NotLocal
from ..plan.batch import LEAF_PREFIX
from ..plan.lower import q
from ..frontend.spec import COUNT_COLUMN
from .result import COPIES, multiset_params, result_rows_sql


def result_sql_local(view) -> str:
    """The output query over `s` (state rows) and `ms0`, ... (multiset rows), for DuckDB.
    Raises NotLocal naming what has no exact local equivalent. Built once per view."""
    from .targets import ansi, leaf_columns
    from ..plan.batch import Leaf
    spec, state = view.compiled.spec, view.spec["view_map"]

    def text():
        from .views import inner_layout
        return result_rows_sql(spec, inner_layout(view.spec), view.spec["agg_types"],
                               view.map_schema(state).keys, COUNT_COLUMN,
                               {m: view.map_schema(m).keys for m in multiset_params(spec)},
                               table=lambda name: q(LEAF_PREFIX + name), copies=False)

    def tables():
        out = {LEAF_PREFIX + "s": leaf_columns(view, Leaf("map", state))}
        out.update({LEAF_PREFIX + p: leaf_columns(view, Leaf("map", m))
                    for m, p in multiset_params(spec).items()})
        return out

    return duckdb_sql_once(view, ("result_sql_local", ansi(view)), text, tables)


def duckdb_sql_once(view, key, text, tables) -> str:
    """The Spark SQL `text()` over leaf `tables()` translated for DuckDB, built once per view
    and key (key[1]: ANSI mode); the NotLocal refusal is kept too and raised each time."""
    cache = view.compiled.cache
    if key not in cache:
        try:
            tree, _ = Translator(tables(), ansi=key[1]).query(
                sqlglot.parse_one(text(), read="spark"))
            cache[key] = tree.sql(dialect="duckdb")
        except NotLocal as e:
            cache[key] = e
    value = cache[key]
    if isinstance(value, NotLocal):
        raise value
    return value


def local_result_rows(view, state: pa.Table, multisets, out_schema: pa.Schema) -> pa.Table:
    """The result rows of the groups in `state` (their new state rows); `multisets`:
    {spark.sql parameter: the multiset's rows of those groups}."""
    tables = {LEAF_PREFIX + "s": state}
    tables.update({LEAF_PREFIX + p: rows for p, rows in multisets.items()})
    rows = view.ctx.local_engine.query(result_sql_local(view), tables)
    if COPIES in rows.column_names:        # a view without aggregates: one row per copy
        copies = rows.column(COPIES).to_numpy(zero_copy_only=False).astype(np.int64)
        rows = rows.drop_columns([COPIES]).take(pa.array(np.repeat(np.arange(len(copies)), copies)))
    return rows.select(out_schema.names).cast(out_schema)
