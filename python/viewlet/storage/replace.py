"""Replacing the rows of some keys in a Delta table by rewriting the files that hold them.

`TableStore.merge_replace` deletes the rows whose keys a source marks 'del' and inserts its
'ins' rows. delta-rs's MERGE does that copy-on-write too (it writes no deletion vectors), so
doing it here changes no file layout: the files holding a deleted key are read, their other
rows and the inserted ones written as new files, and one commit removes the old files and
adds the new. What it saves is the MERGE's query planning and its join over the whole
table (integration/bench/RESULTS.md: Q1's and Q6's result writes took half the time or
less).

Keys match as a GROUP BY groups them: NULL equals NULL. Tables this does not handle
(partitioned, the change data feed on, writer features beyond the plain ones, key types
Arrow cannot compare exactly) are left to the MERGE (`plain_table` is false, or
`rewrite_for` returns None)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import List, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .arrow import key_lookups
from .base import Snapshot

#: writer features a copy-on-write commit keeps intact (it adds and removes plain files)
PLAIN_WRITER_FEATURES = frozenset({"timestampNtz", "changeDataFeed", "deletionVectors",
                                   "invariants", "v2Checkpoint", "vacuumProtocolCheck"})

#: rows per file a rewrite writes (a MERGE of delta-rs writes a batch's rows as one file)
REWRITE_ROWS_PER_FILE = 1_000_000

_INDEX = "__viewlet_row"


@dataclass(frozen=True)
class Rewrite:
    """What replacing the keys takes: the files to remove (as the snapshot names them) and
    the rows to write in their place (their rows of other keys, then the inserted rows)."""
    removed: List[str]
    rows: pa.Table


def rewrite_for(read_files, snap: Snapshot, deleted: pa.Table, inserted: pa.Table,
                keys: Sequence[str]) -> Optional[Rewrite]:
    """The files of `snap` holding a row whose `keys` equal a row of `deleted` (without keys:
    every file), and their other rows plus `inserted` (cast to the table's schema); None
    when a key cannot be matched exactly or the inserted rows do not fit the schema.
    `read_files(snapshot)` reads a snapshot's rows (deletion vectors applied)."""
    schema = snap.schema
    if any(k not in schema.names or not _matchable(schema.field(k).type) for k in keys):
        return None
    if sorted(inserted.column_names) != sorted(schema.names):
        return None                  # the MERGE says what a column too many or too few means
    try:
        inserted = inserted.select(schema.names).cast(schema)
    except (KeyError, pa.ArrowException, ValueError):
        return None
    removed, kept = [], []
    if deleted.num_rows and not keys:          # a global aggregate's one row: every file
        removed = list(snap.files)
    elif deleted.num_rows:
        candidates = snap.restricted(key_lookups(deleted, keys))
        for i, f in enumerate(candidates.files):
            one = replace(candidates, files=(f,), stats=None if candidates.stats is None
                          else (candidates.stats[i],))
            rows = read_files(one)
            hit = matching(rows, deleted, keys)
            if hit is None:
                return None
            if pc.any(hit).as_py():
                removed.append(f)
                kept.append(rows.filter(pc.invert(hit)).cast(schema))
    return Rewrite(removed, pa.concat_tables(kept + [inserted]))


def plain_table(snap: Snapshot, writer_features, change_feed: bool) -> bool:
    """Whether a copy-on-write commit may replace rows of this table: unpartitioned, the
    change data feed off (a rewrite writes no change data files) and no writer feature that
    asks more of a commit than adding and removing files."""
    return not snap.partition_columns and not change_feed and \
        set(writer_features or ()) <= PLAIN_WRITER_FEATURES


def matching(rows: pa.Table, keys_table: pa.Table, keys: Sequence[str]) -> Optional[pa.Array]:
    """Per row of `rows`, whether its `keys` equal those of a row of `keys_table`, NULL
    equal to NULL; None when a key's type cannot be compared exactly (floating point: NaN,
    nested types)."""
    left, right = [], []
    for k in keys:
        column = rows.column(k)
        if not _matchable(column.type):
            return None
        filled = _filler(column.type)
        try:
            other = keys_table.column(k).cast(column.type)
        except (pa.ArrowException, ValueError):
            return None
        left += [pc.fill_null(column, filled), pc.is_null(column)]
        right += [pc.fill_null(other, filled), pc.is_null(other)]
    names = [f"k{i}" for i in range(len(left))]
    probe = pa.table(left + [pa.array(np.arange(rows.num_rows))], names=names + [_INDEX])
    build = pa.table(right, names=names)
    found = probe.join(build, keys=names, join_type="left semi").column(_INDEX)
    mask = np.zeros(rows.num_rows, dtype=bool)
    mask[found.to_numpy()] = True
    return pa.array(mask)


def _matchable(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
            or pa.types.is_binary(t) or pa.types.is_date(t) or pa.types.is_timestamp(t)
            or pa.types.is_decimal(t) or pa.types.is_boolean(t))


def _filler(t: pa.DataType) -> pa.Scalar:
    """A value of type t to stand in for NULL (the null flag beside it tells them apart)."""
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.scalar("", t)
    if pa.types.is_binary(t):
        return pa.scalar(b"", t)
    if pa.types.is_boolean(t):
        return pa.scalar(False)
    if pa.types.is_decimal(t):
        return pa.scalar(Decimal(0), t)
    return pa.scalar(0, t)          # integers, dates and timestamps: 0, the epoch
