"""A relation's changes for a batch, read on the driver: the change data feed of a base
table, the data files an upstream view's result commits removed and added, netted per row
(the executors' reading of the same: spark/changes.py).
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ...plan.lower import MULT


def read_batch_changes(view, relation: str, after: int, to: int) -> pa.Table:
    """The relation's changes in (after, to], pre-aggregated on the columns the program
    uses: one row per distinct value with its net multiplicity (Hot Dog §6.1)."""
    store = view.ctx.store
    # an upstream incremental view: its result table's changes from its data files
    cols = view.columns_of(relation)
    if view.compiled.spec.tables[relation].view:
        changes = store.read_file_changes(view.table_path(relation), after, to)
    else:
        changes = store.read_changes(view.table_path(relation), after, to, cols)
    if changes.num_rows == 0:
        return changes.select(cols).append_column(MULT, pa.array([], pa.int64()))
    grouped = changes.group_by(cols, use_threads=False).aggregate([("_viewlet_sign", "sum")]) \
        if cols else pa.table({"_viewlet_sign_sum": [sum(changes.column("_viewlet_sign").to_pylist())]})
    grouped = grouped.rename_columns(cols + [MULT])
    return grouped.filter(pc.not_equal(grouped.column(MULT), 0))
