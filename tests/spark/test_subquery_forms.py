"""Subquery forms against the Spark oracle on NULL-heavy random workloads with duplicates:
subqueries inside aggregates (correlated or not), quantified comparisons over aggregating
subqueries, and LATERAL subqueries in FROM. After every batch the view equals Spark's
evaluation of its query."""
from __future__ import annotations

import zlib

import pytest

from .oracle import check_view_through_batches
from .workload import registered_workload

VIEWS = {
    # a correlated COUNT and an uncorrelated SUM inside SUM, per group (NULL correlation
    # values count no rows, an empty SUM is NULL and skipped)
    "subquery_in_sum":
        "SELECT r.a, SUM(r.c * (SELECT COUNT(*) FROM s WHERE s.b = r.b)) AS x, "
        "SUM(r.a + (SELECT SUM(t.g) FROM t)) AS y, COUNT(*) AS n FROM r GROUP BY r.a",
    # AVG / COUNT / MAX over correlated subquery values (a MAX kept as a multiset inside)
    "subquery_in_avg_count_max":
        "SELECT r.b, AVG((SELECT MAX(s.f) FROM s WHERE s.e = r.a)) AS af, "
        "COUNT((SELECT SUM(t.g) FROM t WHERE t.e = r.b)) AS cg, "
        "MAX(r.a * (SELECT COUNT(*) FROM t WHERE t.g = r.a)) AS mx FROM r GROUP BY r.b",
}
BATCHES = 3


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_subquery_form_equals_spark_after_every_batch(spark, vl, tmp_path, name):
    work = registered_workload(spark, str(tmp_path), zlib.crc32(name.encode()), rows=14,
                               null_heavy=True)
    check_view_through_batches(spark, work, f"v_sq_{name}", VIEWS[name], None, BATCHES)
