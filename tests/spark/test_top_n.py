"""Top-N views (ORDER BY ... LIMIT) against the Spark oracle on NULL-heavy random workloads
with duplicates: after every batch the view holds Spark's answer modulo ties (as many rows,
the same multiset of ORDER BY keys, each a row of the query without LIMIT).

The slack of the ordered table is cut to one row here, so that deletes often leave it short
and batches take every path of engine/maintain/topn.py: rows replaced, new rows before and after
the last row kept, the table complete or not, recomputed from the view state."""
from __future__ import annotations

import zlib

import pytest

from .oracle import assert_top_n_matches, refresh
from .workload import registered_workload

VIEWS = {
    # groups with NULL keys, NULL sums ordered last, ties on the count broken by the key
    "aggregate_desc_nulls":
        "SELECT r.b, COUNT(*) AS n, SUM(r.c) AS sc FROM r GROUP BY r.b "
        "ORDER BY sc DESC NULLS LAST, n LIMIT 2",
    # a bag with duplicate rows, OFFSET, a join whose keys may be NULL
    "bag_offset":
        "SELECT r.a, r.c, s.e FROM r JOIN s ON r.b = s.b ORDER BY r.c, 3 DESC LIMIT 3 OFFSET 1",
    # LIMIT without ORDER BY: any rows, Viewlet's are the first by the output columns
    "distinct_limit": "SELECT DISTINCT t.e, t.h FROM t LIMIT 2",
    # MAX kept as a multiset, HAVING, ordering by a string key and a decimal
    "max_having":
        "SELECT t.h, MAX(s.f) AS mf, COUNT(*) AS n FROM s JOIN t ON s.e = t.e GROUP BY t.h "
        "HAVING COUNT(*) > 1 ORDER BY mf DESC, h LIMIT 1",
    # a UNION ALL ordered by its column, AVG of doubles in the rows
    "union_order":
        "SELECT u.k, COUNT(*) AS n, AVG(u.v) AS av FROM (SELECT r.a AS k, r.d AS v FROM r "
        "UNION ALL SELECT s.e, CAST(s.f AS DOUBLE) FROM s) u GROUP BY u.k ORDER BY k DESC LIMIT 2",
}
BATCHES = 4


@pytest.fixture
def small_slack(monkeypatch):
    from viewlet.engine.maintain import topn as ordered
    monkeypatch.setattr(ordered, "SLACK_MAX", 1)


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_top_n_equals_spark_modulo_ties(spark, vl, tmp_path, small_slack, name):
    work = registered_workload(spark, str(tmp_path), zlib.crc32(name.encode()), rows=16,
                               null_heavy=True)
    view, query = f"v_top_{name}", VIEWS[name]
    spark.sql(f"CREATE INCREMENTAL VIEW {view} AS {query}")
    try:
        assert_top_n_matches(spark, view, query)
        for _ in range(BATCHES):
            work.batch()
            refresh(spark, view)
            assert_top_n_matches(spark, view, query)
    finally:
        spark.sql(f"DROP INCREMENTAL VIEW IF EXISTS {view}")


def test_deletes_below_the_limit_recompute_from_the_state(spark, vl, tmp_path, small_slack):
    """Deleting the top rows leaves the ordered table short: the batch recomputes it from
    the view state (not from the tables), and the view is Spark's answer; EXPLAIN says how
    the rows are kept."""
    from deltalake import DeltaTable
    work = registered_workload(spark, str(tmp_path), 5, rows=30)
    query = "SELECT r.a, r.b, COUNT(*) AS n FROM r GROUP BY r.a, r.b ORDER BY a DESC, b LIMIT 3"
    spark.sql(f"CREATE INCREMENTAL VIEW v_top_short AS {query}")
    try:
        assert_top_n_matches(spark, "v_top_short", query)
        top = spark.sql("SELECT MAX(a) AS m FROM r").collect()[0].m
        DeltaTable(work.paths["r"]).delete(f"a = {top}")
        spark.sql("REFRESH INCREMENTAL VIEW v_top_short")
        assert_top_n_matches(spark, "v_top_short", query)
        stats = vl.ctx.load("v_top_short").manifest.last_committed().stats
        assert stats["ordered"]["recomputed"] is True, stats["ordered"]
        work.batch()
        spark.sql("REFRESH INCREMENTAL VIEW v_top_short")
        assert_top_n_matches(spark, "v_top_short", query)
        text = "\n".join(r[0] for r in spark.sql("EXPLAIN INCREMENTAL VIEW v_top_short").collect())
        assert "top-N: ORDER BY a DESC NULLS LAST, b ASC NULLS FIRST LIMIT 3" in text
        assert "ordered table: the first 4 rows" in text and "recompute:" in text
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS v_top_short")


def test_the_driver_sorts_as_spark_orders(spark):
    """engine/maintain/topn.py sorts kept rows on the driver (Arrow) and relies on Spark's order:
    NULLS FIRST / LAST, NaN above every number, -0.0 equal to 0.0, strings by their bytes,
    decimals and dates by value, in either direction."""
    import datetime
    import math
    import random
    from decimal import Decimal

    import pyarrow as pa
    from viewlet.engine.maintain import topn as ordered
    rng = random.Random(3)
    schema = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("s", pa.string()),
                        ("d", pa.decimal128(10, 2)), ("t", pa.date32())])
    rows = [{"id": i,
             "x": rng.choice([None, float("nan"), -0.0, 0.0, -1.5, 2.0, float("inf")]),
             "s": rng.choice([None, "a", "B", "é", "ab", "", "\U0001F600", "z"]),
             "d": rng.choice([None, Decimal("-1.00"), Decimal("0.00"), Decimal("2.50")]),
             "t": rng.choice([None, datetime.date(1995, 3, 15), datetime.date(1970, 1, 1)])}
            for i in range(60)]
    table = pa.Table.from_pylist(rows, schema)
    from viewlet.engine.spark.io import arrow_frame
    arrow_frame(spark, table).createOrReplaceTempView("vl_sort_probe")
    for _ in range(6):
        items = [(c, rng.random() < 0.5, rng.random() < 0.5) for c in rng.sample("xsdt", 4)]
        order = ", ".join(f"{c} {'DESC' if d else 'ASC'} NULLS {'FIRST' if n else 'LAST'}"
                          for c, d, n in items)
        want = [tuple(r) for r in spark.sql(f"SELECT {', '.join(c for c, _, _ in items)} "
                                            f"FROM vl_sort_probe ORDER BY {order}").collect()]
        got = ordered.sort_rows(table, items).select([c for c, _, _ in items]).to_pylist()
        got = [tuple(r.values()) for r in got]

        def same(a, b):
            if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
                return math.isnan(b)
            return a == b
        assert all(len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
                   for a, b in zip(got, want)), (order, got, want)
