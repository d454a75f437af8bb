"""Where a batch plan runs: one plan (plan/batch.py), one `Target` interface, three targets.

    local        DuckDB in the driver over Arrow (batch/local.py): no Spark job
    spark        the plan's Spark text over DataFrames, each phase collected to the driver
                 as Arrow (batch/spark.py)
    distributed  Spark with nothing collected: phases staged as Parquet, map deltas left
                 as DataFrames for the executors to write (batch/distributed.py)

A target binds the plan's leaves to its data, runs a phase into its packed rows, splits
them into every map's rows and sums those per key. `run_phases` is the one loop over the
plan's phases: later phases read what earlier ones computed of a trigger (its `pending`
deltas), summed first. batch/policy.py says which target runs a batch, and why.
"""
from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import Dict, List, NamedTuple, Optional, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from ...plan.batch import Block, Member, Phase, TAG
from ...storage.arrow import sum_by_key
from ..runtime import cancel
from ..state.stats import BatchStats


class Slot(NamedTuple):
    """One column of a map's rows in a phase's packed result: the map column, the packed
    column holding it (None: the member writes another value column, this one is NULL),
    and the map column's Spark type."""
    column: str
    packed: Optional[str]
    type: str


def member_columns(view, block: Block, members: List[Member]) -> Tuple[List[Slot], List[Slot]]:
    """Where the packed rows of `block` hold the map rows `members` write (one map, the same
    keys: `sharing_rows`): (the map's key columns, its value columns; a value no member
    writes is NULL)."""
    first = members[0]
    schema = view.map_schema(first.target)
    keys = [Slot(key, block.slots[block.key_column(block_col)], key_type)
            for block_col, key, key_type in zip(first.keys, schema.keys, schema.key_types)]
    written = {m.column: block.slots[m.out] for m in members}
    values = [Slot(column, written.get(column), t) for column, t in schema.values.items()]
    return keys, values


def sharing_rows(block: Block) -> List[List[Member]]:
    """The block's members in groups that write one map at the same key columns, each map
    column at most once per group (a column written twice goes to another group). A group
    shares one copy of the block's rows, each member's value in its column: a map's rows
    sum per column, so one row holding several columns' values is the rows holding one
    each. One copy per member instead made a block of ten members ten copies of its rows,
    nine value columns of each NULL (seconds of a million-change TPC-H Q1 batch)."""
    groups: List[List[Member]] = []
    for m in block.members:
        group = next((g for g in groups if g[0].target == m.target and g[0].keys == m.keys
                      and all(o.column != m.column for o in g)), None)
        if group is None:
            groups.append([m])
        else:
            group.append(m)
    return groups


def summed_sql(source: str, keys, values: Dict[str, str], quote) -> str:
    """SQL text of `source`'s rows summed by `keys`, each value column of `values` (column ->
    SQL type) summed with NULL as 0 and cast to its type, rows whose values all sum to 0
    dropped (storage/arrow.sum_by_key); `quote` quotes an identifier in the SQL dialect."""
    sums = [f"CAST(COALESCE(SUM({quote(c)}), 0) AS {t}) AS {quote(c)}" for c, t in values.items()]
    expr_keys = ", ".join(quote(k) for k in keys)
    nonzero = " OR ".join(f"{quote(c)} <> 0" for c in values)
    sql = (f"SELECT {expr_keys + ', ' if keys else ''}{', '.join(sums)} FROM {source}"
           + (f" GROUP BY {expr_keys}" if keys else ""))
    return f"SELECT * FROM ({sql}) AS summed WHERE {nonzero}"


