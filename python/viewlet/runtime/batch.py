"""One batch: read the change feeds, compute every map's delta with one Spark query.

Triggers run relation by relation. A statement reads maps as of batch start plus the deltas
the earlier triggers of this batch produced (a union, no MERGE in between), and base tables
at the version matching its position: relations already processed at the batch's end
version, the others at its start. That is the sequential semantics of applying one
relation's changes after another, evaluated against batch-start snapshots, so a rerun of the
same batch computes the same deltas.

The whole batch is one SQL text (`BatchPlan`), built once per view and set of changed
relations and cached: its FROM items are symbolic leaves (a relation's changes, a relation
at its start or end version, a map read by lookup or whole) that each batch binds to
DataFrames. Statements of a trigger whose monomials join the same atoms are fused into one
block (one SELECT computing every value column, conditions that differ become CASE WHEN),
each block is aggregated on its keys, and all blocks are collected in one packed result
that the driver splits into map deltas (several, for phases too big for Catalyst to plan as
one query).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from ..calculus.ir import DeltaRel, Rel, walk_atoms
from ..compiler.program import Program
from ..spark.lower import (MULT, AtomSource, Lookups, MapOrigin, Select, Sql, SqlBuilder, freeze_lookups,
                           monomial_select, q)
from .keyed import read_matching
from .manifest import BatchRecord

TAG = "__viewlet_part"


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


def read_batch_changes(view, relation: str, after: int, to: int) -> pa.Table:
    """The relation's changes in (after, to], pre-aggregated on the columns the program
    uses: one row per distinct value with its net multiplicity (Hot Dog §6.1)."""
    store = view.ctx.store
    # an upstream incremental view: its result table's changes from its data files
    read = store.read_file_changes if view.compiled.spec.tables[relation].view else store.read_changes
    changes = read(view.table_path(relation), after, to)
    cols = view.columns_of(relation)
    if changes.num_rows == 0:
        return changes.select(cols).append_column(MULT, pa.array([], pa.int64()))
    grouped = changes.group_by(cols, use_threads=False).aggregate([("_viewlet_sign", "sum")]) \
        if cols else pa.table({"_viewlet_sign_sum": [sum(changes.column("_viewlet_sign").to_pylist())]})
    grouped = grouped.rename_columns(cols + [MULT])
    return grouped.filter(pc.not_equal(grouped.column(MULT), 0))


# -- the batch plan ------------------------------------------------------------------------
@dataclass(frozen=True)
class Leaf:
    """A FROM item a batch binds: ("delta", rel), ("rel", rel, processed) or
    ("map", name, lookups)."""
    kind: str
    name: str
    detail: tuple = ()


@dataclass
class Member:
    """One monomial of a block: its output column writes `column` of map `target`."""
    target: str
    column: str
    out: str              # packed output column (the member's aggregated value)
    keys: List[str]       # the block key columns of the target's keys, in key order


@dataclass
class Block:
    tag: int
    keys: List[Tuple[str, str]]             # (block key column, Spark type)
    members: List[Member]
    types: Dict[str, str] = field(default_factory=dict)   # output column -> Spark type


@dataclass
class Phase:
    """One Spark query of a batch: the blocks of one or more triggers, packed."""
    text: str
    leaves: Dict[str, Leaf]
    blocks: List[Block]
    relations: List[str]               # the triggers it runs

    def columns(self) -> List[Tuple[str, str]]:
        out = []
        for b in self.blocks:
            out += [(k, t) for k, t in b.keys] + [(m.out, b.types[m.out]) for m in b.members]
        return out


@dataclass
class BatchPlan:
    phases: List[Phase]
    targets: List[str]


class _PlanSource(AtomSource):
    """Symbolic atoms: leaves for the batch to bind, and maps as leaf + the deltas of the
    earlier triggers: block rows of the same phase, or ("pending", map, (relation,))
    leaves holding what an earlier phase collected."""

    def __init__(self, view, sb: SqlBuilder, processed: Set[str], pending: Dict[str, List[object]],
                 refs: Dict[str, int]):
        self.view, self.sb = view, sb
        self.processed = set(processed)
        self.pending = {k: list(v) for k, v in pending.items()}
        self.refs = refs

    def delta(self, relation):
        return Leaf("delta", relation)

    def relation(self, relation):
        return Leaf("rel", relation, (relation in self.processed,))

    def map(self, name, lookups: Optional[Lookups] = None):
        leaf = Leaf("map", name, freeze_lookups(lookups))
        pieces = self.pending.get(name)
        if not pieces:
            return leaf
        schema = self.view.map_schema(name)
        cols = ", ".join(q(c) for c in schema.keys + list(schema.values))
        parts = [f"SELECT {cols} FROM {self.sb.frame(leaf)}"]
        for rel, piece in pieces:
            self.refs[rel] = self.refs.get(rel, 0) + 1
            parts.append(piece if isinstance(piece, str) else f"SELECT {cols} FROM {self.sb.frame(piece)}")
        return Sql(" UNION ALL ".join(parts))

    def snapshot_only(self, name):
        return not self.pending.get(name)


#: a trigger whose deltas later triggers read more often than this is collected first
#: (one more Spark job) instead of being recomputed inside every later read
MAX_PENDING_READS = 2


def build_plan(view, changed: Sequence[str], active: Sequence[str]) -> BatchPlan:
    """The batch's SQL for relations `changed` (in trigger order), of which `active` have a
    non-empty delta: one phase, or one per trigger when later triggers would recompute an
    earlier trigger's deltas too often."""
    refs: Dict[str, int] = {}
    plan = _build_plan(view, changed, active, False, refs)
    if any(n > MAX_PENDING_READS for n in refs.values()):
        plan = _build_plan(view, changed, active, True, {})
    return plan


