"""Keeping a view's hot maps (local/hotmaps.py) equal to their Delta tables.

A hot map is read only at the exact Delta version it holds. After a batch writes a map, the
commits since the batch's start version are read back from the Delta log: when they are this
batch's delta (its transaction id) and commits that keep the content (a compaction, a
vacuum), the hot map applies the delta and takes the new version; anything else (another
writer, another batch) evicts it, and the next batch reads Delta.
"""
from __future__ import annotations

from typing import Optional

import pyarrow as pa

from ..state.manifest import COMPACTION

#: commit operations that leave a map's rows as they were (table properties: state/retention.py)
_KEEPING = {"VACUUM START", "VACUUM END", "SET TBLPROPERTIES"}


def sync_after_writes(view, name: str, start: int, batch: int, delta: Optional[pa.Table],
                      committed: Optional[int] = None):
    """After batch `batch` wrote map `name` (from version `start`): apply `delta` to its hot
    map and move it to the map's current version, or evict it. `committed`: the version our
    write of `delta` made, when it says so (start + 1: nothing else came in between)."""
    ctx = view.ctx
    path = view.map_path(name)
    hot = ctx.hot_maps.peek(path)
    if hot is None:
        return
    if hot.version != start:
        ctx.hot_maps.evict(path)
        return
    if committed is not None and committed == start + 1 and delta is not None and delta.num_rows:
        hot.apply(delta, committed)
        ctx.hot_maps.touched(path)
        return
    current = ctx.store.version(path)
    ours = others = 0
    for commit in ctx.store.commits(path, start, current):
        if commit.txns.get(view.app_id) == batch:
            ours += 1
        elif not (commit.operation in _KEEPING or COMPACTION in commit.metadata):
            others += 1
    expected = 1 if delta is not None and delta.num_rows else 0
    if others or ours != expected:
        ctx.hot_maps.evict(path)
        return
    if expected:
        hot.apply(delta, current)
    else:
        hot.version = current
    ctx.hot_maps.touched(path)


def replace_after_compaction(view, name: str, read_version: int, version: Optional[int],
                             rows: Optional[pa.Table]):
    """A compaction rewrote map `name` (read at `read_version`) as `rows`, committed as
    `version` (None: it did not commit): the hot map takes those rows."""
    ctx = view.ctx
    path = view.map_path(name)
    hot = ctx.hot_maps.peek(path)
    if hot is None or version is None:
        return
    if hot.version == read_version and version == read_version + 1 and rows is not None:
        hot.replace(rows, version)
        ctx.hot_maps.touched(path)
    else:
        ctx.hot_maps.evict(path)
