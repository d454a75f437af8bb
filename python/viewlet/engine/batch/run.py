"""One batch: read the change feeds, run the batch plan (plan/batch.py) on the chosen
target, split its packed result into every map's delta."""
from __future__ import annotations

import time
from typing import Dict

import pyarrow as pa

from ...compiler.program import Program
from ..state.manifest import BatchRecord
from ..state.settings import LOCAL, SPARK
from .changes import read_batch_changes
from .local import LOCAL_FAILURES, failure_text, run_local
from .policy import choose
from .spark import run_spark


# -- running a batch -----------------------------------------------------------------------
def run_triggers(view, record: BatchRecord, stats: Dict, progress=None) -> Dict[str, pa.Table]:
    """Every map's total delta for the batch, aggregated by its keys (zero rows dropped),
    computed on the target the cost rule picks (engine/targets.py). `progress`: the
    batch's Progress (steps; its spark() before Spark work)."""
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
    choice = choose(view, plan, record, deltas)
    stats["engine"], stats["engine_reason"] = choice.target, choice.reason
    stats["input_rows"] = choice.input_rows
    step(f"computing the deltas of {len(plan.targets)} map(s) ({choice.target} target)")
    if choice.target == LOCAL:
        try:
            return run_local(view, plan, record, deltas, stats)
        except LOCAL_FAILURES as e:
            reason = f"the local target failed ({failure_text(e)}); ran on Spark"
            stats["engine"], stats["engine_reason"] = SPARK, reason
            step(reason)
    if progress is not None:
        progress.spark()
    return run_spark(view, plan, record, deltas, stats)

