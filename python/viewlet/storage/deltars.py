"""TableStore on delta-rs (the `deltalake` package)."""
from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from collections import OrderedDict
from typing import Dict, List, Optional, Sequence, Tuple
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ChangeFeedError, ConcurrentUpdate, TableNotFound, ViewletError
from .arrow import plain_types
from .base import (ChangeFile, Commit, DataFile, FileStats, Snapshot, TableState, TableStore,
                   Txn)
from .replace import REWRITE_ROWS_PER_FILE, plain_table, rewrite_for
from .update_feed import (SIGN_COLUMN, CommitLog, change_files,
                          changes_deletion_vectors, is_unreliable_update, records, rows_from_files,
                          without_rows)

logger = logging.getLogger("viewlet")
_SIGN = {"insert": 1, "update_postimage": 1, "delete": -1, "update_preimage": -1}
_KINDS = pa.array(list(_SIGN))
_KIND_SIGNS = pa.array(list(_SIGN.values()), pa.int64())


def _signs(kinds: pa.ChunkedArray) -> pa.Array:
    """Each change row's sign (+1 an insert or post-image, -1 a delete or pre-image)."""
    at = pc.index_in(kinds, value_set=_KINDS)
    if at.null_count:
        unknown = pc.filter(kinds, pc.is_null(at))[0].as_py()
        raise ChangeFeedError(f"Unknown change type {unknown!r} in a Delta change data feed.")
    return pc.take(_KIND_SIGNS, at)


# Reader features a plain Parquet read of the snapshot files would get wrong.
_UNREADABLE_FEATURES = {"columnMapping"}
_SNAPSHOTS_KEPT = 512
ROW_SAMPLE = 4096                 # rows read to weigh a row in memory (row_bytes)


def _dl():
    # Imported lazily: deltalake must not be loaded before PySpark forks its workers.
    import deltalake
    return deltalake


def _commit(txn: Optional[Txn], metadata: Optional[Dict[str, str]]):
    from deltalake.transaction import CommitProperties, Transaction
    apps = [Transaction(txn[0], int(txn[1]))] if txn else None
    return CommitProperties(app_transactions=apps, custom_metadata=metadata or None)


#: delta-rs's default post-commit hook deletes expired log entries after every commit, and
#: lists the table's whole log to find them (a write cost 3 ms with 57 log entries and 19 ms
#: with 2,235, on local disk: a view's batches slowed as its history grew). Viewlet's
#: commits skip it; the log is cleaned when a commit reaches a multiple of this many
#: versions (_clean_log), under the table's delta.logRetentionDuration as before.
CLEAN_LOG_EVERY = 100


def _hooks():
    """Post-commit hooks of Viewlet's commits: a checkpoint when due, no log cleanup."""
    from deltalake.transaction import PostCommitHookProperties
    return PostCommitHookProperties(create_checkpoint=True, cleanup_expired_logs=False)


def _clean_log(dt, before: int, version: int) -> None:
    """Delete `dt`'s expired log entries when our commit (`version`, from version `before`)
    reached a multiple of CLEAN_LOG_EVERY versions. Housekeeping: a failure is logged, and
    the next multiple tries again."""
    if version // CLEAN_LOG_EVERY == before // CLEAN_LOG_EVERY:
        return
    try:
        dt.cleanup_metadata()
    except Exception as e:  # noqa: BLE001 - the commit stands; the log is cleaned later
        logger.warning("Cleaning the log of the Delta table at %s failed: %s", dt.table_uri, e)


def _done(dt, txn: Optional[Txn]) -> bool:
    """Whether the snapshot `dt` already holds the commit of `txn` (checked on the snapshot
    the write then commits against, so a concurrent writer of the same txn conflicts)."""
    if not txn:
        return False
    seen = dt.transaction_version(txn[0])
    return seen is not None and seen >= txn[1]


def _conflicted(e: BaseException) -> bool:
    """Whether `e` is delta-rs's report that a concurrent commit conflicted with ours."""
    from deltalake.exceptions import CommitFailedError
    return isinstance(e, CommitFailedError)


def _committing(path: str, fn):
    try:
        return fn()
    except Exception as e:
        if _conflicted(e):
            raise ConcurrentUpdate(
                f"Another writer committed to {path} at the same time ({e}). Nothing was "
                "applied twice; run the statement again.") from None
        raise


#: Every table Viewlet creates (maps, results, manifests, the catalog) gets a checkpoint
#: every 10 commits, not Delta's default 100: opening or bringing a handle up to date reads
#: the log entries since the last checkpoint, and these tables gain one or more a batch (an
#: append took 3-4 ms with a checkpoint every 10 commits, 3-9 ms with one every 100).
OWN_TABLE_PROPERTIES = {"delta.checkpointInterval": "10"}

#: A version of a local table only Viewlet writes, which a thread of this process committed
#: or brought a handle to less than this long ago, is taken as the latest while the log has
#: no entry after it: one stat of a file where delta-rs reads the log (about 0.5 ms, some ten
#: times a batch). Commits are numbered without gaps, so a missing next entry means no later
#: one, except where log cleanup removed entries older than the table's log retention (an
#: hour for a view's own tables, engine/state/retention.py; 30 days by default), which must
#: stay far above this: a version known for longer is asked of delta-rs again.
FRESH_HANDLE_SECONDS = 60.0
#: new commits of another writer's local table a kept handle is followed across by reading
#: their log entries (`_followed`) instead of being brought up to date: delta-rs replays
#: the log from the last checkpoint, which costs more the more commits since it
FOLLOW_COMMITS = 32
_clock = time.monotonic


def _split_properties(properties: Optional[Dict[str, str]]):
    """A new table's properties: the delta.* ones (with OWN_TABLE_PROPERTIES), which delta-rs
    takes when creating, and the others, set in a commit after."""
    given = properties or {}
    delta = dict(OWN_TABLE_PROPERTIES, **{k: v for k, v in given.items() if k.startswith("delta.")})
    return delta, {k: v for k, v in given.items() if not k.startswith("delta.")}


