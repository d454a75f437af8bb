"""Views over incremental views: resolving an upstream view, and the dependency graph.

An upstream view is read like a base table: its result table (a Delta table Viewlet owns),
with the view's visible output columns. Its changes are the data files its commits removed
(-1) and added (+1) (`TableStore.read_file_changes`), netted per row by the batch, which is
exact for every write Viewlet makes to a result table (MERGE, overwrite) and needs no change
data feed on result tables. The graph is read from the catalog: each view's spec records
the views it reads (`refs`).
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Mapping, Optional

from ...errors import ConcurrentUpdate, UpstreamViewChanged, ViewletError
from ...frontend.tables import ColumnInfo, TableInfo

#: key of a committed manifest row's stats: the result table's version after the batch
RESULT_VERSION = "result_version"


# -- resolution ----------------------------------------------------------------------------
def upstream_table(ctx, entry) -> TableInfo:
    """An incremental view read by another view: its result table and visible columns."""
    columns = []
    for c in entry.definition.result.columns:
        if c.physical != c.name:
            raise ViewletError(
                f"Column `{c.name}` of incremental view {entry.name} is stored as "
                f"`{c.physical}` (a Delta column name cannot be `{c.name}`), so another "
                f"view cannot read it by its name. Give it a plain alias in {entry.name}'s "
                f"definition (e.g. ... AS {c.physical}), recreate {entry.name}, then create "
                "this view.")
        columns.append(ColumnInfo(c.name, c.type, True))
    return TableInfo(ctx.layout.result_table(entry.id), entry.name, tuple(columns), entry.name)


# -- the dependency graph --------------------------------------------------------------------
def upstream_names(spec: Mapping) -> List[str]:
    """Names of the incremental views a view reads, as its catalog entry records them (its
    `spec`, the JSON as stored: the graph needs no other part of it)."""
    return sorted({r["view"] for r in spec.get("refs", {}).values() if r.get("view")},
                  key=str.lower)


def dependents(ctx, name: str) -> List[str]:
    """Views that read `name` directly."""
    low = name.lower()
    return [e.name for e in ctx.catalog.entries("view")
            if any(u.lower() == low for u in upstream_names(e.spec))]


def upstream_order(ctx, names: Iterable[str]) -> List[str]:
    """`names` and every view they read, transitively, each after the views it reads."""
    entries = {e.name.lower(): e for e in ctx.catalog.entries("view")}
    order: List[str] = []
    done, visiting = set(), []

    def visit(name):
        low = name.lower()
        if low in done:
            return
        if low in visiting:     # impossible by construction (a view reads existing views)
            cycle = " -> ".join(visiting[visiting.index(low):] + [low])
            raise ViewletError(f"Incremental views read each other in a cycle ({cycle}). Drop one "
                               "of them and recreate it without reading the others.")
        entry = entries.get(low)
        if entry is None:
            raise ViewletError(f"Incremental view '{name}' is read by another view but no longer "
                               "exists. DROP the views that read it, or recreate it.")
        visiting.append(low)
        for up in upstream_names(entry.spec):
            visit(up)
        visiting.pop()
        done.add(low)
        order.append(entry.name)

    for n in names:
        visit(n)
    return order


def downstream_order(ctx, name: str) -> List[str]:
    """Every view that reads `name`, transitively, in dependency order (not `name`)."""
    found, todo = set(), [name]
    while todo:
        for d in dependents(ctx, todo.pop()):
            if d.lower() not in found:
                found.add(d.lower())
                todo.append(d)
    return [n for n in upstream_order(ctx, sorted(found)) if n.lower() in found]


def refuse_cycle(ctx, name: str, upstreams: Iterable[str]) -> None:
    """Guard for a view (re)built as `name`: none of the views it reads may read it."""
    closure = [n.lower() for n in upstream_order(ctx, upstreams)]
    if name.lower() in closure:
        raise ViewletError(f"Incremental view '{name}' would read itself through "
                           f"{', '.join(upstreams)}: views over views cannot form a cycle.")


def upstream_version(ctx, reader: str, table: TableInfo,
                     until: Optional[Dict[str, int]] = None) -> int:
    """The version of upstream view `table.view`'s result table that matches its last
    committed batch; with `until`, that batch must have consumed exactly those base-table
    versions (a concurrent refresh of the upstream may have moved it past them)."""
    entry = ctx.catalog.find(table.view, "view")
    if entry is None or ctx.layout.result_table(entry.id) != table.id:
        raise UpstreamViewChanged(
            f"Upstream incremental view {table.view} of {reader} was rebuilt or recreated "
            f"since {reader} was created, so {reader} cannot continue from it. REFRESH "
            f"INCREMENTAL VIEW {reader} FULL rebuilds it from the current data.")
    up = ctx.load(entry.name)
    last = up.manifest.last_committed()
    if until is not None:
        for rel, t in up.compiled.spec.tables.items():
            if not t.view and t.id in until and last.watermarks[rel] != until[t.id]:
                raise ConcurrentUpdate(
                    f"Upstream incremental view {up.name} of {reader} was refreshed to version "
                    f"{last.watermarks[rel]} of {t.display} while {reader} was being brought to "
                    f"version {until[t.id]}. Nothing was applied twice; run the REFRESH again.")
    version = last.batch_stats.result_version
    # manifests written before views over views existed: the result's current version
    return int(version) if version is not None else ctx.store.version(up.result_path)