class Target(ABC):
    """One batch's plan run somewhere. `leaves` binds the plan's leaves (batch/leaves.py):
    its `pending` holds the deltas earlier phases computed, its `reads` what each map read
    cost (the manifest's map_reads)."""

    name: str                 # HISTORY's engine: local, spark or distributed
    leaves = None
    summed = False            # blocks summed by key in the phase's query (a map load)
    unsummed: set = frozenset()   # ... maps whose rows may still repeat a key (note_summed)

    def begin(self, phases: List[Phase]) -> None:
        """Before the batch's phases run one by one (`execute`): a target may compute
        several of them at once."""

    @abstractmethod
    def execute(self, phase: Phase):
        """The phase's packed rows: its blocks' rows, tagged by block (TAG)."""

    @abstractmethod
    def split(self, view, phase: Phase, packed) -> Dict[str, list]:
        """Per map, every member's rows of the packed result as map rows (not yet summed)."""

    @abstractmethod
    def sum(self, view, name: str, pieces: list):
        """The pieces of map `name`'s delta as one row per key, rows whose values all sum
        to 0 dropped (a delta row that changes nothing)."""

    def total(self, view, name: str, pieces: list, carried=None):
        """Map `name`'s delta for the whole batch. `carried`: what later phases read of it,
        when all of its pieces came from one trigger's phases (that sum is the total)."""
        return carried if carried is not None else self.carried(view, name, pieces)

    def carried(self, view, name: str, pieces: list):
        """What later phases read of map `name`'s delta from a trigger: its pieces summed,
        or a map load's one block summed by the map's keys as it is (`summed_already`: the
        driver's sums of rows DuckDB had summed were most of a local load, TPC-H Q5 at
        SF 0.1; on the executors a shuffle each)."""
        if self.summed_already(name, pieces):
            return self.as_summed(view, name, pieces[0])
        return self.sum(view, name, pieces)

    def as_summed(self, view, name: str, rows):
        """A summed block's rows of map `name` as the map's rows."""
        return rows

    def note_summed(self, view, block: Block, member: Member) -> None:
        """In a summed phase, remember the map of `member` when its rows of `block` may
        hold a key more than once (summed_already)."""
        if self.summed and not one_row_per_key(view, block, member):
            self.unsummed.add(member.target)

    def summed_already(self, name: str, pieces: list) -> bool:
        """The pieces of map `name` are one row per key already: a map load's one block,
        summed by exactly the map's keys in the phase's query."""
        return self.summed and len(pieces) == 1 and name not in self.unsummed

    def __enter__(self) -> "Target":
        return self

    def __exit__(self, *exc) -> None:
        pass


def run_phases(view, plan, target: Target, stats: BatchStats, timed: bool = True) -> Dict:
    """Run the plan's phases in order on `target`; every map's delta. `timed`: the phases'
    compute and split seconds go to `stats` (a distributed batch is timed as a whole)."""
    clock = stats.add_seconds if timed else (lambda phase, seconds: None)
    pieces: Dict[str, list] = {}
    collected: Dict[tuple, list] = {}
    t0 = time.perf_counter()
    target.begin(plan.phases)
    clock("compute", time.perf_counter() - t0)
    for phase in plan.phases:
        cancel.check()
        t0 = time.perf_counter()
        packed = target.execute(phase)
        clock("compute", time.perf_counter() - t0)
        t0 = time.perf_counter()
        phase_pieces = target.split(view, phase, packed)
        if len(plan.phases) > 1:        # what later phases read of this trigger
            for name, rows in phase_pieces.items():
                key = (name, phase.relations[-1])     # a trigger may take several queries
                collected.setdefault(key, []).extend(rows)
                target.leaves.pending[key] = target.carried(view, name, collected[key])
        for name, rows in phase_pieces.items():
            pieces.setdefault(name, []).extend(rows)
        clock("split", time.perf_counter() - t0)
    stats.map_reads = target.leaves.reads
    stats.phases = len(plan.phases)
    t0 = time.perf_counter()
    # a map one trigger wrote is summed once: what its later phases read is its total
    out = {name: target.total(view, name, rows, carried=_only_carried(target, collected, name))
           for name, rows in pieces.items()}
    clock("split", time.perf_counter() - t0)
    return out


