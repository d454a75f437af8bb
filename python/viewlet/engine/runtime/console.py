"""The one progress display of this process on stderr (progress.py says what shows).

On a terminal, the step of the operation that stepped last is one line, rewritten in place
twice a second (`\\r`, erase to the end of the line) with the rows its Spark jobs have read and
the seconds taken; the next step, or the operation's end, finishes the line with its final
numbers. Elsewhere, each step is one plain line when it ends, and a step running longer than
`PLAIN_EVERY` seconds gets a line that often. While an operation shows, Spark's console
progress bar is held off (io.viewlet.spark.ConsoleBars), so the two never share a line.

Whether stderr is a terminal: `VIEWLET_STDERR_TTY` (1 or 0) when set (the spark-sql shell
sets it for its attached Python, whose stderr is a pipe to the shell's terminal), else
`isatty()`.
"""
from __future__ import annotations

import logging
import os
import sys
import threading
import time
from typing import List, Optional

log = logging.getLogger("viewlet.progress")
TTY_ENV = "VIEWLET_STDERR_TTY"
TICK = 0.5
PLAIN_EVERY = 30.0
_CLEAR = "\r\x1b[K"
_JVM = "io.viewlet.spark.ViewletProgress"


def is_terminal(stream) -> bool:
    forced = os.environ.get(TTY_ENV)
    if forced in ("0", "1"):
        return forced == "1"
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _width() -> int:
    """The terminal's width: stderr's, else the controlling terminal's (the spark-sql shell's,
    for its attached Python), else COLUMNS, else 100."""
    try:
        columns = os.get_terminal_size(sys.stderr.fileno()).columns
    except (AttributeError, OSError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
            try:
                columns = os.get_terminal_size(fd).columns
            finally:
                os.close(fd)
        except (AttributeError, OSError):
            columns = 0
    if columns <= 0:
        columns = int(os.environ.get("COLUMNS", "0") or 0)
    return columns if columns > 0 else 100


class Console:
    def __init__(self):
        self._lock = threading.RLock()
        self._ops: List = []
        self._open = None              # the op whose unfinished line is on the terminal
        self._held = False
        self._ticker: Optional[threading.Thread] = None

    # -- operations (progress.py) -------------------------------------------------------
    def add(self, op) -> None:
        op.step_text, op.step_t0, op.last_plain = "", time.perf_counter(), 0.0
        with self._lock:
            self._ops.append(op)
            if self._ticker is None or not self._ticker.is_alive():
                self._ticker = threading.Thread(target=self._tick, daemon=True,
                                                name="viewlet-progress")
                self._ticker.start()

    def remove(self, op) -> None:
        with self._lock:
            if op not in self._ops:
                return
            if op.visible and op.step_text:
                self._end_step(op)
            self._ops.remove(op)
            if not any(o.visible for o in self._ops):
                self._hold(False, op)

    def step(self, op, text: str) -> None:
        with self._lock:
            if op.visible and op.step_text:
                self._end_step(op)
            op.step_text, op.step_t0, op.last_plain = text, time.perf_counter(), 0.0
            if op.visible:
                self._hold(True, op)
                if self._terminal():
                    self._draw(op)

    def message(self, text: str) -> None:
        """A line of its own (after finishing the step line on screen)."""
        with self._lock:
            self._finish_line()
            self._write(text + "\n")

    # -- rows read (io.viewlet.spark.ViewletProgress) -------------------------------------
    def watch_rows(self, op) -> None:
        self._jvm(op, "watch", op.sc._jsc.sc())

    def forget_rows(self, op) -> None:
        self._jvm(op, "forget", op.sc._jsc.sc(), op.group)

    def rows(self, op) -> Optional[int]:
        """Rows the operation read: its Spark jobs' input rows and those it read itself."""
        spark = self._jvm(op, "rowsRead", op.sc._jsc.sc(), op.group) if op.spark_active \
            else None
        if spark is None and not op.local_rows:
            return None
        return (spark or 0) + op.local_rows

    @staticmethod
    def _jvm(op, method, *args):
        try:
            target = getattr(op.sc._jvm, _JVM)
            return getattr(target, method)(*args)
        except Exception as e:         # a stopped context, an older jar: no row counts
            log.debug("progress: %s failed: %s", method, e)
            return None

    # -- rendering -------------------------------------------------------------------------
    def text(self, op, rows: Optional[int], suffix: str = "", width: Optional[int] = None
             ) -> str:
        """`[viewlet] <operation>: <step> · <step s> · total <s>, <rows> read`; with `width`,
        the step's text is shortened to fit (the numbers always show)."""
        now = time.perf_counter()
        numbers = f" · {now - op.step_t0:.1f} s · total {now - op.t0:.1f} s"
        if rows is not None:
            numbers += f", {rows:,} rows read"
            if op.base_rows is not None:
                numbers += f" (base tables: {op.base_rows:,} rows)"
        numbers += suffix
        head = f"[viewlet] {op.what}: "
        step = op.step_text
        if width is not None and len(head) + len(step) + len(numbers) >= width:
            room = max(width - 1 - len(head) - len(numbers), 8)
            step = step[:room - 1] + "…"
        return head + step + numbers

    def _terminal(self) -> bool:
        return is_terminal(sys.stderr)

    def _write(self, text: str) -> None:
        try:
            sys.stderr.write(text)
            sys.stderr.flush()
        except (OSError, ValueError):    # a closed stderr: nothing to show it on
            pass

    def _draw(self, op) -> None:
        # shortened to the terminal's width: a wrapped line could not be rewritten in place
        line = self.text(op, self.rows(op), width=_width())
        if self._open is not None and self._open is not op:
            self._write("\n")
        self._write(_CLEAR + line)
        self._open = op

    def _finish_line(self) -> None:
        if self._open is not None:
            self._write("\n")
            self._open = None

    def _end_step(self, op) -> None:
        """The step of `op` ended: its final numbers."""
        if self._terminal():
            self._draw(op)
            self._finish_line()
        else:
            self._write(self.text(op, self.rows(op)) + "\n")

    def _hold(self, on: bool, op) -> None:
        """Hold Spark's console progress bar off while an operation shows (`op`: one whose
        JVM to ask)."""
        if on == self._held:
            return
        self._held = on
        if on:
            self._jvm(op, "holdConsole", op.sc._jsc.sc())
        else:
            self._jvm(op, "releaseConsole")

    def _tick(self) -> None:
        while True:
            time.sleep(TICK)
            with self._lock:
                if not self._ops:
                    self._ticker = None
                    return
                shown = [o for o in self._ops if o.visible and o.step_text]
                if not shown:
                    continue
                self._hold(True, shown[0])
                if self._terminal():
                    latest = max(shown, key=lambda o: o.step_t0)
                    self._draw(latest)
                    continue
                now = time.perf_counter()
                for op in shown:
                    since = max(op.step_t0, op.last_plain)
                    if now - since >= PLAIN_EVERY:
                        op.last_plain = now
                        self._write(self.text(op, self.rows(op), " · still running") + "\n")


CONSOLE = Console()
