"""A batch's plan: the trigger program lowered once, for every target.

Triggers run relation by relation. A statement reads maps as of batch start plus the deltas
the earlier triggers of this batch produced (a union, no MERGE in between), and base tables
at the version matching its position: relations already processed at the batch's end
version, the others at its start. That is the sequential semantics of applying one
relation's changes after another, evaluated against batch-start snapshots, so a rerun of the
same batch computes the same deltas.

The whole batch is one query (`BatchPlan`), built once per view and set of changed relations
and cached, as sqlglot trees in Spark SQL's semantics: its FROM items are leaves (tables
named `LEAF_PREFIX` + parameter: a relation's changes, a relation at its start or end
version, a map read by lookup or whole) that each batch binds to data. Statements of a
trigger whose monomials join the same atoms are fused into one block (one SELECT computing
every value column, conditions that differ become CASE WHEN), each block is aggregated on
its keys, and all blocks are collected in one packed result that the driver splits into map
deltas (several, for phases too big for Catalyst to plan as one query). Spark runs a phase
as `spark_sql()` with the leaves bound to DataFrames; the local target translates the same
tree for DuckDB (plan/local/translate.py) with the leaves bound to Arrow tables.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Dict, List, Optional, Sequence, Set, Tuple

import sqlglot
from sqlglot import exp

from ..calculus.ir import DeltaRel, MapRef
from ..compiler.program import Program
from .cse import ordered_ctes
from .lower import (LEAF_PREFIX, MULT, AtomSource, LeafBuilder, Lookups, Select, Sql,
                    SqlBuilder, freeze_lookups, monomial_select, q)

TAG = "__viewlet_part"


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
    #: block column (key or member output) -> the packed column holding it (`_slots`)
    slots: Dict[str, str] = field(default_factory=dict)

    def own_columns(self) -> List[Tuple[str, str]]:
        return list(self.keys) + [(m.out, self.types[m.out]) for m in self.members]

    def key_column(self, member_key: str) -> str:
        """The block's key column (of `keys`) that a member's key column (`g<j>`) names."""
        return block_key_column(self.tag, int(member_key[1:]))


def block_key_column(tag: int, j: int) -> str:
    """Block `tag`'s j-th key column (`Block.keys`), named apart from other blocks' in a
    packed phase; its members name it `g<j>`."""
    return f"p{tag}_g{j}"


@dataclass
class Phase:
    """One query of a batch: the blocks of one or more triggers, packed. `tree` reads the
    leaves as tables named LEAF_PREFIX + parameter."""
    tree: exp.Expression
    leaves: Dict[str, Leaf]
    blocks: List[Block]
    relations: List[str]               # the triggers it runs

    def columns(self) -> List[Tuple[str, str]]:
        """The packed columns: per Spark type, as many as the block using most of them."""
        out: Dict[str, str] = {}
        for b in self.blocks:
            for col, t in b.own_columns():
                out.setdefault(b.slots[col], t)
        return list(out.items())

    @cached_property
    def summed_tree(self) -> exp.Expression:
        """`tree` with each block's rows summed by its keys (a GROUP BY per block) before
        they are packed: for a map load (every map := its definition over whole base
        tables), whose blocks reduce many rows to few keys, locally (DuckDB on every core
        instead of the driver's single-threaded Arrow sums) and on the executors."""
        tree = sqlglot.parse_one(_packed(self, summed=True), read="spark")
        if self.tree.args.get("with_") is not None:
            tree.set("with_", self.tree.args["with_"].copy())
        return tree

    @cached_property
    def spark_text(self) -> str:
        """The phase as text for `spark.sql(text, **frames)`: leaves as `{f0}`, ... and
        every other brace doubled (the text is a format string)."""
        return spark_text(self.tree, self.leaves)

    @cached_property
    def summed_spark_text(self) -> str:
        """`summed_tree` as text for `spark.sql` (as spark_text): a map load on the
        executors, where the blocks' sums are shuffles of one query."""
        return spark_text(self.summed_tree, self.leaves)


def spark_text(tree: exp.Expression, leaves) -> str:
    marked = tree.copy()
    for table in marked.find_all(exp.Table):
        name = table.name
        if name.startswith(LEAF_PREFIX) and name[len(LEAF_PREFIX):] in leaves:
            table.set("this", exp.to_identifier(_MARK + name[len(LEAF_PREFIX):] + _MARK))
    text = marked.sql(dialect="spark").replace("{", "{{").replace("}", "}}")
    for param in leaves:
        text = text.replace(_MARK + param + _MARK, "{" + param + "}")
    return text


_MARK = "VIEWLETLEAFMARK"


@dataclass
class BatchPlan:
    phases: List[Phase]
    targets: List[str]


class _PlanSource(AtomSource):
    """Symbolic atoms: leaves for the batch to bind, and maps as leaf + the deltas of the
    earlier triggers: block rows of the same phase, or ("pending", map, (relation,))
    leaves holding what an earlier phase collected."""

    def __init__(self, view, sb: SqlBuilder, processed: Set[str], pending: Dict[str, List[object]],
                 refs: Dict[str, int], fresh: bool = False):
        self.view, self.sb, self.fresh = view, sb, fresh
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
        if self.fresh and not pieces:
            raise ValueError(f"map {name} is read before a trigger of the load computed it")
        if not pieces:
            return leaf
        schema = self.view.map_schema(name)
        cols = ", ".join(q(c) for c in schema.keys + list(schema.values))
        # a fresh plan's maps are empty at its start: only what earlier triggers computed
        parts = [] if self.fresh else [f"SELECT {cols} FROM {self.sb.frame(leaf)}"]
        for rel, piece, _ in pieces:
            self.refs[rel] = self.refs.get(rel, 0) + 1
            parts.append(piece if isinstance(piece, str) else f"SELECT {cols} FROM {self.sb.frame(piece)}")
        return Sql(" UNION ALL ".join(parts))

    def snapshot_only(self, name):
        return not self.pending.get(name)

    def columns(self, atom):
        if isinstance(atom, MapRef):
            schema = self.view.map_schema(atom.name)
            return list(schema.keys) + list(schema.values)
        own = list(self.view.columns_of(atom.table))
        return own + [MULT] if isinstance(atom, DeltaRel) else own

    def pending_origins(self, name):
        pieces = self.pending.get(name) or []
        return _union_origins([origins for _, _, origins in pieces])


def _union_origins(lists: List[List[Optional[frozenset]]]) -> Optional[List[Optional[frozenset]]]:
    """Per key position, the union of the pieces' origins (None if any piece lacks one)."""
    if not lists:
        return None
    out = []
    for position in zip(*lists):
        out.append(None if any(o is None for o in position) else frozenset().union(*position))
    return out


#: a trigger whose deltas later triggers read more often than this is collected first
#: (one more Spark job) instead of being recomputed inside every later read
MAX_PENDING_READS = 2


def build_plan(view, changed: Sequence[str], active: Sequence[str],
               fresh: bool = False) -> BatchPlan:
    """The batch's SQL for relations `changed` (in trigger order), of which `active` have a
    non-empty delta: one phase, or one per trigger when later triggers would recompute an
    earlier trigger's deltas too often. `fresh`: every map is empty at the plan's start (a
    staged load, compiler/staged_load.py): maps are read only as earlier triggers computed
    them, summed by key in a phase of their own."""
    refs: Dict[str, int] = {}
    parts, targets = _build_plan(view, changed, active, fresh, refs, fresh)
    if not fresh and any(n > MAX_PENDING_READS for n in refs.values()):
        parts, targets = _build_plan(view, changed, active, True, {})
    # parsed only now, once: the texts of the plan chosen
    return BatchPlan([phase for p in parts for phase in _queries(*p)], targets)


def _build_plan(view, changed, active, split: bool, refs: Dict[str, int], fresh: bool = False):
    """The plan's phases as texts: (leaves, CTEs, blocks, triggers) each; the maps written."""
    program: Program = view.compiled.program
    phases: List[tuple] = []
    pending: Dict[str, List[tuple]] = {}
    processed: Set[str] = set()
    targets: List[str] = []
    sb, ctes, blocks, rels = LeafBuilder(), [], [], []

    def close():
        nonlocal sb, ctes, blocks, rels
        shared = [(name, text) for text, name in sb.shared.items()]
        phases.append((dict(sb.params), dict(shared + ctes), blocks, rels))
        sb, ctes, blocks, rels = LeafBuilder(), [], [], []

    for rel in changed:
        if rel not in active:
            processed.add(rel)
            continue
        source = _PlanSource(view, sb, processed, pending, refs, fresh)
        members: List[Tuple[object, Select]] = []
        for s in program.statements_for(rel):
            for mono in s.rhs.monomials:
                members.append((s, monomial_select(mono, s.rhs.group, source, sb)))
        shapes: Dict[tuple, List[Tuple[object, Select]]] = {}
        for s, sel in members:
            shapes.setdefault(sel.shape(), []).append((s, sel))
        new_pending: Dict[str, List[tuple]] = {}
        tag0 = sum(len(p[2]) for p in phases) + len(blocks)
        for i, group in enumerate(shapes.values()):
            name = f"b{tag0 + i}"
            text, block, pieces = _block(view, name, tag0 + i, group)
            ctes.append((name, text))
            blocks.append(block)
            for target, texts in pieces.items():
                if split:      # later phases read what this one collected: once per map,
                    # however many blocks of the trigger write it
                    known = [o for _, _, o in new_pending.get(target, [])] + [o for _, o in texts]
                    new_pending[target] = [(rel, Leaf("pending", target, (rel,)),
                                            _union_origins(known))]
                else:
                    new_pending.setdefault(target, []).extend((rel, t, o) for t, o in texts)
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
    return phases, targets


#: a phase with more blocks than this runs as several Spark queries, each with only the CTEs
#: its blocks read: Catalyst planning one query of hundreds of blocks (a wide join such as
#: TPC-H Q8 has 278 maps) outgrows the driver's heap
MAX_BLOCKS_PER_QUERY = 64


def _queries(params: Dict[str, Leaf], ctes: Dict[str, str], blocks: List[Block],
             relations: List[str]) -> List[Phase]:
    """The Spark queries of one phase: its blocks packed, at most MAX_BLOCKS_PER_QUERY each,
    with the CTEs (blocks and the earlier blocks they read) and leaves they use."""
    trees = {name: sqlglot.parse_one(text, read="spark") for name, text in ctes.items()}
    reads = {name: {t.name for t in tree.find_all(exp.Table)} for name, tree in trees.items()}
    out = []
    for i in range(0, len(blocks), MAX_BLOCKS_PER_QUERY):
        chunk = blocks[i:i + MAX_BLOCKS_PER_QUERY]
        needed, todo = set(), [f"b{b.tag}" for b in chunk]
        while todo:
            name = todo.pop()
            if name in trees and name not in needed:
                needed.add(name)
                todo += list(reads[name])
        phase = Phase(None, {}, chunk, list(relations))
        _slots(chunk)
        tree = sqlglot.parse_one(_packed(phase), read="spark")
        tree.set("with_", exp.With(expressions=ordered_ctes([
            exp.CTE(this=trees[n].copy(), alias=exp.TableAlias(this=exp.to_identifier(n)))
            for n in ctes if n in needed])))
        phase.tree = tree
        used = {t.name[len(LEAF_PREFIX):] for t in phase.tree.find_all(exp.Table)
                if t.name.startswith(LEAF_PREFIX)}
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
    # block key column -> the batch columns its values are among (None: unknown)
    key_origins: Dict[str, Optional[frozenset]] = {}
    for i, (s, sel) in enumerate(group):
        schema = view.map_schema(s.target)
        cols = []
        for j, expr in enumerate(sel.keys):
            if expr not in key_sql:
                key_sql.append(expr)
                key_types.append(schema.key_types[j])
            g = f"g{key_sql.index(expr)}"
            cols.append(g)
            found = sel.key_origins[j]
            known = key_origins.get(g, found)
            key_origins[g] = None if found is None or known is None else known | found
        extra = [c for c in sel.conds if c not in common]
        value = sel.product if not extra else \
            f"CASE WHEN {' AND '.join(extra)} THEN {sel.product} ELSE 0 END"
        items.append(f"{value} AS {q(f'v{i}')}")
        out = f"p{tag}_v{i}"
        members.append(Member(s.target, s.column, out, cols))
        types[out] = schema.values[s.column]
        values.setdefault((s.target, tuple(cols)), {}).setdefault(s.column, []).append(f"v{i}")
    keys = [(block_key_column(tag, j), t) for j, t in enumerate(key_types)]
    select = [f"{expr} AS {q(f'g{j}')}" for j, expr in enumerate(key_sql)] + items
    text = f"SELECT {', '.join(select)} FROM {', '.join(first.froms)}"
    where = first.joins + common
    if where:
        text += " WHERE " + " AND ".join(where)
    pieces: Dict[str, List[Tuple[str, List[Optional[frozenset]]]]] = {}
    for (target, key_cols), by_column in values.items():
        schema = view.map_schema(target)
        cols = [f"{q(g)} AS {q(k)}" for g, k in zip(key_cols, schema.keys)]
        for c, t in schema.values.items():
            vs = by_column.get(c)
            cols.append(" + ".join(f"COALESCE({q(v)}, 0)" for v in vs) + f" AS {q(c)}" if vs
                        else f"CAST(0 AS {t}) AS {q(c)}")
        pieces.setdefault(target, []).append((f"SELECT {', '.join(cols)} FROM {name}",
                                              [key_origins[g] for g in key_cols]))
    return text, Block(tag, keys, members, types), pieces


def _slots(blocks: List[Block]):
    """Packed columns for the blocks' columns: a block's n-th column of a Spark type goes to
    that type's n-th packed column, so the packed width is what the widest block needs of
    each type, not the sum over blocks (TPC-H Q8's hundreds of blocks made a query of
    blocks x columns casts, most of them NULL)."""
    for b in blocks:
        used: Dict[str, int] = {}
        for col, t in b.own_columns():
            n = used.get(t, 0)
            used[t] = n + 1
            b.slots[col] = "c_" + "".join(ch if ch.isalnum() else "_" for ch in t) + f"_{n}"


def _packed(plan: Phase, summed: bool = False) -> str:
    """Every block's rows in one UNION ALL (each block fills the packed columns of its
    columns, NULL elsewhere, tagged with its index): one collect for the batch. Rows are
    summed by key on the driver: a GROUP BY per block would cost Spark a shuffle stage each.
    `summed`: each block's rows summed by its keys in the query (Phase.summed_tree)."""
    columns = plan.columns()
    parts = []
    for b in plan.blocks:
        own = {}
        for j, (col, t) in enumerate(b.keys):
            own[b.slots[col]] = f"CAST({q(f'g{j}')} AS {t})"
        for i, m in enumerate(b.members):
            # a sum over NULLs only is 0, as a map's rows summed anywhere else
            value = f"COALESCE(SUM({q(f'v{i}')}), 0)" if summed else q(f'v{i}')
            own[b.slots[m.out]] = f"CAST({value} AS {b.types[m.out]})"
        cols = [f"{own[c]} AS {q(c)}" if c in own else f"CAST(NULL AS {t}) AS {q(c)}"
                for c, t in columns]
        part = f"SELECT CAST({b.tag} AS INT) AS {TAG}, {', '.join(cols)} FROM b{b.tag}"
        if summed:      # a block without keys and without rows has no row, as unsummed
            part += (f" GROUP BY {', '.join(q(f'g{j}') for j in range(len(b.keys)))}"
                     if b.keys else " HAVING COUNT(*) > 0")
        parts.append(f"({part})")
    return " UNION ALL ".join(parts)


