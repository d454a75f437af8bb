"""One batch's map deltas: the changes of the relations that changed, the batch plan
(plan/batch.py) for them, run on the target the policy picks (batch/policy.py).

On the driver (`driver_deltas`), the changes are read as Arrow, then the plan runs on the
local target or on Spark (under auto, a Spark batch's phases that read at most the local
limit's rows still run in the driver: policy.small_work_in_driver); a
local batch that fails (an overflow, a division by zero under ANSI mode) runs again on
Spark, which gives Spark's own result or error. On the executors
(`distributed_deltas`), the distributed target reads the changes and keeps the deltas.
"""
from __future__ import annotations

import time
from typing import Dict, List

import pyarrow as pa
from pyspark.sql import DataFrame

from ..state.manifest import BatchRecord
from ..state.settings import LOCAL, SPARK
from ..state.stats import BatchStats
from . import policy
from .changes import read_batch_changes
from .distributed import DistributedTarget
from .leaves import LeafReader
from .local import LOCAL_FAILURES, LocalTarget
from .spark import SparkTarget
from .target import run_phases


def changed_relations(view, record: BatchRecord) -> List[str]:
    """The relations whose version range in the batch is not empty, in trigger order."""
    return [r for r in view.compiled.program.relations()
            if record.ranges[r][1] > record.ranges[r][0]]


def driver_deltas(view, record: BatchRecord, stats: BatchStats,
                  progress=None) -> Dict[str, pa.Table]:
    """Every map's total delta for the batch, aggregated by its keys (zero rows dropped),
    computed on the local target or on Spark. `progress`: the batch's Progress (steps; its
    spark() before Spark work)."""
    step = progress.step if progress is not None else (lambda text: None)
    changed = changed_relations(view, record)
    deltas: Dict[str, pa.Table] = {}
    rows_in = {}
    for rel in changed:
        after, to = record.ranges[rel]
        step(f"reading the changes of {rel} (versions {after + 1}..{to})")
        t0 = time.perf_counter()
        changes = read_batch_changes(view, rel, after, to)
        rows_in[rel] = changes.num_rows
        if progress is not None:
            progress.add_rows(changes.num_rows)
        stats.add_seconds("read_changes", time.perf_counter() - t0)
        if changes.num_rows:
            deltas[rel] = changes
    stats.delta_rows = rows_in
    if not deltas:
        return {}
    t0 = time.perf_counter()
    plan = view.batch_plan(tuple(changed), tuple(r for r in changed if r in deltas))
    stats.seconds["plan"] = time.perf_counter() - t0
    if not plan.phases:
        return {}
    lookups = LeafReader(view, record, deltas)       # read by the policy when it counts them
    t0 = time.perf_counter()
    choice = policy.choose(view, plan, record, deltas, lookups)
    if lookups.reads:            # the policy read the batch's lookups to choose its target
        stats.add_seconds("bind", time.perf_counter() - t0)
    stats.engine, stats.engine_reason = choice.target, choice.reason
    stats.input_rows = choice.input_rows
    step(f"computing the deltas of {len(plan.targets)} map(s) ({choice.target} target)")
    small_in_driver = choice.target == SPARK and policy.small_work_in_driver(view)
    if choice.target == LOCAL:
        try:
            with LocalTarget(view, record, deltas, looked_up=lookups) as target:
                return run_phases(view, plan, target, stats)
        except LOCAL_FAILURES as e:
            fallback = policy.after_local_failure(e)
            stats.engine, stats.engine_reason = fallback.target, fallback.reason
            step(fallback.reason)
    if progress is not None:
        progress.spark()
    with SparkTarget(view, record, deltas, stats.input_rows, looked_up=lookups,
                     small_in_driver=small_in_driver) as target:
        out = run_phases(view, plan, target, stats)
        if small_in_driver:
            stats.driver_phases = target.driver_phases
            stats.engine_reason += policy.driver_phases_text(view, target.driver_phases,
                                                             len(plan.phases))
        return out


def distributed_deltas(view, record: BatchRecord, target: DistributedTarget, stats: BatchStats,
                       progress) -> Dict[str, DataFrame]:
    """Every map's delta as a DataFrame (summed per key, zero rows dropped), computed by the
    plan's phases over the changes the executors read and staged."""
    changed = changed_relations(view, record)
    deltas: Dict[str, DataFrame] = {}
    rows_in = {}
    for i, rel in enumerate(changed):
        after, to = record.ranges[rel]
        progress.step(f"reading the changes of {rel} (versions {after + 1}..{to}) on the executors")
        staged, rows_in[rel] = target.changes(rel, after, to, i)
        if rows_in[rel]:
            deltas[rel] = staged
    stats.delta_rows = rows_in
    if not deltas:
        return {}
    plan = view.batch_plan(tuple(changed), tuple(r for r in changed if r in deltas))
    target.bind(deltas)
    progress.step(f"computing the deltas of {len(plan.targets)} map(s) (distributed)")
    return run_phases(view, plan, target, stats, timed=False)
