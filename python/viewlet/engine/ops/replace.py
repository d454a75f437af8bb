"""CREATE OR REPLACE INCREMENTAL VIEW v AS <new query> (and ALTER ... AS) of an existing view:
a new definition that keeps the maps it still needs.

1. The view is brought up to date (one batch), so that its maps hold the base tables'
   current versions.
2. The new query is compiled and built as a rebuild is (a new view directory, swapped into
   the catalog in one commit, the history carried over), except that each map whose content
   fingerprint and physical columns equal one of the view's maps is read where it is
   (state/kept.py), and the maps loaded anew are loaded at the versions the kept ones hold.
3. Before the swap the kept maps must not have moved (a concurrent REFRESH): else nothing is
   replaced. After it, what the new view does not use is dropped, and views that read this
   one are rebuilt (its result is a new table), as REFRESH ... FULL does.

A view whose maps cannot be kept (created before programs were stored, a stored program this
version cannot run, a batch that fails) is rebuilt from the base tables instead, and the
statement's status says why.
"""
from __future__ import annotations

import logging
import time

from ...errors import ViewletError
from ..state.graph import downstream_order
from ..state.kept import Kept, KeptMap
from .rebuild import NewDefinition, rebuild_one, rebuild_view
from .refresh import refresh_view
from .results import Created

log = logging.getLogger("viewlet")


def replace_view(ctx, name: str, definition: NewDefinition,
                 reason: str = "a new query") -> Created:
    """Replace the definition (query and settings) of view `name`; `reason`: what HISTORY
    says of it."""
    t0 = time.perf_counter()
    old = ctx.catalog.find(name, "view")
    keep, why_not = _keepable(ctx, old.name)
    if keep is None:
        r = rebuild_view(ctx, old.name, reason=f"{reason} (no map kept: {why_not})",
                         definition=definition)
        maps = len(ctx.catalog.find(old.name, "view").definition.maps)
        return Created(old.name, f"replaced: rebuilt, no map kept ({why_not})", maps,
                       r.rows_changed, round(time.perf_counter() - t0, 3))
    old = ctx.catalog.find(name, "view")             # as the refresh left it
    downstream = downstream_order(ctx, old.name)
    created = rebuild_one(ctx, old, reason, definition, keep)
    for dependent in downstream:
        rebuild_one(ctx, ctx.catalog.find(dependent, "view"),
                    f"its upstream view {old.name} was replaced")
    dropped = len(old.definition.maps) - created.kept
    status = (f"replaced: {created.kept} map(s) kept, {created.loaded} loaded, "
              f"{dropped} dropped") + \
        (f" (and {', '.join(downstream)}, which read it, rebuilt)" if downstream else "")
    return Created(old.name, status, created.maps, created.rows,
                   round(time.perf_counter() - t0, 3))


def _keepable(ctx, name: str):
    """(Kept, None) for a view whose maps a new program may keep, brought up to date first;
    (None, why) otherwise."""
    try:
        view = ctx.load(name)
        if view.compiled.stored is None:
            return None, "the view was created before programs were stored"
        refresh_view(ctx, name)
    except ViewletError as e:
        log.warning("View %s: no map kept: %s", name, e)
        return None, f"it could not be brought up to date: {e.message}"
    view = ctx.load(name)
    last = view.manifest.last_committed()
    stored = view.compiled.stored
    versions = {table: last.watermarks[rel] for rel, table in stored.tables.items()
                if rel in last.watermarks}
    maps = {}
    for name, fingerprint in stored.map_fingerprints.items():
        path = view.map_path(name)
        maps[fingerprint] = KeptMap(name, path, view.map_schema(name), ctx.store.version(path))
    return Kept(maps, versions), None

