"""Maps hot in memory: each map a session keeps, as Arrow rows with sorted key indexes.

A map's value for a key is the sum of its rows with that key (maintain/maps.py), so a hot map
is its rows as of one Delta version: a base (what was loaded or last folded) plus the deltas
applied since (the tail), the same shape as the map's files on disk. A batch reads it whole
(zero-copy) or by key: a sorted index of one key column of the base (built on first use)
answers a lookup with binary searches, the tail is filtered. After a batch commits a map's
delta to Delta, the same delta is appended here and the hot map takes the new version; the
tail is folded into the base (summed by key, zero rows dropped; by DuckDB when the map has
the local engine) when it outgrows it.

Delta stays the durable log, and a hot map is only used for the exact Delta version it
holds: the batch's recorded map version (read from Delta at batch start) must equal it, so
another writer, another session's batch or a restart falls back to reading Delta. The cache
is bounded (`budget` bytes); whole maps are evicted least recently used first, and a map
larger than the budget is never loaded (its batches read Delta, as without the cache). A map
not yet held is loaded only when it fits beside the maps used in the last ACTIVE_SECONDS
(`admits`): views refreshed in turn whose maps do not fit together kept evicting each
other's maps, and every batch read its maps whole where reading its keys from Delta costs
a fraction of that. A map a batch used, once evicted to make room, is loaded again only
beside the maps used in the last EVICTED_SECONDS: views refreshed in turn less often than
every ACTIVE_SECONDS (five TPC-H views at SF 10, each batch minutes apart) otherwise still
evicted each other's maps every round. The maps held then stay held, and the others'
batches read their keys from Delta.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...storage.arrow import KeyLookups, is_in, merged_values, sum_by_key
from .executor import LocalEngine, duckdb_sum_by_key

#: the tail is folded into the base when it holds more rows than this and than the base
FOLD_MIN_ROWS = 100_000
#: a map a batch used this recently is not evicted for a map not yet held (HotMaps.admits)
ACTIVE_SECONDS = 60.0
#: the same for a map evicted before to make room for others: a cycle of views whose maps do
#: not fit together keeps the maps it holds, up to this long after their last use
EVICTED_SECONDS = 3600.0


class _Index:
    """One key column of the base, sorted: its non-NULL values as int64, their positions,
    and the positions of its NULLs."""

    def __init__(self, column: pa.ChunkedArray):
        order = pc.array_sort_indices(column, null_placement="at_end").to_numpy()
        valid = len(column) - column.null_count
        self.sorted = _as_int64(column.take(pa.array(order[:valid]))).to_numpy()
        self.order = order[:valid]
        self.nulls = order[valid:]
        self.nbytes = self.sorted.nbytes + order.nbytes

    def positions(self, values: np.ndarray, has_null: bool) -> np.ndarray:
        """The positions of the base's rows holding `values` (distinct: a lookup's), and of
        its NULLs when `has_null`."""
        # sorted: binary searches in order walk the index's memory in order (several times
        # faster than the same searches at random on a million values)
        probe = np.sort(values.astype(np.int64, copy=False))
        lo = np.searchsorted(self.sorted, probe, side="left")
        hi = np.searchsorted(self.sorted, probe, side="right")
        counts = hi - lo
        total = int(counts.sum())
        starts = np.repeat(lo, counts)
        offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
        found = self.order[starts + offsets]
        return np.concatenate([found, self.nulls]) if has_null else found


def _indexable(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_date32(t)


def _as_int64(column) -> pa.Array:
    if pa.types.is_date32(column.type):
        column = column.cast(pa.int32())
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    return column.cast(pa.int64())


ValueSets = Dict[str, Tuple[pa.Array, bool]]   # key column -> (its values, NULL looked up)


def value_sets(lookups: KeyLookups, schema: pa.Schema) -> ValueSets:
    """The looked-up values of each column as an array of the column's type, converted once
    per lookup; a column whose values do not convert exactly filters nothing."""
    out = {}
    for c, (values, has_null) in lookups.items():
        if c not in schema.names:
            continue
        typed = merged_values([values], schema.field(c).type)
        if typed is not None:
            out[c] = (typed, has_null)
    return out


def matching_mask(rows: pa.Table, sets: ValueSets):
    """Rows whose column c holds one of sets[c]'s values (or NULL when asked), for every c;
    None when no column filters."""
    mask = None
    for c, (values, has_null) in sets.items():
        test = is_in(rows.column(c), values, has_null)
        mask = test if mask is None else pc.and_(mask, test)
    return mask


class HotMap:
    """`engine`: the local engine that folds the tail into the base (None: Arrow folds)."""

    def __init__(self, path: str, version: int, rows: pa.Table, keys: Sequence[str],
                 values: Sequence[str], zero: Sequence[str],
                 engine: Optional[LocalEngine] = None):
        self.path, self.version, self.engine = path, version, engine
        self.keys, self.values, self.zero = list(keys), list(values), list(zero)
        self.schema = rows.schema
        self.base = rows.combine_chunks()
        self.tail: List[pa.Table] = []
        self._indexes: Dict[str, _Index] = {}
        self._lock = threading.Lock()
        # a map held only while the budget has room (a view's result state): evicted first
        self.spare = False
        self.used_at = 0.0           # when a batch last took it (HotMaps' clock)
        self.taken = False           # whether a batch took it since it was loaded
        # its bytes, measured when asked after a change: every batch's budget check sums
        # every hot map's, and measuring walks each table's chunks and buffers
        self._nbytes: Optional[int] = None

    @property
    def rows(self) -> int:
        return self.base.num_rows + sum(t.num_rows for t in self.tail)

    @property
    def nbytes(self) -> int:
        measured = self._nbytes
        if measured is None:
            with self._lock:
                measured = self._nbytes = self.base.nbytes + \
                    sum(t.nbytes for t in self.tail) + \
                    sum(i.nbytes for i in self._indexes.values())
        return measured

    def all_rows(self) -> pa.Table:
        with self._lock:
            return pa.concat_tables([self.base] + self.tail) if self.tail else self.base

    def lookup(self, lookups: KeyLookups) -> pa.Table:
        """The rows holding the looked-up values (a superset where a column cannot be
        compared exactly: callers join on the keys)."""
        sets = value_sets(lookups, self.schema)
        rest = sets               # what the base's rows are still filtered by
        with self._lock:
            base, tail = self.base, list(self.tail)
            column = next((c for c in sets if _indexable(self.schema.field(c).type)), None)
            if column is not None:
                index = self._indexes.get(column)
                if index is None:
                    index = self._indexes[column] = _Index(base.column(column))
                    self._nbytes = None
                values, has_null = sets[column]
                positions = index.positions(_as_int64(values).to_numpy(), has_null)
                positions.sort()               # keep the base's (clustered) order
                base = base.take(pa.array(positions))
                # the index found exactly the rows holding the column's values
                rest = {c: v for c, v in sets.items() if c != column}
        # the tail (the deltas applied since the last fold) filtered as one table
        parts = [(base, rest)] + ([(pa.concat_tables(tail), sets)] if tail else [])
        out = []
        for part, by in parts:
            mask = matching_mask(part, by)
            out.append(part if mask is None else part.filter(mask))
        return pa.concat_tables(out)

    def apply(self, delta: pa.Table, version: int):
        """The map after a batch committed `delta` as Delta `version`."""
        with self._lock:
            self.tail.append(delta.select(self.schema.names).cast(self.schema))
            self.version, self._nbytes = version, None
            tail_rows = sum(t.num_rows for t in self.tail)
            if tail_rows > max(FOLD_MIN_ROWS, self.base.num_rows):
                self._fold()

    def replace(self, rows: pa.Table, version: int):
        """The same content, rewritten (a compaction of the Delta map): take its rows."""
        with self._lock:
            self.base = rows.select(self.schema.names).cast(self.schema).combine_chunks()
            self.tail, self._indexes, self.version, self._nbytes = [], {}, version, None

    def _fold(self):
        data = pa.concat_tables([self.base] + self.tail)
        self.base = self._summed(data).combine_chunks()
        self.tail, self._indexes, self._nbytes = [], {}, None

    def _summed(self, data: pa.Table) -> pa.Table:
        """`data` summed by key, by DuckDB on every core when there is an engine: a fold runs
        on the batch's path after its commit, over millions of rows for a large map, where
        Arrow's group-by uses one core."""
        if self.engine is not None:
            try:
                return duckdb_sum_by_key(self.engine, data, self.keys, self.values, self.zero)
            except Exception:   # noqa: BLE001 - anything (even a cancel): Arrow's sum is the same
                pass
        return sum_by_key(data, self.keys, self.values, self.zero)


