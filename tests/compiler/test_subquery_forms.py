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
    # a FROM subquery inside a subquery reading the enclosing query (Spark's implicit
    # lateral reference): correlated like a LATERAL subquery
    "outer_reference_rows": "SELECT r.a FROM r WHERE r.b < (SELECT SUM(x.c) FROM (SELECT s.c "
                            "FROM s WHERE s.b = r.a) x)",
    "outer_reference_groups": "SELECT r.a, r.b FROM r WHERE EXISTS (SELECT 1 FROM (SELECT s.c, "
                              "COUNT(*) AS n FROM s WHERE s.b = r.a GROUP BY s.c) x WHERE x.n > 1)",
    # lateral column aliases in SELECT (an alias no FROM column has)
    "column_aliases": "SELECT r.a + 1 AS x, x * 2 AS y, r.a AS b, b AS z FROM r",
    "aggregate_aliases": "SELECT r.a, SUM(r.b) AS t, t + COUNT(*) AS u FROM r GROUP BY r.a",
}


@pytest.mark.parametrize("depth", [None, 1], ids=["unlimited", "depth1"])
@pytest.mark.parametrize("name", sorted(LATERAL))
def test_lateral_rows_equal_sql(name, depth):
    assert check_program(LATERAL[name], depth) > 0

# an aggregating FROM subquery's MIN / MAX column compared with = matches no NULL (the
# normalizer once unified the two variables into a NULL-safe test)
SHAPES["max_column_equality"] = ("SELECT r.a FROM r, (SELECT s.b, MAX(s.c) AS m FROM s "
                                 "GROUP BY s.b) x WHERE r.b = x.m")

QUANTIFIED = {
    # x op ALL / ANY over an aggregating subquery: counts of its groups (NULL aggregates and
    # empty groups sets included)
    "all_over_groups": "SELECT r.a, r.b FROM r WHERE r.b >= ALL (SELECT AVG(s.c) FROM s "
                       "GROUP BY s.b)",
    "all_over_counts": "SELECT r.a, r.b FROM r WHERE r.a <> ALL (SELECT COUNT(*) FROM s "
                       "GROUP BY s.b)",
    "any_over_groups_having": "SELECT r.a FROM r WHERE r.b = ANY (SELECT MAX(s.c) FROM s "
                              "GROUP BY s.b HAVING COUNT(*) > 1)",
    "all_correlated_groups": "SELECT r.a, COUNT(*) FROM r WHERE r.b >= ALL (SELECT SUM(s.c) "
                             "FROM s WHERE s.b = r.a GROUP BY s.c) GROUP BY r.a",
    "some_global": "SELECT r.a FROM r WHERE r.b > SOME (SELECT AVG(t.d) FROM t WHERE t.c = r.a)",
    "not_all_in_select": "SELECT r.a, NOT (r.b <> ALL (SELECT MIN(s.c) FROM s GROUP BY s.b)) "
                         "FROM r",
}


@pytest.mark.parametrize("depth", [None, 1], ids=["unlimited", "depth1"])
@pytest.mark.parametrize("name", sorted(QUANTIFIED))
def test_quantified_rows_equal_sql(name, depth):
    assert check_program(QUANTIFIED[name], depth) > 0


def test_a_column_beside_a_select_subquery_is_a_state_key():
    """`r.b = (SELECT ...)` in the SELECT of a view without aggregates: r.b is read beside
    the subquery, so the state keeps it (its value per row was missing)."""
    assert check_program("SELECT r.a, r.b = (SELECT MAX(s.c) FROM s WHERE s.b = r.a) AS m, "
                         "r.a + (SELECT COUNT(*) FROM t) * r.b AS k FROM r", None) > 0