def _build_plan(view, changed, active, split: bool, refs: Dict[str, int]) -> BatchPlan:
    program: Program = view.compiled.program
    phases: List[Phase] = []
    pending: Dict[str, List[tuple]] = {}
    processed: Set[str] = set()
    targets: List[str] = []
    sb, ctes, blocks, rels = SqlBuilder(), [], [], []

    def close():
        nonlocal sb, ctes, blocks, rels
        phases.extend(_queries(dict(sb.params), dict(ctes), blocks, rels))
        sb, ctes, blocks, rels = SqlBuilder(), [], [], []

    for rel in changed:
        if rel not in active:
            processed.add(rel)
            continue
        source = _PlanSource(view, sb, processed, pending, refs)
        members: List[Tuple[object, Select]] = []
        for s in program.statements_for(rel):
            for mono in s.rhs.monomials:
                members.append((s, monomial_select(mono, s.rhs.group, source, sb)))
        shapes: Dict[tuple, List[Tuple[object, Select]]] = {}
        for s, sel in members:
            shapes.setdefault(sel.shape(), []).append((s, sel))
        new_pending: Dict[str, List[tuple]] = {}
        tag0 = sum(len(p.blocks) for p in phases) + len(blocks)
        for i, group in enumerate(shapes.values()):
            name = f"b{tag0 + i}"
            text, block, pieces = _block(view, name, tag0 + i, group)
            ctes.append((name, text))
            blocks.append(block)
            for target, texts in pieces.items():
                if split:      # later phases read what this one collected: once per map,
                    # however many blocks of the trigger write it
                    new_pending[target] = [(rel, Leaf("pending", target, (rel,)))]
                else:
                    new_pending.setdefault(target, []).extend((rel, t) for t in texts)
                if target not in targets:
                    targets.append(target)
        rels.append(rel)
        if split:
            close()
        # Only now: every statement of this trigger read the maps as they were before it.
        for target, pieces in new_pending.items():
            pending.setdefault(target, []).extend(pieces)
        processed.add(rel)
    close()
    return BatchPlan(phases, targets)


