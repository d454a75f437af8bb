"""Result rows of the touched groups on the local target: the view's output query
(result.py, Spark SQL over the state rows and the multisets) translated for DuckDB with
Spark's result types and rounding, evaluated in this process."""
from __future__ import annotations

from typing import Dict

import numpy as np
import pyarrow as pa
import sqlglot

from ...frontend.spec import COUNT_COLUMN
from ...plan.batch import LEAF_PREFIX, Leaf, Phase
from ...plan.cse import reference_counts
from ...plan.local import types as T
from ...plan.local.translate import Translator
from ...plan.local.types import NotLocal
from ...plan.lower import q
from ..local.executor import LocalEngineError
from ..state.layout import inner_layout
from ..state.settings import ansi
from .leaves import ArrowLeaves, leaf_columns
from .result_sql import COPIES, multiset_params, result_rows_sql
from .target import run_phases
from .window_sql import window_input_types, window_sql


def result_sql_local(view) -> str:
    """The output query over `s` (state rows) and `ms0`, ... (multiset rows), for DuckDB.
    Raises NotLocal naming what has no exact local equivalent. Built once per view."""
    spec, state = view.compiled.spec, view.spec["view_map"]

    def text():
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


#: a local batch failing with one of these runs again on Spark
LOCAL_FAILURES = (LocalEngineError, NotLocal, MemoryError)


def failure_text(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}" if not isinstance(e, (LocalEngineError, NotLocal)) else str(e)


def local_sql(view, phase: Phase) -> str:
    """The phase as DuckDB SQL with Spark's results (NotLocal if it cannot be)."""
    key = ("local_sql", id(phase), ansi(view))
    cache = view.compiled.cache
    if key not in cache:
        tables = {LEAF_PREFIX + name: leaf_columns(view, leaf) for name, leaf in phase.leaves.items()}
        try:
            tree, _ = Translator(tables, ansi=key[2]).query(phase.tree.copy())
            materialize_shared(tree)
            cache[key] = (phase, tree.sql(dialect="duckdb"))
        except NotLocal as e:
            cache[key] = (phase, e)
    value = cache[key][1]
    if isinstance(value, NotLocal):
        raise value
    return value


def materialize_shared(tree):
    """CTEs read more than once are computed once (DuckDB would inline them)."""
    with_ = tree.args.get("with_")
    if with_ is None:
        return
    counts = reference_counts(tree)
    for cte in with_.expressions:
        if counts[cte.alias_or_name] > 1:
            cte.set("materialized", True)


def run_local(view, plan, record, deltas, stats) -> Dict[str, pa.Table]:
    """The plan's map deltas computed by the local target (NotLocal, LocalEngineError, ...
    when it cannot: engine/targets.py LOCAL_FAILURES)."""
    inputs = ArrowLeaves(view, record, deltas)
    engine = view.ctx.local_engine

    def execute(phase):
        sql = local_sql(view, phase)
        tables = {LEAF_PREFIX + name: inputs.bind(leaf) for name, leaf in phase.leaves.items()}
        return engine.query(sql, tables)

    return run_phases(view, plan, inputs, execute, stats)


def local_window_sql(view) -> str:
    """The window SQL for DuckDB (NotLocal when it has no exact translation); built once."""

    def text():
        return window_sql(view.compiled.spec, view.spec["inner"], view.spec["result"],
                          window_input_types(view), q(LEAF_PREFIX + "rows"))

    def tables():
        return {LEAF_PREFIX + "rows": [(c, T.parse(t)) for c, t in window_input_types(view).items()]}

    return duckdb_sql_once(view, ("window_sql_local", ansi(view)), text, tables)


def local_window_rows(view, rows: pa.Table, out_schema: pa.Schema) -> pa.Table:
    result = view.ctx.local_engine.query(local_window_sql(view), {LEAF_PREFIX + "rows": rows})
    return result.select(out_schema.names).cast(out_schema)
