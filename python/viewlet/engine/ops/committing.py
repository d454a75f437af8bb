"""A batch's committed row, appended after its REFRESH returned.

Once the result table holds the batch, the view's readers see it, and every table the batch
wrote carries its transaction id: the committed row only tells the manifest's readers so. Its
commit (and every COMPACT_EVERY batches the manifest's compaction) runs on the manifest's
thread (maintain/writes.py) after the statement returned, and the batch's lease is held
until the row is committed:

- a read of the manifest in this process waits for the row first (`Manifest.settle`), so
  the next REFRESH, HISTORY and DESCRIBE see the batch committed;
- a refresher in another process finds the batch planned under a live lease and waits for
  it, as for a batch being computed;
- when the commit fails, or the process dies before it, the batch is planned without its
  row and its lease is gone: the next refresh takes it over (ops/advance.py), finds every
  table holding the batch's transaction id, and appends the row;
- a process that exits normally finishes the row first (the thread pool's exit handler).
"""
from __future__ import annotations

import logging
from typing import Dict

from ..maintain.writes import on_manifest_thread
from ..runtime import faults
from ..state.lease import Lease
from ..state.manifest import BatchRecord, Manifest

log = logging.getLogger("viewlet")


def commit_after_return(manifest: Manifest, record: BatchRecord, stats: Dict, held: Lease,
                        view_name: str) -> None:
    """Append `record`'s committed row (`stats`: BatchStats.to_json) on the manifest's thread,
    then release `held`; reads of `manifest` in this process wait for it."""

    def commit() -> None:
        try:
            manifest.commit(record, stats)
            faults.point("batch.committed")
        except Exception as e:     # noqa: BLE001 - logged: the next refresh appends the row
            log.warning("View %s: the committed row of batch %d was not written (%s); the "
                        "next REFRESH completes it", view_name, record.batch, e)
        finally:
            held.release()

    try:
        future = on_manifest_thread(commit)
    except RuntimeError:          # the interpreter is exiting: its threads take no new work
        commit()
        return
    manifest.pending(future)