#: a phase with more blocks than this runs as several Spark queries, each with only the CTEs
#: its blocks read: Catalyst planning one query of hundreds of blocks (a wide join such as
#: TPC-H Q8 has 278 maps) outgrows the driver's heap
MAX_BLOCKS_PER_QUERY = 64
_CTE_REF = re.compile(r"\bb(\d+)\b")
_PARAM_REF = re.compile(r"\{(\w+)\}")


def _queries(params: Dict[str, Leaf], ctes: Dict[str, str], blocks: List[Block],
             relations: List[str]) -> List[Phase]:
    """The Spark queries of one phase: its blocks packed, at most MAX_BLOCKS_PER_QUERY each,
    with the CTEs (blocks and the earlier blocks they read) and leaves they use."""
    out = []
    for i in range(0, len(blocks), MAX_BLOCKS_PER_QUERY):
        chunk = blocks[i:i + MAX_BLOCKS_PER_QUERY]
        needed, todo = set(), [f"b{b.tag}" for b in chunk]
        while todo:
            name = todo.pop()
            if name in ctes and name not in needed:
                needed.add(name)
                todo += [f"b{t}" for t in _CTE_REF.findall(ctes[name])]
        phase = Phase("", {}, chunk, list(relations))
        phase.text = "WITH " + ", ".join(f"{n} AS ({t})" for n, t in ctes.items() if n in needed) \
            + " " + _packed(phase)
        used = set(_PARAM_REF.findall(phase.text))
        phase.leaves = {k: leaf for k, leaf in params.items() if k in used}
        out.append(phase)
    return out


def _block(view, name: str, tag: int, group: List[Tuple[object, Select]]):
    """One block: SQL of its rows (key columns g*, a value column v* per member), its
    layout, and per target the SQL of its rows as map rows (for later triggers' reads)."""
    first = group[0][1]
    common = [c for c in first.conds if all(c in sel.conds for _, sel in group)]
    key_sql: List[str] = []
    key_types: List[str] = []
    items: List[str] = []
    members: List[Member] = []
    # (target, its key columns) -> map column -> [value column]
    values: Dict[Tuple[str, Tuple[str, ...]], Dict[str, List[str]]] = {}
    types: Dict[str, str] = {}
    for i, (s, sel) in enumerate(group):
        schema = view.map_schema(s.target)
        cols = []
        for j, expr in enumerate(sel.keys):
            if expr not in key_sql:
                key_sql.append(expr)
                key_types.append(schema.key_types[j])
            cols.append(f"g{key_sql.index(expr)}")
        extra = [c for c in sel.conds if c not in common]
        value = sel.product if not extra else \
            f"CASE WHEN {' AND '.join(extra)} THEN {sel.product} ELSE 0 END"
        items.append(f"{value} AS {q(f'v{i}')}")
        out = f"p{tag}_v{i}"
        members.append(Member(s.target, s.column, out, cols))
        types[out] = schema.values[s.column]
        values.setdefault((s.target, tuple(cols)), {}).setdefault(s.column, []).append(f"v{i}")
    keys = [(f"p{tag}_g{j}", t) for j, t in enumerate(key_types)]
    select = [f"{expr} AS {q(f'g{j}')}" for j, expr in enumerate(key_sql)] + items
    text = f"SELECT {', '.join(select)} FROM {', '.join(first.froms)}"
    where = first.joins + common
    if where:
        text += " WHERE " + " AND ".join(where)
    pieces: Dict[str, List[str]] = {}
    for (target, key_cols), by_column in values.items():
        schema = view.map_schema(target)
        cols = [f"{q(g)} AS {q(k)}" for g, k in zip(key_cols, schema.keys)]
        for c, t in schema.values.items():
            vs = by_column.get(c)
            cols.append(" + ".join(f"COALESCE({q(v)}, 0)" for v in vs) + f" AS {q(c)}" if vs
                        else f"CAST(0 AS {t}) AS {q(c)}")
        pieces.setdefault(target, []).append(f"SELECT {', '.join(cols)} FROM {name}")
    return text, Block(tag, keys, members, types), pieces


