"""Subquery forms without Spark: subqueries inside aggregates, quantified comparisons over
aggregating subqueries and LATERAL subqueries. The compiled programs, run on random batches
over NULL-heavy data with duplicates at several depths, keep every map equal to its
definition and give, after every batch, the rows DuckDB computes for the query."""
import pytest

from test_multisets import check_program

SHAPES = {
    # a subquery inside an aggregate: a value per row (correlated on a non-key column too)
    "count_in_sum": "SELECT r.a, SUM(r.b * (SELECT COUNT(*) FROM s WHERE s.b = r.b)) FROM r "
                    "GROUP BY r.a",
    "uncorrelated_in_sum": "SELECT r.a, SUM(r.b + (SELECT SUM(s.c) FROM s)) FROM r GROUP BY r.a",
    "max_in_avg_and_min": "SELECT r.a, AVG((SELECT MAX(s.c) FROM s WHERE s.b = r.b)), "
                          "MIN(r.b + (SELECT SUM(t.d) FROM t)) FROM r GROUP BY r.a",
    "in_count_global": "SELECT COUNT((SELECT SUM(s.c) FROM s WHERE s.b = r.a)), "
                       "SUM(CASE WHEN r.b > (SELECT AVG(s.c) FROM s) THEN 1 ELSE 0 END) FROM r",
}


@pytest.mark.parametrize("depth", [None, 1], ids=["unlimited", "depth1"])
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_rows_equal_sql(name, depth):
    assert check_program(SHAPES[name], depth) > 0

LATERAL = {
    # LATERAL without aggregates: inlined, its correlated conditions join
    "lateral_rows": "SELECT r.a, x.c FROM r, LATERAL (SELECT s.c FROM s WHERE s.b = r.b) x",
    "join_lateral_on": "SELECT r.a, x.c FROM r JOIN LATERAL (SELECT s.c FROM s "
                       "WHERE s.b = r.b AND s.c > r.a) AS x ON x.c <> r.b",
    "left_join_lateral": "SELECT r.a, r.b, x.c FROM r LEFT JOIN LATERAL (SELECT s.c FROM s "
                         "WHERE s.b = r.b) x ON x.c > r.a",
    # a global aggregate: one row per row of r (COUNT 0, MAX NULL over no rows)
    "lateral_global": "SELECT r.a, x.m, x.n FROM r, LATERAL (SELECT MAX(s.c) AS m, COUNT(*) AS n "
                      "FROM s WHERE s.b = r.b) x",
    # GROUP BY: groups per correlation value, aggregated outside
    "lateral_grouped": "SELECT r.a, x.c, x.n FROM r CROSS JOIN LATERAL (SELECT s.c, COUNT(*) AS n "
                       "FROM s WHERE s.b = r.b GROUP BY s.c) x",
    "lateral_theta_aggregated": "SELECT r.a, SUM(x.t) FROM r, LATERAL (SELECT SUM(s.c) AS t "
                                "FROM s WHERE s.b > r.a) x GROUP BY r.a",
}


@pytest.mark.parametrize("depth", [None, 1], ids=["unlimited", "depth1"])
@pytest.mark.parametrize("name", sorted(LATERAL))
def test_lateral_rows_equal_sql(name, depth):
    assert check_program(LATERAL[name], depth) > 0
