"""Keeping Spark's catalog in step with the warehouse's views (spark/catalog_views.py): a
view is published at CREATE, re-pointed by a full rebuild, withdrawn by DROP, and published
again when a new session enables Viewlet (an in-memory catalog forgets its tables).

With delta-spark a view is a Delta table of the catalog (its result table, registered at its
location). Without it, or when Delta cannot name the view's columns, it is a temporary view
over its result table: SHOW TABLES and DESCRIBE list it, every read resolves the latest
version; DESCRIBE, DESCRIBE HISTORY and time travel on it are answered by Viewlet
(api/relations.py)."""
from __future__ import annotations

import logging
from typing import List, Optional

from ..spark import catalog_views
from .catalog import Entry
from .settings import Settings

log = logging.getLogger("viewlet")


def catalog_parts(ctx, entry: Entry, settings: Optional[Settings] = None) -> Optional[List[str]]:
    """Where the view is (or would be) in Spark's catalog; None if it is not published:
    delta-spark absent, or a result table with columns that are not the view's."""
    if not is_catalog_table(entry, settings or Settings(ctx.spark)):
        return None
    return entry.definition.catalog_name or catalog_views.catalog_name(ctx.spark, entry.name)


def is_catalog_table(entry: Entry, settings: Settings) -> bool:
    """The view is (or would be) a Delta table of Spark's catalog, not a temporary view."""
    return settings.registers_views and unpublishable(entry) is None


def unpublishable(entry: Entry) -> Optional[str]:
    """Why the result table cannot stand for the view in the catalog (its columns would not
    be the view's: `SELECT * FROM v` must not depend on delta-spark being there), or None."""
    layout = entry.definition.result
    if layout.hidden:
        return ("its result table has hidden group-key columns (GROUP BY keys missing from "
                "the SELECT list); add them to the SELECT list")
    renamed = [c.name for c in layout.columns if c.physical != c.name]
    if renamed:
        return (f"Delta column names cannot hold {', '.join(repr(n) for n in renamed)}; give "
                "those columns aliases (AS name)")
    return None


def reserve(ctx, name: str) -> Optional[List[str]]:
    """The catalog name a new view will take (None: a temporary view, or nothing). That no
    table or view of the session holds it was checked before (ops/create.py)."""
    if not Settings(ctx.spark).registers_views:
        return None
    return catalog_views.catalog_name(ctx.spark, name)


def publish(ctx, entry: Entry, result_location: str, settings: Optional[Settings] = None) -> None:
    settings = settings or Settings(ctx.spark)
    if not settings.publishes:
        return
    parts = catalog_parts(ctx, entry, settings)
    try:
        if parts is not None:
            catalog_views.register(ctx.spark, parts, result_location)
            return
        if settings.registers_views:
            log.info("Incremental view %s is a temporary view, not a Delta table of the "
                     "catalog: %s.", entry.name, unpublishable(entry))
        columns = [(c.physical, c.name) for c in entry.definition.result.columns]
        catalog_views.register_temporary(ctx.spark, entry.name, result_location, columns)
    except Exception as e:  # noqa: BLE001 - the view works without its catalog entry
        log.warning("Incremental view %s was not made visible to Spark's catalog: %s. It "
                    "stays readable by name through Viewlet.", entry.name, e)


def withdraw(ctx, entry: Entry, result_location: str) -> None:
    settings = Settings(ctx.spark)
    if not settings.publishes:
        return
    parts = catalog_parts(ctx, entry, settings)
    if parts is None:
        if catalog_views.temporary_exists(ctx.spark, entry.name):
            catalog_views.unregister_temporary(ctx.spark, entry.name)
        return
    try:
        catalog_views.unregister(ctx.spark, parts, result_location)
    except Exception as e:  # noqa: BLE001 - the view is dropped; a stale entry is reported
        log.warning("The catalog entry %s of dropped view %s is left: %s (DROP TABLE it)",
                    ".".join(parts), entry.name, e)


def withdraw_temporary(ctx) -> None:
    """Drop the temporary views `ctx` published (Viewlet enabled on another warehouse in
    the same session); catalog tables stay, they belong to the metastore."""
    settings = Settings(ctx.spark)
    if not settings.publishes:
        return
    for entry in ctx.catalog.entries("view"):
        if catalog_parts(ctx, entry, settings) is None and \
                catalog_views.temporary_exists(ctx.spark, entry.name):
            catalog_views.unregister_temporary(ctx.spark, entry.name)


def publish_all(ctx, catalog: bool = True, temporary: bool = True) -> None:
    """Publish the warehouse's views: those that are Delta tables of the catalog (`catalog`),
    those that are temporary views (`temporary`). A temporary view reads its result table
    through Viewlet's handler where delta-spark is absent, so it needs the handler; a
    catalog table does not."""
    settings = Settings(ctx.spark)
    if not settings.publishes:
        return
    for entry in ctx.catalog.entries("view"):
        if catalog if is_catalog_table(entry, settings) else temporary:
            publish(ctx, entry, ctx.layout.result_table(entry.id), settings)