def _packed(plan: Phase) -> str:
    """Every block's rows side by side in one UNION ALL (each block fills its own columns,
    NULL elsewhere, tagged with its index): one collect for the batch. Rows are summed by
    key on the driver: a GROUP BY per block would cost Spark a shuffle stage each."""
    columns = plan.columns()
    parts = []
    for b in plan.blocks:
        own = {}
        for j, (col, t) in enumerate(b.keys):
            own[col] = f"CAST({q(f'g{j}')} AS {t})"
        for i, m in enumerate(b.members):
            own[m.out] = f"CAST({q(f'v{i}')} AS {b.types[m.out]})"
        cols = [f"{own[c]} AS {q(c)}" if c in own else f"CAST(NULL AS {t}) AS {q(c)}"
                for c, t in columns]
        parts.append(f"(SELECT CAST({b.tag} AS INT) AS {TAG}, {', '.join(cols)} FROM b{b.tag})")
    return " UNION ALL ".join(parts)


# -- running a batch -----------------------------------------------------------------------
#: a lookup keeping more than this share of the rows in the files it read binds those files
#: (Spark reads them) instead of staging the rows kept
KEEP_FILES_ABOVE = 0.5


class BatchInputs:
    """Binds a plan's leaves to DataFrames for one batch."""

    def __init__(self, view, record: BatchRecord, deltas: Dict[str, pa.Table], scratch: str):
        self.view, self.record, self.deltas, self.scratch = view, record, deltas, scratch
        self.pending: Dict[Tuple[str, str], pa.Table] = {}   # (map, trigger) -> its delta
        self.files = 0
        self.reads: List[list] = []
        self.matched: Dict[Leaf, pa.Table] = {}   # map leaf read by lookup -> its rows
        self.restricted: Dict[Leaf, object] = {}  # ... -> the files they were read from
        self.read_of: Dict[Leaf, list] = {}       # ... -> its entry in `reads`

    def bind(self, leaf: Leaf):
        from ..spark.io import read_table, snapshot_frame
        view, ctx = self.view, self.view.ctx
        if leaf.kind == "delta":
            # A Parquet file, not a LocalRelation: Spark's optimizer would evaluate every
            # projection and filter over a LocalRelation row by row, interpreted
            # (ConvertToLocalRelation), which cost more than running the batch.
            return self._file(self.deltas[leaf.name])
        if leaf.kind == "pending":
            empty = self.view.map_arrow_schema(leaf.name).empty_table()
            return self._file(self.pending.get((leaf.name, leaf.detail[0]), empty))
        if leaf.kind == "rel":
            after, to = self.record.ranges[leaf.name]
            return read_table(ctx.spark, ctx.store, view.table_path(leaf.name),
                              to if leaf.detail[0] else after, view.columns_of(leaf.name))
        schema = view.map_schema(leaf.name)
        columns = schema.keys + list(schema.values)
        if not leaf.detail:
            whole = ctx.store.snapshot(view.map_path(leaf.name), self.record.map_versions[leaf.name])
            self.reads.append([leaf.name, len(whole.files), len(whole.files), _rows(whole),
                               _rows(whole), _rows(whole)])
            return snapshot_frame(ctx.spark, whole, columns)
        rows = self._matching(leaf)
        snap = self.restricted[leaf]
        if rows.num_rows > KEEP_FILES_ABOVE * (_rows(snap) or 0):
            # The batch touches most keys of the files read: Spark reads those files
            # rather than a staged copy of most of them.
            self.read_of[leaf][5] = _rows(snap)
            return snapshot_frame(ctx.spark, snap, columns)
        return self._file(rows.select(columns))

    def _matching(self, leaf: Leaf) -> pa.Table:
        """A map's rows holding the looked-up keys, read on the driver once per batch: the
        batch's keys are spread over most files of a large map, so file skipping alone
        would leave Spark most of the map to scan, once per reference."""
        if leaf not in self.matched:
            view, store = self.view, self.view.ctx.store
            whole = store.snapshot(view.map_path(leaf.name), self.record.map_versions[leaf.name])
            lookups = self._lookup_values(leaf.detail, view.map_schema(leaf.name).keys)
            rows = read_matching(store, whole, lookups)
            snap = self.restricted[leaf] = whole.restricted(lookups)
            # Per map read: files and rows read of the files and rows there are, rows
            # Spark gets (the rows kept, or the files' rows when it reads the files).
            self.read_of[leaf] = [leaf.name, len(snap.files), len(whole.files), _rows(snap),
                                  _rows(whole), rows.num_rows]
            self.reads.append(self.read_of[leaf])
            self.matched[leaf] = rows
        return self.matched[leaf]

    def _file(self, data: pa.Table):
        """`data` as a DataFrame over a Parquet file in the attempt's scratch directory."""
        from ..spark.io import spark_schema
        self.files += 1
        location = self.view.ctx.store.write_file(f"{self.scratch}/in{self.files}.parquet", data)
        return self.view.ctx.spark.read.schema(spark_schema(data.schema)).parquet(location)

    def _lookup_values(self, lookups, keys) -> Dict[str, Tuple[list, bool]]:
        """{map key column: (sorted distinct batch values, whether NULL is among them)}."""
        out = {}
        for j, origins in lookups:
            values, has_null = set(), False
            for rel, col in origins:
                if isinstance(rel, MapOrigin):
                    table = self._matching(Leaf("map", rel.name, rel.lookups))
                else:
                    table = self.deltas.get(rel)
                if table is None:
                    continue
                column = table.column(col)
                has_null = has_null or column.null_count > 0
                values.update(v for v in pc.unique(column).to_pylist() if v is not None)
            out[keys[j]] = (values, has_null)
        return out


