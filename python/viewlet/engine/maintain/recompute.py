"""Depth 0: the defining query evaluated over the batch's end versions, its rows replacing the
result table's (on the executors for a large result: maintain/distributed.py).
"""
from __future__ import annotations

import time

from pyspark.sql import DataFrame

from ..runtime import faults
from ..spark.io import frame_arrow
from ..state.manifest import BatchRecord, Txn
from ..state.program import parts_key
from ..state.stats import BatchStats
from ..state.tables import bind_tables, relation_frame
from ..state.view import LoadedView


def recompute_frame(view: LoadedView, record: BatchRecord) -> DataFrame:
    """The defining query over the batch's end versions, with the result table's columns."""
    ctx = view.ctx
    frames = {view.table_path(r): relation_frame(ctx, view.compiled.spec.tables[r], to)
              for r, (_, to) in record.ranges.items()}
    definition = view.definition
    text, params = bind_tables(definition.sql, frames,
                               lambda parts: definition.refs[parts_key(parts)].id)
    return ctx.spark.sql(text, **params).toDF(*definition.result.physical)


def overwrite(view: LoadedView, record: BatchRecord, txn: Txn, stats: BatchStats) -> None:
    """Depth 0: evaluate the defining query over the batch's end versions, replace the rows
    (through the driver)."""
    ctx = view.ctx
    t0 = time.perf_counter()
    if txn.done_in(ctx.store, view.result_path):
        return
    data = frame_arrow(recompute_frame(view, record))
    ctx.store.overwrite(view.result_path, data, txn=txn,
                        metadata={"viewlet.view": view.name, "viewlet.batch": str(record.batch)})
    faults.point("batch.result_merged")
    stats.result_rows_changed = data.num_rows
    stats.seconds["recompute"] = time.perf_counter() - t0
