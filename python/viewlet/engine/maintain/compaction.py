"""Compaction of the maps a batch appended to: when a map's appended rows or files outgrew its
base (state/stats.py MapLayout), its rows are summed, sorted by its cluster key and written
anew, on the driver (from memory when the map is hot) or, for a map too large for it, by the
executors; files no version in use needs are vacuumed.
"""
from __future__ import annotations

import time
from typing import Dict

from ..batch.policy import too_large_to_collect
from ..runtime.progress import Progress
from ..state.manifest import BatchRecord
from ..state.stats import MapLayout
from ..state.view import LoadedView
from . import distributed, hot
from .grouped import zero_columns
from .maps import compact


def timed_compaction(view, record, changed_rows, previous, progress, merging: bool, stats):
    """Compact maps written by appending (not by MERGE), into stats' layout and timings."""
    t0 = time.perf_counter()
    if not merging:
        stats["layout"] = compact_appended(view, record, changed_rows,
                                           previous.get("layout") or {}, progress)
    stats["seconds"]["compact"] = time.perf_counter() - t0


def compact_appended(view: LoadedView, record: BatchRecord, appended: Dict[str, int],
                     layouts: Dict, progress: Progress) -> Dict:
    """Compact the maps this batch appended to (`appended`: map -> rows) whose appended rows
    or files outgrew their base (maps.py), vacuum what no version in use needs; the maps'
    layouts for the next batch. A map too large for the driver (or any map of a view whose
    engine is 'distributed') is compacted by Spark's executors."""
    ctx = view.ctx
    out = dict(layouts)
    for name in appended:
        path = view.map_path(name)
        layout = MapLayout.of(layouts.get(name), None) if name in layouts else \
            MapLayout.of(None, ctx.store.snapshot(path, record.map_versions[name]))
        if layout.counted():             # this batch's append counted: no look at the files
            layout = layout.after_append(appended[name])
            due = layout.due()
        else:
            due = layout.due(ctx.store.snapshot(path))
        if due and too_large_to_collect(view, layout):
            progress.spark().step(f"compacting map {name} on the executors")
            compacted = distributed.compact_map(view, name, record.batch)
            if compacted is not None:
                layout = compacted
                ctx.store.vacuum(path, record.map_versions[name])
        elif due:
            progress.step(f"compacting map {name}")
            schema = view.map_schema(name)
            zero = zero_columns(view, name)
            cluster = view.spec["maps"][name].get("cluster") or list(range(len(schema.keys)))
            in_memory = ctx.hot_maps.peek(path)      # its rows, when hot: no read of the files
            compacted = compact(ctx.store, path, schema.keys, list(schema.values), zero,
                                     cluster, {"viewlet.view": view.name,
                                               hot.COMPACTION: str(record.batch)},
                                     rows=in_memory.all_rows() if in_memory else None,
                                     rows_version=in_memory.version if in_memory else None)
            if compacted is not None:
                layout, read_version, version, rows = compacted
                hot.replace_after_compaction(view, name, read_version, version, rows)
                # Files of the batch-start version stay: a re-run of this batch reads them.
                ctx.store.vacuum(path, record.map_versions[name])
                in_memory = ctx.hot_maps.peek(path)
                if in_memory is not None:
                    hot.sync_after_writes(view, name, in_memory.version, record.batch, None)
        out[name] = layout.to_json()
    return out
