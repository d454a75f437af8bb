"""Batch manifests: the record that makes batches exactly-once.

Before a batch touches any map it appends a 'planned' row holding the base-table version
ranges it consumes and every map's version at batch start; after every map has committed it
appends a 'committed' row. Watermarks are the ranges of the newest committed batch. A planned
batch without its committed row is re-run with exactly the recorded inputs, unless a 'failed'
row follows it: the batch failed on its data before writing anything (a scalar subquery
returned several rows), so it is dropped and the next batch is planned from the watermarks
again, with the commits that fix the data.
"""
from __future__ import annotations

import datetime as dt
import json
import threading
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import pyarrow as pa

from ..errors import ConcurrentUpdate
from ..storage.base import TableStore

_SCHEMA = pa.schema([
    ("batch", pa.int64()), ("phase", pa.string()), ("ranges", pa.string()),
    ("map_versions", pa.string()), ("stats", pa.string()), ("at", pa.timestamp("us", tz="UTC")),
])

_LOCK = threading.Lock()
_READ: Dict[str, tuple] = {}      # manifest path -> (version read, its records)

PLAN_TXN = "viewlet-plan"
COMMIT_TXN = "viewlet-commit"
Ranges = Dict[str, Tuple[int, int]]   # relation -> (after version, to version]


@dataclass
class BatchRecord:
    batch: int
    phase: str
    ranges: Ranges
    map_versions: Dict[str, int]
    stats: Dict
    at: Optional[dt.datetime] = None

    @property
    def watermarks(self) -> Dict[str, int]:
        return {rel: r[1] for rel, r in self.ranges.items()}


class Manifest:
    def __init__(self, store: TableStore, path: str):
        self.store = store
        self.path = path

    def _append(self, rec: BatchRecord, create: bool = False, once: Optional[str] = None) -> bool:
        row = {"batch": rec.batch, "phase": rec.phase,
               "ranges": json.dumps({k: list(v) for k, v in rec.ranges.items()}),
               "map_versions": json.dumps(rec.map_versions), "stats": json.dumps(rec.stats),
               "at": dt.datetime.now(dt.timezone.utc)}
        data = pa.Table.from_pylist([row], schema=_SCHEMA)
        if once:
            try:
                version = self.store.append_once(self.path, data, (once, rec.batch))
            except ConcurrentUpdate:    # the same txn committed concurrently: the other won
                return False
            if version is not None:
                self._remember(version, _records(data))
            return version is not None
        (self.store.create if create else self.store.append)(self.path, data)
        return True

    def _remember(self, version: int, added: tuple):
        """Our own commit `version` added these records: the cache follows without a read."""
        with _LOCK:
            known = _READ.get(self.path)
            if known is not None and known[0] == version - 1:
                _READ[self.path] = (version, known[1] + added)

    def records(self) -> List[BatchRecord]:
        # The manifest only gains rows: read the ones added since the version read last.
        version = self.store.version(self.path)
        with _LOCK:
            known = _READ.get(self.path)
        if known is not None and known[0] == version:
            records = known[1]
        else:
            added = self.store.appended_rows(self.path, known[0], version) \
                if known is not None and known[0] < version else None
            if added is not None:
                records = known[1] + _records(added)
            else:                        # first read (or a rewritten manifest): all of it
                snap = self.store.snapshot(self.path, version)
                records = _records(self.store.read_files(snap))
            with _LOCK:
                _READ[self.path] = (version, records)
        return sorted(records, key=lambda r: (r.batch, r.phase == "committed"))

    def start(self, versions: Dict[str, int], stats: Dict):
        self._append(BatchRecord(0, "committed", {k: (v, v) for k, v in versions.items()}, {}, stats),
                     create=True)

    def latest(self) -> BatchRecord:
        return self.records()[-1]

    def last_committed(self) -> BatchRecord:
        return [r for r in self.records() if r.phase == "committed"][-1]

    def plan(self, batch: int, ranges: Ranges, map_versions: Dict[str, int]) -> bool:
        """Append the planned row of `batch`; False if another refresher planned it first.
        Both rows carry the Delta transaction (viewlet-plan, batch): the log's total order
        lets exactly one of two concurrent planners commit."""
        return self._append(BatchRecord(batch, "planned", ranges, map_versions, {}), once=PLAN_TXN)

    def fail(self, planned: BatchRecord, reason: str) -> None:
        """Drop a planned batch that failed before writing anything (see the docstring)."""
        self._append(BatchRecord(planned.batch, "failed", planned.ranges, planned.map_versions,
                                 {"failed": reason}))

    def commit(self, planned: BatchRecord, stats: Dict) -> bool:
        return self._append(BatchRecord(planned.batch, "committed", planned.ranges,
                                        planned.map_versions, stats), once=COMMIT_TXN)


def _records(rows: pa.Table) -> tuple:
    return tuple(BatchRecord(r["batch"], r["phase"],
                             {k: tuple(v) for k, v in json.loads(r["ranges"]).items()},
                             json.loads(r["map_versions"]), json.loads(r["stats"]), r["at"])
                 for r in rows.to_pylist())
