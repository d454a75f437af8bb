"""SQL beyond DBToaster against the Spark oracle: outer joins, DISTINCT, UNION, scalar
functions, on NULL-heavy random workloads (NULL join and group keys, duplicate rows); after
every refresh each view equals Spark's evaluation of its defining query.

Each view combines several constructs, to keep the number of Spark cases small; the
compiler tests (tests/compiler/test_outer_joins.py, test_setops.py) try many more shapes
against DuckDB without Spark."""
from __future__ import annotations

import zlib

import pytest

from .oracle import check_view_through_batches
from .workload import registered_workload

VIEWS = {
    # RIGHT JOIN with a one-sided ON conjunct; COUNT(*) vs COUNT(col), SUM/AVG over padding,
    # NULL join and group keys, HAVING over aggregates of padded columns
    "right_join_aggregates":
        "SELECT s.e, COUNT(*) AS n, COUNT(r.a) AS na, SUM(r.c) AS sc, AVG(r.d) AS ad "
        "FROM r RIGHT JOIN s ON r.b = s.b AND r.a > 0 GROUP BY s.e "
        "HAVING COUNT(*) > 1 OR AVG(r.d) < 0",
    # an inner join inside the left side of a RIGHT JOIN, a self outer join
    "inner_then_right_self":
        "SELECT r1.a, r2.b AS b2, s.e FROM r r1 JOIN s ON r1.b = s.b RIGHT JOIN r r2 ON r2.a = s.e",
    # a chain of LEFT JOINs, WHERE over the padded side, a bag of rows with NULL padding
    "left_join_chain":
        "SELECT r.a, s.e, t.h FROM r LEFT JOIN s ON r.b = s.b LEFT OUTER JOIN t ON s.e = t.e "
        "WHERE t.g IS NULL OR t.g > 1",
    # FULL JOIN USING: Spark's star (the merged column first, COALESCE of both sides)
    "full_join_using_star": "SELECT * FROM s FULL OUTER JOIN t USING (e)",
    # UNION (distinct) of decimal columns with NULLs
    "union_distinct": "SELECT r.b AS k, r.c AS v FROM r UNION SELECT s.b, s.f FROM s",
    # UNION ALL in FROM with an aggregate over it; int and decimal(10,2) widen to decimal(12,2)
    "aggregate_over_union_all":
        "SELECT u.k, COUNT(*) AS n, SUM(u.v) AS sv, COUNT(u.v) AS cv FROM (SELECT r.a AS k, "
        "r.c AS v FROM r UNION ALL SELECT t.e, t.g FROM t WHERE t.h <> 'y') u GROUP BY u.k",
    # scalar functions in GROUP BY, aggregate arguments, ON and WHERE: dates, intervals,
    # EXTRACT/YEAR, CAST, BETWEEN, IN, LIKE, string functions
    "scalar_functions":
        "SELECT year(date_add(DATE '2024-12-30', r.a)) AS y, "
        "CASE WHEN r.c BETWEEN -1 AND 1 THEN 'small' WHEN r.c IS NULL THEN 'none' ELSE 'big' END "
        "AS size, substring(t.h, 1, 1) || '-' AS h1, COUNT(*) AS n, "
        "SUM(CASE WHEN t.h LIKE 'x%' THEN CAST(r.c AS INT) ELSE 0 END) AS sx, "
        "SUM(COALESCE(t.g, r.a) * 2) AS sg, "
        "COUNT(NULLIF(extract(MONTH FROM DATE '1995-01-31' + INTERVAL 1 MONTH), t.g)) AS cm "
        "FROM r JOIN t ON r.a = t.e AND upper(coalesce(t.h, 'x1')) IN ('X1', 'Y', 'Z Z') "
        "WHERE add_months(DATE '2024-01-31', r.a) > DATE '2024-02-01' OR length(t.h) < 3 "
        "GROUP BY year(date_add(DATE '2024-12-30', r.a)), "
        "CASE WHEN r.c BETWEEN -1 AND 1 THEN 'small' WHEN r.c IS NULL THEN 'none' ELSE 'big' END, "
        "substring(t.h, 1, 1) || '-'",
    # SELECT DISTINCT over expressions: CASE, COALESCE, string functions
    "distinct_expressions":
        "SELECT DISTINCT r.a % 2 AS p, CASE WHEN r.c > 0 THEN 'pos' WHEN r.c < 0 THEN 'neg' END "
        "AS sign, COALESCE(upper(substring(t.h, 1, 1)) || 'z', '-') AS h1 "
        "FROM r LEFT JOIN t ON r.a = t.e",
    # an unqualified name in a join's ON that two FROM items have: the one joined so far
    # (s.e, not t.e; resolved by sqlglot's scopes, frontend/names.py)
    "on_name_of_the_items_joined_so_far":
        "SELECT r.a, t.h, s.f FROM s JOIN r ON s.b = r.b AND e > 0 LEFT JOIN t ON t.e = s.e",
}
BATCHES = 3


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_view_equals_recompute_after_every_batch(spark, vl, tmp_path, name):
    work = registered_workload(spark, str(tmp_path), zlib.crc32(name.encode()), null_heavy=True)
    check_view_through_batches(spark, work, f"v_{name}", VIEWS[name], None, BATCHES)


