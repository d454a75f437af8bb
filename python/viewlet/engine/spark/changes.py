"""A table's changes read by Spark's executors (a distributed batch), netted per row.

The store lists the files holding the changes (`TableStore.change_files`): change data
files, or the files commits removed and added with their deletion vectors. Spark reads them
(rows a deletion vector deletes left out by their Parquet row index), signs each row (+1 an
insert or post-image or added row, -1 a delete, pre-image or removed row) and sums the signs
per distinct row of the columns the view reads: the same pre-aggregated batch
`engine/batch.read_batch_changes` builds on the driver, without the rows ever reaching it.
"""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from ...storage.base import ChangeFile, TableStore
from .io import spark_schema
from ...plan.lower import MULT, q

_SIGN = "__viewlet_sign"
_CHANGE_TYPE = "_change_type"


def change_frame(spark: SparkSession, store: TableStore, path: str, after: int, to: int,
                 columns: Sequence[str], from_files: bool = False) -> Tuple[DataFrame, int]:
    """(the changes of versions (after, to] as rows of `columns` with their net
    multiplicity MULT (zero rows dropped), an upper bound of the change rows read)."""
    snap = store.snapshot(path, to)
    partitions = set(snap.partition_columns)
    table_schema = spark_schema(snap.schema)
    stored = StructType([f for f in table_schema.fields if f.name not in partitions])
    files = store.change_files(path, after, to, from_files)
    parts = [_signed(spark, group, stored, table_schema, kind, values, columns)
             for (kind, values, _), group in _groups(files).items()]
    out_schema = StructType([table_schema[c] for c in columns] +
                            [StructField(MULT, LongType(), False)])
    if not parts:
        return spark.createDataFrame([], out_schema), 0
    signed = parts[0]
    for p in parts[1:]:
        signed = signed.unionByName(p)
    keys = [q(c) for c in columns]
    netted = signed.groupBy(*[F.col(k) for k in keys]).agg(F.sum(_SIGN).alias(MULT)) if keys \
        else signed.agg(F.sum(_SIGN).alias(MULT))
    estimate = sum(f.rows if f.rows is not None else 1 << 20 for f in files)
    return netted.where(F.col(MULT) != 0), estimate


def _groups(files: List[ChangeFile]) -> Dict[tuple, List[ChangeFile]]:
    """Files read together: same kind, same partition values, and no file twice (a file
    whose deletion vector several commits of the range change comes once per commit, each
    time with other deleted rows)."""
    out: Dict[tuple, List[ChangeFile]] = {}
    seen: Dict[tuple, List[set]] = {}
    for f in files:
        kind = (f.kind, tuple(sorted(f.partition_values.items())))
        rounds = seen.setdefault(kind, [])
        i = next((i for i, uris in enumerate(rounds) if f.uri not in uris), len(rounds))
        if i == len(rounds):
            rounds.append(set())
        rounds[i].add(f.uri)
        out.setdefault(kind + (i,), []).append(f)
    return out


def _signed(spark, files: List[ChangeFile], stored: StructType, table_schema: StructType,
            kind: str, partition_values, columns: Sequence[str]) -> DataFrame:
    schema = StructType(stored.fields + [StructField(_CHANGE_TYPE, StringType())]) \
        if kind == "cdc" else stored
    df = spark.read.schema(schema).parquet(*[f.uri for f in files])
    deleted = [(f.uri.rsplit("/", 1)[-1], i) for f in files for i in f.deleted]
    if deleted:
        gone = spark.createDataFrame(deleted, "__viewlet_file string, __viewlet_row long")
        df = df.select("*", F.col("_metadata.file_name").alias("__viewlet_file"),
                       F.col("_metadata.row_index").alias("__viewlet_row")) \
            .join(F.broadcast(gone), ["__viewlet_file", "__viewlet_row"], "left_anti") \
            .drop("__viewlet_file", "__viewlet_row")
    for name, raw in partition_values:
        df = df.withColumn(name, F.lit(raw).cast(table_schema[name].dataType))
    if kind == "cdc":
        sign = F.when(F.col(_CHANGE_TYPE).isin("insert", "update_postimage"), F.lit(1)) \
            .otherwise(F.lit(-1))
    else:
        sign = F.lit(1 if kind == "add" else -1)
    return df.select(*[F.col(q(c)) for c in columns], sign.cast("long").alias(_SIGN))