def quote(name: str) -> str:
    """A column name as a DataFusion SQL identifier (MERGE predicates, change-feed projections)."""
    return '"' + name.replace('"', '""') + '"'


class DeltaRsStore(TableStore):
    def __init__(self, storage_options: Optional[Dict[str, str]] = None):
        self.options = storage_options or None
        self._lock = threading.Lock()
        self._snapshots: "OrderedDict[tuple, Snapshot]" = OrderedDict()
        self._owned: List[str] = []
        self._local = threading.local()
        # owned local table -> (the newest version a thread of this process committed or
        # read, when): see _known_latest
        self._latest: Dict[str, Tuple[int, float]] = {}

    def own(self, prefix: str) -> None:
        """Tables under `prefix` are written only through Viewlet (never replaced by another
        table at the same path): `observe` need not check them for replacement."""
        self._owned.append(prefix.rstrip("/") + "/")

    def _table(self, path: str, version: Optional[int] = None):
        """A handle on the table at `version` (None: the latest). Handles of the latest
        version are kept per thread and brought up to date by reading only the log entries
        added since; a kept handle already at the version asked for is used as it is. A kept
        handle of a table Viewlet does not own is checked first: a table dropped and created
        again at the same path (DROP TABLE, CREATE TABLE ... LOCATION) restarts its log, and
        a handle brought up to date across that would mix two tables."""
        tables = self._local.__dict__.setdefault("tables", {})
        dt = tables.get(path)
        if dt is not None and not self._same_table(path, dt):
            self._forget_handle(path)
            self._forget_snapshots(path)           # its versions are another table's now
            dt = None
        if version is not None:
            if dt is not None and dt.version() < version == self._known_latest(path):
                # another thread committed it (version() said so): follow, as before
                dt = self._updated(path, dt)
            if dt is not None and dt.version() == version:
                return dt
            return self._open(path, version)
        if dt is not None:
            if self._surely_latest(path, dt):
                return dt
            dt = self._updated(path, dt)
            if dt is not None:
                return dt
        dt = self._open(path, None)
        tables[path] = dt
        self._remember(path, dt)
        return dt

    def _updated(self, path: str, dt):
        """The kept handle brought up to date, or None when the table is gone (it is
        forgotten: the caller opens it afresh, or fails properly)."""
        try:
            dt.update_incremental()
        except Exception:
            self._forget_handle(path)
            return None
        self._remember(path, dt)
        return dt

    def _forget_handle(self, path: str) -> None:
        """Drop this thread's kept handle of `path` and what was learnt through it (the
        commit mark it stands at, the commits followed past it): none of it holds for a
        table created again at the same path."""
        for memo in ("tables", "marks", "followed"):
            self._local.__dict__.get(memo, {}).pop(path, None)

    def _known_latest(self, path: str) -> Optional[int]:
        """The latest version of an owned local table as some thread of this process
        committed or read it, when that was less than FRESH_HANDLE_SECONDS ago and the log
        has no entry after it: one stat where delta-rs reads the log. Each thread keeps
        handles of its own, and a batch's commits run on several threads: the version is
        known without bringing this thread's handle up to date (about 3 ms of log reading
        each time)."""
        with self._lock:
            seen = self._latest.get(path)
        if seen is None or _clock() - seen[1] > FRESH_HANDLE_SECONDS:
            return None
        local = _local_path(path)
        if os.path.exists(os.path.join(local, "_delta_log", f"{seen[0] + 1:020d}.json")):
            return None
        return seen[0]

    def _note_latest(self, path: str, version: int) -> None:
        """`version` is the latest of the table at `path` now (we committed or read it)."""
        if _local_path(path) is not None and self._owned_path(path):
            with self._lock:
                if self._latest.get(path, (-1,))[0] <= version:
                    self._latest[path] = (version, _clock())

    def _committed(self, path: str, dt, before: int, moved: bool = True) -> None:
        """After our commit through handle `dt` (from version `before`): every thread may
        take its version as the latest, and the log is cleaned when due. A write or MERGE
        moves `dt` to its commit; create_write_transaction leaves it at `before` (`moved`
        False), and the commit it made is then taken as before + 1: if another writer's
        commit came first, the log has an entry after that version, and _known_latest does
        not trust it (a version() after a rewrite brought a handle up to date: a log read
        from the last checkpoint, at every batch of a view's result table)."""
        version = dt.version() if moved else before + 1
        self._note_latest(path, version)
        _clean_log(dt, before, version)

    def _table_holding(self, path: str, version: int):
        """A handle that holds `version`, for reads of the commits up to it: the kept one
        when it stands there or later already (the batch observed the table moments ago:
        bringing a handle of a table with many files up to date cost 6 ms), else one
        brought up to date."""
        dt = self._local.__dict__.get("tables", {}).get(path)
        if dt is not None and dt.version() >= version and self._same_table(path, dt):
            return dt
        return self._table(path)

    def _surely_latest(self, path: str, dt) -> bool:
        """Whether a kept handle is at the table's latest version without asking delta-rs
        (_known_latest)."""
        return self._known_latest(path) == dt.version()

    def _owned_path(self, path: str) -> bool:
        return any(path.startswith(p) for p in self._owned)

    def _remember(self, path: str, dt) -> None:
        """A kept handle was brought up to date: its version is the latest (_known_latest);
        for another writer's table, the commit the handle stands at (see _same_table)."""
        if self._owned_path(path):
            self._note_latest(path, dt.version())
            return
        marks = self._local.__dict__.setdefault("marks", {})
        if marks.get(path, (None,))[0] != dt.version():
            marks[path] = (dt.version(), self._commit_mark(dt, dt.version()))

    def _same_table(self, path: str, dt) -> bool:
        """Whether the commit file a kept handle stands at is still the one it read."""
        if self._owned_path(path):
            return True
        seen = self._local.__dict__.setdefault("marks", {}).get(path)
        return seen is None or self._commit_mark(dt, seen[0]) == seen[1]

    def _followed(self, path: str):
        """(this thread's kept handle of another writer's local table, the table's latest
        version) when the commits after the handle's are at most FOLLOW_COMMITS and none
        changes the metadata or protocol: the handle's schema and properties still hold,
        and what a batch reads of those commits (their versions, their appended files)
        comes from their log entries. None otherwise (the handle is brought up to date)."""
        local = _local_path(path)
        dt = self._local.__dict__.get("tables", {}).get(path)
        if local is None or dt is None or self._owned_path(path) or not self._same_table(path, dt):
            return None
        # the commits up to `latest` were read before: only later ones are (the record goes
        # with the handle, _forget_handle)
        checked = self._local.__dict__.setdefault("followed", {})
        base, latest = checked.get(path, (dt.version(), dt.version()))
        if base != dt.version():
            latest = dt.version()
        log = _commit_log(dt, self.options)
        while os.path.exists(os.path.join(local, "_delta_log", f"{latest + 1:020d}.json")):
            latest += 1
            actions = log.actions(latest)
            if latest - dt.version() > FOLLOW_COMMITS or actions is None or \
                    any("metaData" in a or "protocol" in a for a in actions):
                checked.pop(path, None)
                return None
        checked[path] = (dt.version(), latest)
        return dt, latest

    def _log_reader(self, path: str, version: int):
        """A handle whose commit log holds `version`, for reads of log entries only."""
        followed = self._followed(path)
        if followed is not None and followed[1] >= version:
            return followed[0]
        return self._table_holding(path, version)

    def observe(self, path: str) -> TableState:
        followed = self._followed(path)
        if followed is not None:
            dt, version = followed
        else:
            dt = self._table(path)
            version = dt.version()
        return TableState(version, dt.metadata().id, _feed_on(dt),
                          pa.schema(dt.schema().to_arrow()))

    def _forget_snapshots(self, path: str) -> None:
        with self._lock:
            for key in [k for k in self._snapshots if k[0] == path]:
                del self._snapshots[key]

    def _commit_mark(self, dt, version: int) -> Optional[str]:
        # The log entry itself: history() gives no count of a commit's actions.
        actions = _commit_log(dt, self.options).actions(version)
        if actions is None:
            return None
        info = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        return f"{info.get('timestamp')}:{len(actions)}"

    def _open(self, path: str, version: Optional[int]):
        dl = _dl()
        try:
            return dl.DeltaTable(path, version=version, storage_options=self.options)
        except Exception as e:  # delta-rs raises TableNotFoundError / DeltaError
            if version is not None and self.exists(path):
                raise ViewletError(
                    f"Version {version} of the Delta table at {path} cannot be read ({e}). "
                    "Its history may have been vacuumed or its log cleaned up; rebuild the view "
                    "with REFRESH INCREMENTAL VIEW <name> FULL.") from None
            raise TableNotFound(f"No Delta table at {path}: {e}") from None

    def exists(self, path: str) -> bool:
        return _dl().DeltaTable.is_deltatable(path, storage_options=self.options)

    def version(self, path: str) -> int:
        known = self._known_latest(path)
        return known if known is not None else self._table(path).version()

    def snapshot(self, path: str, version: Optional[int] = None) -> Snapshot:
        if version is not None:
            with self._lock:
                hit = self._snapshots.get((path, version))
                if hit is not None:
                    self._snapshots.move_to_end((path, version))
                    return hit
        snap = self._read_snapshot(path, version)
        with self._lock:              # a version's files never change: cache it
            self._snapshots[(path, snap.version)] = snap
            while len(self._snapshots) > _SNAPSHOTS_KEPT:
                self._snapshots.popitem(last=False)
        return snap

    def _read_snapshot(self, path: str, version: Optional[int]) -> Snapshot:
        dt = self._table(path, version)
        protocol = dt.protocol()
        features = set(protocol.reader_features or [])
        if features & _UNREADABLE_FEATURES or dt.metadata().configuration.get(
                "delta.columnMapping.mode", "none") != "none":
            raise ViewletError(
                f"The Delta table at {path} uses {sorted(features & _UNREADABLE_FEATURES) or ['column mapping']}, "
                "which Viewlet cannot read yet. Rewrite it without column mapping.")
        schema = pa.schema(dt.schema().to_arrow())
        # file_uris() are percent-encoded; Spark (Hadoop Path) wants them decoded.
        files = tuple(unquote(u) for u in dt.file_uris())
        deleted = _deleted_rows(dt) if "deletionVectors" in features else None
        return Snapshot(path, dt.version(), files, schema, tuple(dt.metadata().partition_columns),
                        _file_stats(dt, files, schema.names), deleted)

    def read_arrow(self, path: str, version: Optional[int] = None) -> pa.Table:
        snap = self.snapshot(path, version)
        if snap.deleted is not None:        # deletion vectors: applied by read_files
            return self.read_files(snap)
        # DataFusion's QueryBuilder, not to_pyarrow_table: the latter can abort the
        # interpreter at exit (delta-rs #2184).
        from deltalake import QueryBuilder
        reader = QueryBuilder().register("t", self._table(path, version)).execute("SELECT * FROM t")
        return plain_types(pa.table(reader.read_all()))

    def read_columns(self, path: str, version: int, columns: Sequence[str]) -> pa.Table:
        snap = self.snapshot(path, version)
        if snap.deleted is not None:        # deletion vectors: applied by read_files
            data = self.read_files(snap)
            return data.select(list(columns)) if columns else \
                pa.table({"__viewlet_unit": pa.array([1] * data.num_rows, pa.int32())})
        from deltalake import QueryBuilder
        items = ", ".join(quote(c) for c in columns) or "1 AS __viewlet_unit"
        reader = QueryBuilder().register("t", self._table(path, version)).execute(
            f"SELECT {items} FROM t")
        return plain_types(pa.table(reader.read_all()))

    def read_files(self, snapshot: Snapshot) -> pa.Table:
        import pyarrow.parquet as pq
        schema = snapshot.schema
        if not snapshot.files:
            return schema.empty_table()
        fs, paths = _filesystem(snapshot.path, snapshot.files, self.options)
        tables = [without_rows(pq.read_table(p, filesystem=fs, schema=schema),
                                   snapshot.deleted_in(f))
                  for p, f in zip(paths, snapshot.files)]
        return plain_types(pa.concat_tables(tables))

    def local_parquet(self, snapshot: Snapshot) -> Optional[List[str]]:
        if snapshot.partition_columns or any(snapshot.deleted_in(f) for f in snapshot.files):
            return None
        fs, paths = _filesystem(snapshot.path, snapshot.files, self.options)
        return list(paths) if fs is None else None

    def table_id(self, path: str, version: Optional[int] = None) -> str:
        return self._table(path, version).metadata().id

    def change_feed_enabled(self, path: str) -> bool:
        return _feed_on(self._table(path))

    def enable_change_feed(self, path: str) -> None:
        try:
            self._table(path).alter.set_table_properties({"delta.enableChangeDataFeed": "true"})
        except Exception as e:
            raise ChangeFeedError(
                f"The change data feed of the Delta table at {path} is off and Viewlet could not "
                f"turn it on ({e}). Run: ALTER TABLE delta.`{path}` SET TBLPROPERTIES "
                "(delta.enableChangeDataFeed = true), then create the view again.") from None

    def read_changes(self, path: str, after_version: int, to_version: int,
                     columns: Optional[Sequence[str]] = None) -> pa.Table:
        first, to = after_version + 1, to_version
        appended = _appended_rows(self._log_reader(path, to_version), path, first, to, columns,
                                  self.options)
        if appended is not None:
            return appended
        dt = self._table_holding(path, to_version)
        try:
            table = _projected_cdf(dt, first, to, columns)
            if table is None:
                table = pa.table(dt.load_cdf(starting_version=first, ending_version=to))
        except Exception as e:
            raise ChangeFeedError(
                f"Cannot read the change data feed of {path} for versions {first}.."
                f"{to} ({e}). The feed must be on for every version since the view was "
                "created and the history must not be vacuumed; REFRESH INCREMENTAL VIEW <name> "
                "FULL rebuilds the view from the current data.") from None
        table = plain_types(table)
        signs = _signs(table.column("_change_type"))
        data_cols = [c for c in table.column_names
                     if c not in ("_change_type", "_commit_version", "_commit_timestamp")]
        changes = table.select(data_cols).append_column(SIGN_COLUMN, signs)
        return _repair_updates(dt, path, changes, table.column("_commit_version"),
                               after_version, to_version, self.options)

    def read_file_changes(self, path: str, after_version: int, to_version: int) -> pa.Table:
        # Raw log entries: no deltalake API lists one commit's actions (see CommitLog).
        dt = self._table_holding(path, to_version)
        schema = plain_types(pa.schema(dt.schema().to_arrow()).empty_table()).schema
        log = _commit_log(dt, self.options)
        parts = [rows_from_files(log, path, v, actions, schema)
                 for v, actions in _range_commits(log, path, after_version, to_version)]
        if not parts:
            return rows_from_files(log, path, after_version, [], schema)
        return pa.concat_tables(parts)

    def change_files(self, path, after_version, to_version, from_files=False):
        # Raw log entries: no deltalake API lists one commit's actions (see CommitLog).
        dt = self._table_holding(path, to_version)
        log = _commit_log(dt, self.options)
        out: List[ChangeFile] = []
        for v, actions in _range_commits(log, path, after_version, to_version):
            deleted = _vectors_around(dt, v, self.options) \
                if changes_deletion_vectors(actions) else None
            out += change_files(log, v, actions, trust_cdc=not from_files, deleted=deleted)
        return out

    def change_rows_estimate(self, path, after_version, to_version, exact_above=None):
        # Raw log entries: no deltalake API lists one commit's actions (see CommitLog).
        log = _commit_log(self._log_reader(path, to_version), self.options)
        total, unknown = 0, []   # files without statistics: (path, size, whether it was added)
        for v in range(after_version + 1, to_version + 1):
            actions = log.actions(v) or []
            cdc = [("cdc", a["cdc"]) for a in actions if "cdc" in a]
            files = cdc or [(kind, a[kind]) for a in actions for kind in ("add", "remove")
                            if kind in a]
            for kind, f in files:
                rows = records(f)
                if rows is not None:
                    total += rows
                else:
                    unknown.append((f.get("path") or "", int(f.get("size") or 0), kind != "remove"))
        bound = total + sum(size for _, size, _ in unknown)
        if exact_above is None or bound <= exact_above:
            return bound
        # a removed file may be vacuumed: it keeps its size as the bound
        added = [unquote(p) for p, _, was_added in unknown if was_added]
        counted = {f.path: f.rows for f in self.describe_files(path, added)} if added else {}
        return total + sum(counted.get(unquote(p), size) for p, size, _ in unknown)

    def row_bytes(self, path, files, columns=None):
        import pyarrow.parquet as pq
        fs, paths = _filesystem(path, list(files), self.options)
        for name in paths:
            try:
                source = name if fs is None else fs.open_input_file(name)
                parquet = pq.ParquetFile(source)
                present = set(parquet.schema_arrow.names)
                wanted = list(columns) if columns and present.issuperset(columns) else None
                batch = next(parquet.iter_batches(batch_size=ROW_SAMPLE, columns=wanted), None)
            except OSError:
                continue            # vacuumed, or unreadable here: another file may do
            if batch is not None and batch.num_rows:
                return batch.nbytes / batch.num_rows
        return None

    def describe_files(self, path, relative_paths):
        import pyarrow.parquet as pq
        from .footers import footer_stats_json
        fs, _ = _filesystem(path, [], self.options)
        out = []
        for rel in relative_paths:
            if fs is None:
                full = _local(f"{path.rstrip('/')}/{rel}")
                meta, size = pq.read_metadata(full), os.path.getsize(full)
            else:
                with fs.open_input_file(rel) as f:
                    meta, size = pq.read_metadata(f), f.size()
            out.append(DataFile(rel, size, meta.num_rows, footer_stats_json(meta)))
        return out

    def commit_files(self, path, added, removed=(), txn=None, metadata=None, read_version=None):
        from deltalake.transaction import AddAction, RemoveAction
        dt = self._table(path, read_version)
        if _done(dt, txn):          # applied before (a re-run batch): never twice
            _delete_files(path, [f.path for f in added], self.options)
            return None
        now = int(time.time() * 1000)
        actions = [AddAction(f.path, f.size, {}, now, True, f.stats) for f in added] + \
            [RemoveAction(p, True, now) for p in removed]
        before = dt.version()
        try:
            _committing(path, lambda: dt.create_write_transaction(
                actions, mode="append", schema=dt.schema(),
                commit_properties=_commit(txn, metadata), post_commithook_properties=_hooks()))
        except BaseException:
            _delete_files(path, [f.path for f in added], self.options)
            raise
        self._committed(path, dt, before, moved=False)
        return self.version(path)

    def create_from_files(self, path, schema, added, txn=None, metadata=None, properties=None):
        from deltalake.transaction import AddAction, create_table_with_add_actions
        delta, other = _split_properties(properties)
        now = int(time.time() * 1000)
        create_table_with_add_actions(
            path, _dl().Schema.from_arrow(schema),
            [AddAction(f.path, f.size, {}, now, True, f.stats) for f in added], mode="error",
            configuration=delta or None, storage_options=self.options,
            commit_properties=_commit(txn, metadata))
        if other:
            self._table(path).alter.set_table_properties(other, raise_if_not_exists=False)

    def file_paths(self, path, version):
        actions = pa.table(self._table(path, version).get_add_actions(flatten=True))
        return {unquote(p).rsplit("/", 1)[-1]: p for p in actions.column("path").to_pylist()}

    def create(self, path, data, txn=None, metadata=None, properties=None, rows_per_file=None):
        delta, other = _split_properties(properties)
        if rows_per_file is None:
            _dl().write_deltalake(path, data, mode="error", configuration=delta or None,
                                  commit_properties=_commit(txn, metadata),
                                  storage_options=self.options)
        else:
            from deltalake.transaction import create_table_with_add_actions
            actions = _write_files(path, data, rows_per_file, self.options)
            create_table_with_add_actions(path, _dl().Schema.from_arrow(data.schema), actions,
                                          mode="error", configuration=delta or None,
                                          storage_options=self.options,
                                          commit_properties=_commit(txn, metadata))
        if other:
            self._table(path).alter.set_table_properties(other, raise_if_not_exists=False)

    def add_rows(self, path, rows, txn, metadata=None):
        return self.append_once(path, rows, txn, metadata)

    def rewrite(self, path, data, read_version, rows_per_file, metadata=None, files=None,
                txn=None):
        from deltalake.transaction import RemoveAction
        dt = self._table(path, read_version)
        removed = []
        if files is not None:            # these files only: removed by name, the rest stay
            named = self.file_paths(path, read_version)
            now = int(time.time() * 1000)
            removed = [RemoveAction(named[f.rsplit("/", 1)[-1]], True, now) for f in files]
        actions = _write_files(path, data, rows_per_file, self.options) \
            if data.num_rows or files is None else []
        before = dt.version()
        try:
            dt.create_write_transaction(actions + removed,
                                        mode="overwrite" if files is None else "append",
                                        schema=dt.schema(),
                                        commit_properties=_commit(txn, metadata),
                                        post_commithook_properties=_hooks())
        except Exception as e:
            _delete_files(path, [a.path for a in actions], self.options)
            if _conflicted(e):
                return False
            raise
        self._committed(path, dt, before, moved=False)
        return True

    def vacuum(self, path, keep_version):
        dt = self._table(path)
        keep = sorted({int(keep_version), dt.version()})
        try:
            return len(dt.vacuum(retention_hours=0, dry_run=False,
                                 enforce_retention_duration=False, keep_versions=keep,
                                 post_commithook_properties=_hooks()))
        except Exception as e:
            # A concurrent writer committed meanwhile (another refresher of the same batch):
            # vacuuming is housekeeping, the next batch does it.
            if _conflicted(e):
                return 0
            raise

    def append(self, path, data, txn=None, metadata=None):
        _dl().write_deltalake(path, data, mode="append", commit_properties=_commit(txn, metadata),
                              post_commithook_properties=_hooks(), storage_options=self.options)

    def append_once(self, path, data, txn, metadata=None, read_version=None):
        dt = self._table(path, read_version)
        if _done(dt, txn):
            return None
        before = dt.version()
        _committing(path, lambda: _dl().write_deltalake(
            dt, data, mode="append", commit_properties=_commit(txn, metadata),
            post_commithook_properties=_hooks()))
        self._committed(path, dt, before)
        return dt.version()              # the handle now stands at the commit it made

    def appended_rows(self, path, after_version, to_version):
        # Raw log entries: no deltalake API lists one commit's actions (see CommitLog).
        dt = self._table(path)
        log = _commit_log(dt, self.options)
        schema = plain_types(pa.schema(dt.schema().to_arrow()).empty_table()).schema
        parts = []
        for v in range(after_version + 1, to_version + 1):
            actions = log.actions(v)
            if actions is None:
                return None
            for a in actions:
                if "remove" in a and a["remove"].get("dataChange", True):
                    return None
                if "add" in a and a["add"].get("dataChange", True):
                    parts.append(log.read_file(a["add"]["path"], schema,
                                               a["add"].get("partitionValues") or {}, schema.names))
        return pa.concat_tables(parts) if parts else schema.empty_table()

    def overwrite(self, path, data, txn=None, metadata=None):
        target = self._table(path) if txn else path
        if txn and _done(target, txn):
            return
        _committing(path, lambda: _dl().write_deltalake(
            target, data, mode="overwrite", schema_mode="overwrite",
            commit_properties=_commit(txn, metadata), post_commithook_properties=_hooks(),
            storage_options=None if txn else self.options))

    def merge_add(self, path, source, keys, values, zero_columns, txn=None, metadata=None):
        on = _key_predicate(keys)
        dt = self._table(path)
        if _done(dt, txn):       # applied before (a re-run batch): never twice
            return None
        merge = dt.merge(source, predicate=on, source_alias="s", target_alias="t",
                         commit_properties=_commit(txn, metadata),
                         post_commithook_properties=_hooks())
        merge = merge.when_matched_delete(predicate=" AND ".join(
            f"t.{quote(c)} + s.{quote(c)} = 0" for c in zero_columns))
        merge = merge.when_matched_update(
            updates={quote(v): f"t.{quote(v)} + s.{quote(v)}" for v in values})
        merge = merge.when_not_matched_insert(
            updates={quote(c): f"s.{quote(c)}" for c in list(keys) + list(values)})
        before = dt.version()
        metrics = _committing(path, merge.execute)
        self._committed(path, dt, before)
        return metrics

    def merge_replace(self, path, source, keys, op_column, txn=None, metadata=None):
        on = " AND ".join([f"(s.{quote(op_column)} = 'del')"] + ([_key_predicate(keys)] if keys else []))
        columns = [c for c in source.column_names if c != op_column]
        dt = self._table(path)
        if _done(dt, txn):       # applied before (a re-run batch): never twice
            return None
        if self._replaced_by_rewrite(path, dt, source, keys, op_column, txn, metadata):
            return None
        merge = dt.merge(source, predicate=on, source_alias="s", target_alias="t",
                         commit_properties=_commit(txn, metadata),
                         post_commithook_properties=_hooks())
        merge = merge.when_matched_delete()
        merge = merge.when_not_matched_insert(
            updates={quote(c): f"s.{quote(c)}" for c in columns},
            predicate=f"s.{quote(op_column)} = 'ins'")
        before = dt.version()
        metrics = _committing(path, merge.execute)
        self._committed(path, dt, before)
        return metrics

    def _replaced_by_rewrite(self, path, dt, source, keys, op_column, txn, metadata) -> bool:
        """merge_replace by rewriting the files that hold a deleted key (storage/replace.py);
        False, nothing written, when the MERGE must do it: a table or key type the rewrite
        does not handle, nothing to remove or add, or a concurrent commit took those files."""
        snap = self.snapshot(path, dt.version())
        if not plain_table(snap, dt.protocol().writer_features, _feed_on(dt)):
            return False
        op = source.column(op_column)
        deleted = source.filter(pc.equal(op, "del")).select(list(keys))
        inserted = source.filter(pc.equal(op, "ins")).drop_columns([op_column])
        plan = rewrite_for(self.read_files, snap, deleted, inserted, keys)
        if plan is None or not (plan.removed or plan.rows.num_rows):
            return False
        return self.rewrite(path, plan.rows, snap.version, REWRITE_ROWS_PER_FILE, metadata,
                            files=plan.removed, txn=txn)

    def delete_where_equal(self, path, column, value, txn=None):
        literal = "'" + value.replace("'", "''") + "'"
        self._table(path).delete(predicate=f"{quote(column)} = {literal}",
                                 commit_properties=_commit(txn, None),
                                 post_commithook_properties=_hooks())

    def txn_version(self, path, app_id):
        return self._table(path).transaction_version(app_id)

    def commits(self, path, after_version, to_version):
        # Raw log entries: history() returns commitInfo without the commit's txn actions.
        log = _commit_log(self._table(path), self.options)
        out = []
        for v in range(after_version + 1, to_version + 1):
            actions = log.actions(v) or []
            info = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
            txns = {a["txn"]["appId"]: int(a["txn"]["version"]) for a in actions if "txn" in a}
            # writers put custom metadata in commitInfo itself (delta-rs) or under userMetadata
            meta = {k: v for k, v in info.items() if k not in ("operation", "timestamp")}
            out.append(Commit(v, info.get("operation", "UNKNOWN") if actions else "UNKNOWN",
                              txns, meta))
        return out

    def history(self, path):
        return self._table(path).history()

    def set_properties(self, path, properties):
        self._table(path).alter.set_table_properties(properties, raise_if_not_exists=False)

    def properties(self, path):
        return dict(self._table(path).metadata().configuration)

    def oldest_version(self, path: str) -> int:
        history = self._table(path).history()
        return min(h.get("version", 0) for h in history) if history else 0

    def write_file(self, path: str, data: pa.Table) -> str:
        import pyarrow.parquet as pq
        parent, name = path.rstrip("/").rsplit("/", 1)
        fs, _ = _filesystem(parent, [], self.options)
        if fs is None:
            local = urlparse(path).path if path.startswith("file:") else path
            os.makedirs(os.path.dirname(local), exist_ok=True)
            pq.write_table(data, local)
        else:
            with fs.open_output_stream(name) as out:
                pq.write_table(data, out)
        return path

    def put_text(self, path: str, text: str) -> None:
        local = _local_path(path)
        if local is None:                 # object stores: one PUT replaces the object whole
            fs, name = _remote(path, self.options)
            with fs.open_output_stream(name) as out:
                out.write(text.encode("utf-8"))
            return
        os.makedirs(os.path.dirname(local), exist_ok=True)
        temp = f"{local}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(temp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(temp, local)           # atomic on POSIX

    def get_text(self, path: str) -> Optional[str]:
        local = _local_path(path)
        try:
            if local is not None:
                with open(local, encoding="utf-8") as f:
                    return f.read()
            fs, name = _remote(path, self.options)
            with fs.open_input_stream(name) as f:
                return f.read().decode("utf-8")
        except (FileNotFoundError, OSError):
            return None

    def list_names(self, directory: str) -> List[str]:
        local = _local_path(directory)
        if local is not None:
            return sorted(os.listdir(local)) if os.path.isdir(local) else []
        import pyarrow.fs as pa_fs
        fs = _filesystem(directory, [], self.options)[0]
        try:
            infos = fs.get_file_info(pa_fs.FileSelector("", allow_not_found=True))
        except (FileNotFoundError, OSError):
            return []
        return sorted(i.base_name for i in infos if i.type == pa_fs.FileType.File)

    def remove_file(self, path: str) -> None:
        local = _local_path(path)
        try:
            if local is not None:
                os.remove(local)
            else:
                fs, name = _remote(path, self.options)
                fs.delete_file(name)
        except (FileNotFoundError, OSError):
            pass

    def drop(self, path: str) -> None:
        prefix = path.rstrip("/") + "/"
        tables = self._local.__dict__.get("tables", {})
        for cached in [p for p in tables if p == path or p.startswith(prefix)]:
            tables.pop(cached, None)
        with self._lock:
            for known in [p for p in self._latest if p == path or p.startswith(prefix)]:
                del self._latest[known]
        parsed = urlparse(path)
        if parsed.scheme in ("", "file"):
            local = parsed.path if parsed.scheme else path
            if os.path.exists(local):
                shutil.rmtree(local)
            return
        import fsspec  # remote stores: delete through fsspec when it is installed
        fs, _, paths = fsspec.get_fs_token_paths(path, storage_options=self.options or {})
        fs.rm(paths[0], recursive=True)


