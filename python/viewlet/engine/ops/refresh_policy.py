"""REFRESH POLICY (Databricks' clause of CREATE MATERIALIZED VIEW, kept as the view's option
`refresh_policy`): when a REFRESH recomputes the view from its base tables' current data
instead of applying their changes.

    policy               changes readable   incremental impossible    re-initialization needed
                                            (change feed turned off)  (table replaced, column
                                                                      retyped, upstream view
                                                                      rebuilt, stored program
                                                                      unreadable)
    none (Viewlet's)     incremental        refused, names the remedy refused, names the remedy
    AUTO, INCREMENTAL    incremental        rebuilt                   rebuilt
    INCREMENTAL STRICT   incremental        refused, names the policy rebuilt
    FULL                 recomputed         rebuilt                   rebuilt

FULL views are created at depth 0 (state/settings.policy_depth): their one state is the
view, which each batch recomputes from the base tables on Spark. A rebuild is REFRESH ...
FULL (ops/rebuild.py): HISTORY shows a batch `rebuilt` with the reason. When incremental
maintenance is possible AUTO applies the changes: the choice by cost is where the batch runs
(batch/policy.py). A table or column the view reads that is gone is refused under every
policy (a rebuild would fail on it too). CREATE refuses a query Viewlet cannot maintain under
every policy: Viewlet keeps no recompute-only views (Spark's own materialized views are
those, in a pipeline).
"""
from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import Callable, Optional

from ...errors import (NOT_INCREMENTAL, REINITIALIZE, BaseTableChanged, StoredProgramError,
                       UpstreamViewChanged, ViewletError)
from ..state.settings import POLICY_STRICT
from .rebuild import rebuild_view
from .results import Refreshed

log = logging.getLogger("viewlet")

#: what a REFRESH under a policy cannot continue from, and a recompute can
RECOVERABLE = (BaseTableChanged, UpstreamViewChanged, StoredProgramError)


def _cause(error: ViewletError) -> Optional[str]:
    if isinstance(error, StoredProgramError):
        return REINITIALIZE
    return getattr(error, "cause", None)


def recompute_reason(policy: str, error: ViewletError) -> Optional[str]:
    """Why `policy` recomputes a view whose incremental refresh raised `error`; None when it
    does not (the error stands)."""
    cause = _cause(error)
    if cause is None or (cause == NOT_INCREMENTAL and policy == POLICY_STRICT):
        return None
    first = error.message.split(". ")[0].rstrip(".")
    return f"REFRESH POLICY {policy}: {first}; rebuilt from the current data"


def strict_refusal(policy: str, error: ViewletError) -> ViewletError:
    """The error of a view INCREMENTAL STRICT keeps from a recompute (Databricks' name for
    it, MATERIALIZED_VIEW_NOT_INCREMENTALIZABLE, then the reason and the remedy)."""
    out = type(error)(f"[MATERIALIZED_VIEW_NOT_INCREMENTALIZABLE] REFRESH POLICY {policy} "
                      f"refuses to recompute the view: {error.message}")
    out.__cause__ = error
    return out


def refresh_under_policy(ctx, name: str, policy: str,
                         incremental: Callable[[], Refreshed]) -> Refreshed:
    """`incremental()` (the REFRESH without a policy) as `policy` has it."""
    t0 = time.perf_counter()
    try:
        return incremental()
    except RECOVERABLE as e:
        reason = recompute_reason(policy, e)
        if reason is None:
            if policy == POLICY_STRICT and _cause(e) == NOT_INCREMENTAL:
                raise strict_refusal(policy, e) from e
            raise
        log.warning("View %s: %s", name, reason)
        result = rebuild_view(ctx, name, reason=reason)
    return replace(result, status=f"{result.status}: {reason}",
                   seconds=round(time.perf_counter() - t0, 3))