def _rows(snap) -> Optional[int]:
    return sum(s.rows or 0 for s in snap.stats) if snap.stats is not None else None


def run_triggers(view, record: BatchRecord, stats: Dict,
                 step: Callable[[str], None] = lambda text: None) -> Dict[str, pa.Table]:
    """Every map's total delta for the batch, aggregated by its keys (zero rows dropped)."""
    program: Program = view.compiled.program
    changed = [r for r in program.relations() if record.ranges[r][1] > record.ranges[r][0]]
    deltas: Dict[str, pa.Table] = {}
    rows_in = {}
    seconds = stats.setdefault("seconds", {})
    for rel in changed:
        after, to = record.ranges[rel]
        step(f"reading the changes of {rel} (versions {after + 1}..{to})")
        t0 = time.perf_counter()
        changes = read_batch_changes(view, rel, after, to)
        rows_in[rel] = changes.num_rows
        seconds["read_changes"] = seconds.get("read_changes", 0) + time.perf_counter() - t0
        if changes.num_rows:
            deltas[rel] = changes
    stats["delta_rows"] = rows_in
    if not deltas:
        return {}
    t0 = time.perf_counter()
    plan = view.batch_plan(tuple(changed), tuple(r for r in changed if r in deltas))
    seconds["plan"] = time.perf_counter() - t0
    if not plan.phases:
        return {}
    step(f"computing the deltas of {len(plan.targets)} map(s)")
    from ..spark.io import frame_arrow
    scratch = view.scratch_dir(record.batch)
    pieces: Dict[str, List[pa.Table]] = {}
    collected: Dict[Tuple[str, str], List[pa.Table]] = {}
    try:
        inputs = BatchInputs(view, record, deltas, scratch)
        for phase in plan.phases:
            t0 = time.perf_counter()
            frames = {name: inputs.bind(leaf) for name, leaf in phase.leaves.items()}
            df = view.ctx.spark.sql(phase.text, **frames)
            seconds["bind"] = seconds.get("bind", 0) + time.perf_counter() - t0
            t0 = time.perf_counter()
            packed = frame_arrow(df)
            seconds["compute"] = seconds.get("compute", 0) + time.perf_counter() - t0
            t0 = time.perf_counter()
            phase_pieces = split_packed(view, phase, packed)
            if len(plan.phases) > 1:        # what later phases read of this trigger
                for target, tables in phase_pieces.items():
                    key = (target, phase.relations[-1])     # a trigger may take several queries
                    collected.setdefault(key, []).extend(tables)
                    inputs.pending[key] = sum_pieces(view, target, collected[key])
            for target, tables in phase_pieces.items():
                pieces.setdefault(target, []).extend(tables)
            seconds["split"] = seconds.get("split", 0) + time.perf_counter() - t0
        stats["map_reads"] = inputs.reads
        stats["phases"] = len(plan.phases)
    finally:
        view.ctx.store.drop(scratch)
    t0 = time.perf_counter()
    out = {target: sum_pieces(view, target, tables) for target, tables in pieces.items()}
    seconds["split"] = seconds.get("split", 0) + time.perf_counter() - t0
    return out


