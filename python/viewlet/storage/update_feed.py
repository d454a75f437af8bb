"""Change rows of UPDATE commits written by delta-rs, read from the files they replaced.

delta-rs (seen in 1.6.6) writes the change data of an UPDATE as a *set* difference of the
pre- and post-images: on a table with duplicate rows, rows whose new value equals another
updated row's old value vanish from the feed, both images. The data files such a commit adds
and removes are right, so for these commits the change is read from them instead: every row
of a removed file is a deletion, every row of an added file an insertion. Rows the update
copied unchanged appear once with each sign; they cancel when a batch is netted per row
(engine/batch/changes.py pre-aggregates every batch), so the result is the exact multiset change.

Commits by other writers (delta-spark, Databricks) and delta-rs DELETE/MERGE commits keep
their change data files, which are correct.
"""
from __future__ import annotations

import json
from typing import Callable, Dict, List, Optional, Sequence
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from ..errors import ChangeFeedError
from .base import ChangeFile

SIGN_COLUMN = "_viewlet_sign"


class CommitLog:
    """Reads single commit files of a table's _delta_log.

    By hand because deltalake 1.6.6 has no API for one commit's actions: get_add_actions
    gives a version's files (not what a commit added or removed, nor its cdc files and
    deletion vectors), load_cdf gives rows, history() gives commitInfo only (no txn actions,
    no action count). A commit whose file the log cleanup removed reads as None, whatever
    checkpoints hold.

    `filesystem` is a pyarrow filesystem rooted at the table that carries the store's
    credentials (storage/deltars.py `_filesystem`, for object stores); None reads a table on
    the local file system."""

    def __init__(self, table_uri: str, filesystem: Optional[pafs.FileSystem] = None):
        self.table_uri = table_uri.rstrip("/")
        if filesystem is None:
            self.fs, root = pafs.FileSystem.from_uri(table_uri)
            self.root = root.rstrip("/")
        else:
            self.fs, self.root = filesystem, ""

    def uri_of(self, action_path: str) -> str:
        """An action's file as an absolute location (what Spark reads)."""
        path = unquote(action_path)
        if "://" in path or path.startswith("/"):
            return path
        return f"{self.table_uri}/{path}"

    def _path(self, relative: str) -> str:
        return f"{self.root}/{relative}" if self.root else relative

    def actions(self, version: int) -> Optional[List[Dict]]:
        """The actions of one commit, or None when its log file is gone (cleaned up)."""
        try:
            with self.fs.open_input_stream(self._path(f"_delta_log/{version:020d}.json")) as f:
                text = f.read().decode("utf-8")
        except (FileNotFoundError, OSError):
            return None
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def read_file(self, rel_path: str, schema: pa.Schema, partition_values: Dict[str, str],
                  columns: Sequence[str]) -> pa.Table:
        path = unquote(rel_path)
        if path.startswith(self.table_uri + "/"):     # an absolute path inside the table
            path = path[len(self.table_uri) + 1:]
        if "://" in path or path.startswith("/"):     # a file outside the table (clones)
            fs, full = pafs.FileSystem.from_uri(path if "://" in path else f"file://{path}")
        else:
            fs, full = self.fs, self._path(path)
        stored = [c for c in columns if c not in partition_values]
        table = pq.read_table(full, columns=stored, filesystem=fs)
        out = table.select([])          # no columns asked for: still the file's row count
        for c in columns:
            field = schema.field(c)
            if c in partition_values:
                raw = partition_values[c]
                value = pa.array([raw] * table.num_rows, pa.string())
                value = value.cast(field.type) if raw is not None \
                    else pa.nulls(table.num_rows, field.type)
            else:
                value = table.column(c).cast(field.type)
            out = out.append_column(field, value)
        return out


def is_unreliable_update(actions: List[Dict]) -> bool:
    """An UPDATE committed by delta-rs: its change data files cannot be trusted."""
    info = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
    writer = str(info.get("engineInfo") or info.get("clientVersion") or "")
    return info.get("operation") == "UPDATE" and writer.startswith("delta-rs")


