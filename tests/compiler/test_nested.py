"""Nested aggregates and subqueries: compiled programs vs re-evaluation on random batches
(reference evaluator, no Spark), at every depth."""
import pytest

from compiler_helpers import compile_sql, dump
from test_randomized import check_equivalence, BATCHES, SEEDS

SHAPES = {
    "scalar_eq_corr":
        "SELECT r.a, COUNT(*), SUM(r.b) FROM r WHERE r.b < (SELECT SUM(s.c) FROM s WHERE s.b = r.a) "
        "GROUP BY r.a",
    "scalar_self_corr_q17":
        "SELECT SUM(r1.b) FROM r r1 WHERE r1.b < 0.5 * (SELECT AVG(r2.b) FROM r r2 WHERE r2.a = r1.a)",
    "scalar_uncorrelated":
        "SELECT r.a, COUNT(*) FROM r WHERE r.b > (SELECT AVG(s.c) FROM s) GROUP BY r.a",
    "scalar_inequality_corr":
        "SELECT SUM(r.a) FROM r WHERE 2 > (SELECT COUNT(*) FROM s WHERE s.b > r.b)",
    "exists":
        "SELECT r.a, COUNT(*) FROM r WHERE EXISTS (SELECT 1 FROM s WHERE s.b = r.b AND s.c > 1) "
        "GROUP BY r.a",
    "not_exists_join":
        "SELECT s.c, COUNT(*) FROM r, s WHERE r.b = s.b AND NOT EXISTS "
        "(SELECT * FROM t WHERE t.c = s.c) GROUP BY s.c",
    "in_subquery":
        "SELECT r.a, COUNT(*) FROM r WHERE r.b IN (SELECT s.c FROM s WHERE s.b > 1) GROUP BY r.a",
    "not_in_nulls":
        "SELECT r.a, COUNT(*) FROM r WHERE r.b NOT IN (SELECT s.c FROM s) GROUP BY r.a",
    "in_grouped_having":
        "SELECT r.a, SUM(r.b) FROM r WHERE r.b IN (SELECT s.b FROM s GROUP BY s.b "
        "HAVING SUM(s.c) > 3) GROUP BY r.a",
    "nested_twice":
        "SELECT r.a, COUNT(*) FROM r WHERE 1 <= (SELECT COUNT(*) FROM s WHERE s.b = r.b AND "
        "2 < (SELECT SUM(t.d) FROM t WHERE t.c = s.c)) GROUP BY r.a",
    "or_with_subquery":
        "SELECT COUNT(*) FROM r WHERE r.a = 1 OR EXISTS (SELECT 1 FROM t WHERE t.d = r.b)",
    "spj_with_subquery":
        "SELECT r.a, r.b FROM r WHERE r.a > (SELECT COUNT(*) FROM t WHERE t.c = r.b)",
}


@pytest.mark.parametrize("depth", [None, 1, 0], ids=lambda d: f"depth{d}")
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_nested_program_equals_reevaluation(name, depth):
    nonempty = 0
    for seed in SEEDS:
        nonempty += check_equivalence(SHAPES[name], depth, seed).nonempty
    assert nonempty >= 1, nonempty


FROM_SHAPES = {
    "from_aggregate":
        "SELECT x.n, COUNT(*) FROM (SELECT r.b, COUNT(*) AS n, SUM(r.a) AS sa FROM r GROUP BY r.b) x "
        "WHERE x.sa > 1 GROUP BY x.n",
    "from_aggregate_join":
        "SELECT s.c, SUM(x.sa) FROM s, (SELECT r.b, SUM(r.a) AS sa FROM r GROUP BY r.b) x "
        "WHERE s.b = x.b GROUP BY s.c",
    "from_plain":
        "SELECT y.k, COUNT(*) FROM (SELECT r.a + 1 AS k, s.c FROM r, s WHERE r.b = s.b) y "
        "WHERE y.c > 1 GROUP BY y.k",
    "from_global_aggregate":
        "SELECT COUNT(*) FROM r, (SELECT COUNT(*) AS n FROM s) x WHERE r.a < x.n",
    "not_exists_over_groups":
        "SELECT x.b, x.sa FROM (SELECT r.b, SUM(r.a) AS sa FROM r GROUP BY r.b) x WHERE NOT EXISTS "
        "(SELECT 1 FROM (SELECT r2.b, SUM(r2.a) AS sa FROM r r2 GROUP BY r2.b) y WHERE y.sa > x.sa)",
}


@pytest.mark.parametrize("depth", [None, 1], ids=lambda d: f"depth{d}")
@pytest.mark.parametrize("name", sorted(FROM_SHAPES))
def test_from_subquery_program_equals_reevaluation(name, depth):
    nonempty = 0
    for seed in SEEDS:
        nonempty += check_equivalence(FROM_SHAPES[name], depth, seed).nonempty
    assert nonempty >= 1, nonempty
