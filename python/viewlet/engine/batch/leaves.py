"""Binding a batch plan's leaves to data, for each target.

A leaf is a relation's changes (the batch, pre-aggregated on the driver), a relation at the
batch's start or end version, a map read whole, or a map read by lookup: only the rows
holding the batch's key values, read on the driver once per batch (the batch's keys are
spread over most files of a large map, so file skipping alone would leave most of the map
to scan, once per reference). `LeafReader.arrow` hands the local target (and a Spark
batch's phases run in the driver) Arrow tables, `SparkLeaves` the Spark target DataFrames
(staged as Parquet files), `FrameLeaves` the distributed target DataFrames read by the
executors.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import pyarrow as pa

from ...plan.batch import Leaf
from ...plan.local import types as T
from ...plan.lower import MULT, MapOrigin
from ...storage.arrow import KeyLookups, distinct_values, merged_values
from ...storage.base import Snapshot
from ..local.executor import available_engine
from ..spark.io import read_table, snapshot_frame, spark_schema
from ..state.keyed import matching_rows
from ..state.manifest import BatchRecord
from ..state.maps import hot_map
from ..state.stats import MapRead, snapshot_rows

#: a lookup keeping more than this share of the rows in the files it read binds those files
#: (Spark reads them) instead of staging the rows kept
KEEP_FILES_ABOVE = 0.5


class LeafReader:
    """What the local and Spark targets read for one batch; per map read, statistics for
    the manifest. Maps hot in memory at the batch's start version (local/hotmaps.py) are
    read from memory; `load`: maps not yet hot are loaded whole when they fit the cache."""

    load = False

    def __init__(self, view, record: BatchRecord, deltas: Dict[str, pa.Table],
                 looked_up: Optional["LeafReader"] = None):
        """`looked_up`: a reader of the same batch whose lookups this one keeps (the policy
        counts what a batch's lookups keep before it picks the target)."""
        self.view, self.record, self.deltas = view, record, deltas
        self.pending: Dict[Tuple[str, str], pa.Table] = {}   # (map, trigger) -> its delta
        self.reads: List[MapRead] = []            # what each map read cost
        self.matched: Dict[Leaf, pa.Table] = {}   # map leaf read by lookup -> its rows
        self.restricted: Dict[Leaf, object] = {}  # ... -> the files they were read from
        self.read_of: Dict[Leaf, MapRead] = {}    # ... -> its entry in `reads`
        if looked_up is not None:
            self.reads = list(looked_up.reads)
            self.matched, self.restricted = dict(looked_up.matched), dict(looked_up.restricted)
            self.read_of = dict(looked_up.read_of)

    def pending_rows(self, leaf: Leaf) -> pa.Table:
        empty = self.view.map_arrow_schema(leaf.name).empty_table()
        return self.pending.get((leaf.name, leaf.detail[0]), empty)

    def hot(self, name: str):
        """(map `name` hot in memory at the batch's start version or None, where its rows
        come from: "memory", or "delta" when this batch loads it)."""
        version = self.record.map_versions[name]
        hot = hot_map(self.view, name, version)
        if hot is not None:
            return hot, "memory"
        return hot_map(self.view, name, version, self.load), "delta"

    def whole_map(self, name: str):
        """The map's snapshot at batch start (read whole), recorded as a read."""
        ctx = self.view.ctx
        whole = ctx.store.snapshot(self.view.map_path(name), self.record.map_versions[name])
        rows = _rows(whole)
        self.reads.append(MapRead(name, len(whole.files), len(whole.files), rows, rows, rows,
                                  "delta"))
        return whole

    def map_rows(self, name: str) -> pa.Table:
        """Every row of the map at batch start, from memory or from Delta."""
        hot, source = self.hot(name)
        if hot is None:
            return self.view.ctx.store.read_files(self.whole_map(name))
        rows = hot.all_rows()
        self.reads.append(MapRead(name, 0, None, rows.num_rows, rows.num_rows, rows.num_rows,
                                  source))
        return rows

    def matching(self, leaf: Leaf) -> pa.Table:
        """A map's rows holding the looked-up keys (exactly those, or a superset where a
        key column cannot be compared exactly)."""
        if leaf not in self.matched:
            view, store = self.view, self.view.ctx.store
            lookups = self.lookup_values(leaf.detail, view.map_schema(leaf.name).keys,
                                         view.map_arrow_schema(leaf.name))
            hot, source = self.hot(leaf.name)
            if hot is not None:
                rows = hot.lookup(lookups)
                self.read_of[leaf] = MapRead(leaf.name, 0, None, rows.num_rows, hot.rows,
                                             rows.num_rows, source)
            else:
                whole = store.snapshot(view.map_path(leaf.name), self.record.map_versions[leaf.name])
                snap = self.restricted[leaf] = whole.restricted(lookups)
                rows = matching_rows(store, snap, lookups, available_engine(view.ctx))
                self.read_of[leaf] = MapRead(leaf.name, len(snap.files), len(whole.files),
                                             _rows(snap), _rows(whole), rows.num_rows, "delta")
            self.reads.append(self.read_of[leaf])
            self.matched[leaf] = rows
        return self.matched[leaf]

    def lookup_values(self, lookups, keys, schema: pa.Schema) -> KeyLookups:
        """The batch's values of each looked-up key column of a map (`schema`): the
        distinct values of every origin, as the key column's type; a column whose values do
        not convert to it exactly is not looked up by (the rows read are a superset)."""
        out = {}
        for j, origins in lookups:
            parts, has_null = [], False
            for rel, col in origins:
                if isinstance(rel, MapOrigin):
                    table = self.matching(Leaf("map", rel.name, rel.lookups))
                else:
                    table = self.deltas.get(rel)
                if table is None:
                    continue
                column = table.column(col)
                has_null = has_null or column.null_count > 0
                parts.append(distinct_values(column))
            values = merged_values(parts, schema.field(keys[j]).type)
            if values is not None:
                out[keys[j]] = (values, has_null)
        return out

    def arrow(self, leaf: Leaf) -> pa.Table:
        """The leaf's rows in the driver, as the local target binds them: typed as the plan
        expects them."""
        view, ctx = self.view, self.view.ctx
        if leaf.kind == "pending":
            return self.pending_rows(leaf)
        if leaf.kind in ("delta", "rel"):
            if leaf.kind == "delta":
                rows = self.deltas[leaf.name]
            else:
                rows = ctx.store.read_columns(view.table_path(leaf.name),
                                              relation_version(self.record, leaf),
                                              view.columns_of(leaf.name))
            return typed_rows(view, leaf, rows)
        schema = view.map_arrow_schema(leaf.name)
        rows = self.matching(leaf) if leaf.detail else self.map_rows(leaf.name)
        return rows.select(schema.names).cast(schema)

    def rows_in_driver(self, leaf: Leaf) -> int:
        """The rows `arrow(leaf)` gives, counted without reading them (a lookup is read: its
        rows are what it keeps)."""
        view, store = self.view, self.view.ctx.store
        if leaf.kind == "pending":
            return self.pending_rows(leaf).num_rows
        if leaf.kind == "delta":
            return self.deltas[leaf.name].num_rows
        if leaf.kind == "rel":
            return snapshot_rows(store.snapshot(view.table_path(leaf.name),
                                                relation_version(self.record, leaf)))
        if leaf.detail:
            return self.matching(leaf).num_rows
        version = self.record.map_versions[leaf.name]
        hot = hot_map(view, leaf.name, version)        # counted, never loaded here
        if hot is not None:
            return hot.rows
        return snapshot_rows(store.snapshot(view.map_path(leaf.name), version))


class SparkLeaves(LeafReader):
    """Leaves as DataFrames; the batch's own rows staged as Parquet files in `scratch`."""

    def __init__(self, view, record, deltas, scratch: str, spark,
                 looked_up: Optional[LeafReader] = None):
        super().__init__(view, record, deltas, looked_up)
        self.scratch, self.spark = scratch, spark       # the session the batch query runs in
        self.files = 0

    def bind(self, leaf: Leaf):
        """The leaf as a DataFrame: rows the driver holds staged as a Parquet file (not a
        LocalRelation: Spark's optimizer would evaluate every projection and filter over a
        LocalRelation row by row, interpreted (ConvertToLocalRelation), which cost more than
        running the batch), the others read by Spark from their files."""
        rows = self.held(leaf)
        return self._file(rows) if rows is not None else self.read(leaf)

    def held(self, leaf: Leaf) -> Optional[pa.Table]:
        """The leaf's rows when the driver holds them: the batch's changes, what earlier
        phases computed, a map's rows read by lookup; None when Spark reads the leaf's
        files (`read`)."""
        if leaf.kind == "delta":
            return self.deltas[leaf.name]
        if leaf.kind == "pending":
            return self.pending_rows(leaf)
        if leaf.kind == "rel" or not leaf.detail:
            return None
        rows = self.matching(leaf)
        snap = self.restricted.get(leaf)
        if snap is not None and rows.num_rows > KEEP_FILES_ABOVE * snapshot_rows(snap):
            # The batch touches most keys of the files read: Spark reads those files
            # rather than a staged copy of most of them.
            return None
        schema = self.view.map_schema(leaf.name)
        return rows.select(schema.keys + list(schema.values))

    def read(self, leaf: Leaf):
        """A leaf the driver does not hold (`held` is None), as Spark reads its files."""
        snap, columns = self.files_of(leaf)
        return snapshot_frame(self.spark, snap, columns)

    def files_of(self, leaf: Leaf) -> Tuple[Snapshot, List[str]]:
        """The snapshot whose files hold a leaf the driver does not hold, and the columns the
        plan reads of it (recorded as the batch's map reads)."""
        view, ctx = self.view, self.view.ctx
        if leaf.kind == "rel":
            return (ctx.store.snapshot(view.table_path(leaf.name),
                                       relation_version(self.record, leaf)),
                    view.columns_of(leaf.name))
        schema = view.map_schema(leaf.name)
        columns = schema.keys + list(schema.values)
        if not leaf.detail:
            return self.whole_map(leaf.name), columns
        snap = self.restricted[leaf]
        self.read_of[leaf].rows_kept = _rows(snap)
        return snap, columns

    def _file(self, data: pa.Table):
        """`data` as a DataFrame over a Parquet file in the attempt's scratch directory."""
        self.files += 1
        location = self.view.ctx.store.write_file(f"{self.scratch}/in{self.files}.parquet", data)
        return self.spark.read.schema(spark_schema(data.schema)).parquet(location)


class ArrowLeaves(LeafReader):
    """Leaves as Arrow tables for the local target (`LeafReader.arrow`), which also loads a
    map not yet hot whole when it fits the cache."""

    load = True


def relation_version(record: BatchRecord, leaf: Leaf) -> int:
    """The version of a relation leaf: the table at the batch's end (`leaf.detail[0]`) or at
    its start."""
    after, to = record.ranges[leaf.name]
    return to if leaf.detail[0] else after


def _rows(snap) -> Optional[int]:
    return sum(s.rows or 0 for s in snap.stats) if snap.stats is not None else None


class FrameLeaves:
    """Leaves as DataFrames for a distributed batch (batch/distributed.py): the batch's
    changes as staged by the executors, relations at a version and maps read from their
    Delta files. A map read by lookup is bound to the whole map: the plan joins it with
    the batch's keys anyway (a lookup's rows are the ones the join keeps), on the
    executors, where the driver-side lookup would have to bring the keys and rows to the
    driver."""

    def __init__(self, view, record: BatchRecord, deltas: Dict[str, object], spark):
        self.view, self.record, self.deltas, self.spark = view, record, deltas, spark
        self.pending: Dict[Tuple[str, str], object] = {}   # (map, trigger) -> its delta
        self.reads: List[MapRead] = []
        self._maps: Dict[str, object] = {}

    def bind(self, leaf: Leaf):
        view, ctx = self.view, self.view.ctx
        if leaf.kind == "delta":
            return self.deltas[leaf.name]
        if leaf.kind == "pending":
            found = self.pending.get((leaf.name, leaf.detail[0]))
            return found if found is not None else \
                self.spark.createDataFrame([], view.map_schema(leaf.name).struct())
        if leaf.kind == "rel":
            return read_table(self.spark, ctx.store, view.table_path(leaf.name),
                              relation_version(self.record, leaf), view.columns_of(leaf.name))
        if leaf.name not in self._maps:
            schema = view.map_schema(leaf.name)
            snap = ctx.store.snapshot(view.map_path(leaf.name), self.record.map_versions[leaf.name])
            rows = _rows(snap)
            self.reads.append(MapRead(leaf.name, len(snap.files), len(snap.files), rows, rows,
                                      rows, "delta"))
            self._maps[leaf.name] = snapshot_frame(self.spark, snap,
                                                   schema.keys + list(schema.values))
        return self._maps[leaf.name]


def typed_columns(table, names) -> List:
    """The columns `names` of a base table (TableInfo) with their Spark types, as the
    local typer reads them (names matched case-insensitively, as Spark does)."""
    types = {c.name.lower(): c.type for c in table.columns}
    return [(n, T.parse(types[n.lower()])) for n in names]


def typed_rows(view, leaf: Leaf, rows: pa.Table) -> pa.Table:
    """A leaf's rows in the column types the plan was typed with (Spark's view of them)."""
    schema = pa.schema([(c, t.arrow()) for c, t in leaf_columns(view, leaf)])
    if not schema.names:      # no column read (COUNT(*) of a cross join): DuckDB needs one,
        # the plan reads none
        return pa.table({"__viewlet_unit": pa.nulls(rows.num_rows, pa.int32())})
    return rows.select(schema.names).cast(schema)


def leaf_columns(view, leaf: Leaf) -> List:
    """The Spark-typed columns of a leaf, as the plan reads them."""
    if leaf.kind in ("delta", "rel"):
        cols = typed_columns(view.compiled.spec.tables[leaf.name], view.columns_of(leaf.name))
        return cols + ([(MULT, T.BIGINT)] if leaf.kind == "delta" else [])
    schema = view.map_schema(leaf.name)
    return [(k, T.parse(t)) for k, t in zip(schema.keys, schema.key_types)] + \
        [(c, T.parse(t)) for c, t in schema.values.items()]