def _view_dirs(vl):
    import os
    root = os.path.join(vl.warehouse, "views")
    return set(os.listdir(root)) if os.path.exists(root) else set()


def test_udfs_deterministic_maintained_nondeterministic_refused(spark, vl, tmp_path):
    """Spark decides determinism at CREATE: a UDF is maintained like a built-in function
    unless it was registered with asNondeterministic(); then nothing is created and the
    error names it with its position."""
    from pyspark.errors import AnalysisException
    from pyspark.sql.functions import udf
    work = registered_workload(spark, str(tmp_path), 11, null_heavy=True)
    spark.udf.register("vl_bucket", lambda x: None if x is None else x % 3, "int")
    spark.udf.register("vl_noisy", udf(lambda x: x, "int").asNondeterministic())
    query = "SELECT vl_bucket(r.a + s.e) AS k, COUNT(*) AS n FROM r JOIN s ON r.b = s.b GROUP BY 1"
    check_view_through_batches(spark, work, "v_udf", query, None, 1)
    before = _view_dirs(vl)
    sql = "SELECT r.a, COUNT(*) AS n FROM r WHERE vl_noisy(r.b) > 1 GROUP BY r.a"
    with pytest.raises(AnalysisException) as err:
        spark.sql(f"CREATE INCREMENTAL VIEW v_noisy AS {sql}")
    text = str(err.value)
    assert "vl_noisy()" in text and "non-deterministic" in text
    assert f"column {sql.index('vl_noisy') + 1} of the query" in text
    assert "asNondeterministic" in text
    assert "v_noisy" not in vl.view_names() and _view_dirs(vl) == before


def test_a_query_spark_cannot_plan_is_refused_and_its_remedy_maintained(spark, vl, tmp_path):
    """Spark evaluates a correlated scalar subquery's value over no rows while planning, so
    under ANSI mode `COALESCE(SUM(..), 0) / COALESCE(SUM(1), 0)` divides by zero before any
    row is read: CREATE refuses it with Spark's error and the remedy, leaving nothing. With
    the remedy (NULLIF) the view is exact through batches that delete whole groups."""
    from pyspark.errors import AnalysisException
    work = registered_workload(spark, str(tmp_path), 12)
    ratio = "COALESCE(SUM(r2.c), 0) / {den}"
    query = ("SELECT r1.a, r1.b FROM r r1 WHERE r1.c > (SELECT " + ratio +
             " FROM r r2 WHERE r2.a = r1.a)")
    failing = query.format(den="COALESCE(SUM(1), 0)")
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"
    with pytest.raises(Exception, match="DIVIDE_BY_ZERO"):
        spark.sql(failing).collect()                       # Spark's own evaluation
    before = _view_dirs(vl)
    with pytest.raises(AnalysisException) as err:
        spark.sql(f"CREATE INCREMENTAL VIEW v_unplannable AS {failing}")
    text = str(err.value)
    assert "Spark cannot run the defining query" in text and "DIVIDE_BY_ZERO" in text
    assert "NULLIF(divisor, 0)" in text
    assert "v_unplannable" not in vl.view_names() and _view_dirs(vl) == before
    remedy = query.format(den="NULLIF(COALESCE(SUM(1), 0), 0)")
    check_view_through_batches(spark, work, "v_remedy", remedy, None, BATCHES)
