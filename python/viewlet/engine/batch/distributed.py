"""The distributed target: the same plan on Spark, with nothing collected to the driver.

The Spark target (batch/spark.py) computes a batch's map deltas on Spark but reads the
changes, collects the deltas and writes every table from the driver: fine while a batch
fits the driver, and the fastest way for small ones. A batch larger than that runs here:

  * the changes are read by the executors from the files holding them (spark/changes.py),
    netted per row there, and staged as Parquet in the batch's scratch directory;
  * each phase of the plan runs as one Spark query whose packed result is staged the same
    way, a directory per block; each map's delta is its blocks' rows of the staged phases,
    summed per key by Spark (a map load's blocks are summed in the query already);
  * the deltas stay DataFrames: the executors write them (maintain/distributed.py).

Which batches run here: batch/policy.py.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from pyspark import StorageLevel
from pyspark.sql import DataFrame, functions as F

from ...plan.batch import Phase, TAG
from ...plan.lower import q
from ..spark.changes import change_frame
from ..spark.files import timestamps_as_micros
from ..spark.io import union_all
from ..state.settings import DISTRIBUTED
from .leaves import FrameLeaves
from .spark import batch_session, sum_by_keys
from .target import Target, member_columns, sharing_rows


def stage(df: DataFrame, location: str, by: Optional[str] = None) -> DataFrame:
    """`df` computed once, as Parquet files in the batch's scratch directory; `by`: in a
    directory per value of that column, so that a filter on it reads only its files."""
    writer = df.write.mode("overwrite")
    (writer.partitionBy(by) if by is not None else writer).parquet(location)
    return df.sparkSession.read.schema(df.schema).parquet(location)


class DistributedTarget(Target):
    """A batch on the executors, in a batch session of its own sized by `change_rows` (the
    policy's estimate): its scratch directory and the deltas it persisted live until the
    block ends, so the maps and the result can be written from them. `summed`: each
    block's rows summed by key in the phase's query (a map load: ops/load.py)."""

    name = DISTRIBUTED

    def __init__(self, view, record, change_rows: int, summed: bool = False):
        self.view, self.record = view, record
        self.summed = summed          # blocks summed by key in the phase's query (a load)
        self.unsummed = set()         # maps whose rows may repeat a key in a summed piece
        self._origins: Dict[str, List[Tuple[int, int]]] = {}   # map -> (phase, block tag)
        self._staged: List[DataFrame] = []                      # each phase's packed rows
        self._block_rows: Dict[int, Dict[int, int]] = {}        # phase -> tag -> rows
        self.spark = batch_session(view, change_rows)
        self.scratch = view.scratch_dir(record.batch)
        self.persisted: List[DataFrame] = []
        self.leaves = None            # bound once the changes are read
        self._micros = timestamps_as_micros(self.spark)

    def __enter__(self) -> "DistributedTarget":
        self._micros.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._micros.__exit__(*exc)
        finally:
            for df in self.persisted:
                df.unpersist()
            self.view.ctx.store.drop(self.scratch)

    def changes(self, relation: str, after: int, to: int, i: int) -> Tuple[DataFrame, int]:
        """The relation's changes in (after, to], read, netted and staged by the executors;
        with their row count."""
        view = self.view
        frame, _ = change_frame(self.spark, view.ctx.store, view.table_path(relation), after, to,
                                view.columns_of(relation),
                                from_files=bool(view.compiled.spec.tables[relation].view))
        staged = stage(frame, f"{self.scratch}/changes{i}")
        return staged, staged.count()

    def bind(self, deltas: Dict[str, DataFrame]) -> None:
        self.leaves = FrameLeaves(self.view, self.record, deltas, self.spark)

    def execute(self, phase: Phase) -> DataFrame:
        frames = {name: self.leaves.bind(leaf) for name, leaf in phase.leaves.items()}
        text = phase.summed_spark_text if self.summed else phase.spark_text
        # by block: each map's rows are read from its blocks' files only
        packed = stage(self.spark.sql(text, **frames),
                        f"{self.scratch}/phase{len(self._staged)}", by=TAG)
        self._staged.append(packed)
        return packed

    def split(self, view, phase: Phase, packed: DataFrame) -> Dict[str, List[DataFrame]]:
        pieces: Dict[str, List[DataFrame]] = {}
        for b in phase.blocks:
            rows = packed.where(F.col(TAG) == F.lit(b.tag))
            for members in sharing_rows(b):     # one copy of the rows per group
                keys, values = member_columns(view, b, members)
                self.note_summed(view, b, members[0])
                items = [f"CAST({q(s.packed) if s.packed is not None else 'NULL'} AS {s.type}) "
                         f"AS {q(s.column)}" for s in keys + values]
                pieces.setdefault(members[0].target, []).append(rows.selectExpr(*items))
                self._origins.setdefault(members[0].target, []).append(
                    (len(self._staged) - 1, b.tag))
        return pieces

    def rows_bound(self, name: str) -> int:
        """At most the rows of map `name`'s delta: its blocks' staged rows (counted once
        per phase, in one job)."""
        total = 0
        for phase, tag in self._origins.get(name, ()):
            if phase not in self._block_rows:
                counts = self._staged[phase].groupBy(TAG).count().collect()
                self._block_rows[phase] = {row[0]: row[1] for row in counts}
            total += self._block_rows[phase].get(tag, 0)
        return total

    def sum(self, view, name: str, pieces: List[DataFrame]) -> DataFrame:
        schema = view.map_schema(name)
        return sum_by_keys(union_all(pieces), schema.keys, schema.values)

    def total(self, view, name: str, pieces: List[DataFrame], carried=None) -> DataFrame:
        # `carried` is not reused: a sum later phases read is a plan, the total is persisted
        if self.summed_already(name, pieces):
            return self.carried(view, name, pieces)     # written as staged: no shuffle
        total = self.sum(view, name, pieces).persist(StorageLevel.MEMORY_AND_DISK)
        self.persisted.append(total)
        return total
