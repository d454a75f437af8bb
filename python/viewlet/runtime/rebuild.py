"""REFRESH INCREMENTAL VIEW v FULL: rebuild a view from its base tables' current data.

The definition is recompiled against the live table schemas and loaded into a new view
directory (exactly as CREATE does); the catalog entry is swapped in one commit, so readers
see the old view or the new one; the old directory is dropped last. Views that read the
rebuilt view are rebuilt after it (their upstream's result is a new table).
"""
from __future__ import annotations

import time
from typing import Dict

from ..errors import ViewNotFound
from . import chain, views

# Entry settings that are not part of the compiled definition and survive a rebuild.
KEPT_SETTINGS = ("refresh", "map_writes", "catalog_name")


def rebuild_view(ctx, name: str) -> Dict:
    """Rebuild `name`, then every view that reads it (transitively, in dependency order):
    a rebuilt view's result is a new table, which the views reading it are rebuilt from."""
    t0 = time.perf_counter()
    old = ctx.catalog.find(name, "view")
    if old is None:
        raise ViewNotFound(f"Incremental view '{name}' does not exist. SHOW INCREMENTAL VIEWS "
                           "lists the views of this warehouse.")
    downstream = chain.downstream_order(ctx, old.name)
    rows = _rebuild_one(ctx, old)
    for dependent in downstream:
        _rebuild_one(ctx, ctx.catalog.find(dependent, "view"))
    status = "rebuilt" + (f" (and {', '.join(downstream)}, which read it)" if downstream else "")
    return {"view": old.name, "batch": 0, "changes": 0, "rows_changed": rows,
            "seconds": round(time.perf_counter() - t0, 3), "status": status}


def _rebuild_one(ctx, old) -> int:
    kept = {k: old.spec[k] for k in KEPT_SETTINGS if k in old.spec}
    created = views.create_view(ctx, old.name, old.spec["sql"], old.spec["depth"],
                                replacing=old, options=kept, caches=old.spec.get("caches", False))
    ctx.forget(old.id)
    ctx.store.drop(old.location)
    return created["rows"]
