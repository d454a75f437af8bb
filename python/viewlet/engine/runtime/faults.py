"""Named fault points for crash tests.

`point("batch.planned")` is a no-op unless the environment variable VIEWLET_FAULT (or
`arm()`) names that point: `VIEWLET_FAULT=<point>[:<nth>]` kills this process with SIGKILL
the nth time (default: first) the point is reached, so tests can prove that a refresh
killed at any step boundary leaves views that the next refresh repairs exactly.

`VIEWLET_PAUSE=<point>[:<nth>]=<file>` holds the process at the point instead, for tests that
need a refresh to stand still mid-batch (a second refresher, Ctrl-C): it writes
`<file>.reached` and waits while `<file>` exists (a cancelled statement stops waiting).
"""
from __future__ import annotations

import os
import signal
import threading
import time
from typing import Dict, Optional, Tuple

from . import cancel

ENV = "VIEWLET_FAULT"
PAUSE_ENV = "VIEWLET_PAUSE"
# Every point the runtime reaches, in batch order (tests iterate over these).
POINTS = (
    "batch.planned",        # the manifest's planned row is committed, nothing read yet
    "batch.computed",       # change feeds read and every delta collected, no MERGE yet
    "batch.map_merged",     # after each map MERGE (use :<nth> to stop between MERGEs)
    "batch.result_merged",  # after the result table's MERGE, before the manifest moves
    "batch.committed",      # the manifest's committed row is written
)
# Reached only by a REFRESH of a view over other views (ops/chains.py).
CHAIN_POINTS = (
    "chain.upstreams_refreshed",   # every upstream view committed, the view's batch not planned
)

_lock = threading.Lock()
_armed: Optional[Tuple[str, int]] = None
_seen: Dict[str, int] = {}
_paused: Dict[str, int] = {}


def _parse(spec: str) -> Optional[Tuple[str, int]]:
    spec = (spec or "").strip()
    if not spec:
        return None
    name, _, nth = spec.partition(":")
    return name, int(nth) if nth else 1


def arm(spec: Optional[str]) -> None:
    """Arm (or with None, disarm) a fault in this process, replacing VIEWLET_FAULT."""
    global _armed
    with _lock:
        _armed = _parse(spec) if spec else None
        _seen.clear()


def point(name: str) -> None:
    if name != "batch.committed":     # before a commit: where a cancelled statement stops
        cancel.check()
    _pause(name)
    armed = _armed if _armed is not None else _parse(os.environ.get(ENV, ""))
    if armed is None or armed[0] != name:
        return
    with _lock:
        _seen[name] = _seen.get(name, 0) + 1
        hit = _seen[name] == armed[1]
    if hit:
        os.kill(os.getpid(), signal.SIGKILL)


def _pause(name: str) -> None:
    spec = os.environ.get(PAUSE_ENV, "")
    if not spec or "=" not in spec:
        return
    where, path = spec.split("=", 1)
    armed = _parse(where)
    if armed is None or armed[0] != name:
        return
    with _lock:
        _paused[name] = _paused.get(name, 0) + 1
        if _paused[name] != armed[1]:
            return
    with open(f"{path}.reached", "w") as f:
        f.write(str(os.getpid()))
    while os.path.exists(path):
        cancel.check()
        time.sleep(0.05)
