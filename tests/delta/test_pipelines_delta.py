"""`viewlet pipelines` in a delta-spark session: the example project over catalog tables of
the pipeline's database, changed by delta-spark's INSERT / DELETE / UPDATE; every view is a
table of Spark's catalog under the name SDP gives it (spark_catalog.sales.<view>), equal to
Spark's evaluation of its query after each run, the incremental ones with a committed batch.
"""
from __future__ import annotations

import shutil

import pytest

from tests.session_state import viewlet_restored
from tests.pipelines.test_pipelines import (EXAMPLE, FULL, INCREMENTAL, ORACLE, line_of,
                                            needs_pipelines, oracle, run)


@pytest.fixture
def catalog_project(spark, vl, tmp_path):
    """The example over catalog tables, in a warehouse of its own (the session switched to it
    for the test and back after: tests/session_state.py)."""
    with viewlet_restored(spark):
        yield from _catalog_project(spark, tmp_path)


def _catalog_project(spark, tmp_path):
    import viewlet
    from viewlet.tools.pipelines import spec as specs

    folder = tmp_path / "sales"
    shutil.copytree(EXAMPLE, folder)
    vl = viewlet.enable(spark, str(tmp_path / "warehouse"))
    spark.sql(f"CREATE DATABASE sales LOCATION '{tmp_path / 'sales.db'}'")
    spark.sql("CREATE TABLE sales.orders (order_id BIGINT, customer_id BIGINT, "
              "amount DECIMAL(10,2), status STRING) USING delta "
              "TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    spark.sql("CREATE TABLE sales.customers (customer_id BIGINT, region STRING) USING delta "
              "TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    spark.sql("INSERT INTO sales.orders VALUES (1, 1, 120.00, 'shipped'), (2, 1, 35.50, 'open'), "
              "(3, 2, 80.00, 'shipped'), (4, 3, 15.25, 'cancelled'), (5, 3, 99.99, 'open'), "
              "(6, 4, 250.00, 'open')")
    spark.sql("INSERT INTO sales.customers VALUES (1, 'north'), (2, 'north'), (3, 'south'), "
              "(4, 'west')")
    spec_path = folder / "spark-pipeline.yml"
    yield vl, spec_path, specs.load(spec_path)
    for name in ("big_customers", "region_revenue", "customer_revenue"):
        spark.sql(f"DROP MATERIALIZED VIEW IF EXISTS {name}")
    spark.sql("DROP DATABASE IF EXISTS sales CASCADE")


def check_catalog(spark):
    """Each view by its full catalog name against Spark's evaluation (names resolved in the
    pipeline's database, as its queries were)."""
    from tests.spark.oracle import assert_view_matches
    current = spark.catalog.currentDatabase()
    spark.catalog.setCurrentDatabase("sales")
    try:
        for name in ORACLE:
            assert spark.catalog.tableExists(f"spark_catalog.sales.{name}"), name
            assert_view_matches(spark, f"spark_catalog.sales.{name}", oracle(name),
                                engine=False)
    finally:
        spark.catalog.setCurrentDatabase(current)


@needs_pipelines
def test_example_over_catalog_tables(spark, catalog_project):
    vl, spec_path, spec = catalog_project
    code, out = run(vl, spec_path, spec)
    assert code == 0, out
    check_catalog(spark)
    spark.sql("INSERT INTO sales.orders VALUES (7, 2, 40.00, 'open'), (8, 5, 60.00, 'open')")
    spark.sql("DELETE FROM sales.orders WHERE order_id = 3")
    spark.sql("UPDATE sales.orders SET status = 'cancelled' WHERE order_id = 6")
    spark.sql("INSERT INTO sales.customers VALUES (5, 'south')")
    spark.sql("UPDATE sales.customers SET region = 'west' WHERE customer_id = 3")
    code, out = run(vl, spec_path, spec)
    assert code == 0, out
    check_catalog(spark)
    for name in INCREMENTAL:
        assert "incremental, refreshed" in line_of(out, name), out
        statuses = [r.status for r in spark.sql(
            f"SELECT status FROM viewlet_history('{name}') ORDER BY batch").collect()]
        assert statuses[-1] == "committed", (name, statuses)
    for name, why in FULL.items():
        assert "full, recomputed" in line_of(out, name) and why in line_of(out, name), out
