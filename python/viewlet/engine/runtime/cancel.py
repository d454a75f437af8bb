"""Cancelling a running Viewlet statement (Ctrl-C in PySpark, in a notebook, in spark-sql).

A statement runs with a Token on its thread (`statement()`). Cancelling the token (from a
signal handler or another thread) never interrupts the statement's thread at an arbitrary
point: it cancels the Spark job groups the statement's operations run their jobs in (from a
thread of its own, repeatedly until the statement ends, so a job started meanwhile is
cancelled too), interrupts its DuckDB queries, and the statement's thread stops at its next
check (`check()`: every progress step, every fault point, every batch phase), raising
Cancelled. What stopped there is what a crash at that point leaves, which every REFRESH
repairs: a batch planned and not committed is re-run by the next REFRESH with exactly its
recorded inputs, and the maps it had already written are skipped by their transaction ids.
"""
from __future__ import annotations

import functools
import itertools
import logging
import threading
from contextlib import contextmanager
from typing import Callable, Dict, Iterator, List, Optional

from ...errors import Cancelled, StatementInterrupted

log = logging.getLogger("viewlet")
_RECANCEL_SECONDS = 0.5


class Token:
    _serials = itertools.count(1)

    def __init__(self, what: str):
        self.what = what
        self.serial = next(Token._serials)       # tells statements apart (ids are reused)
        self.thread = threading.get_ident()
        self.reason: Optional[str] = None
        self.message: Optional[str] = None       # what the cancelled statement left
        self._cancelled = threading.Event()
        self.ended = threading.Event()
        self._lock = threading.RLock()
        self._groups: Dict[str, object] = {}          # Spark job group -> its SparkContext
        self._hooks: Dict[int, Callable[[], None]] = {}
        self._hooks_run: set = set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def cancel(self, reason: str) -> None:
        """Ask the statement to stop. Safe in a signal handler on the statement's own thread:
        it sets two flags and takes no lock the interrupted code may hold; the watcher thread
        does the rest (no call into the JVM on the caller's thread)."""
        if self._cancelled.is_set():
            return
        self.reason = reason
        self._cancelled.set()
        _wakeup.set()

    def track_group(self, sc, group: str) -> None:
        """The statement runs Spark jobs in `group` (progress.py)."""
        with self._lock:
            self._groups[group] = sc
        if self.cancelled:
            _wakeup.set()

    def on_cancel(self, hook: Callable[[], None]) -> int:
        """Run `hook` from the watcher thread when the statement is cancelled while it is
        registered (`forget(key)`)."""
        key = id(hook)
        with self._lock:
            self._hooks[key] = hook
        if self.cancelled:
            _wakeup.set()
        return key

    def forget(self, key: int) -> None:
        with self._lock:
            self._hooks.pop(key, None)
            self._hooks_run.discard(key)

    def _stop_work(self) -> None:
        """Called by the watcher while the cancelled statement runs: run each hook once,
        cancel every job group (again: a job may have started since)."""
        with self._lock:
            hooks = [(k, h) for k, h in self._hooks.items() if k not in self._hooks_run]
            self._hooks_run.update(k for k, _ in hooks)
            groups = list(self._groups.items())
        for _, hook in hooks:
            try:
                hook()
            except Exception as e:      # best effort: the statement stops at its next check
                log.debug("cancel hook failed: %s", e)
        for group, sc in groups:
            try:
                sc.cancelJobGroup(group)
            except Exception as e:      # a stopped context: nothing runs there any more
                log.debug("cancelling Spark job group %s failed: %s", group, e)

    def check(self) -> None:
        if self.cancelled:
            raise Cancelled(f"{self.what} was cancelled ({self.reason}).")


_wakeup = threading.Event()
_watcher: Optional[threading.Thread] = None
_watcher_lock = threading.Lock()


def _watch() -> None:
    while True:
        _wakeup.wait(_RECANCEL_SECONDS)
        _wakeup.clear()
        with _running_lock:
            tokens = [t for t in _running.values() if t.cancelled]
        for token in tokens:
            token._stop_work()


def _start_watcher() -> None:
    global _watcher
    with _watcher_lock:
        if _watcher is None or not _watcher.is_alive():
            _watcher = threading.Thread(target=_watch, daemon=True, name="viewlet-cancel")
            _watcher.start()


_local = threading.local()
_running: Dict[int, Token] = {}
_running_lock = threading.Lock()


def current() -> Optional[Token]:
    return getattr(_local, "token", None)


def check() -> None:
    """Raise Cancelled when the statement running on this thread was cancelled."""
    token = current()
    if token is not None:
        token.check()


@contextmanager
def statement(what: str) -> Iterator[Token]:
    """Run a statement with a Token of its own on this thread (nested: the outer one's)."""
    outer = current()
    if outer is not None:
        yield outer
        return
    token = Token(what)
    _start_watcher()
    _local.token = token
    with _running_lock:
        _running[id(token)] = token
    try:
        yield token
    finally:
        token.ended.set()
        _local.token = None
        with _running_lock:
            _running.pop(id(token), None)


def running() -> List[Token]:
    """The statements running in this process."""
    with _running_lock:
        return list(_running.values())


def cancel_all(reason: str) -> int:
    """Cancel every statement running in this process; how many there were."""
    with _running_lock:
        tokens = list(_running.values())
    for token in tokens:
        token.cancel(reason)
    return len(tokens)


def interruptible(what: Callable[..., str]):
    """Decorate a Python API call (Viewlet.refresh, create_view) so that Ctrl-C cancels it
    like the SQL statement: called on the main thread it runs as a statement, and a
    cancellation ends it with KeyboardInterrupt (errors.StatementInterrupted). Calls on
    other threads (continuous mode's) are not Ctrl-C's to cancel."""

    def wrap(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            if current() is not None or \
                    threading.current_thread() is not threading.main_thread():
                return fn(*args, **kwargs)
            with statement(what(*args, **kwargs)) as token:
                try:
                    return fn(*args, **kwargs)
                except BaseException as e:
                    if not token.cancelled:
                        raise
                    raise StatementInterrupted(f"{token.what} was cancelled "
                                               f"({token.reason}).") from e
        return run
    return wrap
