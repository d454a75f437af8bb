"""A relation's changes for a batch, read on the driver: the change data feed of a base
table, the data files an upstream view's result commits removed and added, netted per row
(the executors' reading of the same: spark/changes.py).
"""
from __future__ import annotations

from typing import List, Optional

import pyarrow as pa
import pyarrow.compute as pc

from ...plan.lower import MULT
from ...storage.update_feed import SIGN_COLUMN as SIGN
from ..local.executor import LocalEngineError, available_engine, quoted_name


#: changes of at least this many rows are netted by DuckDB, on every core (Arrow's group-by
#: runs on one: most of a million-tuple TPC-H Q1 batch's reading)
ENGINE_NET_FROM_ROWS = 200_000


def read_batch_changes(view, relation: str, after: int, to: int) -> pa.Table:
    """The relation's changes in (after, to], pre-aggregated on the columns the program
    uses: one row per distinct value with its net multiplicity (Hot Dog §6.1)."""
    store = view.ctx.store
    cols = view.columns_of(relation)
    if view.compiled.spec.tables[relation].view:
        # an upstream incremental view: its result table's changes from its data files
        changes = store.read_file_changes(view.table_path(relation), after, to)
    else:
        changes = store.read_changes(view.table_path(relation), after, to, cols)
    if changes.num_rows == 0:
        return changes.select(cols).append_column(MULT, pa.array([], pa.int64()))
    if cols and changes.num_rows >= ENGINE_NET_FROM_ROWS:
        netted = netted_by_engine(available_engine(view.ctx), changes, cols)
        if netted is not None:
            return netted
    return netted_by_arrow(changes, cols)


def netted_by_arrow(changes: pa.Table, cols: List[str]) -> pa.Table:
    """The changes netted per distinct value of `cols` (rows netting to 0 dropped)."""
    grouped = changes.group_by(cols, use_threads=False).aggregate([(SIGN, "sum")]) \
        if cols else pa.table({"_viewlet_sign_sum": [sum(changes.column(SIGN).to_pylist())]})
    grouped = grouped.rename_columns(cols + [MULT])
    return grouped.filter(pc.not_equal(grouped.column(MULT), 0))


def netted_by_engine(engine, changes: pa.Table, cols: List[str]) -> Optional[pa.Table]:
    """netted_by_arrow's rows (in another order) computed by the local engine; None when
    there is no engine or it cannot."""
    if engine is None:
        return None
    keys = ", ".join(quoted_name(c) for c in cols)
    schema = changes.select(cols).schema.append(pa.field(MULT, pa.int64()))
    try:
        rows = engine.query(f"SELECT {keys}, CAST(SUM({quoted_name(SIGN)}) AS BIGINT) AS "
                            f"{quoted_name(MULT)} FROM changes GROUP BY {keys} HAVING "
                            f"SUM({quoted_name(SIGN)}) <> 0", {"changes": changes})
        return rows.cast(schema)
    except (LocalEngineError, pa.ArrowException, ValueError):
        return None
