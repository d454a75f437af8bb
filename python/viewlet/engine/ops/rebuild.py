"""REFRESH INCREMENTAL VIEW v FULL: rebuild a view from its base tables' current data.

The definition is recompiled against the live table schemas and loaded into a new view
directory (exactly as CREATE does); the catalog entry is swapped in one commit, so readers
see the old view or the new one; the old directory is dropped last. The new manifest starts
with the old one's rows and records the load as the next batch, status `rebuilt` with its
reason, so HISTORY goes on across rebuilds. Views that read the rebuilt view are rebuilt
after it (their upstream's result is a new table).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional

from ..state.catalog import Entry, missing_view
from ..state.graph import downstream_order
from ..state.kept import Kept, released_paths
from ..state.settings import ViewOptions
from .create import create_view
from .results import Created, Refreshed

FULL_REASON = "REFRESH ... FULL"


@dataclass(frozen=True)
class NewDefinition:
    """A view's query and settings given anew (CREATE OR REPLACE / OR REFRESH, ALTER ... AS)."""
    sql: str
    depth: Optional[int]
    caches: bool
    map_writes: str
    engine: Optional[str]
    enable_change_data_feed: Optional[bool]     # None: as the view has it
    refresh_policy: Optional[str] = None        # REFRESH POLICY (ops/refresh_policy.py)


def rebuild_view(ctx, name: str, reason: str = FULL_REASON,
                 definition: Optional[NewDefinition] = None) -> Refreshed:
    """Rebuild `name`, then every view that reads it (transitively, in dependency order):
    a rebuilt view's result is a new table, which the views reading it are rebuilt from.
    `definition`: what to rebuild with instead of the stored one (a new definition that
    keeps no map)."""
    t0 = time.perf_counter()
    old = ctx.catalog.find(name, "view")
    if old is None:
        raise missing_view(name)
    downstream = downstream_order(ctx, old.name)
    created = rebuild_one(ctx, old, reason, definition)
    for dependent in downstream:
        rebuild_one(ctx, ctx.catalog.find(dependent, "view"),
                     f"its upstream view {old.name} was rebuilt ({reason})")
    status = "rebuilt" + (f" (and {', '.join(downstream)}, which read it)" if downstream else "")
    return Refreshed(old.name, created.batch, 0, created.rows, round(time.perf_counter() - t0, 3),
                     status)


def rebuild_one(ctx, old: Entry, reason: str, definition: Optional[NewDefinition] = None,
                keep: Optional[Kept] = None) -> Created:
    """Build `old`'s view anew (its stored settings, or `definition`), swap it in, then drop
    what the new view does not use (all of the old one, but for maps `keep` let it keep).
    Its refresh interval and its name in Spark's catalog go on (ops/create.py)."""
    before = old.definition
    sql, depth, caches, options = before.sql, before.depth, bool(before.caches), before.options
    if definition is not None:
        sql, depth, caches = definition.sql, definition.depth, definition.caches
        consent = definition.enable_change_data_feed
        options = ViewOptions(definition.engine, definition.map_writes,
                              consent if consent is not None else options.enable_change_data_feed,
                              definition.refresh_policy)
    created = create_view(ctx, old.name, sql, depth, replacing=old, options=options,
                          caches=caches, rebuild_reason=reason, keep=keep)
    ctx.forget(old.id)
    new = ctx.catalog.find(old.name, "view")
    for path in released_paths(old.location, before.maps, new.definition.maps, new.location):
        ctx.store.drop(path)
    return created