def _local_path(path: str) -> Optional[str]:
    """The local path of a local location (plain or file:), else None."""
    parsed = urlparse(path)
    if parsed.scheme in ("", "file"):
        return parsed.path if parsed.scheme else path
    return None


def _remote(path: str, options):
    """(pyarrow filesystem rooted at the parent directory, the file's name) of a remote path."""
    parent, name = path.rstrip("/").rsplit("/", 1)
    return _filesystem(parent, [], options)[0], name


def _filesystem(table_path: str, files, options):
    """A pyarrow filesystem and the paths on it of files of the table at `table_path`."""
    parsed = urlparse(table_path)
    if parsed.scheme in ("", "file"):
        return None, [urlparse(f).path if f.startswith("file:") else f for f in files]
    import pyarrow.fs as pa_fs
    from deltalake.fs import DeltaStorageHandler
    root = table_path.rstrip("/") + "/"
    fs = pa_fs.PyFileSystem(DeltaStorageHandler(root, options))
    return fs, [f[len(root):] if f.startswith(root) else f for f in files]


def _range_commits(log: CommitLog, path: str, after_version: int, to_version: int):
    """(version, actions) of the commits in (after_version, to_version]; a clear error when
    one is no longer in the log."""
    for v in range(after_version + 1, to_version + 1):
        actions = log.actions(v)
        if actions is None:
            raise ChangeFeedError(
                f"Cannot read the changes of version {v} of {path}: its commit is no longer "
                "in the Delta log. REFRESH INCREMENTAL VIEW <name> FULL rebuilds the view "
                "from the current data.")
        yield v, actions


