"""REFRESH POLICY (Databricks' clause): when a REFRESH recomputes the view instead of applying
its base tables' changes (engine/ops/refresh_policy.py). Without the clause a change a batch
cannot absorb is refused with the remedy (tests/ops/test_drift.py)."""
from __future__ import annotations

import shutil
from decimal import Decimal

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from pyspark.errors import AnalysisException

from tests.spark.oracle import assert_view_matches
from viewlet.errors import ViewletError

SCHEMA = pa.schema([("k", pa.int32()), ("v", pa.decimal128(10, 2))])


def _rows(n, start=0):
    return pa.table({"k": pa.array([(start + i) % 3 for i in range(n)], pa.int32()),
                     "v": pa.array([Decimal(start + i) / 4 for i in range(n)], SCHEMA.field("v").type)},
                    schema=SCHEMA)


@pytest.fixture
def table(tmp_path):
    path = str(tmp_path / "base")
    write_deltalake(path, _rows(6), configuration={"delta.enableChangeDataFeed": "true"})
    return path


def _view(spark, name, path, clause, options=""):
    query = f"SELECT k, SUM(v) AS sv, COUNT(*) AS n FROM delta.`{path}` GROUP BY k"
    spark.sql(f"CREATE MATERIALIZED VIEW {name} {clause} {options} AS {query}")
    return query


def _refresh(spark, name):
    return spark.sql(f"REFRESH MATERIALIZED VIEW {name}").collect()[0]


def _described(spark, name):
    return {r[1]: r[2] for r in spark.sql(f"DESCRIBE INCREMENTAL VIEW {name}").collect()}


def _statuses(spark, name):
    return [r.status for r in spark.sql(f"DESCRIBE INCREMENTAL VIEW {name} HISTORY").collect()]


def test_full_recomputes_each_refresh_and_rebuilds_a_replaced_table(spark, vl, table):
    query = _view(spark, "rp_full", table, "REFRESH POLICY FULL")
    described = _described(spark, "rp_full")
    assert described["refresh policy"] == "FULL"
    assert described["depth"] == "0 (recompute)"     # the view's state only, recomputed
    assert _refresh(spark, "rp_full").status == "up to date"
    write_deltalake(table, _rows(4, 10), mode="append")
    DeltaTable(table).delete("k = 1")
    assert _refresh(spark, "rp_full").status == "refreshed"
    assert_view_matches(spark, "rp_full", query)
    last = spark.sql("DESCRIBE INCREMENTAL VIEW rp_full HISTORY LIMIT 1").collect()[0]
    assert last.engine == "spark" and "recompute" in last.engine_reason
    shutil.rmtree(table)                                             # another table, same path
    write_deltalake(table, _rows(5, 40), configuration={"delta.enableChangeDataFeed": "true"})
    row = _refresh(spark, "rp_full")
    assert row.status.startswith("rebuilt") and "REFRESH POLICY FULL" in row.status
    assert_view_matches(spark, "rp_full", query)
    assert _statuses(spark, "rp_full")[:2] == ["rebuilt", "committed"]
    assert _described(spark, "rp_full")["depth"] == "0 (recompute)"   # kept by the rebuild
    with pytest.raises(AnalysisException, match="a depth of 2 contradicts it"):
        spark.sql(f"CREATE MATERIALIZED VIEW rp_full2 REFRESH POLICY FULL WITH (depth = 2) "
                  f"AS {query}")
    spark.sql("DROP MATERIALIZED VIEW rp_full")