def split_packed(view, plan: Phase, packed: pa.Table) -> Dict[str, List[pa.Table]]:
    """Per map: every member's rows as map rows (not yet summed)."""
    tags = packed.column(TAG)
    pieces: Dict[str, List[pa.Table]] = {}
    for b in plan.blocks:
        rows = packed.filter(pc.equal(tags, b.tag))
        if rows.num_rows == 0:
            continue
        for m in b.members:
            schema = view.map_schema(m.target)
            arrow_types = view.map_arrow_schema(m.target)
            cols = {}
            for block_col, key in zip(m.keys, schema.keys):
                j = int(block_col[1:])
                cols[key] = rows.column(f"p{b.tag}_g{j}").cast(arrow_types.field(key).type)
            for c in schema.values:
                cols[c] = rows.column(m.out) if c == m.column else \
                    pa.nulls(rows.num_rows, arrow_types.field(c).type)
            pieces.setdefault(m.target, []).append(pa.table(cols, schema=arrow_types))
    return pieces


def sum_pieces(view, target: str, tables: List[pa.Table]) -> pa.Table:
    schema = view.map_schema(target)
    data = pa.concat_tables(tables)
    values = list(schema.values)
    if schema.keys:
        summed = data.group_by(schema.keys, use_threads=False).aggregate([(c, "sum") for c in values])
        summed = summed.rename_columns([f"{c}_sum" if c in values else c for c in summed.column_names])
    else:
        summed = pa.table({f"{c}_sum": [pc.sum(data.column(c)).as_py()] for c in values},
                          schema=pa.schema([(f"{c}_sum", data.schema.field(c).type) for c in values]))
    cols = {k: summed.column(k) for k in schema.keys}
    for c in values:
        col = summed.column(f"{c}_sum")
        cols[c] = pc.fill_null(col, pa.scalar(0, col.type)).cast(data.schema.field(c).type)
    out = pa.table(cols, schema=data.schema)
    nonzero = None
    for c in values:
        test = pc.not_equal(out.column(c), pa.scalar(0, out.schema.field(c).type))
        nonzero = test if nonzero is None else pc.or_(nonzero, test)
    return out.filter(nonzero)


def sum_by_keys(df, keys, values: Dict[str, str]):
    """Group a DataFrame by keys, sum each value column cast to its map type, drop all-zero
    rows (the initial load of a map)."""
    sums = [f"CAST(COALESCE(SUM({q(c)}), 0) AS {t}) AS {q(c)}" for c, t in values.items()]
    expr_keys = ", ".join(q(k) for k in keys)
    nonzero = " OR ".join(f"{q(c)} <> 0" for c in values)
    sql = (f"SELECT {expr_keys + ', ' if keys else ''}{', '.join(sums)} FROM {{d}}"
           + (f" GROUP BY {expr_keys}" if keys else ""))
    return df.sparkSession.sql(f"SELECT * FROM ({sql}) WHERE {nonzero}", d=df)