def _commit_log(dt, options) -> CommitLog:
    """The table's commit log, read through a filesystem carrying the store's options."""
    return CommitLog(dt.table_uri, _filesystem(dt.table_uri, [], options)[0])


def _write_files(path: str, data: pa.Table, rows_per_file: int, options) -> list:
    """Write `data` in order as Parquet files of `rows_per_file` rows into the table
    directory; their add actions, with statistics (row and NULL counts, min/max of the
    columns whose order is unambiguous)."""
    import json
    import uuid

    import pyarrow.parquet as pq
    from deltalake.transaction import AddAction

    fs, _ = _filesystem(path, [], options)
    if fs is None:
        os.makedirs(urlparse(path).path if path.startswith("file:") else path, exist_ok=True)
    actions = []
    chunks = [data.slice(i, rows_per_file) for i in range(0, data.num_rows, rows_per_file)] \
        or [data.slice(0, 0)]
    for chunk in chunks:
        name = f"part-{uuid.uuid4()}-c000.snappy.parquet"
        target = f"{path.rstrip('/')}/{name}"
        target = urlparse(target).path if target.startswith("file:") else target
        with (fs.open_output_stream(name) if fs is not None else open(target, "wb")) as out:
            pq.write_table(chunk, out, compression="snappy")
        size = fs.get_file_info(name).size if fs is not None else os.path.getsize(target)
        actions.append(AddAction(name, size, {}, int(time.time() * 1000), True,
                                 json.dumps(_stats(chunk))))
    return actions


