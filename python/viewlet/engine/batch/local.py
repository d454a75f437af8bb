"""The local target: a batch's queries translated for DuckDB with Spark's types, rounding
and NULLs (plan/local/translate.py), run in this process over Arrow (local/executor.py).

Every query of a batch the local target runs is translated once per view and ANSI mode: the
plan's phases, the result rows' query of the touched groups (batch/result_sql.py) and the
window layer's (batch/window_sql.py). A query without an exact translation raises NotLocal
naming the construct; the policy then sends the view's batches to Spark (batch/policy.py).
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Tuple

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
from ..local.executor import LocalEngineError, duckdb_sum_by_key, quoted_name
from ..state.settings import LOCAL
from .leaves import ArrowLeaves, LeafReader, leaf_columns
from .result_sql import COPIES, multiset_params, result_rows_sql
from .target import ArrowTarget
from .window_sql import window_input_types, window_sql

#: a map delta's pieces of this many rows or more are summed by DuckDB (LocalTarget.sum)
DUCKDB_SUM_FROM_ROWS = 200_000

#: a local batch failing with one of these runs again on Spark
LOCAL_FAILURES = (LocalEngineError, NotLocal, MemoryError)


def failure_text(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}" if not isinstance(e, (LocalEngineError, NotLocal)) else str(e)


class LocalTarget(ArrowTarget):
    """The plan's phases as DuckDB queries over the leaves as Arrow tables (NotLocal,
    LocalEngineError, ... when it cannot: LOCAL_FAILURES). `summed`: each block's rows summed
    by its keys in the query (Phase.summed_tree): a map load, whose blocks read whole base
    tables into few keys; a batch's blocks mostly hold one row per key already, and the extra
    GROUP BY cost TPC-H Q10 more than the driver's sums it saved. `looked_up`: lookups
    already read (batch/policy.py `choose`)."""

    name = LOCAL

    def __init__(self, view, record, deltas: Dict[str, pa.Table], summed: bool = False,
                 looked_up: Optional[LeafReader] = None):
        self.view, self.summed = view, summed
        self.unsummed = set()         # maps whose rows may repeat a key in a summed piece
        self.leaves = ArrowLeaves(view, record, deltas, looked_up)

    def execute(self, phase: Phase) -> pa.Table:
        return driver_phase_rows(self.view, phase, self.leaves, self.summed)

    def sum(self, view, name: str, pieces: List[pa.Table]) -> pa.Table:
        """As ArrowTarget.sum; pieces of DUCKDB_SUM_FROM_ROWS rows or more are summed by
        DuckDB on every core (Arrow's group-by runs on one)."""
        if sum(p.num_rows for p in pieces) < DUCKDB_SUM_FROM_ROWS:
            return super().sum(view, name, pieces)
        schema = view.map_schema(name)
        return duckdb_sum_by_key(view.ctx.local_engine, pa.concat_tables(pieces),
                                 schema.keys, list(schema.values))


def driver_phase_rows(view, phase: Phase, leaves: LeafReader, summed: bool = False) -> pa.Table:
    """The phase's packed rows from the driver's DuckDB, its leaves bound as Arrow
    (`LeafReader.arrow`): the local target's phases, and a Spark batch's small ones
    (SparkTarget.in_driver). Raises LOCAL_FAILURES."""
    tables = {LEAF_PREFIX + name: leaves.arrow(leaf) for name, leaf in phase.leaves.items()}
    return view.ctx.local_engine.query(local_sql(view, phase, summed), tables)


# -- translations, once per view ------------------------------------------------------------
def local_sql(view, phase: Phase, summed: bool = False) -> str:
    """The phase as DuckDB SQL with Spark's results (NotLocal if it cannot be); `summed`:
    its summed_tree."""
    ansi = view.settings.ansi
    cache = view.derived.local_sql
    key = (id(phase), ansi, summed)
    if key not in cache:
        tables = {LEAF_PREFIX + name: leaf_columns(view, leaf) for name, leaf in phase.leaves.items()}
        try:
            tree = phase.summed_tree if summed else phase.tree
            tree, _ = Translator(tables, ansi=ansi).query(tree.copy())
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


def _translated(cache: Dict, ansi: bool, text: Callable[[], str],
                tables: Callable[[], Dict[str, List[Tuple[str, object]]]]) -> str:
    """The Spark SQL `text()` over leaf `tables()` translated for DuckDB, kept in `cache` by
    ANSI mode; the NotLocal refusal is kept too and raised each time."""
    if ansi not in cache:
        try:
            tree, _ = Translator(tables(), ansi=ansi).query(sqlglot.parse_one(text(), read="spark"))
            cache[ansi] = tree.sql(dialect="duckdb")
        except NotLocal as e:
            cache[ansi] = e
    value = cache[ansi]
    if isinstance(value, NotLocal):
        raise value
    return value


def result_sql_local(view) -> str:
    """The output query over `s` (state rows) and `ms0`, ... (multiset rows), for DuckDB.
    Raises NotLocal naming what has no exact local equivalent. Built once per view."""
    spec, definition = view.compiled.spec, view.definition
    state = definition.view_map

    def text():
        return result_rows_sql(spec, definition.state_layout, definition.agg_types,
                               view.map_schema(state).keys, COUNT_COLUMN,
                               {m: view.map_schema(m).keys for m in multiset_params(spec)},
                               table=lambda name: q(LEAF_PREFIX + name), copies=False)

    def tables():
        out = {LEAF_PREFIX + "s": leaf_columns(view, Leaf("map", state))}
        out.update({LEAF_PREFIX + p: leaf_columns(view, Leaf("map", m))
                    for m, p in multiset_params(spec).items()})
        return out

    return _translated(view.derived.result_sql_local, view.settings.ansi, text, tables)


def local_window_sql(view) -> str:
    """The window SQL for DuckDB (NotLocal when it has no exact translation); built once."""
    definition = view.definition

    def text():
        return window_sql(view.compiled.spec, definition.inner, definition.result,
                          window_input_types(view), q(LEAF_PREFIX + "rows"))

    def tables():
        return {LEAF_PREFIX + "rows": [(c, T.parse(t)) for c, t in window_input_types(view).items()]}

    return _translated(view.derived.window_sql_local, view.settings.ansi, text, tables)


# -- the result's queries, run locally -------------------------------------------------------
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


def local_window_rows(view, rows: pa.Table, out_schema: pa.Schema) -> pa.Table:
    """The window layer's rows over the inner rows `rows`."""
    result = view.ctx.local_engine.query(local_window_sql(view), {LEAF_PREFIX + "rows": rows})
    return result.select(out_schema.names).cast(out_schema)
