"""Order-book views (sql/orderbook) against the Spark oracle over the order-book stream
(new orders, executions and cancellations as deletes, partial executions as updates)."""
from __future__ import annotations

from pathlib import Path

import pytest
import viewlet

from .oracle import assert_view_matches, explain_parts, refresh

SQL_DIR = Path(__file__).resolve().parents[2] / "sql" / "orderbook"
QUERIES = ["vwap", "vwap_cached", "psp", "axf", "bsp", "bsv", "mst"]
# MST (four nested aggregates over a cross product, each trigger re-evaluating them over the
# old and the new values) plans ~25 s of Spark queries per batch: two batches
BATCHES = {"mst": 2}


def load(name: str):
    """(the file's SELECT, its WITH (...) clause or '') of a SELECT or CREATE statement file."""
    from viewlet.api import ddl
    from viewlet.frontend import lexical
    text = " ".join(lexical.strip_comments((SQL_DIR / f"{name}.sql").read_text()).split())
    if text.upper().startswith("CREATE"):
        st = ddl.parse(text)
        with_ = text[text.upper().index(" WITH ") + 1:text.upper().index(" AS ")]
        return st.query, with_
    return text, ""


@pytest.mark.parametrize("name", QUERIES)
def test_orderbook_view_equals_recompute(spark, vl, tmp_path, name):
    from viewlet.workloads import orderbook
    paths = orderbook.create(str(tmp_path / "book"))
    for side, path in paths.items():
        viewlet.register_table(spark, side, path, replace=True)
    stream = orderbook.OrderBookStream(paths, seed=len(name), depth=20)
    stream.apply(stream.next_batch(40))
    query, options = load(name)
    view = f"book_{name}"
    spark.sql(f"CREATE INCREMENTAL VIEW {view} {options} AS {query}")
    try:
        plan = explain_parts(spark, view)[0]
        assert ("view cache" in plan) == ("caches" in options), plan
        assert_view_matches(spark, view, query)
        for _ in range(BATCHES.get(name, 3)):
            stream.apply(stream.next_batch(15))
            refresh(spark, view)
            assert_view_matches(spark, view, query)
    finally:
        spark.sql(f"DROP INCREMENTAL VIEW IF EXISTS {view}")