def _local(location: str) -> str:
    return urlparse(location).path if location.startswith("file:") else location


def _delete_files(path: str, names, options) -> None:
    """Remove files this process wrote but never committed."""
    fs, _ = _filesystem(path, [], options)
    for name in names:
        try:
            if fs is not None:
                fs.delete_file(name)
            else:
                target = f"{path.rstrip('/')}/{name}"
                os.remove(urlparse(target).path if target.startswith("file:") else target)
        except OSError:
            pass


def _stats(chunk: pa.Table) -> Dict:
    mins, maxs, nulls = {}, {}, {}
    for name, column in zip(chunk.column_names, chunk.columns):
        nulls[name] = column.null_count
        t = column.type
        if column.null_count == len(column) or not (
                pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_string(t)):
            continue
        mm = pc.min_max(column).as_py()
        lo, hi = mm["min"], mm["max"]
        if pa.types.is_date(t):
            lo, hi = lo.isoformat(), hi.isoformat()
        mins[name], maxs[name] = lo, hi
    return {"numRecords": chunk.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}


def _file_stats(dt, files, columns) -> Optional[tuple]:
    """Each file's add-action statistics, in the order of `files` (None if any is missing)."""
    actions = pa.table(dt.get_add_actions(flatten=True))
    if actions.num_rows != len(files):
        return None
    data = {name: actions.column(name).to_pylist() for name in actions.column_names}
    paths = [unquote(p) for p in data["path"]]
    if all(f.endswith("/" + p) for f, p in zip(files, paths)):
        order = range(len(files))
    else:                              # not in the same order: match by relative path
        index = {p: i for i, p in enumerate(paths)}
        root = unquote(dt.table_uri).rstrip("/") + "/"
        order = [index.get(f[len(root):]) if f.startswith(root) else None for f in files]
        if any(i is None for i in order):
            return None

    def per_column(prefix, i):
        return {c: data[f"{prefix}.{c}"][i] for c in columns if f"{prefix}.{c}" in data}

    rows = data.get("num_records")
    sizes = data.get("size_bytes")
    return tuple(FileStats(rows[i] if rows else None, per_column("null_count", i),
                           per_column("min", i), per_column("max", i),
                           sizes[i] if sizes else 0) for i in order)