def test_incremental_applies_changes_and_recomputes_a_replaced_table(spark, vl, table):
    query = _view(spark, "rp_inc", table, "REFRESH POLICY INCREMENTAL")
    write_deltalake(table, _rows(3, 20), mode="append")
    assert _refresh(spark, "rp_inc").status == "refreshed"           # changes applied
    assert_view_matches(spark, "rp_inc", query)
    shutil.rmtree(table)                                             # another table, same path
    write_deltalake(table, _rows(5, 40), configuration={"delta.enableChangeDataFeed": "true"})
    row = _refresh(spark, "rp_inc")
    assert row.status.startswith("rebuilt"), row.status
    assert "REFRESH POLICY INCREMENTAL:" in row.status and "was replaced" in row.status
    assert_view_matches(spark, "rp_inc", query)
    write_deltalake(table, _rows(2, 60), mode="append")
    assert _refresh(spark, "rp_inc").status == "refreshed"           # incremental again
    assert_view_matches(spark, "rp_inc", query)
    assert _statuses(spark, "rp_inc")[:3] == ["committed", "rebuilt", "committed"]
    spark.sql("DROP MATERIALIZED VIEW rp_inc")


def test_auto_recomputes_when_the_change_feed_was_turned_off(spark, vl, table):
    query = _view(spark, "rp_auto", table, "REFRESH POLICY AUTO",
                  "WITH (enable_change_data_feed = true)")
    DeltaTable(table).alter.set_table_properties({"delta.enableChangeDataFeed": "false"})
    write_deltalake(table, _rows(2, 20), mode="append")
    row = _refresh(spark, "rp_auto")
    assert "REFRESH POLICY AUTO" in row.status and "change data feed turned off" in row.status
    assert_view_matches(spark, "rp_auto", query)
    write_deltalake(table, _rows(2, 30), mode="append")       # the recompute turned it on
    assert _refresh(spark, "rp_auto").status == "refreshed"
    assert_view_matches(spark, "rp_auto", query)
    spark.sql("DROP MATERIALIZED VIEW rp_auto")


def test_strict_refuses_what_is_not_incremental_and_recomputes_a_retyped_column(spark, vl, table):
    query = _view(spark, "rp_strict", table, "REFRESH POLICY INCREMENTAL STRICT")
    DeltaTable(table).alter.set_table_properties({"delta.enableChangeDataFeed": "false"})
    write_deltalake(table, _rows(2, 20), mode="append")
    before = spark.sql("SELECT * FROM rp_strict").collect()
    with pytest.raises(AnalysisException) as err:
        _refresh(spark, "rp_strict")
    text = str(err.value)
    assert "MATERIALIZED_VIEW_NOT_INCREMENTALIZABLE" in text and "INCREMENTAL STRICT" in text
    assert "change data feed turned off" in text and "internal error" not in text.lower()
    assert sorted(spark.sql("SELECT * FROM rp_strict").collect()) == sorted(before)
    assert _statuses(spark, "rp_strict")[0] == "failed"
    DeltaTable(table).alter.set_table_properties({"delta.enableChangeDataFeed": "true"})
    retyped = pa.schema([("k", pa.int32()), ("v", pa.float64())])
    write_deltalake(table, pa.table({"k": pa.array([1, 2], pa.int32()),
                                     "v": pa.array([0.5, 1.5])}, schema=retyped),
                    mode="overwrite", schema_mode="overwrite")
    row = _refresh(spark, "rp_strict")            # a re-initialization: recomputed
    assert "changed the type of column v" in row.status
    assert_view_matches(spark, "rp_strict", query)
    spark.sql("DROP MATERIALIZED VIEW rp_strict")


def test_policy_names_are_checked(spark, vl, table):
    with pytest.raises(ViewletError, match="refresh_policy must be one of AUTO, INCREMENTAL"):
        vl.create_view("rp_bad", f"SELECT k FROM delta.`{table}`", refresh_policy="sometimes")
    assert vl.ctx.catalog.find("rp_bad") is None
    created = vl.create_view("rp_py", f"SELECT k, COUNT(*) AS n FROM delta.`{table}` GROUP BY k",
                             refresh_policy="incremental  strict")
    assert created.status == "created"
    assert _described(spark, "rp_py")["refresh policy"] == "INCREMENTAL STRICT"
    vl.drop_view("rp_py")
