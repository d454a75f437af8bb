"""The base tables a view is loaded from, at CREATE: their change data feeds on (a commit to
a table the user owns, so only with consent), the upstream views it reads brought to the same
versions of every base table (ops/chains.py), the version of each relation its maps are
loaded at, and the rows those hold.
"""
from __future__ import annotations

import logging
from typing import Dict, Optional

from ...errors import ChangeFeedError
from ...frontend.lexical import quote_identifier
from ..state.graph import refuse_cycle, upstream_names, upstream_version
from ..state.program import CompiledView, relation_columns
from .chains import bring_up

log = logging.getLogger("viewlet")
#: the rows of base tables without statistics: as many as there can be
UNKNOWN_ROWS = 1 << 62
#: a relation's row is weighed on this many of its largest files (row_bytes reads the first)
WEIGHED_FILES = 3


def load_versions(ctx, name: str, compiled: CompiledView,
                  consent: Optional[bool] = None) -> Dict[str, int]:
    """The version of each relation the view is loaded at. Upstream incremental views are
    first refreshed (with theirs, ops/chains.py) to the same versions of every base table
    as the view's own base tables are read at."""
    versions = {}
    tables = compiled.spec.tables
    uppers = upstream_names({"refs": {k: {"view": t.view} for k, t in tables.items()}})
    until = None
    for table in tables.values():
        if not table.view:
            ctx.store.observe(table.id)      # a table replaced at its path is seen as new
    _turn_on_change_feeds(ctx, name, [t for t in tables.values() if not t.view], consent)
    if uppers:
        refuse_cycle(ctx, name, uppers)
        until = bring_up(ctx, uppers, [t.id for t in tables.values() if not t.view])
    for rel, table in tables.items():
        if table.view:
            versions[rel] = upstream_version(ctx, name, table, until)
        else:
            versions[rel] = until[table.id] if until else ctx.store.version(table.id)
    return versions


def _turn_on_change_feeds(ctx, name: str, tables, consent: Optional[bool]):
    """Base tables must have their change data feed on. Turning it on is a commit to a table
    the user owns, so it happens only with consent (the view's enable_change_data_feed
    option, else the context's / session's setting); without it CREATE fails before
    anything is written, naming every such table and the remedies."""
    off = [t for t in tables if not ctx.store.change_feed_enabled(t.id)]
    if not off:
        return
    if not (ctx.auto_enable_change_feed if consent is None else consent):
        shown = ", ".join(t.display for t in off)
        alters = "; ".join(f"ALTER TABLE delta.`{t.id}` SET TBLPROPERTIES "
                           "(delta.enableChangeDataFeed = true)" for t in off)
        raise ChangeFeedError(
            f"The change data feed of {shown} is off, and Viewlet reads a table's changes from "
            f"it. Turn it on yourself ({alters}), or let CREATE turn it on (a commit to the "
            f"table): CREATE INCREMENTAL VIEW {quote_identifier(name)} WITH "
            "(enable_change_data_feed = true) AS ..., or for the session SET "
            "spark.viewlet.enableChangeDataFeed = true.")
    for t in off:
        log.warning("Turning on the change data feed of %s", t.display)
        ctx.store.enable_change_feed(t.id)


def relation_rows(ctx, compiled: CompiledView, versions: Dict[str, int]) -> Dict[str, int]:
    """Each relation's rows at the version the view is loaded at (from Delta statistics;
    a table without them counts as UNKNOWN_ROWS)."""
    out = {}
    for rel, version in versions.items():
        snap = ctx.store.snapshot(compiled.spec.tables[rel].id, version)
        out[rel] = UNKNOWN_ROWS if snap.stats is None else sum(s.rows or 0 for s in snap.stats)
    return out


def total_rows(each: Dict[str, int]) -> int:
    """All relations' rows (`relation_rows`), UNKNOWN_ROWS when any has no statistics."""
    return min(UNKNOWN_ROWS, sum(each.values()))


def relation_bytes(ctx, compiled: CompiledView, versions: Dict[str, int],
                   each: Dict[str, int]) -> int:
    """The bytes the columns the view's program reads take in memory as Arrow, over every
    relation at its load version: its rows (`each`, relation_rows) times a row's bytes,
    sampled from its largest files (UNKNOWN_ROWS, as many as there can be, when a relation
    cannot be weighed)."""
    columns = relation_columns(compiled.program)
    total = 0
    for rel, version in versions.items():
        rows = each.get(rel, UNKNOWN_ROWS)
        if not rows:
            continue
        if rows >= UNKNOWN_ROWS:
            return UNKNOWN_ROWS
        snap = ctx.store.snapshot(compiled.spec.tables[rel].id, version)
        sizes = [s.rows or 0 for s in snap.stats] if snap.stats else [0] * len(snap.files)
        largest = [f for _, f in sorted(zip(sizes, snap.files), key=lambda p: -p[0])]
        width = ctx.store.row_bytes(snap.path, largest[:WEIGHED_FILES], columns.get(rel))
        if width is None:
            return UNKNOWN_ROWS
        total += int(rows * width)
    return total