def _appended_rows(dt, path: str, first: int, to: int, columns: Optional[Sequence[str]],
                   options) -> Optional[pa.Table]:
    """The change of versions first..to when every one of those commits only added files
    (appends: no removes, change data files or deletion vectors): the added files' rows, each
    +1, read from the files as the change data feed would read them; None otherwise. A
    refresh after a small append read it through delta-rs's change-feed query in several
    milliseconds, the file itself in one."""
    # Raw log entries: no deltalake API lists one commit's actions (see CommitLog).
    log = _commit_log(dt, options)
    commits = []
    for v in range(first, to + 1):
        actions = log.actions(v)
        if actions is None or not _only_appends(actions):
            return None
        commits.append((v, actions))
    schema = plain_types(pa.schema(dt.schema().to_arrow()).empty_table()).schema
    if columns is not None:
        if any(c not in schema.names for c in columns):
            return None
        schema = pa.schema([schema.field(c) for c in dict.fromkeys(columns)])
    parts = [rows_from_files(log, path, v, actions, schema) for v, actions in commits]
    return pa.concat_tables(parts) if parts else rows_from_files(log, path, first, [], schema)


def _feed_on(dt) -> bool:
    """Whether the handle's version has the change data feed on."""
    return str(dt.metadata().configuration.get("delta.enableChangeDataFeed", "false")).lower() == "true"


