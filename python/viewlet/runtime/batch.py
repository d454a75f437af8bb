"""One batch: read the change feeds, run every trigger in Spark, MERGE each map once.

Triggers run relation by relation. A statement reads maps as of batch start plus the deltas
the earlier triggers of this batch produced (a union, no MERGE in between), and base tables
at the version matching its position: relations already processed at the batch's end
version, the others at its start. That is the sequential semantics of applying one
relation's changes after another, evaluated against batch-start snapshots, so a rerun of the
same batch computes the same deltas.
"""
from __future__ import annotations

import time
from typing import Callable, Dict, List, Optional, Set

import pyarrow as pa
from pyspark.sql import DataFrame

from ..calculus.ir import DeltaRel, Rel, walk_atoms
from ..compiler.program import VALUE, Program
from ..spark.io import arrow_frame, read_table, union_all
from ..spark.lower import MULT, AtomSource, SqlBuilder, lower_query, q
from .manifest import BatchRecord


def relation_columns(program: Program) -> Dict[str, List[str]]:
    """Base columns each relation contributes anywhere in the program."""
    cols: Dict[str, Set[str]] = {}
    for m in program.maps.values():
        for query in m.values.values():
            _collect(query, cols)
    for stmts in program.triggers.values():
        for s in stmts:
            _collect(s.rhs, cols)
    return {r: sorted(c) for r, c in cols.items()}


def _collect(query, cols):
    for a in walk_atoms(query):       # nested aggregates read base columns too
        if isinstance(a, (Rel, DeltaRel)):
            cols.setdefault(a.table, set()).update(a.columns)


class BatchSources(AtomSource):
    def __init__(self, view, record: Optional[BatchRecord]):
        self.view = view
        self.ctx = view.ctx
        self.record = record
        self.deltas: Dict[str, DataFrame] = {}
        self.pending: Dict[str, List[DataFrame]] = {}
        self.processed: Set[str] = set()
        self._frames: Dict = {}

    def position(self, processed: Set[str]):
        self.processed = set(processed)

    def delta(self, relation):
        return self.deltas[relation]

    def relation(self, relation):
        after, to = self.record.ranges[relation]
        version = to if relation in self.processed else after
        key = ("rel", relation, version)
        if key not in self._frames:
            self._frames[key] = read_table(self.ctx.spark, self.ctx.store, self.view.table_path(relation),
                                           version, self.view.columns_of(relation))
        return self._frames[key]

    def map(self, name):
        key = ("map", name)
        if key not in self._frames:
            self._frames[key] = read_table(self.ctx.spark, self.ctx.store, self.view.map_path(name),
                                           self.record.map_versions[name])
        pending = self.pending.get(name, [])
        view_key = ("map+pending", name, len(pending))
        if view_key not in self._frames:   # one object per state: SqlBuilder dedups by identity
            self._frames[view_key] = union_all([self._frames[key]] + pending)
        return self._frames[view_key]

    def map_value(self, name):
        return VALUE


def read_batch_changes(view, relation: str, after: int, to: int) -> pa.Table:
    """The relation's changes in (after, to], pre-aggregated on the columns the program
    uses: one row per distinct value with its net multiplicity (Hot Dog §6.1)."""
    changes = view.ctx.store.read_changes(view.table_path(relation), after, to)
    cols = view.columns_of(relation)
    if changes.num_rows == 0:
        return changes.select(cols).append_column(MULT, pa.array([], pa.int64()))
    grouped = changes.group_by(cols, use_threads=False).aggregate([("_viewlet_sign", "sum")]) \
        if cols else pa.table({"_viewlet_sign_sum": [sum(changes.column("_viewlet_sign").to_pylist())]})
    grouped = grouped.rename_columns(cols + [MULT])
    import pyarrow.compute as pc
    return grouped.filter(pc.not_equal(grouped.column(MULT), 0))


def run_triggers(view, record: BatchRecord, stats: Dict,
                 step: Callable[[str], None] = lambda text: None) -> Dict[str, DataFrame]:
    """Compute every map's total delta for the batch (lazy DataFrames over collected pieces).
    `step` reports progress."""
    spark = view.ctx.spark
    program: Program = view.compiled.program
    sources = BatchSources(view, record)
    changed = [r for r in program.relations() if record.ranges[r][1] > record.ranges[r][0]]
    rows_in = {}
    for rel in changed:
        after, to = record.ranges[rel]
        step(f"reading the changes of {rel} (versions {after + 1}..{to})")
        t0 = time.perf_counter()
        changes = read_batch_changes(view, rel, after, to)
        rows_in[rel] = changes.num_rows
        stats.setdefault("seconds", {})["read_changes"] = stats.get("seconds", {}).get("read_changes", 0) \
            + time.perf_counter() - t0
        if changes.num_rows:
            sources.deltas[rel] = arrow_frame(spark, changes)
    stats["delta_rows"] = rows_in

    processed: Set[str] = set()
    t0 = time.perf_counter()
    for rel in changed:
        if rel not in sources.deltas:
            processed.add(rel)
            continue
        sources.position(processed)
        pieces = {}
        for target in program.targets_for(rel):
            stmts = [s for s in program.statements_for(rel) if s.target == target]
            pieces[target] = _fused_delta(view, target, stmts, sources)
        # Only now: every statement of this trigger read the maps as they were before it.
        for target, piece in pieces.items():
            sources.pending.setdefault(target, []).append(piece)
        processed.add(rel)
    stats.setdefault("seconds", {})["triggers"] = time.perf_counter() - t0
    return sources.pending


def _fused_delta(view, target: str, stmts, sources: BatchSources) -> DataFrame:
    """All statements of one trigger that write the same map, fused into one delta."""
    spark = view.ctx.spark
    mschema = view.map_schema(target)
    keys = mschema.keys
    parts = []
    for s in stmts:
        sb = SqlBuilder()
        sql = lower_query(s.rhs, sources, sb, keys, s.column, aggregate=False)
        df = spark.sql(sql, **sb.params)
        cols = [f"{q(k)}" for k in keys] + [
            (q(c) if c == s.column else f"CAST(0 AS {t}) AS {q(c)}") for c, t in mschema.values.items()]
        parts.append(df.selectExpr(*cols))
    # Left lazy and unaggregated: Spark plans it into the batch's single job (and into later
    # triggers' reads, which are linear in the map, so duplicate keys are harmless).
    return union_all(parts)


def sum_by_keys(df: DataFrame, keys, values: Dict[str, str]) -> DataFrame:
    """Group by keys, sum each value column cast to its map type, drop all-zero rows."""
    sums = [f"CAST(COALESCE(SUM({q(c)}), 0) AS {t}) AS {q(c)}" for c, t in values.items()]
    expr_keys = ", ".join(q(k) for k in keys)
    nonzero = " OR ".join(f"{q(c)} <> 0" for c in values)
    sql = (f"SELECT {expr_keys + ', ' if keys else ''}{', '.join(sums)} FROM {{d}}"
           + (f" GROUP BY {expr_keys}" if keys else ""))
    return df.sparkSession.sql(f"SELECT * FROM ({sql}) WHERE {nonzero}", d=df)
