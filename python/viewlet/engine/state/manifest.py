"""Batch manifests: the record that makes batches exactly-once.

Before a batch touches any map it appends a 'planned' row holding the base-table version
ranges it consumes and every map's version at batch start; after every map has committed it
appends a 'committed' row. Watermarks are the ranges of the newest committed batch. A planned
batch without its committed row is re-run with exactly the recorded inputs.

A 'failed' row records a refresh that ended in an error (HISTORY shows it); it is no input
to any batch. REFRESH ... FULL writes the rebuilt view's manifest starting with every row of
the old one, so the history survives rebuilds and batch numbers keep counting up.

A planned batch followed by a 'dropped' row failed on its data before writing anything (a
scalar subquery returned several rows, as Spark's query would raise): it is no longer
re-run, and the next batch is planned from the watermarks with a new number, so that it
sees the commits that fix the data.
"""
from __future__ import annotations

import datetime as dt
import json
import threading
from dataclasses import dataclass
from functools import cached_property
from typing import Dict, List, NamedTuple, Optional, Tuple

import pyarrow as pa

from ...errors import ConcurrentUpdate
from ...storage.base import TableStore
from .stats import BatchStats

_SCHEMA = pa.schema([
    ("batch", pa.int64()), ("phase", pa.string()), ("ranges", pa.string()),
    ("map_versions", pa.string()), ("stats", pa.string()), ("at", pa.timestamp("us", tz="UTC")),
])

_LOCK = threading.Lock()
_READ: Dict[str, tuple] = {}      # manifest path -> (version read, its records)

BATCH_PHASES = ("planned", "committed")
DROPPED = "dropped"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
PLAN_TXN = "viewlet-plan"
#: Each row is appended as a file of its own, and a delta-rs commit costs more the more files
#: a table has (an append took 5 ms on a table of 1 file, 27 ms on one of 400): the rows are
#: rewritten as one file every COMPACT_EVERY batches, so a batch's cost does not grow with
#: the view's history.
COMPACT_EVERY = 16
COMPACTION = "viewlet.compaction"     # the commit metadata key of a compaction (of maps too)
COMMIT_TXN = "viewlet-commit"
Ranges = Dict[str, Tuple[int, int]]   # relation -> (after version, to version]
#: keys of a batch record's map_versions beside the maps: the result table's version, and a
#: top-N view's ordered table's (maintain/topn.py)
RESULT, ORDERED = "__result", "__ordered"


class Txn(NamedTuple):
    """The Delta transaction id a batch commits each of its tables with: a re-run of the
    batch skips the tables that hold it already."""
    app: str             # the view's: viewlet:<view id>
    batch: int

    def done_in(self, store: TableStore, path: str) -> bool:
        """Whether the table at `path` holds this batch's commit (or a later batch's)."""
        done = store.txn_version(path, self.app)
        return done is not None and done >= self.batch


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

    @cached_property
    def batch_stats(self) -> BatchStats:
        """`stats` (the JSON as stored) read as BatchStats."""
        return BatchStats.from_json(self.stats)


