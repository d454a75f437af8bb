"""Refreshing a chain of views over views to the same base-table versions.

A REFRESH of a view with upstream views first picks one target version per base table of
the whole chain, refreshes every upstream view in dependency order up to those versions,
then runs its own batch over the upstream result versions those batches produced (recorded
as `result_version` in each committed manifest row) and its own base tables at the same
targets. Each of these is an ordinary exactly-once batch, so a crash between them loses and
repeats nothing: the next refresh starts from each view's manifest. (The dependency graph
and how an upstream view is read: state/graph.py.)
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional

from ..runtime import faults
from ..state.graph import upstream_names, upstream_order
from .results import Refreshed




# -- consistent refresh ----------------------------------------------------------------------
def targets(ctx, views, extra_locations: Iterable[str] = (),
            max_commits: Optional[int] = None) -> Dict[str, int]:
    """One version per base-table location of `views` (LoadedView) and `extra_locations`:
    the current version (or `max_commits` past the laggard's watermark), never below a
    watermark some view already has (its recorded batch, even if only planned)."""
    marks: Dict[str, List[int]] = {loc: [] for loc in extra_locations}
    for v in views:
        latest = v.manifest.latest()
        for rel, table in v.compiled.spec.tables.items():
            if not table.view:
                marks.setdefault(table.id, []).append(latest.watermarks[rel])
    out = {}
    for loc, ws in marks.items():
        current = ctx.store.version(loc)
        bound = current if max_commits is None or not ws else min(current, min(ws) + max_commits)
        out[loc] = max(ws + [bound])
    return out


def bring_up(ctx, names: Iterable[str], extra_locations: Iterable[str] = (),
             max_commits: Optional[int] = None) -> Dict[str, int]:
    """Refresh the views `names` and their upstream views, in dependency order, to common
    base-table versions; those versions (location -> version)."""
    order = upstream_order(ctx, names)
    until = targets(ctx, [ctx.load(n) for n in order], extra_locations, max_commits)
    for name in order:
        ctx.refresh_view(name, max_commits, until=until)
    return until


def refresh_chain(ctx, name: str, max_commits: Optional[int] = None) -> Refreshed:
    """REFRESH of a view that reads other views: its upstream views first (dependency
    order), then its own batch, all to the same base-table versions."""
    view = ctx.load(name)
    own = [t.id for t in view.compiled.spec.tables.values() if not t.view]
    uppers = upstream_order(ctx, upstream_names(view.entry.spec))
    until = targets(ctx, [ctx.load(n) for n in uppers] + [view], own, max_commits)
    for up in uppers:
        ctx.refresh_view(up, max_commits, until=until)
    faults.point("chain.upstreams_refreshed")
    return ctx.refresh_view(name, max_commits, until=until)
