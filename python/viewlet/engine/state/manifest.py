"""Batch manifests: the record that makes batches exactly-once.

Before a batch touches any map it appends a 'planned' row holding the base-table version
ranges it consumes and every map's version at batch start; after every map has committed it
appends a 'committed' row. Watermarks are the ranges of the newest committed batch. A planned
batch without its committed row is re-run with exactly the recorded inputs.

A 'failed' row records a refresh that ended in an error (HISTORY shows it); it is no input
to any batch. REFRESH ... FULL writes the rebuilt view's manifest starting with every row of
the old one, so the history survives rebuilds and batch numbers keep counting up.

A batch's committed row is appended after its REFRESH returned (ops/committing.py): every
read of a manifest in the process waits for its pending row first (`settle`), and another
process sees the batch planned, under a live lease, until the row lands.

A planned batch followed by a 'dropped' row failed on its data before writing anything (a
scalar subquery returned several rows, as Spark's query would raise): it is no longer
re-run, and the next batch is planned from the watermarks with a new number, so that it
sees the commits that fix the data.
"""
from __future__ import annotations

import datetime as dt
import json
import threading
from concurrent.futures import Future, wait
from dataclasses import dataclass
from functools import cached_property
from typing import Dict, List, NamedTuple, Optional, Tuple

import pyarrow as pa

from ...errors import ConcurrentUpdate
from ...storage.base import Snapshot, TableStore
from .retention import INTERNAL_TABLE_PROPERTIES, keep_short_history
from .stats import BatchStats

_SCHEMA = pa.schema([
    ("batch", pa.int64()), ("phase", pa.string()), ("ranges", pa.string()),
    ("map_versions", pa.string()), ("stats", pa.string()), ("at", pa.timestamp("us", tz="UTC")),
])

_LOCK = threading.Lock()
_READ: Dict[str, tuple] = {}      # manifest path -> (version read, its records)
_PENDING: Dict[str, Future] = {}  # manifest path -> the append of its next committed row

BATCH_PHASES = ("planned", "committed")
DROPPED = "dropped"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
PLAN_TXN = "viewlet-plan"
#: Each row is appended as a file of its own, and a delta-rs commit costs more the more files
#: a table has (an append took 5 ms on a table of 1 file, 27 ms on one of 400): the newest
#: files are rewritten as one every COMPACT_EVERY batches, so a batch's cost does not grow
#: with the view's history.
COMPACT_EVERY = 16
#: A compaction rewrites the newest files, and each older one holding at most MERGE_RATIO
#: times their rows: files grow geometrically, so a manifest has few, and a row is rewritten
#: a few times over the view's life (rewriting every row each time cost a batch more the
#: longer the view's history).
MERGE_RATIO = 4
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

    @property
    def at_micros(self) -> int:
        """`at` in microseconds since 1970 (0 when unknown): the order of a batch's rows."""
        return ((self.at or _EPOCH) - _EPOCH) // dt.timedelta(microseconds=1)


