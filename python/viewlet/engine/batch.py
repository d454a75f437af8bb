"""One batch: read the change feeds, run the batch plan (plan/batch.py) on the chosen
target, split its packed result into every map's delta."""
from __future__ import annotations

import time
from typing import Dict, List, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from ..compiler.program import Program
from ..plan.batch import TAG, Phase
from ..plan.lower import MULT, q
from ..storage.arrow import sum_by_key
from .leaves import ArrowLeaves, SparkLeaves
from .state.manifest import BatchRecord

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


# -- running a batch -----------------------------------------------------------------------
def run_triggers(view, record: BatchRecord, stats: Dict, progress=None) -> Dict[str, pa.Table]:
    """Every map's total delta for the batch, aggregated by its keys (zero rows dropped),
    computed on the target the cost rule picks (engine/targets.py). `progress`: the
    batch's Progress (steps; its spark() before Spark work)."""
    from . import targets
    step = progress.step if progress is not None else (lambda text: None)
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
        if progress is not None:
            progress.add_rows(changes.num_rows)
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
    choice = targets.choose(view, plan, record, deltas)
    stats["engine"], stats["engine_reason"] = choice.target, choice.reason
    stats["input_rows"] = choice.input_rows
    step(f"computing the deltas of {len(plan.targets)} map(s) ({choice.target} target)")
    if choice.target == targets.LOCAL:
        try:
            return run_local(view, plan, record, deltas, stats)
        except targets.LOCAL_FAILURES as e:
            reason = f"the local target failed ({targets.failure_text(e)}); ran on Spark"
            stats["engine"], stats["engine_reason"] = targets.SPARK, reason
            step(reason)
    if progress is not None:
        progress.spark()
    return _run_spark(view, plan, record, deltas, stats)


def _run_spark(view, plan, record, deltas, stats) -> Dict[str, pa.Table]:
    from .spark.io import frame_arrow
    from .targets import batch_session
    scratch = view.scratch_dir(record.batch)
    spark = batch_session(view, stats.get("input_rows"))
    try:
        inputs = SparkLeaves(view, record, deltas, scratch, spark)

        def execute(phase):
            frames = {name: inputs.bind(leaf) for name, leaf in phase.leaves.items()}
            df = spark.sql(phase.spark_text, **frames)
            return frame_arrow(df)

        return _run_phases(view, plan, inputs, execute, stats)
    finally:
        _retire_scratch(view, scratch)


def _retire_scratch(view, scratch: str):
    """Drop the staged files of the view's previous Spark batch, keep this batch's until the
    next one: Spark jobs were seen still reading a batch's files after its result had been
    collected (FILE_NOT_EXIST in a benchmark's log, results unaffected), which a drop right
    away turns into failing tasks. DROP removes the view's directory, scratch included."""
    previous = view.compiled.cache.get("scratch")
    view.compiled.cache["scratch"] = scratch
    if previous is not None and previous != scratch:
        view.ctx.store.drop(previous)


def run_local(view, plan, record, deltas, stats) -> Dict[str, pa.Table]:
    """The plan's map deltas computed by the local target (NotLocal, LocalEngineError, ...
    when it cannot: engine/targets.py LOCAL_FAILURES)."""
    from ..plan.batch import LEAF_PREFIX
    from . import targets
    inputs = ArrowLeaves(view, record, deltas)
    engine = view.ctx.local_engine

    def execute(phase):
        sql = targets.local_sql(view, phase)
        tables = {LEAF_PREFIX + name: inputs.bind(leaf) for name, leaf in phase.leaves.items()}
        return engine.query(sql, tables)

    return _run_phases(view, plan, inputs, execute, stats)


def _run_phases(view, plan, inputs, execute, stats) -> Dict[str, pa.Table]:
    """Run the plan's phases in order (later ones read what earlier ones collected)."""
    seconds = stats["seconds"]
    pieces: Dict[str, List[pa.Table]] = {}
    collected: Dict[Tuple[str, str], List[pa.Table]] = {}
    from .runtime import cancel
    for phase in plan.phases:
        cancel.check()
        t0 = time.perf_counter()
        packed = execute(phase)
        seconds["compute"] = seconds.get("compute", 0) + time.perf_counter() - t0
        t0 = time.perf_counter()
        phase_pieces = split_packed(view, phase, packed)
        if len(plan.phases) > 1:        # what later phases read of this trigger
            for target, tables in phase_pieces.items():
                key = (target, phase.relations[-1])     # a trigger may take several queries
                collected.setdefault(key, []).extend(tables)
                inputs.pending[key] = _map_delta(view, target, collected[key])
        for target, tables in phase_pieces.items():
            pieces.setdefault(target, []).extend(tables)
        seconds["split"] = seconds.get("split", 0) + time.perf_counter() - t0
    stats["map_reads"] = inputs.reads
    stats["phases"] = len(plan.phases)
    t0 = time.perf_counter()
    out = {target: _map_delta(view, target, tables) for target, tables in pieces.items()}
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
                packed_col = b.slots[f"p{b.tag}_g{j}"]
                cols[key] = rows.column(packed_col).cast(arrow_types.field(key).type)
            for c in schema.values:
                cols[c] = rows.column(b.slots[m.out]) if c == m.column else \
                    pa.nulls(rows.num_rows, arrow_types.field(c).type)
            pieces.setdefault(m.target, []).append(pa.table(cols, schema=arrow_types))
    return pieces


def _map_delta(view, target: str, tables: List[pa.Table]) -> pa.Table:
    """The pieces of map `target`'s delta as one row per key; keys whose values all sum to
    0 dropped (a delta row that changes nothing)."""
    schema = view.map_schema(target)
    values = list(schema.values)
    return sum_by_key(pa.concat_tables(tables), schema.keys, values, values)


def sum_by_keys(df, keys, values: Dict[str, str]):
    """Group a DataFrame by keys, sum each value column cast to its map type, drop all-zero
    rows (the initial load of a map)."""
    sums = [f"CAST(COALESCE(SUM({q(c)}), 0) AS {t}) AS {q(c)}" for c, t in values.items()]
    expr_keys = ", ".join(q(k) for k in keys)
    nonzero = " OR ".join(f"{q(c)} <> 0" for c in values)
    sql = (f"SELECT {expr_keys + ', ' if keys else ''}{', '.join(sums)} FROM {{d}}"
           + (f" GROUP BY {expr_keys}" if keys else ""))
    return df.sparkSession.sql(f"SELECT * FROM ({sql}) WHERE {nonzero}", d=df)
