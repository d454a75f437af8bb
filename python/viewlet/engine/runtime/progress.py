"""Progress and Spark job accounting for Viewlet's long operations (CREATE's initial load, a
batch, a FULL rebuild, waiting for another refresher).

Each step becomes the Spark job description (what the Spark UI shows) and an INFO record on
the `viewlet.progress` logger. Quiet by default: only once an operation has run
`spark.viewlet.progress.afterSeconds` (default 10; 0 shows every step, a negative value never)
does it show on stderr, and not even then when logging is set up to show that logger's INFO
records anyway. Shown, it is one display (console.py):

- on a terminal, one line per step, rewritten in place twice a second with the rows the
  operation's Spark jobs have read and the seconds the step and the operation have taken;
- elsewhere (a log, a pipe, a notebook), one plain line per step when it ends, with the same
  numbers, and a line every 30 s for a step still running.

Spark's console progress bar is held off while an operation shows (io.viewlet.spark.
ConsoleBars): Viewlet's line says what the Spark jobs are doing.

Spark jobs are counted by tagging the operation's jobs with a job group of its own on the
calling thread. A caller that set a job group keeps it (e.g. to cancel or meter by group);
then the jobs counted are those its group gained during the operation. The caller's group
and description are restored afterwards.
"""
from __future__ import annotations

import logging
import time
import uuid
from typing import Optional

from . import cancel
from .console import CONSOLE

log = logging.getLogger("viewlet.progress")
_GROUP, _DESCRIPTION = "spark.jobGroup.id", "spark.job.description"


def _logging_shows_it() -> bool:
    return log.isEnabledFor(logging.INFO) and log.hasHandlers()


class Progress:
    """`with Progress(spark, "refresh q3 batch 7", after) as p: p.step("reading changes") ...`

    `lazy=True`: the operation may run no Spark job at all (a batch on the local target):
    nothing is sent to Spark (each job group and description is a call into the JVM) until
    `spark()` says that Spark work follows."""

    def __init__(self, spark, what: str, after: float, lazy: bool = False):
        self.sc = spark.sparkContext
        self.what = what
        self.after = after        # seconds before it shows (state/settings.py progress_after)
        self.group = f"viewlet-{uuid.uuid4().hex[:16]}"
        self.t0 = time.perf_counter()
        self._saved = {}
        self._before = set()
        self._lazy = lazy
        self._active = False
        self._own_group = False
        self._text = ""
        self.step_text = ""
        self.step_t0 = self.t0
        self.base_rows: Optional[int] = None     # rows of the tables a load reads (CREATE)
        self.local_rows = 0                      # rows read without Spark (changes, maps)
        self.shown = self.after >= 0 and not _logging_shows_it()

    def __enter__(self) -> "Progress":
        if self.shown:
            CONSOLE.add(self)
        if not self._lazy:
            self.spark()
        return self

    def spark(self) -> "Progress":
        """Spark work follows: tag its jobs with this operation's group and description."""
        if self._active:
            return self
        self._active = True
        self._saved = {k: self.sc.getLocalProperty(k) for k in (_GROUP, _DESCRIPTION)}
        if self._saved[_GROUP]:
            self.group = self._saved[_GROUP]
            self._before = set(self._job_ids())
        else:
            self._own_group = True
            self.sc.setLocalProperty(_GROUP, self.group)
        token = cancel.current()
        if token is not None:         # cancelling the statement cancels these jobs
            token.track_group(self.sc, self.group)
        if self._text:
            self.sc.setLocalProperty(_DESCRIPTION, self._text)
        if self.shown:
            CONSOLE.watch_rows(self)
        return self

    def __exit__(self, *exc) -> None:
        if self.shown:
            CONSOLE.remove(self)
        if not self._active:
            return
        for key, value in self._saved.items():
            self.sc.setLocalProperty(key, value)       # None removes the property
        if self.shown and self._own_group:
            CONSOLE.forget_rows(self)

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    @property
    def visible(self) -> bool:
        """Whether the operation shows on stderr by now."""
        return self.shown and self.elapsed >= self.after

    @property
    def spark_active(self) -> bool:
        return self._active

    def step(self, text: str) -> None:
        cancel.check()                # a cancelled statement stops between steps
        self._text = f"Viewlet {self.what}: {text}"
        if self._active:
            self.sc.setLocalProperty(_DESCRIPTION, self._text)
        log.info("%s: %s (%.1f s)", self.what, text, self.elapsed)
        if self.shown:
            CONSOLE.step(self, text)
        else:
            self.step_text, self.step_t0 = text, time.perf_counter()

    def add_rows(self, n: int) -> None:
        """Rows this operation read itself (not in a Spark job), for the display."""
        self.local_rows += n

    def _job_ids(self):
        return self.sc.statusTracker().getJobIdsForGroup(self.group)

    def spark_jobs(self) -> int:
        """Spark jobs this operation has started so far (from Spark's status tracker)."""
        if not self._active:
            return 0
        return len(set(self._job_ids()) - self._before)
