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
from typing import Dict, Optional, Tuple

from ...errors import ViewNotFound
from ..state.graph import downstream_order
from ..state.kept import Kept, released_paths
from .create import create_view

# Entry settings that are not part of the compiled definition and survive a rebuild.
KEPT_SETTINGS = ("refresh", "map_writes", "engine", "enable_change_data_feed", "catalog_name")
FULL_REASON = "REFRESH ... FULL"


def rebuild_view(ctx, name: str, reason: str = FULL_REASON,
                 definition: Optional[Tuple[str, Dict, Optional[bool]]] = None) -> Dict:
    """Rebuild `name`, then every view that reads it (transitively, in dependency order):
    a rebuilt view's result is a new table, which the views reading it are rebuilt from.
    `definition`: (query, {depth, caches, map_writes, engine}, enable_change_data_feed) to
    rebuild with instead of the stored one (CREATE OR REFRESH with a new definition)."""
    t0 = time.perf_counter()
    old = ctx.catalog.find(name, "view")
    if old is None:
        raise ViewNotFound(f"Incremental view '{name}' does not exist. SHOW INCREMENTAL VIEWS "
                           "lists the views of this warehouse.")
    downstream = downstream_order(ctx, old.name)
    created = rebuild_one(ctx, old, reason, definition)
    for dependent in downstream:
        rebuild_one(ctx, ctx.catalog.find(dependent, "view"),
                     f"its upstream view {old.name} was rebuilt ({reason})")
    status = "rebuilt" + (f" (and {', '.join(downstream)}, which read it)" if downstream else "")
    return {"view": old.name, "batch": created["batch"], "changes": 0,
            "rows_changed": created["rows"], "seconds": round(time.perf_counter() - t0, 3),
            "status": status}


def rebuild_one(ctx, old, reason: str, definition=None, keep: Optional[Kept] = None) -> Dict:
    """Build `old`'s view anew (its stored settings, or `definition`), swap it in, then drop
    what the new view does not use (all of the old one, but for maps `keep` let it keep)."""
    kept = {k: old.spec[k] for k in KEPT_SETTINGS if k in old.spec}
    sql, depth, caches = old.spec["sql"], old.spec["depth"], old.spec.get("caches", False)
    if definition is not None:
        sql, settings, consent = definition
        depth, caches = settings["depth"], settings["caches"]
        kept["map_writes"] = settings["map_writes"]
        kept.pop("engine", None)
        if settings["engine"] is not None:
            kept["engine"] = settings["engine"]
        if consent is not None:
            kept["enable_change_data_feed"] = consent
    created = create_view(ctx, old.name, sql, depth, replacing=old, options=kept,
                                caches=caches, rebuild_reason=reason, keep=keep)
    ctx.forget(old.id)
    new = ctx.catalog.find(old.name, "view")
    for path in released_paths(old.location, old.spec["maps"], new.spec["maps"], new.location):
        ctx.store.drop(path)
    return created
