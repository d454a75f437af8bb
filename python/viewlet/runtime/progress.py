"""Progress and Spark job accounting for Viewlet's long operations (CREATE's initial load, a
batch, a FULL rebuild).

Each step becomes the Spark job description (what the Spark UI and spark-sql's console
progress bar show) and an INFO record on the `viewlet.progress` logger. Quiet by default:
only once an operation has run `spark.viewlet.progress.afterSeconds` (default 10; 0 shows
every step, a negative value never) are its steps also printed to stderr, and not even then
when logging is set up to show that logger's INFO records anyway.

Spark jobs are counted by tagging the operation's jobs with a job group of its own on the
calling thread. A caller that set a job group keeps it (e.g. to cancel or meter by group);
then the jobs counted are those its group gained during the operation. The caller's group
and description are restored afterwards.
"""
from __future__ import annotations

import logging
import sys
import time
import uuid
from typing import Optional

from . import cancel

log = logging.getLogger("viewlet.progress")
AFTER_CONF = "spark.viewlet.progress.afterSeconds"
DEFAULT_AFTER = 10.0
_GROUP, _DESCRIPTION = "spark.jobGroup.id", "spark.job.description"


def _after_seconds(spark) -> float:
    raw = spark.conf.get(AFTER_CONF, None)
    if raw is None:
        return DEFAULT_AFTER
    try:
        return float(raw)
    except ValueError:
        log.warning("%s=%r is not a number of seconds; using %s", AFTER_CONF, raw, DEFAULT_AFTER)
        return DEFAULT_AFTER


def _logging_shows_it() -> bool:
    return log.isEnabledFor(logging.INFO) and log.hasHandlers()


class Progress:
    """`with Progress(spark, "refresh q3 batch 7") as p: p.step("reading changes") ...`

    `lazy=True`: the operation may run no Spark job at all (a batch on the local target):
    nothing is sent to Spark (each job group and description is a call into the JVM) until
    `spark()` says that Spark work follows."""

    def __init__(self, spark, what: str, after: Optional[float] = None, lazy: bool = False):
        self.sc = spark.sparkContext
        self.what = what
        self.after = _after_seconds(spark) if after is None else after
        self.group = f"viewlet-{uuid.uuid4().hex[:16]}"
        self.t0 = time.perf_counter()
        self._saved = {}
        self._before = set()
        self._lazy = lazy
        self._active = False
        self._text = ""

    def __enter__(self) -> "Progress":
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
            self.sc.setLocalProperty(_GROUP, self.group)
        token = cancel.current()
        if token is not None:         # cancelling the statement cancels these jobs
            token.track_group(self.sc, self.group)
        if self._text:
            self.sc.setLocalProperty(_DESCRIPTION, self._text)
        return self

    def __exit__(self, *exc) -> None:
        if not self._active:
            return
        for key, value in self._saved.items():
            self.sc.setLocalProperty(key, value)       # None removes the property

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def step(self, text: str) -> None:
        cancel.check()                # a cancelled statement stops between steps
        self._text = f"Viewlet {self.what}: {text}"
        if self._active:
            self.sc.setLocalProperty(_DESCRIPTION, self._text)
        message = f"{self.what}: {text} ({self.elapsed:.1f} s)"
        log.info(message)
        if 0 <= self.after <= self.elapsed and not _logging_shows_it():
            print(f"[viewlet] {message}", file=sys.stderr, flush=True)

    def _job_ids(self):
        return self.sc.statusTracker().getJobIdsForGroup(self.group)

    def spark_jobs(self) -> int:
        """Spark jobs this operation has started so far (from Spark's status tracker)."""
        if not self._active:
            return 0
        return len(set(self._job_ids()) - self._before)
