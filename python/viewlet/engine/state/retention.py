"""How much history Viewlet's own tables keep: a view's maps, its manifest and a top-N view's
ordered rows.

These tables gain a commit or more per batch, and only Viewlet reads them, at the versions
of the batch it runs or re-runs: the latest ones, whose files vacuum keeps (it deletes every
other version's files at once, `TableStore.vacuum`). Under Delta's defaults each would keep
30 days of log entries, which delta-rs lists when it brings a handle up to date, and 7 days
of tombstones (remove actions), which every checkpoint carries: a view refreshed every
minute would list some 43,000 log entries per map and write checkpoints of 10,000 tombstones,
and its batches slowed as its history grew. These tables keep an hour of both.

An hour stays far above what anything here needs: a kept delta-rs handle is trusted as the
latest for a minute at most (`storage/deltars.py` FRESH_HANDLE_SECONDS), and log cleanup
keeps every version from the last checkpoint before the cutoff on, so the versions a
re-run batch reads (the ones before its own commits) stay readable.

The result table keeps Delta's defaults: users read it, travel its history and follow its
change feed (as do views over the view).
"""
from __future__ import annotations

from typing import Dict

from ...storage.base import TableStore

INTERNAL_TABLE_PROPERTIES: Dict[str, str] = {
    "delta.logRetentionDuration": "interval 1 hours",
    "delta.deletedFileRetentionDuration": "interval 1 hours",
}


def keep_short_history(store: TableStore, path: str) -> bool:
    """Give an existing internal table (one created before these properties) its retention:
    one commit, once per table; whether it committed."""
    current = store.properties(path)
    missing = {k: v for k, v in INTERNAL_TABLE_PROPERTIES.items() if current.get(k) != v}
    if not missing:
        return False
    store.set_properties(path, missing)
    return True
