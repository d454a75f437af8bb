"""Compaction of the maps a batch appended to: when a map's appended rows or files outgrew its
base (state/stats.py MapLayout), its rows are summed, sorted by its cluster key and written
anew, on the driver (from memory when the map is hot) or, for a map too large for it, by the
executors; files no version in use needs are vacuumed.
"""
from __future__ import annotations

import time
from typing import Dict

from ..batch.policy import compacts_on_executors
from ..local.executor import available_engine
from ..runtime.progress import Progress
from ..state.manifest import COMPACTION, BatchRecord
from ..state.retention import keep_short_history
from ..state.stats import BatchStats, MapLayout
from ..state.view import LoadedView
from . import distributed, hot
from .maps import compact


def timed_compaction(view: LoadedView, record: BatchRecord, appended: Dict[str, int],
                     previous: BatchStats, progress: Progress, stats: BatchStats) -> None:
    """Compact the maps the batch appended to (`appended`: map -> rows; none when batches
    MERGE their deltas), into stats' layout and timings."""
    t0 = time.perf_counter()
    if not view.settings.merging:
        stats.layout = compact_appended(view, record, appended, previous.layout or {}, progress)
    stats.seconds["compact"] = time.perf_counter() - t0


def compact_appended(view: LoadedView, record: BatchRecord, appended: Dict[str, int],
                     layouts: Dict[str, MapLayout], progress: Progress) -> Dict[str, MapLayout]:
    """Compact the maps this batch appended to (`appended`: map -> rows) whose appended rows
    or files outgrew their base (MapLayout.due), vacuum what no version in use needs; the
    maps' layouts for the next batch. A map too large for the driver (or any map of a view whose
    engine is 'distributed') is compacted by Spark's executors."""
    ctx = view.ctx
    out = dict(layouts)
    for name in appended:
        path = view.map_path(name)
        layout = layouts[name] if name in layouts else \
            MapLayout.of(None, ctx.store.snapshot(path, record.map_versions[name]))
        if layout.counted():             # this batch's append counted: no look at the files
            layout = layout.after_append(appended[name])
            due = layout.due()
        else:
            due = layout.due(ctx.store.snapshot(path))
        if due and compacts_on_executors(view, layout):
            progress.spark().step(f"compacting map {name} on the executors")
            compacted = distributed.compact_map(view, name, record.batch)
            if compacted is not None:
                layout = compacted
                ctx.store.vacuum(path, record.map_versions[name])
                keep_short_history(ctx.store, path)
        elif due:
            progress.step(f"compacting map {name}")
            schema = view.map_schema(name)
            cluster = schema.cluster or list(range(len(schema.keys)))
            in_memory = ctx.hot_maps.peek(path)      # its rows, when hot: no read of the files
            compacted = compact(ctx.store, path, schema.keys, list(schema.values),
                                view.zero_columns(name), cluster,
                                {"viewlet.view": view.name, COMPACTION: str(record.batch)},
                                rows=in_memory.all_rows() if in_memory else None,
                                rows_version=in_memory.version if in_memory else None,
                                engine=available_engine(ctx))
            if compacted is not None:
                layout, read_version, version, rows = compacted
                hot.replace_after_compaction(view, name, read_version, version, rows)
                # Files of the batch-start version stay: a re-run of this batch reads them.
                ctx.store.vacuum(path, record.map_versions[name])
                keep_short_history(ctx.store, path)     # a map of a view created before
                in_memory = ctx.hot_maps.peek(path)
                if in_memory is not None:
                    hot.sync_after_writes(view, name, in_memory.version, record.batch, None)
        out[name] = layout
    return out
