"""The distributed batch: the same plan on Spark, with nothing collected to the driver.

The Spark target (engine/batch.py `run_spark`) computes a batch's map deltas on Spark but
reads the changes, collects the deltas and writes every table from the driver: fine while a
batch fits the driver, and the fastest way for small ones. A batch larger than that, an
initial load of large tables and the compaction of a large map run here instead:

  * the changes are read by the executors from the files holding them
    (engine/spark/changes.py), netted per row there;
  * each phase of the plan (plan/batch.py) runs as one Spark query whose packed result is
    staged as Parquet in the batch's scratch directory; each map's delta is its rows of the
    staged phases, summed per key by Spark;
  * each map's delta, the result table's new files and a compacted map are written by the
    executors into the table's directory (engine/spark/files.py) and committed by the driver with
    the batch's transaction id (`TableStore.commit_files`): still one exactly-once commit
    per map per batch, reading only the files' footers on the driver;
  * the result table's touched groups are rewritten copy-on-write: the files holding a
    touched group (found by a Spark join, only file names come back) are replaced by their
    other rows plus the touched groups' new rows, in one commit.

Which batches run here: `engine = 'distributed'` (view option or spark.viewlet.engine), or,
under `auto`, a batch whose changes hold more than spark.viewlet.distributed.minChangeRows
rows (the log's row counts of the files holding them, read before any row is).
"""
from __future__ import annotations

from typing import Dict, List

from pyspark import StorageLevel
from pyspark.sql import DataFrame, functions as F

from ...plan.batch import TAG
from ...plan.lower import q
from ..spark.changes import change_frame
from ..spark.io import union_all
from .leaves import FrameLeaves
from .spark import sum_by_keys



def _stage(df: DataFrame, location: str) -> DataFrame:
    """`df` computed once, as Parquet files in the batch's scratch directory."""
    df.write.mode("overwrite").parquet(location)
    return df.sparkSession.read.schema(df.schema).parquet(location)


def map_deltas(view, record, spark, scratch, stats, progress, persisted) -> Dict[str, DataFrame]:
    """Every map's delta as a DataFrame (summed per key, zero rows dropped), computed by the
    plan's phases over the changes read and staged by the executors."""
    program = view.compiled.program
    changed = [r for r in program.relations() if record.ranges[r][1] > record.ranges[r][0]]
    deltas: Dict[str, DataFrame] = {}
    rows_in = {}
    for i, rel in enumerate(changed):
        after, to = record.ranges[rel]
        progress.step(f"reading the changes of {rel} (versions {after + 1}..{to}) on the executors")
        frame, _ = change_frame(spark, view.ctx.store, view.table_path(rel), after, to,
                                view.columns_of(rel),
                                from_files=bool(view.compiled.spec.tables[rel].view))
        staged = _stage(frame, f"{scratch}/changes{i}")
        rows_in[rel] = staged.count()
        if rows_in[rel]:
            deltas[rel] = staged
    stats["delta_rows"] = rows_in
    if not deltas:
        return {}
    plan = view.batch_plan(tuple(changed), tuple(r for r in changed if r in deltas))
    inputs = FrameLeaves(view, record, deltas, spark)
    pieces: Dict[str, List[DataFrame]] = {}
    collected: Dict[tuple, List[DataFrame]] = {}
    progress.step(f"computing the deltas of {len(plan.targets)} map(s) (distributed)")
    for i, phase in enumerate(plan.phases):
        frames = {name: inputs.bind(leaf) for name, leaf in phase.leaves.items()}
        packed = _stage(spark.sql(phase.spark_text, **frames), f"{scratch}/phase{i}")
        phase_pieces = _split(view, phase, packed)
        if len(plan.phases) > 1:        # what later phases read of this trigger
            for target, frames_ in phase_pieces.items():
                key = (target, phase.relations[-1])
                collected.setdefault(key, []).extend(frames_)
                inputs.pending[key] = _summed(view, target, collected[key])
        for target, frames_ in phase_pieces.items():
            pieces.setdefault(target, []).extend(frames_)
    stats["map_reads"] = inputs.reads
    stats["phases"] = len(plan.phases)
    out = {}
    for target, frames_ in pieces.items():
        total = _summed(view, target, frames_).persist(StorageLevel.MEMORY_AND_DISK)
        persisted.append(total)
        out[target] = total
    return out


def _split(view, phase, packed: DataFrame) -> Dict[str, List[DataFrame]]:
    """Per map: every member's rows of the staged phase result, as map rows (not summed);
    engine/batch.split_packed on the executors."""
    pieces: Dict[str, List[DataFrame]] = {}
    for b in phase.blocks:
        rows = packed.where(F.col(TAG) == F.lit(b.tag))
        for m in b.members:
            schema = view.map_schema(m.target)
            items = []
            for block_col, key, key_type in zip(m.keys, schema.keys, schema.key_types):
                slot = b.slots[f"p{b.tag}_g{int(block_col[1:])}"]
                items.append(f"CAST({q(slot)} AS {key_type}) AS {q(key)}")
            for c, t in schema.values.items():
                source = q(b.slots[m.out]) if c == m.column else "NULL"
                items.append(f"CAST({source} AS {t}) AS {q(c)}")
            pieces.setdefault(m.target, []).append(rows.selectExpr(*items))
    return pieces


def _summed(view, target: str, frames: List[DataFrame]) -> DataFrame:
    schema = view.map_schema(target)
    return sum_by_keys(union_all(frames), schema.keys, schema.values)

