"""Subqueries and nested aggregates against the Spark oracle: after every refresh of random
insert/delete/update batches the view equals Spark's evaluation of its defining query."""
from __future__ import annotations

import zlib

import pytest

from .oracle import check_view_through_batches
from .workload import registered_workload

SHAPES = {
    "scalar_eq_corr_sum": "SELECT r.a, COUNT(*) AS n, SUM(r.c) AS sc FROM r "
                          "WHERE r.c < (SELECT SUM(s.f) FROM s WHERE s.b = r.b) GROUP BY r.a",
    "scalar_self_avg_q17": "SELECT SUM(r1.c) AS sc FROM r r1 "
                           "WHERE r1.c < 0.8 * (SELECT AVG(r2.c) FROM r r2 WHERE r2.a = r1.a)",
    "scalar_uncorrelated": "SELECT s.e, COUNT(*) AS n FROM s WHERE s.f > (SELECT AVG(s2.f) FROM s s2) "
                           "GROUP BY s.e",
    "scalar_inequality_corr": "SELECT r.a, COUNT(*) AS n FROM r "
                              "WHERE 3 > (SELECT COUNT(*) FROM s WHERE s.b > r.b) GROUP BY r.a",
    "exists_not_exists": "SELECT r.a, COUNT(*) AS n FROM r WHERE EXISTS (SELECT 1 FROM s WHERE "
                         "s.b = r.b) AND NOT EXISTS (SELECT 1 FROM t WHERE t.e = r.a) GROUP BY r.a",
    "in_not_in": "SELECT r.a, COUNT(*) AS n FROM r WHERE r.b IN (SELECT s.e FROM s) "
                 "AND r.a NOT IN (SELECT t.g FROM t) GROUP BY r.a",
    "in_grouped_having": "SELECT r.a, SUM(r.c) AS sc FROM r WHERE r.b IN (SELECT s.b FROM s "
                         "GROUP BY s.b HAVING SUM(s.f) > 2) GROUP BY r.a",
    "nested_twice": "SELECT r.a, COUNT(*) AS n FROM r WHERE 1 <= (SELECT COUNT(*) FROM s WHERE "
                    "s.b = r.b AND 1 < (SELECT SUM(t.g) FROM t WHERE t.e = s.e)) GROUP BY r.a",
    "spj_subquery": "SELECT r.a, r.b FROM r WHERE r.a > (SELECT COUNT(*) FROM t WHERE t.e = r.b)",
    "from_aggregating": "SELECT x.n, COUNT(*) AS k, SUM(x.sc) AS ssc FROM (SELECT r.b, COUNT(*) AS n, "
                        "SUM(r.c) AS sc FROM r GROUP BY r.b) x GROUP BY x.n",
    "from_aggregating_join": "SELECT s.e, SUM(x.sc) AS ssc FROM s, (SELECT r.b, SUM(r.c) AS sc FROM r "
                             "GROUP BY r.b) x WHERE s.b = x.b GROUP BY s.e",
    "from_plain": "SELECT y.k, COUNT(*) AS n FROM (SELECT r.a + 1 AS k, s.e FROM r, s "
                  "WHERE r.b = s.b) y WHERE y.e > 0 GROUP BY y.k",
}
CASES = [(name, None) for name in SHAPES] + [("scalar_eq_corr_sum", 1), ("in_not_in", 0)]
BATCHES = 2


@pytest.mark.parametrize("shape,depth", CASES,
                         ids=[f"{n}-depth{'inf' if d is None else d}" for n, d in CASES])
def test_nested_view_equals_recompute(spark, vl, tmp_path, shape, depth):
    seed = zlib.crc32(f"nested/{shape}/{depth}".encode())
    work = registered_workload(spark, str(tmp_path), seed)
    view = f"v_{shape}_{'inf' if depth is None else depth}"
    check_view_through_batches(spark, work, view, SHAPES[shape], depth, BATCHES)
