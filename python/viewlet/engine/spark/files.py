"""Spark's executors writing rows into a Delta table's directory, for the driver to commit.

A distributed batch (batch/distributed.py, maintain/distributed.py) never collects its rows:
each map's delta and the result table's new files are written by the executors as Parquet
files in a directory of their own inside the table (`<table>/<tag>-<random>/part-*.parquet`),
then committed with the batch's transaction id by the store (`TableStore.commit_files`),
which reads only their footers for the add actions' statistics. Files of a write that never
commits are not in any version: vacuum removes them.
"""
from __future__ import annotations

import contextlib
import os
import uuid
from typing import List, Optional, Sequence
from urllib.parse import unquote, urlparse

from pyspark.sql import DataFrame

from ...storage.base import DataFile, TableStore

#: Hadoop settings of the write: no _SUCCESS marker (it would stay behind in the table)
_WRITE_OPTIONS = {"compression": "snappy",
                  "mapreduce.fileoutputcommitter.marksuccessfuljobs": "false"}


_TIMESTAMP_TYPE = "spark.sql.parquet.outputTimestampType"


@contextlib.contextmanager
def session_setting(spark, key: str, value: str):
    """SQL setting `key` is `value` on `spark` for the duration of the block, then restored."""
    before = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def timestamps_as_micros(spark):
    """Parquet timestamps written as INT64 microseconds, as Delta tables hold them (Spark's
    default is INT96), for the duration of the block: set on the session that writes (a
    batch's own session; the user's for the moments a CREATE writes), then restored."""
    return session_setting(spark, _TIMESTAMP_TYPE, "TIMESTAMP_MICROS")


def without_broadcasts(spark):
    """No broadcast joins for the duration of the block. Staged Parquet files of repetitive
    rows are far smaller than the rows, so Spark's size estimate from the files can send a
    relation larger than the driver's heap to a broadcast."""
    return session_setting(spark, "spark.sql.autoBroadcastJoinThreshold", "-1")


def write_into(store: TableStore, df: DataFrame, table_path: str, tag: str,
               rows_per_file: Optional[int] = None) -> List[DataFile]:
    """Write `df` as Parquet files into a new directory of the table at `table_path`; the
    files with rows, described for their add actions (files without rows are deleted)."""
    folder = f"{tag}-{uuid.uuid4().hex[:12]}"
    target = f"{table_path.rstrip('/')}/{folder}"
    writer = df.write.mode("errorifexists").options(**_WRITE_OPTIONS)
    if rows_per_file:
        writer = writer.option("maxRecordsPerFile", str(int(rows_per_file)))
    writer.parquet(target)
    names = _written(df.sparkSession, target)
    files = store.describe_files(table_path, [f"{folder}/{n}" for n in names])
    empty = [f for f in files if f.rows == 0]
    if empty:
        _remove(target, [f.path.rsplit("/", 1)[-1] for f in empty])
    return [f for f in files if f.rows > 0]


def relative_to(table_path: str, uri: str) -> str:
    """A file's path relative to its table's root, from the location Spark reports."""
    root = urlparse(table_path).path if "://" in table_path or table_path.startswith("file:") \
        else table_path
    path = unquote(urlparse(uri).path) if "://" in uri or uri.startswith("file:") else uri
    root = root.rstrip("/") + "/"
    return path[len(root):] if path.startswith(root) else path


def _written(spark, target: str) -> Sequence[str]:
    """The data files of a finished write, by name. On a local file system the write also
    leaves checksum files (.crc), removed here so nothing but data stays in the table."""
    parsed = urlparse(target)
    if parsed.scheme in ("", "file"):
        local = parsed.path if parsed.scheme else target
        names = sorted(os.listdir(local))
        _remove(target, [n for n in names if not n.endswith(".parquet")])
        return [n for n in names if n.endswith(".parquet") and not n.startswith((".", "_"))]
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(target)
    fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
    return sorted(s.getPath().getName() for s in fs.listStatus(path)
                  if s.getPath().getName().endswith(".parquet")
                  and not s.getPath().getName().startswith((".", "_")))


def _remove(target: str, names: Sequence[str]) -> None:
    parsed = urlparse(target)
    if parsed.scheme not in ("", "file"):
        return          # object stores: no checksum files; empty files stay uncommitted
    local = parsed.path if parsed.scheme else target
    for n in names:
        try:
            os.remove(os.path.join(local, n))
        except OSError:
            pass
