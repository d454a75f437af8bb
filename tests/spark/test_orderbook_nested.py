"""Order-book views (sql/orderbook) against the Spark oracle over the order-book stream
(new orders, executions and cancellations as deletes, partial executions as updates)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import viewlet

from .oracle import assert_view_matches

SQL_DIR = Path(__file__).resolve().parents[2] / "sql" / "orderbook"
# MST (four nested aggregates over a cross product) takes minutes: opt in with
# VIEWLET_SLOW_ORACLE=1.
QUERIES = ["vwap", "psp", "axf", "bsp", "bsv"] + (
    ["mst"] if os.environ.get("VIEWLET_SLOW_ORACLE") == "1" else [])
BATCHES = 3


def load(name: str) -> str:
    from viewlet.ddl import strip_comments
    return " ".join(strip_comments((SQL_DIR / f"{name}.sql").read_text()).split())


@pytest.mark.parametrize("name", QUERIES)
def test_orderbook_view_equals_recompute(spark, vl, tmp_path, name):
    from viewlet.workloads import orderbook
    paths = orderbook.create(str(tmp_path / "book"))
    for side, path in paths.items():
        viewlet.register_table(spark, side, path, replace=True)
    stream = orderbook.OrderBookStream(paths, seed=len(name), depth=20)
    stream.apply(stream.next_batch(40))
    query = load(name)
    view = f"book_{name}"
    spark.sql(f"CREATE INCREMENTAL VIEW {view} AS {query}")
    try:
        assert_view_matches(spark, view, query)
        for _ in range(BATCHES):
            stream.apply(stream.next_batch(15))
            spark.sql(f"REFRESH INCREMENTAL VIEW {view}")
            assert_view_matches(spark, view, query)
    finally:
        spark.sql(f"DROP INCREMENTAL VIEW IF EXISTS {view}")
