"""Continuous mode: views refreshed automatically on the driver of a long-lived session.

One daemon thread per Viewlet context runs the due views one batch at a time. A batch
consumes at most `max_commits` commits per base table (back-pressure: when commits arrive
faster than batches apply, the view catches up in bounded batches, round-robin with the
other views, instead of one huge batch). Errors are recorded per view (SHOW and DESCRIBE
show them) and the view backs off exponentially. stop() and interpreter exit wait for the
batch in flight, so no batch is left half-applied by a clean stop (a killed process is
repaired by the next refresh, as always).
"""
from __future__ import annotations

import atexit
import datetime as dt
import logging
import threading
import time
from dataclasses import dataclass
from typing import Dict, Optional

from ..state.history import record_failure
from .refresh import refresh_view

log = logging.getLogger("viewlet")
DEFAULT_EVERY = 10.0
DEFAULT_MAX_COMMITS = 10
MAX_BACKOFF = 300.0
POLL = 1.0       # how often the loop re-reads the catalog for interval changes


@dataclass
class ViewStatus:
    every: float
    due: float = 0.0
    batches: int = 0
    failures: int = 0          # consecutive
    last_error: Optional[str] = None
    last_batch_at: Optional[str] = None


class ContinuousRefresh:
    def __init__(self, ctx, max_commits: int = DEFAULT_MAX_COMMITS):
        self.ctx = ctx
        self.max_commits = max_commits
        self._cv = threading.Condition()
        self._explicit: Dict[str, Optional[float]] = {}   # view -> interval (None: catalog's)
        self._all = False
        self._excluded = set()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.status: Dict[str, ViewStatus] = {}
        atexit.register(self.stop)

    # -- control -----------------------------------------------------------------------------
    def start(self, name: Optional[str] = None, every: Optional[float] = None,
              max_commits: Optional[int] = None):
        with self._cv:
            if max_commits is not None:
                self.max_commits = max_commits
            if name is None:
                self._all, self._excluded = True, set()
            else:
                self.ctx.load(name)                       # fails clearly for an unknown view
                self._explicit[name.lower()] = every
                self.status.pop(name.lower(), None)     # due now, batches counted afresh
                self._excluded.discard(name.lower())
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._thread = threading.Thread(target=self._loop, name="viewlet-continuous",
                                                daemon=True)
                self._thread.start()
            self._cv.notify_all()

    def stop(self, name: Optional[str] = None, timeout: Optional[float] = None):
        """Stop one view (None: all, and end the thread, waiting for the batch in flight)."""
        with self._cv:
            if name is not None:
                self._explicit.pop(name.lower(), None)
                self._excluded.add(name.lower())
                self.status.pop(name.lower(), None)
                return
            self._stop.set()
            self._cv.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def running(self, name: str) -> bool:
        return self._thread is not None and self._thread.is_alive() and name.lower() in self.status

    def wait_for_batches(self, name: str, batches: int, timeout: float) -> bool:
        """Block until `name` has run `batches` batches in this loop (for tests and scripts)."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while True:
                st = self.status.get(name.lower())
                if st is not None and st.batches >= batches:
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cv.wait(left)

    # -- loop --------------------------------------------------------------------------------
    def _targets(self) -> Dict[str, float]:
        out = {}
        for e in self.ctx.catalog.entries("view"):
            low = e.name.lower()
            configured = e.definition.refresh
            if low in self._excluded:
                continue
            if low in self._explicit:
                out[e.name] = self._explicit[low] or configured or DEFAULT_EVERY
            elif self._all and configured:
                out[e.name] = configured
        return out

    def _session_alive(self) -> bool:
        return getattr(self.ctx.spark.sparkContext, "_jsc", None) is not None

    def _loop(self):
        while not self._stop.is_set() and self._session_alive():
            try:
                targets = self._targets()
            except Exception as e:  # noqa: BLE001 - the catalog may be briefly unreadable
                log.warning("Continuous refresh: cannot read the catalog: %s", e)
                targets = {}
            with self._cv:
                for name in list(self.status):
                    if name not in {t.lower() for t in targets}:
                        del self.status[name]
                for name, every in targets.items():
                    st = self.status.setdefault(name.lower(), ViewStatus(every, time.monotonic()))
                    st.every = every
            ran = False
            for name in targets:
                if self._stop.is_set():
                    break
                st = self.status[name.lower()]
                if st.due <= time.monotonic():
                    self._run_one(name, st)
                    ran = True
            if ran:
                continue
            with self._cv:
                next_due = min((s.due for s in self.status.values()), default=time.monotonic() + POLL)
                self._cv.wait(max(0.0, min(POLL, next_due - time.monotonic())))

    def _run_one(self, name: str, st: ViewStatus):
        try:
            result = refresh_view(self.ctx, name, self.max_commits)
        except Exception as e:  # noqa: BLE001 - recorded, shown by SHOW/DESCRIBE/HISTORY, retried
            record_failure(self.ctx, name, e)
            message = getattr(e, "message", None) or f"{type(e).__name__}: {e}"
            with self._cv:
                st.failures += 1
                st.last_error = f"{dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}: {message}"
                backoff = min(MAX_BACKOFF, st.every * 2 ** st.failures)
                st.due = time.monotonic() + backoff
                self._cv.notify_all()
            log.warning("Continuous refresh of %s failed (retry in %.0f s): %s", name, backoff, message)
            return
        with self._cv:
            st.failures = 0
            st.last_error = None
            if result.status != "up to date":
                st.batches += 1
                st.last_batch_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
                st.due = time.monotonic()        # a bounded batch may have left commits behind
            else:
                st.due = time.monotonic() + st.every
            self._cv.notify_all()