def _only_carried(target: Target, collected: Dict[tuple, list], name: str):
    """The carried sum of map `name` when all of its pieces came from one (map, trigger)
    key of `collected`, else None."""
    keys = [key for key in collected if key[0] == name]
    return target.leaves.pending[keys[0]] if len(keys) == 1 else None


class ArrowTarget(Target):
    """A target whose packed rows reach the driver as Arrow (local, spark): split and summed
    there."""

    def split(self, view, phase: Phase, packed: pa.Table) -> Dict[str, List[pa.Table]]:
        by_tag = rows_by_tag(packed)
        pieces: Dict[str, List[pa.Table]] = {}
        for b in phase.blocks:
            own = sorted(set(b.slots.values()))    # the others are NULL in the block's rows
            if by_tag is None:
                rows = packed.select(own).filter(pc.equal(packed.column(TAG), b.tag))
            elif b.tag in by_tag:
                rows = by_tag[b.tag].select(own)
            else:
                continue
            if rows.num_rows == 0:
                continue
            for members in sharing_rows(b):
                target = members[0].target
                self.note_summed(view, b, members[0])
                schema = view.map_arrow_schema(target)
                keys, values = member_columns(view, b, members)
                cols = {k.column: rows.column(k.packed).cast(schema.field(k.column).type)
                        for k in keys}
                for v in values:
                    cols[v.column] = rows.column(v.packed) if v.packed is not None else \
                        pa.nulls(rows.num_rows, schema.field(v.column).type)
                pieces.setdefault(target, []).append(pa.table(cols, schema=schema))
        return pieces

    def sum(self, view, name: str, pieces: List[pa.Table]) -> pa.Table:
        schema = view.map_schema(name)
        values = list(schema.values)
        return sum_by_key(pa.concat_tables(pieces), schema.keys, values, values)

    def as_summed(self, view, name: str, rows: pa.Table) -> pa.Table:
        """A value no member wrote (NULL) as 0, as a sum gives it."""
        for column in view.map_schema(name).values:
            values = rows.column(column)
            if values.null_count:
                rows = rows.set_column(rows.schema.get_field_index(column), column,
                                       pc.fill_null(values, pa.scalar(0, values.type)))
        return rows


#: a packed result is sliced by runs of one tag when its runs average this many rows or more
RUN_ROWS = 256


def rows_by_tag(packed: pa.Table) -> Optional[Dict[int, pa.Table]]:
    """The packed rows of each block tag, as slices of its runs of one tag (no copy), or None
    when the runs are short (the caller filters by tag). DuckDB and Spark return a union's
    rows in long runs of one branch: TPC-H Q5's load returned 6.4 million rows of six blocks
    in a few dozen runs, which a filter per block copied six times over."""
    runs = pc.run_end_encode(packed.column(TAG))
    count = sum(len(chunk.run_ends) for chunk in runs.chunks)
    if count * RUN_ROWS > packed.num_rows:
        return None
    spans: Dict[int, List[Tuple[int, int]]] = {}
    offset = 0
    for chunk in runs.chunks:
        start = 0
        for end, tag in zip(chunk.run_ends.to_pylist(), chunk.values.to_pylist()):
            spans.setdefault(tag, []).append((offset + start, end - start))
            start = end
        offset += len(chunk)
    return {tag: pa.concat_tables([packed.slice(o, n) for o, n in parts])
            for tag, parts in spans.items()}


def one_row_per_key(view, block: Block, member: Member) -> bool:
    """Whether a summed block's rows hold each key of `member`'s map once: the map's keys
    are all of the block's keys, of the same types (a cast could merge two keys)."""
    types = dict(block.keys)
    schema = view.map_schema(member.target)
    columns = [block.key_column(k) for k in member.keys]
    return len(columns) == len(block.keys) and sorted(columns) == sorted(types) and \
        all(types[col].lower() == key_type.lower()
            for col, key_type in zip(columns, schema.key_types))