class HotMaps:
    """The hot maps of one Viewlet context, within `budget` bytes (least recently used
    maps are evicted whole)."""

    def __init__(self, budget: int, clock: Callable[[], float] = time.monotonic):
        self.budget = budget
        self._maps: "OrderedDict[str, HotMap]" = OrderedDict()
        self._lock = threading.Lock()
        self._clock = clock
        # paths evicted to make room for other maps (not reloaded since)
        self._evicted: Set[str] = set()
        # path -> the bytes its map took when last loaded (kept or not): a map's Parquet
        # files can be many times smaller than its rows in memory, and the guess made from
        # them let maps far over the budget be read whole every batch
        self._sizes: Dict[str, int] = {}

    def get(self, path: str, version: int) -> Optional[HotMap]:
        """The hot map of `path` if it holds exactly `version`."""
        with self._lock:
            hot = self._maps.get(path)
            if hot is None:
                return None
            if hot.version != version:
                del self._maps[path]            # stale: another writer, or a skipped batch
                return None
            self._maps.move_to_end(path)
            hot.used_at, hot.taken = self._clock(), True
            return hot

    def peek(self, path: str) -> Optional[HotMap]:
        with self._lock:
            return self._maps.get(path)

    def was_evicted(self, path: str) -> bool:
        """Whether `path` was evicted to make room for other maps and not loaded since."""
        with self._lock:
            return path in self._evicted

    def fits(self, nbytes: int) -> bool:
        return 0 < nbytes <= self.budget

    def admits(self, nbytes: int, paths: Sequence[str] = ()) -> bool:
        """Whether `nbytes` more (the maps at `paths`) may be loaded: they fit beside the maps
        (not spare) used in the last ACTIVE_SECONDS, or EVICTED_SECONDS when one of `paths`
        was evicted for room before; the others are evicted for them, spare ones first. The
        bytes the maps took when last loaded count where larger than the caller's guess."""
        with self._lock:
            now = self._clock()
            window = EVICTED_SECONDS if self._evicted.intersection(paths) else ACTIVE_SECONDS
            nbytes = self._at_least_measured(nbytes, paths)
            active = sum(h.nbytes for h in self._maps.values()
                         if not h.spare and now - h.used_at < window)
        return 0 < nbytes and active + nbytes <= self.budget

    def room(self, nbytes: int, paths: Sequence[str] = ()) -> bool:
        """Whether `nbytes` more (the maps at `paths`) fit beside the maps held now, without
        evicting any; as in `admits`, the bytes they took when last loaded count."""
        with self._lock:
            nbytes = self._at_least_measured(nbytes, paths)
        return 0 < nbytes and self.used() + nbytes <= self.budget

    def _at_least_measured(self, nbytes: int, paths: Sequence[str]) -> int:
        """`nbytes`, or the bytes the maps at `paths` took when last loaded where more
        (called holding the lock)."""
        return max(nbytes, sum(self._sizes.get(p, 0) for p in paths))

    def put(self, hot: HotMap) -> bool:
        """Keep `hot` (evicting others as needed); False when it alone exceeds the budget."""
        with self._lock:
            self._sizes[hot.path] = hot.nbytes
        if not self.fits(hot.nbytes):
            self.evict(hot.path)
            return False
        with self._lock:
            hot.used_at = self._clock()
            self._maps[hot.path] = hot
            self._evicted.discard(hot.path)
            self._maps.move_to_end(hot.path)
            self._shrink(keep=hot.path)
        return True

    def touched(self, path: str):
        """A hot map grew (a batch's delta, an index): evict others if over budget."""
        with self._lock:
            self._shrink(keep=path)
            hot = self._maps.get(path)
            if hot is not None and hot.nbytes > self.budget:
                del self._maps[path]

    def _shrink(self, keep: str):
        total = sum(h.nbytes for h in self._maps.values())
        # spare maps first, then the least recently used
        for path in sorted(self._maps, key=lambda p: not self._maps[p].spare):
            if total <= self.budget:
                break
            if path != keep:
                evicted = self._maps.pop(path)
                total -= evicted.nbytes
                if evicted.taken:      # not a map CREATE left that no batch has used yet
                    self._evicted.add(path)

    def evict(self, path: str):
        with self._lock:
            self._maps.pop(path, None)

    def evict_prefix(self, prefix: str):
        with self._lock:
            for path in [p for p in self._maps if p.startswith(prefix)]:
                del self._maps[path]
            self._evicted = {p for p in self._evicted if not p.startswith(prefix)}
            self._sizes = {p: n for p, n in self._sizes.items() if not p.startswith(prefix)}

    def used(self) -> int:
        with self._lock:
            return sum(h.nbytes for h in self._maps.values())