def changes_deletion_vectors(actions: List[Dict]) -> bool:
    """A commit without change data files whose change is in deletion vectors (delta-spark's
    DELETE with deletion vectors on): delta-rs 1.6.6 reads its change wrong when a file's
    vector grows again (rows an earlier commit deleted are reported deleted once more), so
    the change is read from the files and their vectors before and after instead."""
    if any("cdc" in a for a in actions):
        return False
    return any((a.get("add") or a.get("remove") or {}).get("deletionVector")
               for a in actions if "add" in a or "remove" in a)


#: row indexes deleted by deletion vectors: (kind 'add' | 'remove', file name) -> indexes
Deleted = Callable[[str, str], Sequence[int]]


def rows_from_files(log: CommitLog, path: str, version: int, actions: List[Dict],
                    schema: pa.Schema, deleted: Optional[Deleted] = None) -> pa.Table:
    """The commit's change as signed rows: removed files -1, added files +1; with
    `deleted`, the rows each action's deletion vector deletes are not in its file's rows."""
    columns = schema.names
    parts = []
    for action in actions:
        kind = "remove" if "remove" in action else "add" if "add" in action else None
        if kind is None or not action[kind].get("dataChange", True):
            continue
        a = action[kind]
        try:
            rows = log.read_file(a["path"], schema, a.get("partitionValues") or {}, columns)
        except (FileNotFoundError, OSError) as e:
            raise ChangeFeedError(
                f"Cannot read the change of version {version} of {path}: the data file "
                f"{a['path']} is gone ({e}); the table's history was vacuumed past the view's "
                "watermark. REFRESH INCREMENTAL VIEW <name> FULL rebuilds the view from the "
                "current data.") from None
        if deleted is not None:
            rows = without_rows(rows, deleted(kind, unquote(a["path"]).rsplit("/", 1)[-1]))
        sign = -1 if kind == "remove" else 1
        parts.append(rows.append_column(SIGN_COLUMN, pa.array([sign] * rows.num_rows, pa.int64())))
    if not parts:
        return pa.Table.from_arrays([pa.array([], f.type) for f in schema] + [pa.array([], pa.int64())],
                                    names=columns + [SIGN_COLUMN])
    return pa.concat_tables(parts)


def without_rows(table: pa.Table, deleted: Sequence[int]) -> pa.Table:
    """The table without the rows at these indexes."""
    if not len(deleted):
        return table
    import numpy as np
    keep = np.ones(table.num_rows, dtype=bool)
    keep[np.asarray(deleted, dtype=np.int64)] = False
    return table.filter(pa.array(keep))


def change_files(log: CommitLog, version: int, actions: List[Dict], trust_cdc: bool,
                 deleted: Optional[Deleted] = None) -> List[ChangeFile]:
    """The files holding one commit's change (ChangeFile), read by Spark's executors: its
    change data files when it has them and they can be trusted (`trust_cdc`, and not a
    delta-rs UPDATE), else the files it removed and added; `deleted` gives the rows their
    deletion vectors delete (needed when the commit changes deletion vectors)."""
    data = [a for a in actions if "add" in a or "remove" in a]
    cdc = [a["cdc"] for a in actions if "cdc" in a]
    if cdc and trust_cdc and not is_unreliable_update(actions):
        return [ChangeFile(log.uri_of(c["path"]), "cdc", c.get("partitionValues") or {},
                           rows=records(c)) for c in cdc]
    out = []
    for action in data:
        kind = "remove" if "remove" in action else "add"
        a = action[kind]
        if not a.get("dataChange", True):
            continue
        name = unquote(a["path"]).rsplit("/", 1)[-1]
        gone = tuple(deleted(kind, name)) if deleted is not None else ()
        out.append(ChangeFile(log.uri_of(a["path"]), kind, a.get("partitionValues") or {},
                              gone, records(a)))
    return out


def records(action: Dict) -> Optional[int]:
    """The row count an action's statistics give, or None."""
    try:
        return int(json.loads(action.get("stats") or "{}").get("numRecords"))
    except (TypeError, ValueError):
        return None
