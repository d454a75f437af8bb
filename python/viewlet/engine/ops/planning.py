"""A batch's planned row, committed while the batch reads its changes and computes.

The planned row (ranges and map versions, with the plan transaction that lets one of two
concurrent planners win) must be durable before the batch writes anything; nothing before
the first write needs it. So the row's commit runs on the manifest's thread (maintain/writes.py)
while the statement's thread reads the change feeds and computes the deltas, and the batch
waits for it just before its first write (`wait`). A batch another refresher planned first
computed for nothing: `wait` raises NotPlanned and the refresher starts over, as when its
plan() returned False. The statement never leaves the commit running: `settle` waits for
it whatever happened.
"""
from __future__ import annotations

from concurrent.futures import wait as wait_all
from typing import Optional

from ..maintain.writes import on_manifest_thread
from ..runtime import faults
from ..state.manifest import BatchRecord, Manifest


class NotPlanned(Exception):
    """Another refresher planned the batch first: start over (and wait for it)."""


class PlannedRow:
    def __init__(self, manifest: Manifest, record: BatchRecord):
        self._future = on_manifest_thread(
            lambda: manifest.plan(record.batch, record.ranges, record.map_versions))
        self._planned: Optional[bool] = None

    def wait(self) -> None:
        """Return once the planned row is committed; raise NotPlanned when another refresher
        planned the batch first (and any error of the commit itself)."""
        if self._planned is None:
            self._planned = bool(self._future.result())
            if self._planned:
                faults.point("batch.planned")
        if not self._planned:
            raise NotPlanned()

    def lost(self) -> bool:
        """After a failure: whether another refresher planned the batch first (the failure
        then concerns a batch this refresher does not own)."""
        self.settle()
        return self._future.exception() is None and not self._future.result()

    def settle(self) -> None:
        """Wait for the commit, whatever its outcome."""
        wait_all([self._future])
