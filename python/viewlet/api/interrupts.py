"""Ctrl-C during a Viewlet statement (engine/runtime/cancel.py does the cancelling).

In PySpark, `spark.sql("REFRESH ...")` blocks the main thread in a Py4J call while the JVM
runs the statement by calling Viewlet's handler back on another Python thread. PySpark's own
SIGINT handler calls the JVM from inside that blocked call (the `reentrant call inside
<_io.BufferedReader>` errors and a broken connection) and leaves the statement running. So
`viewlet.enable` puts `ViewletSigint` in front of it: while Viewlet statements run, Ctrl-C
cancels them, waits on the main thread until they have stopped (at their next step, within
seconds), then ends the blocked `spark.sql` call with KeyboardInterrupt. Without a Viewlet
statement running, Ctrl-C goes to the handler that was there before (PySpark's).

In the spark-sql shell (an attached Python, which ignores SIGINT) the shell's own Ctrl-C
handler cancels Spark's jobs and calls Viewlet's callback (io.viewlet.spark.ShellInterrupt),
which reaches `cancel.cancel_all` through the handler's cancelAll(); the statement fails with
the cancellation message and the shell returns to its prompt.
"""
from __future__ import annotations

import logging
import signal
import threading

from ..engine.runtime import cancel
from ..errors import StatementInterrupted

CTRL_C = "Ctrl-C"
#: presses after which Ctrl-C stops waiting for the statements to stop
GIVE_UP_AFTER = 3


def interrupt_call(message: str):
    """End this thread's blocked Py4J call with StatementInterrupted. The call's reply is due
    on this thread's connection (or the JVM waits there for the statement's reply): close
    it, so that the next call opens a new one instead of reading a stale reply. (Py4J's own
    clean-up of an interrupted call needs a state its pinned connections are not always in.)"""
    try:
        from pyspark import SparkContext
        client = SparkContext._gateway._gateway_client if SparkContext._gateway else None
        connection = client.get_thread_connection() if client is not None else None
        if connection is not None:
            connection.close()
    except Exception:                   # no connection: nothing waits on it
        pass
    raise StatementInterrupted(message)


class _QuietPy4J(logging.Filter):
    """Py4J logs every KeyboardInterrupt that passes through a call, with a traceback, on the
    root logger; the interrupt itself says what happened."""

    def filter(self, record):
        return not (record.exc_info and isinstance(record.exc_info[1], StatementInterrupted))


class ViewletSigint:
    """The SIGINT handler of a PySpark driver with Viewlet enabled."""

    def __init__(self, previous):
        self.previous = previous
        self.presses = 0
        self._cancelling = set()           # the statements the presses counted were for

    def __call__(self, signum, frame):
        tokens = cancel.running()
        if not tokens:
            self.presses = 0
            if callable(self.previous):
                return self.previous(signum, frame)
            raise KeyboardInterrupt
        if {t.serial for t in tokens} != self._cancelling:  # other statements: a first press
            self._cancelling = {t.serial for t in tokens}
            self.presses = 0
        self.presses += 1
        for token in tokens:
            token.cancel(CTRL_C)
        what = ", ".join(t.what for t in tokens)
        if self.presses >= GIVE_UP_AFTER:
            _say(f"[viewlet] no longer waiting for {what} to stop")
            self.presses = 0
            interrupt_call(
                f"{what}: cancelled; it stops in the background at its next step (the next "
                "REFRESH completes what it left planned)")
        if self.presses > 1:
            _say(f"[viewlet] still cancelling {what} (press Ctrl-C "
                 f"{GIVE_UP_AFTER - self.presses} more time(s) to stop waiting)")
            return                       # the first press's handler is waiting below
        _say(f"[viewlet] cancelling {what}: it stops at its next step")
        if any(t.thread == threading.get_ident() for t in tokens):
            # Py4J ran the statement on this thread, inside the blocked call: it stops at its
            # next step and the handler raises StatementInterrupted from there (api/handler.py).
            return
        # The statement runs on a Py4J server thread while this thread waits for the JVM's
        # reply: wait until it has stopped, then end the call (interrupt_call).
        for token in tokens:
            while not token.ended.wait(0.1):
                pass
        self.presses = 0
        interrupt_call(" ".join(t.message or f"{t.what} was cancelled."
                                            for t in tokens))


def _say(text: str) -> None:
    """A line on stderr, after the progress line on screen (engine/runtime/console.py)."""
    from ..engine.runtime.console import CONSOLE
    CONSOLE.message(text)


def cancelled_by_ctrl_c(token) -> bool:
    """A statement Ctrl-C cancelled on the thread it runs on (the main thread)."""
    return token.reason == CTRL_C and token.thread == threading.get_ident() and \
        threading.current_thread() is threading.main_thread()


def install() -> None:
    """Put ViewletSigint in front of this process's SIGINT handler (on the main thread; a
    handler that ignores SIGINT, as viewlet.api.attach's, is left alone)."""
    if threading.current_thread() is not threading.main_thread():
        return
    current = signal.getsignal(signal.SIGINT)
    if current is signal.SIG_IGN or isinstance(current, ViewletSigint):
        return
    signal.signal(signal.SIGINT, ViewletSigint(current))
    root = logging.getLogger()
    if not any(isinstance(f, _QuietPy4J) for f in root.filters):
        root.addFilter(_QuietPy4J())
