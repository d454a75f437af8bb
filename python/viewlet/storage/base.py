"""The storage interface: everything Viewlet asks of Delta Lake.

Maps, view results, catalogs and batch manifests are Delta tables. This interface is the only
place that knows which Delta engine is underneath: delta-rs here (`DeltaRsStore`), and
delta-spark's Python API on clusters that have its jars (a second implementation of this
same interface).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from .arrow import KeyLookups, prunable

Txn = Tuple[str, int]  # (application id, version): makes a commit idempotent


@dataclass(frozen=True)
class TableState:
    """A table's latest version and what a view needs to know about it at every batch."""

    version: int
    table_id: str                        # the Delta metadata id (new when recreated)
    change_feed: bool                    # delta.enableChangeDataFeed
    schema: pa.Schema


@dataclass(frozen=True)
class Commit:
    """What a commit of the Delta log says about itself."""

    version: int
    operation: str
    txns: Dict[str, int]                 # application id -> transaction version
    metadata: Dict[str, object]          # the commit's custom metadata


@dataclass(frozen=True)
class FileStats:
    """What a Delta add action says about one data file: rows, and per column its NULL
    count and min/max (absent when the writer recorded none)."""

    rows: Optional[int]
    null_count: Dict[str, Optional[int]]
    min: Dict[str, object]
    max: Dict[str, object]
    size: int = 0


@dataclass(frozen=True)
class Snapshot:
    """The files of one table version, enough for Spark to read it as Parquet; with each
    file's statistics when the store has them (same order as `files`)."""

    path: str
    version: int
    files: Tuple[str, ...]
    schema: pa.Schema
    partition_columns: Tuple[str, ...]
    stats: Optional[Tuple[FileStats, ...]] = None
    #: rows deleted by deletion vectors (written by delta-spark or Databricks): row indexes
    #: within the file, by file name (Delta data file names are unique within a table)
    deleted: Optional[Dict[str, Tuple[int, ...]]] = None

    def deleted_in(self, file: str) -> Tuple[int, ...]:
        if not self.deleted:
            return ()
        return self.deleted.get(file.rsplit("/", 1)[-1], ())

    def restricted(self, lookups: KeyLookups) -> "Snapshot":
        """Only the files that can hold a row whose column c equals one of lookups[c]'s
        values (NULL only if lookups[c] says so), for every column c: file skipping by
        min/max statistics. Files without usable statistics are kept.

        By hand, not with deltalake 1.6.6's `DeltaTable.file_uris(file_pruning_predicate=...)`
        (nor `to_pyarrow_dataset().get_fragments(filter=...)`, which pruned alike): checked
        on crafted files, both keep the same files for integer and string values and NULL
        lookups, but delta-rs trusts a string maximum of 32 characters or more, so it drops
        a file holding a longer key when the writer truncated that maximum (Spark does), and
        it prunes floats by min/max that ignore NaN, dropping a file holding NaN for
        `f IN (NaN)`, which Spark's NaN = NaN matches. It would also need a handle on the
        version, where this uses the snapshot's statistics already in memory."""
        if self.stats is None or not lookups:
            return self
        columns = {}
        for c, (values, has_null) in lookups.items():
            field = self.schema.field(c) if c in self.schema.names else None
            if field is None or not prunable(field.type):
                continue
            # sorted by Arrow (strings by code point, as Python compares them), compared
            # with the statistics as Python values
            ordered = values.take(pc.array_sort_indices(values)).to_pylist()
            columns[c] = (ordered, has_null, pa.types.is_string(field.type))
        if not columns:
            return self
        keep = [i for i, st in enumerate(self.stats) if all(
            _may_hold(st, c, *spec) for c, spec in columns.items())]
        return Snapshot(self.path, self.version, tuple(self.files[i] for i in keep), self.schema,
                        self.partition_columns, tuple(self.stats[i] for i in keep), self.deleted)


@dataclass(frozen=True)
class DataFile:
    """A Parquet file another engine (Spark's executors) wrote into a table's directory and
    that is not committed yet: its path relative to the table, size, rows and the Delta
    statistics of its add action (JSON)."""

    path: str
    size: int
    rows: int
    stats: str


