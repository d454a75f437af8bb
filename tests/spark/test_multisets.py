"""MIN / MAX and COUNT / SUM / AVG(DISTINCT) against the Spark oracle: views whose results
are read from per-group multisets (sql/multisets.py), nested aggregates of those kinds in
WHERE / SELECT / HAVING subqueries, and a WITH clause, over NULL-heavy random batches with
duplicate rows, deletes (of the current extremes too), updates that move values (the
workload's updates write values no row had: new maxima) and groups that empty out.

The compiler tests (tests/compiler/test_multisets.py) try many more shapes against DuckDB
without Spark; these keep the Spark lowering and result derivation honest."""
from __future__ import annotations

import zlib

import pytest

from .oracle import check_view_through_batches, explain_parts
from .workload import registered_workload

VIEWS = {
    # every kind in one grouped view, mixed with plain aggregates; decimals and doubles
    "grouped_kinds":
        "SELECT r.a, MIN(r.c) AS mn, MAX(r.c) AS mx, COUNT(DISTINCT r.b) AS cb, "
        "SUM(DISTINCT r.c) AS sc, AVG(DISTINCT r.d) AS ad, MAX(DISTINCT r.d) AS md, "
        "COUNT(*) AS n, SUM(r.d) AS sd FROM r GROUP BY r.a",
    # strings and dates, a group key that is NULL, groups that empty out (deletes by e)
    "strings_dates":
        "SELECT t.e, MIN(t.h) AS mh, MAX(t.h) AS xh, MIN(date_add(DATE '2024-01-01', t.g)) "
        "AS md, COUNT(DISTINCT t.h) AS ch FROM t GROUP BY t.e",
    # global aggregates, over input that is empty until updates write g > 100
    "global_mostly_empty":
        "SELECT MIN(t.h) AS mh, MAX(t.g) AS mg, COUNT(DISTINCT t.g) AS cg, "
        "SUM(DISTINCT t.g) AS sg, AVG(DISTINCT t.g) AS ag, COUNT(*) AS n FROM t WHERE t.g > 100",
    # MIN / MAX over an outer join: padded NULLs are no values
    "outer_join":
        "SELECT s.e, MIN(r.c) AS mn, MAX(r.d) AS mx, COUNT(DISTINCT r.a) AS ca, COUNT(*) AS n "
        "FROM s LEFT JOIN r ON r.b = s.b GROUP BY s.e",
    # a correlated MIN in WHERE and a COUNT(DISTINCT) under an inequality
    "nested_where":
        "SELECT r.a, COUNT(*) AS n, SUM(r.c) AS sc FROM r WHERE r.c >= (SELECT MIN(s.f) FROM s "
        "WHERE s.b = r.b) OR r.a < (SELECT COUNT(DISTINCT t.g) FROM t WHERE t.e > r.a) "
        "GROUP BY r.a",
    # MIN / MAX / DISTINCT in SELECT and HAVING subqueries
    "select_having":
        "SELECT r.a, COUNT(*) AS n, (SELECT MAX(s.f) FROM s WHERE s.b = r.a) AS mf, "
        "(SELECT MIN(t.h) FROM t) AS mh FROM r GROUP BY r.a, 3 "
        "HAVING COUNT(*) + 2 > (SELECT COUNT(DISTINCT t.g) FROM t WHERE t.e = r.a)",
    # a view without aggregates (bag copies) with a MIN subquery per row: its input r.b is a
    # hidden state key, the multiset is keyed by the state's keys
    "select_bag": "SELECT r.a, (SELECT MIN(t.h) FROM t WHERE t.e = r.b) AS mh FROM r",
    # an aggregating FROM subquery with MIN and COUNT(DISTINCT) per group (NULL keys are
    # groups), joined and compared
    "from_subquery":
        "SELECT x.b, COUNT(*) AS n, MAX(x.ce) AS mce FROM (SELECT s.b, MIN(s.f) AS m, "
        "COUNT(DISTINCT s.e) AS ce FROM s GROUP BY s.b) x JOIN r ON r.a = x.b "
        "WHERE r.c > x.m OR x.m IS NULL GROUP BY x.b",
    # a WITH clause read twice, compared with its MAX (TPC-H Q15's shape)
    "with_max":
        "WITH tot AS (SELECT s.e AS k, SUM(s.f) AS total FROM s GROUP BY s.e) "
        "SELECT tot.k, tot.total FROM tot WHERE tot.total = (SELECT MAX(total) FROM tot)",
}
BATCHES = 2


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_multiset_view_equals_recompute_after_every_batch(spark, vl, tmp_path, name):
    work = registered_workload(spark, str(tmp_path), zlib.crc32(f"ms/{name}".encode()),
                               null_heavy=True)
    check_view_through_batches(spark, work, f"v_ms_{name}", VIEWS[name], None, BATCHES)


def test_multiset_view_at_depth_one(spark, vl, tmp_path):
    work = registered_workload(spark, str(tmp_path), zlib.crc32(b"ms/depth1"), null_heavy=True)
    check_view_through_batches(spark, work, "v_ms_depth1", VIEWS["grouped_kinds"], 1, BATCHES)


def test_nested_multisets_under_inequalities_with_view_caches(spark, vl, tmp_path):
    """A MIN and a COUNT(DISTINCT) correlated by inequalities, kept as view caches (maps keyed
    by input and value, compiler/caches.py)."""
    work = registered_workload(spark, str(tmp_path), zlib.crc32(b"ms/caches"), null_heavy=True)
    query = ("SELECT r.a, COUNT(*) AS n FROM r WHERE r.c > (SELECT MIN(s.f) FROM s WHERE s.b > r.b) "
             "OR r.a < (SELECT COUNT(DISTINCT t.g) FROM t WHERE t.e > r.a) GROUP BY r.a")
    plans = []

    def plan():
        plans.append(explain_parts(spark, "v_ms_caches")[0])

    check_view_through_batches(spark, work, "v_ms_caches", query, None, BATCHES,
                               options="caches = true", also=plan)
    assert "view cache" in plans[0], plans[0]
