"""Moving data between Delta (through the TableStore) and Spark DataFrames."""
from __future__ import annotations

import inspect
import threading
from contextlib import contextmanager
from typing import Iterable, Optional, Sequence
from urllib.parse import urlparse

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from ...storage.arrow import plain_types
from ...storage.base import Snapshot, TableStore
from .files import session_setting


def spark_schema(arrow_schema: pa.Schema) -> StructType:
    """Spark's types for Arrow's. The same on every pyspark: 4.1 changed the default for an
    Arrow timestamp without a time zone (TIMESTAMP before, TIMESTAMP_NTZ since); Viewlet
    keeps the first reading, which its tables were written with."""
    plain = plain_types(pa.table({f.name: pa.array([], f.type) for f in arrow_schema})).schema
    return from_arrow_schema(plain, prefer_timestamp_ntz=False)


def arrow_schema(schema: StructType) -> pa.Schema:
    """Arrow's types for Spark's: a TIMESTAMP is microseconds in UTC (as Delta stores it) on
    every pyspark (4.1 made the time zone an argument, without a default)."""
    if _TIMEZONE_ARGUMENT:
        return to_arrow_schema(schema, timezone="UTC")
    return to_arrow_schema(schema)


def _takes_timezone() -> bool:
    return "timezone" in inspect.signature(to_arrow_schema).parameters


_TIMEZONE_ARGUMENT = _takes_timezone()


def snapshot_frame(spark: SparkSession, snap: Snapshot, columns: Optional[Iterable[str]] = None) -> DataFrame:
    """A Delta snapshot as a DataFrame: Spark reads exactly the snapshot's Parquet files."""
    schema = spark_schema(snap.schema)
    if not snap.files:
        df = spark.createDataFrame([], schema)
    else:
        reader = spark.read.schema(schema)
        if snap.partition_columns:
            reader = reader.option("basePath", _base_path(snap))
        with _listed_on_driver(spark, snap.files):
            df = reader.parquet(*snap.files)
        if snap.deleted:
            df = _without_deleted(spark, df, snap)
    if columns is not None:
        df = df.select(*[f"`{c.replace('`', '``')}`" for c in columns])
    return df


#: Spark looks up every file a read names, in a Spark job of its own when they are more than
#: this setting (32 by default): 0.6-1.3 s for the 190 files of a TPC-H SF 1 table, at each
#: read of it (CREATE's type probe and load, a Spark batch's maps), where the driver looks up
#: local files in milliseconds. Local files are looked up on the driver; files on object
#: stores keep Spark's distributed listing (one request per file there).
_LISTING = "spark.sql.sources.parallelPartitionDiscovery.threshold"
_LISTING_LOCK = threading.Lock()


@contextmanager
def _listed_on_driver(spark: SparkSession, files: Sequence[str]):
    """Spark's read of `files` resolved with them looked up on the driver when they are local
    (the read resolves its files at once: the setting is restored right after)."""
    if not all(urlparse(f).scheme in ("", "file") for f in files):
        yield
        return
    with _LISTING_LOCK:             # concurrent reads (maps written side by side) restore in turn
        before = spark.conf.get(_LISTING, None)
        if before is not None and int(before) >= len(files):
            yield
            return
        with session_setting(spark, _LISTING, str(len(files))):
            yield


def _without_deleted(spark: SparkSession, df: DataFrame, snap: Snapshot) -> DataFrame:
    """The rows deletion vectors have not deleted: Parquet's row index per file (Spark's
    `_metadata` column), anti-joined with the deleted (file, row) pairs, on the executors."""
    rows = [(name, i) for name, gone in snap.deleted.items() for i in gone]
    deleted = spark.createDataFrame(rows, "__viewlet_file string, __viewlet_row long")
    tagged = df.select("*", df["_metadata.file_name"].alias("__viewlet_file"),
                       df["_metadata.row_index"].alias("__viewlet_row"))
    kept = tagged.join(deleted, ["__viewlet_file", "__viewlet_row"], "left_anti")
    return kept.drop("__viewlet_file", "__viewlet_row")


def read_table(spark: SparkSession, store: TableStore, path: str, version: Optional[int] = None,
               columns: Optional[Iterable[str]] = None) -> DataFrame:
    return snapshot_frame(spark, store.snapshot(path, version), columns)


def arrow_frame(spark: SparkSession, table: pa.Table, schema: Optional[StructType] = None) -> DataFrame:
    table = plain_types(table)
    if table.num_rows == 0:
        return spark.createDataFrame([], schema or spark_schema(table.schema))
    # one chunk per column: a table concatenated from a file's rows and computed rows came
    # back from createDataFrame with the first chunk's rows only (pyspark 4.0.1)
    df = spark.createDataFrame(table.combine_chunks())
    return df


def union_all(frames: Sequence[DataFrame]) -> DataFrame:
    """UNION ALL by column name of one or more DataFrames."""
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


def frame_arrow(df: DataFrame) -> pa.Table:
    return plain_types(df.toArrow())


def _base_path(snap: Snapshot) -> str:
    return snap.path.rstrip("/")