class StoredRecord(BatchRecord):
    """A manifest row as read: its JSON columns are parsed, and its time made a datetime,
    when first used. A batch looks at the last records only, and parsing every row of a
    long history (a minute's refreshes for a month: 86,000 rows) took a new process seconds."""

    def __init__(self, batch: int, phase: str, ranges: str, map_versions: str, stats: str,
                 at_micros: Optional[int]):
        self.batch, self.phase = batch, phase
        self._json = (ranges, map_versions, stats)
        self._micros = at_micros

    @cached_property
    def ranges(self) -> Ranges:
        return {k: tuple(v) for k, v in json.loads(self._json[0]).items()}

    @cached_property
    def map_versions(self) -> Dict[str, int]:
        return json.loads(self._json[1])

    @cached_property
    def stats(self) -> Dict:
        return json.loads(self._json[2])

    @cached_property
    def at(self) -> Optional[dt.datetime]:
        return None if self._micros is None else _EPOCH + dt.timedelta(microseconds=self._micros)

    @property
    def at_micros(self) -> int:
        return self._micros or 0


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
                self._remember(version, version - 1, _records(data))
            return version is not None
        self.store.append(self.path, data)
        return True

    def _remember(self, version: int, read_version: int, added: tuple = ()):
        """Our own commit `version`, on top of `read_version`, added these records (none: it
        rewrote rows): the cache follows without a read."""
        with _LOCK:
            known = _READ.get(self.path)
            if known is not None and known[0] == read_version and version == read_version + 1:
                _READ[self.path] = (version, _merged(known[1], added))

    def pending(self, future: Future) -> None:
        """`future` appends this manifest's next committed row (ops/committing.py): the
        process's reads of the manifest wait for it (`settle`)."""
        with _LOCK:
            _PENDING[self.path] = future

        def forget(done: Future) -> None:
            with _LOCK:
                if _PENDING.get(self.path) is done:
                    del _PENDING[self.path]
        future.add_done_callback(forget)

    def settle(self) -> None:
        """Wait for this manifest's pending committed row, if any (its failure was logged
        where it ran: the batch is then planned without its row, and the next refresh takes
        it over)."""
        with _LOCK:
            future = _PENDING.get(self.path)
        if future is not None:
            wait([future])

    def records(self, rows: Optional[List[BatchRecord]] = None) -> List[BatchRecord]:
        """The planned and committed rows, by batch (a batch's planned row first), without
        the planned rows of dropped batches (of `rows`, read by all_records, or read now)."""
        rows = self.all_records() if rows is None else rows
        dropped = {r.batch for r in rows if r.phase == DROPPED}
        return [r for r in rows if r.phase in BATCH_PHASES
                and not (r.phase == "planned" and r.batch in dropped)]

    def all_records(self) -> List[BatchRecord]:
        """Every row, failures included, by batch and time."""
        self.settle()
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
                records = _merged(known[1], _records(added))
            else:                        # first read (or a rewritten manifest): all of it
                snap = self.store.snapshot(self.path, version)
                records = _merged((), _records(self.store.read_files(snap)))
            with _LOCK:
                _READ[self.path] = (version, records)
        return list(records)

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
        self.store.create(self.path, rows, properties=INTERNAL_TABLE_PROPERTIES)

    def rows(self) -> pa.Table:
        """Every row as stored (what a rebuild carries over)."""
        self.settle()
        return self.store.read_files(self.store.snapshot(self.path))

    def next_batch(self) -> int:
        """The number after every batch recorded (planned, committed or failed)."""
        rows = self.all_records()
        return rows[-1].batch + 1 if rows else 0

    def record_failure(self, batch: int, message: str):
        """A refresh that failed before committing `batch` (a plain append: it races with
        nothing, planners and committers only check their own transaction ids)."""
        self._append(BatchRecord(batch, "failed", {}, {}, BatchStats(error=message).to_json()))

    def latest(self, rows: Optional[List[BatchRecord]] = None) -> BatchRecord:
        """The last of records(rows)."""
        return next(_newest_first(self.all_records() if rows is None else rows))

    def last_committed(self, rows: Optional[List[BatchRecord]] = None) -> BatchRecord:
        return next(r for r in _newest_first(self.all_records() if rows is None else rows)
                    if r.phase == "committed")

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
        return next((r.batch for r in reversed(rows) if r.phase != "failed"), -1) + 1

    def commit(self, planned: BatchRecord, stats: Dict) -> bool:
        """Append the committed row of `planned` (`stats`: the batch's, from
        BatchStats.to_json); every COMPACT_EVERY batches, compact the manifest."""
        done = self._append(BatchRecord(planned.batch, "committed", planned.ranges,
                                        planned.map_versions, stats), once=COMMIT_TXN)
        if done and planned.batch % COMPACT_EVERY == 0:
            self.compact()
        return done

    def compact(self) -> bool:
        """Rewrite the manifest's newest files as one (`files_to_merge`; rows appended
        meanwhile stay, as their own files), then delete the files only versions before the
        one rewritten referenced (a reader of that version still finds its files). False
        when a concurrent compaction won. The rows, and so every reader's records, are
        unchanged. A manifest of a view created before its retention properties gets them
        here (state/retention.py)."""
        version = self.store.version(self.path)
        snap = self.store.snapshot(self.path, version)
        merged = files_to_merge(snap)
        if len(merged.files) > 1:
            rows = self.store.read_files(merged)
            if not self.store.rewrite(self.path, rows, version, max(rows.num_rows, 1),
                                      {COMPACTION: "manifest"}, files=merged.files):
                return False
            self._remember(self.store.version(self.path), version)
        if keep_short_history(self.store, self.path):
            now = self.store.version(self.path)
            self._remember(now, now - 1)
        self.store.vacuum(self.path, version)
        return True


