"""DROP INCREMENTAL VIEW: the catalog entry first (a half-dropped view is never visible), then
the view's catalog presence in Spark, its directory and the maps it kept from views it
replaced.
"""
from __future__ import annotations

from typing import Dict

from ...errors import ViewNotFound, ViewletError
from ..state import published
from ..state.graph import dependents
from ..state.kept import outside_dirs


# -- DROP --------------------------------------------------------------------------------
def drop_view(ctx, name: str, if_exists: bool = False) -> Dict:
    entry = ctx.catalog.find(name, "view")
    if entry is None:
        if if_exists:
            return {"view": name, "status": "not found"}
        raise ViewNotFound(f"Incremental view '{name}' does not exist. SHOW INCREMENTAL VIEWS "
                           "lists the views of this warehouse.")
    readers = dependents(ctx, entry.name)
    if readers:
        raise ViewletError(f"Incremental view '{entry.name}' is read by "
                           f"{', '.join(readers)}. DROP INCREMENTAL VIEW those first, then "
                           f"drop {entry.name}.")
    ctx.catalog.remove(entry.id)      # first: a half-dropped view is never visible
    ctx.forget(entry.id)
    published.withdraw(ctx, entry, ctx.layout.result_table(entry.id))
    ctx.store.drop(entry.location)
    for held in outside_dirs(entry.location, entry.spec["maps"]):   # maps kept from before
        ctx.store.drop(held)
    return {"view": name, "status": "dropped"}