class Manifest:
    def __init__(self, store: TableStore, path: str):
        self.store = store
        self.path = path

    def _append(self, rec: BatchRecord, once: Optional[str] = None) -> bool:
        data = _row_table(rec)
        if once:
            try:
                version = self.store.append_once(self.path, data, (once, rec.batch))
            except ConcurrentUpdate:    # the same txn committed concurrently: the other won
                return False
            if version is not None:
                self._remember(version, _records(data))
            return version is not None
        self.store.append(self.path, data)
        return True

    def _remember(self, version: int, added: tuple):
        """Our own commit `version` added these records: the cache follows without a read."""
        with _LOCK:
            known = _READ.get(self.path)
            if known is not None and known[0] == version - 1:
                _READ[self.path] = (version, known[1] + added)

    def records(self, rows: Optional[List[BatchRecord]] = None) -> List[BatchRecord]:
        """The planned and committed rows, by batch (a batch's planned row first), without
        the planned rows of dropped batches (of `rows`, read by all_records, or read now)."""
        rows = self.all_records() if rows is None else rows
        dropped = {r.batch for r in rows if r.phase == DROPPED}
        return [r for r in rows if r.phase in BATCH_PHASES
                and not (r.phase == "planned" and r.batch in dropped)]

    def all_records(self) -> List[BatchRecord]:
        """Every row, failures included, by batch and time."""
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
        return sorted(records, key=lambda r: (r.batch, r.phase == "committed", r.at or _EPOCH))

    def start(self, versions: Dict[str, int], stats: Dict, batch: int = 0,
              carried: Optional[pa.Table] = None):
        """Create the manifest with the initial load as `batch` (`stats`: its JSON, from
        BatchStats.to_json), after the rows `carried` over from the manifest of the view this
        one rebuilds (one commit)."""
        rec = BatchRecord(batch, "committed", {k: (v, v) for k, v in versions.items()}, {},
                          stats)
        rows = _row_table(rec)
        if carried is not None and carried.num_rows:
            rows = pa.concat_tables([carried.select(_SCHEMA.names).cast(_SCHEMA), rows])
        self.store.create(self.path, rows)

    def rows(self) -> pa.Table:
        """Every row as stored (what a rebuild carries over)."""
        return self.store.read_files(self.store.snapshot(self.path))

    def next_batch(self) -> int:
        """The number after every batch recorded (planned, committed or failed)."""
        return max((r.batch for r in self.all_records()), default=-1) + 1

    def record_failure(self, batch: int, message: str):
        """A refresh that failed before committing `batch` (a plain append: it races with
        nothing, planners and committers only check their own transaction ids)."""
        self._append(BatchRecord(batch, "failed", {}, {}, BatchStats(error=message).to_json()))

    def latest(self) -> BatchRecord:
        return self.records()[-1]

    def last_committed(self) -> BatchRecord:
        return [r for r in self.records() if r.phase == "committed"][-1]

    def plan(self, batch: int, ranges: Ranges, map_versions: Dict[str, int]) -> bool:
        """Append the planned row of `batch`; False if another refresher planned it first.
        Both rows carry the Delta transaction (viewlet-plan, batch): the log's total order
        lets exactly one of two concurrent planners commit."""
        return self._append(BatchRecord(batch, "planned", ranges, map_versions, {}), once=PLAN_TXN)

    def drop(self, planned: BatchRecord, reason: str) -> None:
        """Drop a planned batch that failed before writing anything (see the docstring)."""
        self._append(BatchRecord(planned.batch, DROPPED, planned.ranges, planned.map_versions,
                                 BatchStats(dropped=reason).to_json()))

    def next_planned(self, rows: Optional[List[BatchRecord]] = None) -> int:
        """The number of the next batch to plan: after every planned, committed or dropped
        one (a dropped batch's number is not planned again: its plan transaction is used).
        A refresher passes the `rows` its batch's ranges follow from: a batch another
        refresher planned since then takes that number, and plan() refuses it."""
        rows = self.all_records() if rows is None else rows
        return max((r.batch for r in rows if r.phase != "failed"), default=-1) + 1

    def commit(self, planned: BatchRecord, stats: Dict) -> bool:
        """Append the committed row of `planned` (`stats`: the batch's, from
        BatchStats.to_json); every COMPACT_EVERY batches, compact the manifest."""
        done = self._append(BatchRecord(planned.batch, "committed", planned.ranges,
                                        planned.map_versions, stats), once=COMMIT_TXN)
        if done and planned.batch % COMPACT_EVERY == 0:
            self.compact()
        return done

    def compact(self) -> bool:
        """Rewrite the manifest's rows as one file (rows appended meanwhile stay, as their own
        files), then delete the files only versions before the one rewritten referenced (a
        reader of that version still finds its files). False when a concurrent compaction
        won. The rows, and so every reader's records, are unchanged."""
        version = self.store.version(self.path)
        rows = self.store.read_files(self.store.snapshot(self.path, version))
        if not self.store.rewrite(self.path, rows, version, max(rows.num_rows, 1),
                                  {COMPACTION: "manifest"}):
            return False
        self.store.vacuum(self.path, version)
        return True


def _row_table(rec: BatchRecord) -> pa.Table:
    row = {"batch": rec.batch, "phase": rec.phase,
           "ranges": json.dumps({k: list(v) for k, v in rec.ranges.items()}),
           "map_versions": json.dumps(rec.map_versions), "stats": json.dumps(rec.stats),
           "at": dt.datetime.now(dt.timezone.utc)}
    return pa.Table.from_pylist([row], schema=_SCHEMA)


def _records(rows: pa.Table) -> tuple:
    return tuple(BatchRecord(r["batch"], r["phase"],
                             {k: tuple(v) for k, v in json.loads(r["ranges"]).items()},
                             json.loads(r["map_versions"]), json.loads(r["stats"]), r["at"])
                 for r in rows.to_pylist())