def settle_all() -> None:
    """Wait for every committed row the process is still appending (a process that ends
    without its exit handlers calls this first: api/attach.py)."""
    with _LOCK:
        futures = list(_PENDING.values())
    wait(futures)


def files_to_merge(snap: Snapshot) -> Snapshot:
    """The files of a manifest version a compaction rewrites as one: the smallest, then each
    next larger one that holds at most MERGE_RATIO times the rows of those before it (all of
    them when the files have no row counts)."""
    if snap.stats is None:
        return snap
    by_size = sorted(range(len(snap.files)), key=lambda i: snap.stats[i].rows or 0)
    chosen, rows = [], 0
    for i in by_size:
        size = snap.stats[i].rows or 0
        if rows and size > MERGE_RATIO * rows:
            break
        chosen.append(i)
        rows += size
    return Snapshot(snap.path, snap.version, tuple(snap.files[i] for i in chosen), snap.schema,
                    snap.partition_columns, tuple(snap.stats[i] for i in chosen), snap.deleted)


def _order(r: BatchRecord):
    """Records in the order of batches, a batch's committed row last, then by time."""
    return (r.batch, r.phase == "committed", r.at_micros)


def _merged(known: tuple, added: tuple) -> tuple:
    """`known` (in order) and `added` as one tuple in order; rows come mostly in order, so
    the old ones are sorted again only when an added one belongs among them."""
    added = tuple(sorted(added, key=_order))
    if not known or not added or _order(known[-1]) <= _order(added[0]):
        return known + added
    return tuple(sorted(known + added, key=_order))


def _newest_first(rows: List[BatchRecord]):
    """records(rows), newest first, read from the end (`rows` in order): a manifest holds
    every batch of the view's life, and a batch needs only its last records."""
    end = len(rows)
    while end > 0:
        start = end - 1
        while start > 0 and rows[start - 1].batch == rows[end - 1].batch:
            start -= 1
        group = rows[start:end]           # one batch's rows: a dropped row drops its plan
        dropped = any(r.phase == DROPPED for r in group)
        for r in reversed(group):
            if r.phase in BATCH_PHASES and not (r.phase == "planned" and dropped):
                yield r
        end = start


def _row_table(rec: BatchRecord) -> pa.Table:
    row = {"batch": rec.batch, "phase": rec.phase,
           "ranges": json.dumps({k: list(v) for k, v in rec.ranges.items()}),
           "map_versions": json.dumps(rec.map_versions), "stats": json.dumps(rec.stats),
           "at": dt.datetime.now(dt.timezone.utc)}
    return pa.Table.from_pylist([row], schema=_SCHEMA)


def _records(rows: pa.Table) -> tuple:
    micros = rows.column("at").cast(_SCHEMA.field("at").type).cast(pa.int64()).to_pylist()
    return tuple(map(StoredRecord, *(rows.column(c).to_pylist() for c in _SCHEMA.names[:-1]),
                     micros))
