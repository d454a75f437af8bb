"""Base tables that changed under a view in ways a batch cannot absorb.

Checked at every REFRESH before a batch is planned: a table dropped, replaced (a new Delta
table at the same path), its change feed turned off, or a column the view reads dropped or
retyped. Each is reported with its remedy; added columns are fine (the view never reads them).
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

from ...errors import (NOT_INCREMENTAL, REINITIALIZE, BaseTableChanged, TableNotFound,
                      ViewletError)
from ..spark.io import spark_schema
from ..state.graph import upstream_version


FULL = "REFRESH INCREMENTAL VIEW {view} FULL (rebuilds the view from the tables' current data)"


def batch_ranges(view, watermarks: Dict[str, int], max_commits: Optional[int] = None,
                 until: Optional[Dict[str, int]] = None) -> Dict[str, Tuple[int, int]]:
    """(watermark, upper] per relation: up to the current version, or `max_commits` past
    the watermark (back-pressure when commits arrive faster than batches apply). `until`
    (location -> version, a chain refresh's targets, ops/chains.py) fixes the upper
    versions of the base tables it names; an upstream view's upper version is always the
    result version of its last committed batch."""
    out = {}
    for rel, current in current_versions(view, watermarks, until).items():
        wm = watermarks[rel]
        table = view.compiled.spec.tables[rel]
        if table.view:
            out[rel] = (wm, current)
        elif until is not None and table.id in until:
            out[rel] = (wm, max(wm, min(current, until[table.id])))
        else:
            out[rel] = (wm, current if max_commits is None else min(current, wm + max_commits))
    return out


def current_versions(view, watermarks: Dict[str, int],
                     until: Optional[Dict[str, int]] = None) -> Dict[str, int]:
    """Each base table's current version, after checking it can continue from its watermark
    (an upstream view's: the result version of its last committed batch). One look at each
    table's log (`TableStore.observe`): its schema is checked again only when it changed."""
    store = view.ctx.store
    out = {}
    for rel, table in view.compiled.spec.tables.items():
        if table.view:
            out[rel] = upstream_version(view.ctx, view.name, table, until)
            continue
        where = f"Base table {table.display} of incremental view {view.name}"
        full = FULL.format(view=view.name)
        try:
            state = store.observe(table.id)
        except TableNotFound:
            raise BaseTableChanged(
                f"{where} no longer exists (location {table.id}). Recreate the table, then "
                f"{full}; or DROP INCREMENTAL VIEW {view.name}.") from None
        wm, current = watermarks[rel], state.version
        if current == wm:
            out[rel] = current
            continue
        if current < wm or _replaced(view, rel, state, wm):
            raise BaseTableChanged(
                f"{where} was replaced: the Delta table at {table.id} is not the one the view "
                f"has consumed up to version {wm}. {full}.", cause=REINITIALIZE)
        if not state.change_feed:
            raise BaseTableChanged(
                f"{where} has its change data feed turned off, so its changes since version "
                f"{wm} cannot be read. Turn it on (ALTER TABLE {table.display} SET TBLPROPERTIES "
                f"(delta.enableChangeDataFeed = true)), then {full}.", cause=NOT_INCREMENTAL)
        _check_columns(view, rel, table, state.schema, where, full)
        out[rel] = current
    return out


def table_ids(ctx, spec) -> Dict[str, str]:
    """Delta table ids of a view's base tables, recorded at CREATE."""
    return {rel: ctx.store.table_id(t.id) for rel, t in spec.tables.items()}


def _replaced(view, rel, state, watermark: int) -> bool:
    store = view.ctx.store
    recorded = (view.definition.table_ids or {}).get(rel)
    try:
        return (recorded or store.table_id(view.compiled.spec.tables[rel].id, watermark)) \
            != state.table_id
    except ViewletError:     # that version's log is gone: read_changes reports it
        return False


def _check_columns(view, rel, table, schema, where, full):
    """Columns the view reads must still be there with their types (checked once per
    schema the table has had: schemas change rarely)."""
    seen = view.runtime.checked_schemas
    if seen.get(rel) == schema:
        return
    recorded = {c.name.lower(): c.type for c in table.columns}
    live = {f.name.lower(): f.dataType.simpleString() for f in spark_schema(schema).fields}
    for col in view.columns_of(rel):
        low = col.lower()
        if low not in live:
            raise BaseTableChanged(
                f"{where} no longer has column {col}, which the view reads. DROP the view and "
                f"CREATE it with a query that does not use {col}.")
        if live[low] != recorded.get(low, live[low]):
            raise BaseTableChanged(
                f"{where} changed the type of column {col} from {recorded[low]} to {live[low]}. "
                f"{full}.", cause=REINITIALIZE)
    seen[rel] = schema