@dataclass(frozen=True)
class ChangeFile:
    """A data file whose rows are (part of) a table's change over some versions, as Spark
    reads it: `kind` 'cdc' (a change data file: its `_change_type` column gives each row's
    sign), 'add' (+1) or 'remove' (-1); `deleted`: row indexes its deletion vector deletes
    (after the commit for 'add', before it for 'remove'); `rows`: its row count when the
    log says."""

    uri: str
    kind: str
    partition_values: Dict[str, Optional[str]]
    deleted: Tuple[int, ...] = ()
    rows: Optional[int] = None


def _may_hold(st: FileStats, column: str, values, has_null: bool, is_string: bool) -> bool:
    import bisect
    nulls = st.null_count.get(column)
    lo, hi = st.min.get(column), st.max.get(column)
    if has_null and (nulls is None or nulls > 0):
        return True
    if lo is None or hi is None:
        # No min/max: all NULL when the NULL count says so, otherwise unknown.
        return not (nulls is not None and st.rows is not None and nulls == st.rows)
    if is_string and len(hi) >= 32:      # writers may truncate long string maxima
        hi = None
    try:
        i = bisect.bisect_left(values, lo)
        return i < len(values) and (hi is None or values[i] <= hi)
    except TypeError:
        return True


class TableStore(ABC):
    """Delta tables by path: what the engine reads and writes (delta-rs in deltars.py; a
    delta-spark implementation fits behind the same methods)."""

    def own(self, prefix: str) -> None:
        """Tables under `prefix` are written only through Viewlet, never replaced by another
        table at the same path: a store may skip checking them for replacement."""

    @abstractmethod
    def exists(self, path: str) -> bool: ...

    @abstractmethod
    def version(self, path: str) -> int: ...

    @abstractmethod
    def observe(self, path: str) -> TableState:
        """The table's latest state, cheaply enough for every batch (a handle kept open and
        brought up to date); a table dropped and created again at the path is noticed.
        Raises TableNotFound when there is no table."""

    @abstractmethod
    def snapshot(self, path: str, version: Optional[int] = None) -> Snapshot: ...

    @abstractmethod
    def read_arrow(self, path: str, version: Optional[int] = None) -> pa.Table: ...

    @abstractmethod
    def read_columns(self, path: str, version: int, columns: Sequence[str]) -> pa.Table:
        """Columns of the table at a version, read by the Delta engine (partition values,
        schema changes and all)."""

    @abstractmethod
    def read_files(self, snapshot: Snapshot) -> pa.Table:
        """The rows of exactly the snapshot's files (e.g. a `Snapshot.restricted` one)."""

    def local_parquet(self, snapshot: Snapshot) -> Optional[List[str]]:
        """The snapshot's files as paths any Parquet reader opens as they are (rows exactly
        `read_files`'): local files, no partition columns, no row deleted by a deletion
        vector. None otherwise, or when the store cannot tell."""
        return None

    @abstractmethod
    def table_id(self, path: str, version: Optional[int] = None) -> str:
        """The Delta table's metadata id (a table recreated at the same path gets a new one)."""

    @abstractmethod
    def change_feed_enabled(self, path: str) -> bool: ...

    @abstractmethod
    def enable_change_feed(self, path: str) -> None: ...

    @abstractmethod
    def read_changes(self, path: str, after_version: int, to_version: int,
                     columns: Optional[Sequence[str]] = None) -> pa.Table:
        """Rows changed in versions (after_version, to_version], each with `_viewlet_sign`
        (+1 insert / post-image, -1 delete / pre-image); `columns`: only these (names of
        the table's columns), else every column."""

    @abstractmethod
    def read_file_changes(self, path: str, after_version: int, to_version: int) -> pa.Table:
        """Changes in versions (after_version, to_version] read from the data files the
        commits removed (`_viewlet_sign` -1) and added (+1): rows a commit copied unchanged
        appear with both signs, so only the net per row is the change. Needs no change data
        feed; for tables only Viewlet writes (result tables of upstream views)."""

    @abstractmethod
    def change_files(self, path: str, after_version: int, to_version: int,
                     from_files: bool = False) -> List[ChangeFile]:
        """The data files holding the changes of versions (after_version, to_version], for a
        reader that scales out (Spark's executors): a commit's change data files where they
        can be trusted, else the files it removed and added (with their deletion vectors);
        `from_files`: always the latter (result tables of upstream views, read_file_changes).
        Rows a commit copied unchanged come with both signs: only the net per row counts."""

    @abstractmethod
    def change_rows_estimate(self, path: str, after_version: int, to_version: int,
                             exact_above: Optional[int] = None) -> int:
        """An upper bound of the rows holding the changes of versions (after_version,
        to_version], read before deciding where a batch runs: the row counts of the files
        `change_files` would list, from the log's statistics; a file without them (change
        data files usually have none) counts its size in bytes, at least a byte a row, unless
        that bound exceeds `exact_above`: then such files count the rows their Parquet
        footers give (one small read a file, only when the bound would decide)."""

    @abstractmethod
    def row_bytes(self, path: str, files: Sequence[str],
                  columns: Optional[Sequence[str]] = None) -> Optional[float]:
        """Bytes a row of the table at `path` takes in memory as Arrow (strings decoded),
        sampled from the first rows of the first of `files` (URIs of its data files) that
        can be read and holds rows; None when none can. `columns`: only these (all of them
        when a file lacks one). The policy weighs batches and loads by it."""

    @abstractmethod
    def describe_files(self, path: str, relative_paths: Sequence[str]) -> List[DataFile]:
        """The files at these paths (relative to the table at `path`, written there by
        another engine) with the row counts and statistics their add actions need."""

    @abstractmethod
    def commit_files(self, path: str, added: Sequence[DataFile], removed: Sequence[str] = (),
                     txn: Optional[Txn] = None, metadata: Optional[Dict[str, str]] = None,
                     read_version: Optional[int] = None) -> Optional[int]:
        """Commit files written into the table's directory (and the removal of `removed`,
        relative paths of files of `read_version`) as one commit, unless the table already
        holds `txn`: the version committed, or None (then the files are deleted). A
        concurrent commit that conflicts raises ConcurrentUpdate."""

    @abstractmethod
    def create_from_files(self, path: str, schema: pa.Schema, added: Sequence[DataFile],
                          txn: Optional[Txn] = None, metadata: Optional[Dict[str, str]] = None,
                          properties: Optional[Dict[str, str]] = None) -> None:
        """A new table whose first version holds the files written into its directory."""

    @abstractmethod
    def file_paths(self, path: str, version: int) -> Dict[str, str]:
        """The data files of a version: file name -> its path as its add action names it
        (what a remove action must name)."""

    @abstractmethod
    def create(self, path: str, data: pa.Table, txn: Optional[Txn] = None,
               metadata: Optional[Dict[str, str]] = None,
               properties: Optional[Dict[str, str]] = None,
               rows_per_file: Optional[int] = None) -> None:
        """A new table holding `data`; with `rows_per_file`, written in order in files of
        that many rows, each with min/max statistics."""

    @abstractmethod
    def append(self, path: str, data: pa.Table, txn: Optional[Txn] = None,
               metadata: Optional[Dict[str, str]] = None) -> None: ...

    @abstractmethod
    def append_once(self, path: str, data: pa.Table, txn: Txn,
                    metadata: Optional[Dict[str, str]] = None,
                    read_version: Optional[int] = None) -> Optional[int]:
        """Append unless the table already holds `txn`: the version committed, or None when
        the table already held it. Of two concurrent writers of the same txn app id one
        commits and the other raises ConcurrentUpdate; `read_version` makes the write
        conflict with any such commit after that version."""

    @abstractmethod
    def appended_rows(self, path: str, after_version: int, to_version: int) -> Optional[pa.Table]:
        """The rows the commits of versions (after_version, to_version] added, when those
        commits only added rows (None otherwise, or when a commit's log entry is gone): an
        append-only table read incrementally."""

    @abstractmethod
    def overwrite(self, path: str, data: pa.Table, txn: Optional[Txn] = None,
                  metadata: Optional[Dict[str, str]] = None) -> None: ...

    @abstractmethod
    def add_rows(self, path: str, rows: pa.Table, txn: Txn,
                 metadata: Optional[Dict[str, str]] = None) -> Optional[int]:
        """Append `rows` to a map (a table whose value for a key is the sum of its rows)
        unless the table already holds `txn`: the version committed, or None; a concurrent
        commit of the same txn raises ConcurrentUpdate."""

    @abstractmethod
    def rewrite(self, path: str, data: pa.Table, read_version: int, rows_per_file: int,
                metadata: Optional[Dict[str, str]] = None,
                files: Optional[Sequence[str]] = None, txn: Optional[Txn] = None) -> bool:
        """Replace the files of version `read_version` (only `files` of them, as the
        version's Snapshot names them, when given: then no file when `data` is empty) by
        `data`, written in order in files of `rows_per_file` rows, in one commit (carrying
        `txn` when given); files committed after `read_version` stay. False (nothing
        changed) if a later commit removed any of those files."""

    @abstractmethod
    def vacuum(self, path: str, keep_version: int) -> int:
        """Delete the data files that neither the current version nor `keep_version`
        references; the number of files deleted (0 when a concurrent commit got in the way:
        the next call does it)."""

    @abstractmethod
    def merge_add(self, path: str, source: pa.Table, keys: Sequence[str],
                  values: Sequence[str], zero_columns: Sequence[str], txn: Optional[Txn] = None,
                  metadata: Optional[Dict[str, str]] = None) -> Dict:
        """Skipped when the table already holds `txn`; a concurrent commit of the same txn
        raises ConcurrentUpdate.
        Add source values to target rows with equal keys (NULL keys equal); insert new
        keys; delete rows whose `zero_columns` all become 0."""

    @abstractmethod
    def merge_replace(self, path: str, source: pa.Table, keys: Sequence[str],
                      op_column: str, txn: Optional[Txn] = None,
                      metadata: Optional[Dict[str, str]] = None) -> Dict:
        """Source rows with op 'del' delete every target row with their keys (NULL equal
        to NULL); rows with op 'ins' are inserted, in one commit (a MERGE, or the files
        holding a deleted key rewritten: storage/replace.py)."""

    @abstractmethod
    def delete_where_equal(self, path: str, column: str, value: str,
                           txn: Optional[Txn] = None) -> None: ...

    @abstractmethod
    def txn_version(self, path: str, app_id: str) -> Optional[int]: ...

    @abstractmethod
    def commits(self, path: str, after_version: int, to_version: int) -> "list[Commit]":
        """The commits of versions (after_version, to_version], oldest first (a commit whose
        log entry is gone is reported with operation 'UNKNOWN')."""

    @abstractmethod
    def history(self, path: str) -> List[Dict]:
        """The table's commits, newest first, as Delta's DESCRIBE HISTORY gives them (version,
        timestamp in milliseconds, operation, operationParameters, operationMetrics, ...)."""

    @abstractmethod
    def set_properties(self, path: str, properties: Dict[str, str]) -> None:
        """Set table properties (one commit)."""

    @abstractmethod
    def properties(self, path: str) -> Dict[str, str]:
        """The table's properties (its metadata's configuration)."""

    @abstractmethod
    def oldest_version(self, path: str) -> int:
        """The oldest version whose changes can still be read."""

    @abstractmethod
    def write_file(self, path: str, data: pa.Table) -> str:
        """Write `data` as one plain Parquet file at `path` (no Delta log); the location
        Spark reads it from."""

    @abstractmethod
    def drop(self, path: str) -> None:
        """Delete a table Viewlet owns, files and log."""

    # -- small files (refresh leases, engine/state/lease.py) --------------------------------------
    @abstractmethod
    def put_text(self, path: str, text: str) -> None:
        """Write a small file whole: readers see the old content or the new, never a part."""

    @abstractmethod
    def get_text(self, path: str) -> Optional[str]:
        """A small file's content, or None when there is none."""

    @abstractmethod
    def list_names(self, directory: str) -> List[str]:
        """Names of the files directly in `directory` (none when it does not exist)."""

    @abstractmethod
    def remove_file(self, path: str) -> None:
        """Delete one file; a missing file is fine."""
