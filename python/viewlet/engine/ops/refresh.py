"""REFRESH INCREMENTAL VIEW: a view without a stored program is rebuilt (REFRESH ... FULL),
a view over other views is refreshed with its chain to common base-table versions
(ops/chains.py), any other view advances by one batch (ops/advance.py); a view with a
REFRESH POLICY is recomputed where its policy says (ops/refresh_policy.py).
"""
from __future__ import annotations

import logging
from dataclasses import replace
from typing import Dict, Optional

from ..state.graph import upstream_names
from ..state.view import LoadedView
from .advance import advance_view
from .chains import refresh_chain
from .rebuild import rebuild_view
from .refresh_policy import refresh_under_policy
from .results import Refreshed

log = logging.getLogger("viewlet")


#: why a view created before programs were stored is rebuilt at its next REFRESH
UNPROVEN = ("created by a Viewlet that did not store its trigger program, so its maps cannot be "
            "proven to be the ones this version maintains: rebuilt once from the base tables")


def _rebuild_unproven(ctx, view: LoadedView) -> Refreshed:
    """A view without a stored program is never refreshed against its maps: REFRESH rebuilds
    it (REFRESH ... FULL, which stores this version's program) and says so."""
    log.warning("View %s: %s", view.name, UNPROVEN)
    result = rebuild_view(ctx, view.name, reason=UNPROVEN)
    return replace(result, status=f"{result.status}: {UNPROVEN}")


def refresh_view(ctx, name: str, max_commits: Optional[int] = None,
                 until: Optional[Dict[str, int]] = None) -> Refreshed:
    """One batch over every base commit since the watermark (at most `max_commits` commits
    per table when given: continuous mode's back-pressure). A view that reads other views
    refreshes them first (ops/chains.py), unless `until` (the chain's base-table versions)
    says that this is one step of such a chain refresh."""
    entry = ctx.catalog.find(name, "view")
    policy = entry.definition.refresh_policy if entry is not None else None
    if policy is None:
        return _refresh(ctx, name, max_commits, until)
    return refresh_under_policy(ctx, name, policy,
                                lambda: _refresh(ctx, name, max_commits, until))


def _refresh(ctx, name: str, max_commits: Optional[int],
             until: Optional[Dict[str, int]]) -> Refreshed:
    view = ctx.load(name)
    if view.compiled.stored is None:
        return _rebuild_unproven(ctx, view)
    if until is None and upstream_names(view.entry.spec):
        return refresh_chain(ctx, name, max_commits)
    return advance_view(ctx, view, max_commits, until)
