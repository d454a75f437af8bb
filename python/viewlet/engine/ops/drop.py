"""DROP INCREMENTAL VIEW: the catalog entry first (a half-dropped view is never visible), then
the view's catalog presence in Spark, its directory and the maps it kept from views it
replaced.
"""
from __future__ import annotations

from ...errors import ViewletError
from ..state import published
from ..state.catalog import missing_view
from ..state.graph import dependents
from ..state.kept import outside_dirs
from ..state.manifest import Manifest
from .results import Dropped


def drop_view(ctx, name: str, if_exists: bool = False) -> Dropped:
    entry = ctx.catalog.find(name, "view")
    if entry is None:
        if if_exists:
            return Dropped(name, "not found")
        raise missing_view(name)
    readers = dependents(ctx, entry.name)
    if readers:
        raise ViewletError(f"Incremental view '{entry.name}' is read by "
                           f"{', '.join(readers)}. DROP INCREMENTAL VIEW those first, then "
                           f"drop {entry.name}.")
    ctx.catalog.remove(entry.id)      # first: a half-dropped view is never visible
    ctx.forget(entry.id)
    published.withdraw(ctx, entry, ctx.layout.result_table(entry.id))
    Manifest(ctx.store, ctx.layout.manifest_table(entry.id)).settle()   # its last row lands
    ctx.store.drop(entry.location)
    for held in outside_dirs(entry.location, entry.definition.maps):   # maps kept from before
        ctx.store.drop(held)
    return Dropped(name, "dropped")
