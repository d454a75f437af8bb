"""Base tables changing under a view: each problem is detected at REFRESH with its remedy,
and REFRESH ... FULL rebuilds the view from the current data (new directory, entry swapped)."""
from __future__ import annotations

import os
import shutil
from decimal import Decimal

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from pyspark.errors import AnalysisException

from tests.spark.oracle import assert_view_matches

SCHEMA = pa.schema([("k", pa.int32()), ("v", pa.decimal128(10, 2))])


def _rows(n, start=0, schema=SCHEMA):
    data = {"k": pa.array([(start + i) % 3 for i in range(n)], pa.int32()),
            "v": pa.array([Decimal(start + i) / 4 for i in range(n)], schema.field("v").type)}
    return pa.table(data, schema=schema)


@pytest.fixture
def table(tmp_path):
    path = str(tmp_path / "base")
    write_deltalake(path, _rows(6), configuration={"delta.enableChangeDataFeed": "true"})
    return path


def _view(spark, name, path):
    query = f"SELECT k, SUM(v) AS sv, COUNT(*) AS n FROM delta.`{path}` GROUP BY k"
    spark.sql(f"CREATE INCREMENTAL VIEW {name} AS {query}")
    return query


def _refresh_fails(spark, name, *needles):
    with pytest.raises(AnalysisException) as err:
        spark.sql(f"REFRESH INCREMENTAL VIEW {name}")
    text = str(err.value)
    assert "internal error" not in text.lower(), text
    for n in needles:
        assert n in text, text
    return text


def _full(spark, vl, name, query):
    old = vl.ctx.catalog.find(name).location
    row = spark.sql(f"REFRESH INCREMENTAL VIEW {name} FULL").collect()[0]
    assert row.status == "rebuilt"
    new = vl.ctx.catalog.find(name).location
    assert new != old and not os.path.exists(old)
    assert [e.name for e in vl.ctx.catalog.entries("view")].count(name) == 1
    assert_view_matches(spark, name, query)


def test_added_columns_are_ignored(spark, vl, table):
    query = _view(spark, "dr_added", table)
    wide = SCHEMA.append(pa.field("note", pa.string()))
    write_deltalake(table, _rows(3, 10).append_column("note", pa.array(["x"] * 3)),
                    mode="append", schema_mode="merge")
    assert wide.names == DeltaTable(table).schema().to_arrow().names
    spark.sql("REFRESH INCREMENTAL VIEW dr_added")
    assert_view_matches(spark, "dr_added", query)
    spark.sql("DROP INCREMENTAL VIEW dr_added")


def test_change_feed_turned_off(spark, vl, table):
    query = _view(spark, "dr_feed", table)
    DeltaTable(table).alter.set_table_properties({"delta.enableChangeDataFeed": "false"})
    write_deltalake(table, _rows(2, 20), mode="append")
    _refresh_fails(spark, "dr_feed", "change data feed turned off", "FULL")
    version = DeltaTable(table).version()
    with pytest.raises(AnalysisException, match="enable_change_data_feed = true"):
        spark.sql("REFRESH INCREMENTAL VIEW dr_feed FULL")     # no consent to write the table
    assert DeltaTable(table).version() == version
    DeltaTable(table).alter.set_table_properties({"delta.enableChangeDataFeed": "true"})
    _full(spark, vl, "dr_feed", query)
    write_deltalake(table, _rows(2, 30), mode="append")
    spark.sql("REFRESH INCREMENTAL VIEW dr_feed")
    assert_view_matches(spark, "dr_feed", query)
    spark.sql("DROP INCREMENTAL VIEW dr_feed")


def test_table_replaced_at_the_same_path(spark, vl, table):
    query = _view(spark, "dr_replaced", table)
    write_deltalake(table, _rows(1, 40), mode="append")
    shutil.rmtree(table)
    for i in range(4):      # a new table that has reached a later version than the view's
        write_deltalake(table, _rows(3, 50 + i), mode="append",
                        configuration={"delta.enableChangeDataFeed": "true"})
    _refresh_fails(spark, "dr_replaced", "was replaced", "FULL")
    _full(spark, vl, "dr_replaced", query)
    spark.sql("DROP INCREMENTAL VIEW dr_replaced")


def test_table_dropped(spark, vl, table):
    _view(spark, "dr_dropped", table)
    shutil.rmtree(table)
    _refresh_fails(spark, "dr_dropped", "no longer exists", "DROP INCREMENTAL VIEW dr_dropped")
    spark.sql("DROP INCREMENTAL VIEW dr_dropped")


def test_column_retyped_then_rebuilt_against_the_live_schema(spark, vl, table):
    query = _view(spark, "dr_retyped", table)
    retyped = pa.schema([("k", pa.int32()), ("v", pa.float64())])
    data = pa.table({"k": pa.array([1, 2], pa.int32()), "v": pa.array([0.5, 1.5])}, schema=retyped)
    write_deltalake(table, data, mode="overwrite", schema_mode="overwrite")
    _refresh_fails(spark, "dr_retyped", "changed the type of column v", "decimal(10,2)", "double")
    _full(spark, vl, "dr_retyped", query)
    spark.sql("DROP INCREMENTAL VIEW dr_retyped")


def test_column_dropped(spark, vl, table):
    _view(spark, "dr_col", table)
    narrow = pa.table({"k": pa.array([1], pa.int32())})
    write_deltalake(table, narrow, mode="overwrite", schema_mode="overwrite")
    _refresh_fails(spark, "dr_col", "no longer has column v")
    with pytest.raises(AnalysisException, match="v"):   # the query itself no longer compiles
        spark.sql("REFRESH INCREMENTAL VIEW dr_col FULL")
    assert vl.ctx.catalog.find("dr_col") is not None          # the failed rebuild changed nothing
    spark.sql("DROP INCREMENTAL VIEW dr_col")


def test_history_vacuumed_past_the_watermark(spark, vl, table):
    query = _view(spark, "dr_vacuum", table)
    DeltaTable(table).delete("k = 1")                 # its change rows live in files ...
    write_deltalake(table, _rows(2, 60), mode="overwrite")
    DeltaTable(table).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    _refresh_fails(spark, "dr_vacuum", "FULL")         # ... that vacuum removed
    _full(spark, vl, "dr_vacuum", query)
    spark.sql("DROP INCREMENTAL VIEW dr_vacuum")
