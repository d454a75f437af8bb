"""The oracle itself (oracle.py): it compares a view with Spark's answer positionally, both
read by one Spark job, and fails on any difference but doubles within DOUBLE_TOLERANCE."""
from __future__ import annotations

import pytest
from chispa import DataFramesNotEqualError

from .oracle import DOUBLE_TOLERANCE, assert_view_matches


def _view(spark, name, sql):
    spark.sql(sql).createOrReplaceTempView(name)      # repeated column names allowed
    return name


def test_equal_rows_in_any_order_pass_with_repeated_names_and_complex_values(spark):
    query = "SELECT * FROM VALUES (1, 1, array(1, 2), 'a'), (2, NULL, array(), NULL), " \
            "(2, NULL, array(), NULL) AS t(k, k, xs, s)"
    view = _view(spark, "oracle_same", "SELECT * FROM (" + query + ") ORDER BY s DESC")
    assert_view_matches(spark, view, query, engine=False)


@pytest.mark.parametrize("view_sql, query", [
    # two same-typed columns swapped under each other's names
    ("SELECT b AS a, a AS b FROM VALUES (1, 2) AS t(a, b)",
     "SELECT a, b FROM VALUES (1, 2) AS t(a, b)"),
    # a duplicate row more
    ("SELECT * FROM VALUES (1), (1) AS t(a)", "SELECT * FROM VALUES (1) AS t(a)"),
    # NULL against a value
    ("SELECT CAST(NULL AS INT) AS a", "SELECT 0 AS a"),
    # a double beyond the tolerance
    (f"SELECT CAST(1.0 + {DOUBLE_TOLERANCE * 10} AS DOUBLE) AS x",
     "SELECT CAST(1.0 AS DOUBLE) AS x"),
], ids=["swapped", "duplicate", "null", "double"])
def test_any_difference_fails(spark, view_sql, query):
    view = _view(spark, "oracle_differs", view_sql)
    with pytest.raises((AssertionError, DataFramesNotEqualError)):
        assert_view_matches(spark, view, query, engine=False)


def test_doubles_within_the_tolerance_pass(spark):
    view = _view(spark, "oracle_close",
                 f"SELECT CAST(2.0 + {DOUBLE_TOLERANCE / 10} AS DOUBLE) AS x, 'a' AS s")
    assert_view_matches(spark, view, "SELECT CAST(2.0 AS DOUBLE) AS x, 'a' AS s", engine=False)
