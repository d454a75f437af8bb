"""The storage interface: everything Viewlet asks of Delta Lake.

Maps, view results, catalogs and batch manifests are Delta tables. This interface is the only
place that knows which Delta engine is underneath: delta-rs here (`DeltaRsStore`), and
delta-spark's Python API on clusters that have its jars (a second implementation of this
same interface).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Dict, Optional, Sequence, Tuple

import pyarrow as pa

Txn = Tuple[str, int]  # (application id, version): makes a commit idempotent


@dataclass(frozen=True)
class Snapshot:
    """The files of one table version, enough for Spark to read it as Parquet."""

    path: str
    version: int
    files: Tuple[str, ...]
    schema: pa.Schema
    partition_columns: Tuple[str, ...]


class TableStore(ABC):
    @abstractmethod
    def exists(self, path: str) -> bool: ...

    @abstractmethod
    def version(self, path: str) -> int: ...

    @abstractmethod
    def snapshot(self, path: str, version: Optional[int] = None) -> Snapshot: ...

    @abstractmethod
    def read_arrow(self, path: str, version: Optional[int] = None) -> pa.Table: ...

    @abstractmethod
    def table_id(self, path: str, version: Optional[int] = None) -> str:
        """The Delta table's metadata id (a table recreated at the same path gets a new one)."""

    @abstractmethod
    def change_feed_enabled(self, path: str) -> bool: ...

    @abstractmethod
    def enable_change_feed(self, path: str) -> None: ...

    @abstractmethod
    def read_changes(self, path: str, after_version: int, to_version: int) -> pa.Table:
        """Rows changed in versions (after_version, to_version], each with `_viewlet_sign`
        (+1 insert / post-image, -1 delete / pre-image)."""

    @abstractmethod
    def create(self, path: str, data: pa.Table, txn: Optional[Txn] = None,
               metadata: Optional[Dict[str, str]] = None,
               properties: Optional[Dict[str, str]] = None) -> None: ...

    @abstractmethod
    def append(self, path: str, data: pa.Table, txn: Optional[Txn] = None,
               metadata: Optional[Dict[str, str]] = None) -> None: ...

    @abstractmethod
    def append_once(self, path: str, data: pa.Table, txn: Txn,
                    metadata: Optional[Dict[str, str]] = None,
                    read_version: Optional[int] = None) -> bool:
        """Append unless the table already holds `txn` (then False). Of two concurrent
        writers of the same txn app id one commits and the other raises ConcurrentUpdate;
        `read_version` makes the write conflict with any such commit after that version."""

    @abstractmethod
    def overwrite(self, path: str, data: pa.Table, txn: Optional[Txn] = None,
                  metadata: Optional[Dict[str, str]] = None) -> None: ...

    @abstractmethod
    def merge_add(self, path: str, source: pa.Table, keys: Sequence[str],
                  values: Sequence[str], zero_column: str, txn: Optional[Txn] = None,
                  metadata: Optional[Dict[str, str]] = None) -> Dict:
        """Skipped when the table already holds `txn`; a concurrent commit of the same txn
        raises ConcurrentUpdate.
        Add source values to target rows with equal keys (NULL keys equal); insert new
        keys; delete rows whose `zero_column` becomes 0."""

    @abstractmethod
    def merge_replace(self, path: str, source: pa.Table, keys: Sequence[str],
                      op_column: str, txn: Optional[Txn] = None,
                      metadata: Optional[Dict[str, str]] = None) -> Dict:
        """Source rows with op 'del' delete every target row with their keys; rows with op
        'ins' are inserted (one MERGE, so the change commits atomically)."""

    @abstractmethod
    def delete_where_equal(self, path: str, column: str, value: str,
                           txn: Optional[Txn] = None) -> None: ...

    @abstractmethod
    def txn_version(self, path: str, app_id: str) -> Optional[int]: ...

    @abstractmethod
    def oldest_version(self, path: str) -> int:
        """The oldest version whose changes can still be read."""

    @abstractmethod
    def drop(self, path: str) -> None:
        """Delete a table Viewlet owns, files and log."""