def _only_appends(actions) -> bool:
    """A commit that only added files, without deletion vectors (no removes, change data
    files, metadata or protocol changes)."""
    adds = [a["add"] for a in actions if "add" in a]
    return bool(adds) and not any(k in a for a in actions
                                  for k in ("remove", "cdc", "metaData", "protocol")) and \
        not any(a.get("deletionVector") for a in adds)


def _projected_cdf(dt, first: int, to: int, columns: Optional[Sequence[str]]):
    """The change data feed of versions first..to with only `columns` (and the change type
    and version), or None when no projection is asked for or delta-rs cannot make it (the
    caller reads every column). delta-rs parses the names as SQL: each is quoted. Only the
    columns a view uses: a wide table's others (TPC-H lineitem's comments) were most of a
    large batch's read."""
    if columns is None:
        return None
    wanted = list(dict.fromkeys(list(columns) + ["_change_type", "_commit_version"]))
    quoted = [quote(c) for c in wanted]
    try:
        table = pa.table(dt.load_cdf(starting_version=first, ending_version=to, columns=quoted))
    except Exception:        # a name delta-rs reads otherwise: the whole feed, then select
        return None
    return table.select(wanted) if set(table.column_names) == set(wanted) else None


def _repair_updates(dt, path: str, changes: pa.Table, versions, after_version: int,
                    to_version: int, options) -> pa.Table:
    """Replace the change rows of commits delta-rs's change feed gets wrong by the rows of
    the files those commits replaced (update_feed.py): delta-rs UPDATEs (wrong on tables with
    duplicate rows) and deletes written as deletion vectors."""
    # Raw log entries: no deltalake API lists one commit's actions (see CommitLog).
    log = _commit_log(dt, options)
    unreliable = {}
    for v in range(after_version + 1, to_version + 1):
        actions = log.actions(v)
        if actions is not None and (is_unreliable_update(actions)
                                    or changes_deletion_vectors(actions)):
            unreliable[v] = actions
    if not unreliable:
        return changes
    kept = changes.filter(pc.invert(pc.is_in(versions, pa.array(sorted(unreliable), versions.type))))
    schema = pa.schema([f for f in changes.schema if f.name != SIGN_COLUMN])
    fixed = []
    for v, actions in unreliable.items():
        deleted = _vectors_around(dt, v, options) if changes_deletion_vectors(actions) else None
        fixed.append(rows_from_files(log, path, v, actions, schema, deleted))
    return pa.concat_tables([kept] + [f.cast(changes.schema) for f in fixed])


def _vectors_around(dt, version: int, options):
    """Rows deleted by deletion vectors per file before commit `version` (what its remove
    actions removed) and after it (what its add actions added)."""
    before = _deleted_rows(_at_version(dt, version - 1, options))
    after = _deleted_rows(_at_version(dt, version, options))
    return lambda kind, name: (before if kind == "remove" else after).get(name, ())


def _at_version(dt, version: int, options):
    return _dl().DeltaTable(dt.table_uri, version=version, storage_options=options)


def _key_predicate(keys: Sequence[str]) -> str:
    if not keys:
        return "TRUE"
    return " AND ".join(f"(t.{quote(k)} IS NOT DISTINCT FROM s.{quote(k)})" for k in keys)


def _deleted_rows(dt) -> Dict[str, Tuple[int, ...]]:
    """Row indexes removed by each data file's deletion vector, by file name."""
    vectors = pa.table(dt.deletion_vectors())
    out: Dict[str, Tuple[int, ...]] = {}
    for uri, selected in zip(vectors["filepath"].to_pylist(),
                             vectors["selection_vector"].to_pylist()):
        gone = tuple(i for i, keep in enumerate(selected) if not keep)
        if gone:
            out[unquote(uri).rsplit("/", 1)[-1]] = gone
    return out
