"""Subquery forms against the Spark oracle on NULL-heavy random workloads with duplicates:
subqueries inside aggregates (correlated or not), quantified comparisons over aggregating
subqueries, LATERAL subqueries in FROM and FROM subqueries of subqueries reading the
enclosing query, lateral column aliases. After every batch the view equals Spark's
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
    # AVG / COUNT over correlated subquery values (a MAX kept as a multiset inside)
    "subquery_in_avg_count":
        "SELECT r.b, AVG((SELECT MAX(s.f) FROM s WHERE s.e = r.a)) AS af, "
        "COUNT((SELECT SUM(t.g) FROM t WHERE t.e = r.b)) AS cg FROM r GROUP BY r.b",
    # LATERAL without aggregates, inner and LEFT (padding per correlation value)
    "lateral_rows":
        "SELECT r.a, r.b, x.e, y.g FROM r JOIN LATERAL (SELECT s.e FROM s WHERE s.b = r.b) x "
        "ON x.e >= r.a LEFT JOIN LATERAL (SELECT t.g FROM t WHERE t.e = x.e AND t.g > r.a) y "
        "ON TRUE",
    # LATERAL aggregates: global (one row per row of r) and grouped, aggregated outside
    "lateral_aggregates":
        "SELECT r.a, x.n, x.mf, y.e, SUM(y.k) AS sk FROM r, LATERAL (SELECT COUNT(*) AS n, "
        "MAX(s.f) AS mf FROM s WHERE s.b = r.b) x, LATERAL (SELECT s.e, COUNT(*) AS k FROM s "
        "WHERE s.b = r.a GROUP BY s.e) y GROUP BY r.a, x.n, x.mf, y.e",
    # a FROM subquery of a subquery reading the enclosing query; lateral column aliases
    "outer_reference_and_aliases":
        "SELECT r.a, r.a * 2 AS x, x + r.c AS y FROM r WHERE r.c < (SELECT SUM(q.f) FROM "
        "(SELECT s.f FROM s WHERE s.b = r.a) q)",
}
# quantified comparisons over aggregating subqueries: uncorrelated groups with HAVING (ALL
# over no groups is TRUE), correlated groups
QUANTIFIED = ("SELECT r.a, r.c FROM r WHERE r.c >= ALL (SELECT AVG(s.f) FROM s GROUP BY s.e "
              "HAVING COUNT(*) > 1) OR r.a < SOME (SELECT COUNT(*) FROM t WHERE t.g = r.b "
              "GROUP BY t.e)")
BATCHES = 2


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_subquery_form_equals_spark_after_every_batch(spark, vl, tmp_path, name):
    work = registered_workload(spark, str(tmp_path), zlib.crc32(name.encode()), rows=12,
                               null_heavy=True)
    view, rows = f"v_sq_{name}", []
    check_view_through_batches(spark, work, view, VIEWS[name], None, BATCHES,
                               also=lambda: rows.append(
                                   spark.sql(f"SELECT COUNT(*) FROM {view}").collect()[0][0]))
    assert max(rows) > 0, "the view never had rows: the comparisons proved little"


def test_quantified_over_aggregating_subqueries(spark, vl, tmp_path):
    """Spark 4.0 does not parse ALL / ANY / SOME: the oracle is Spark evaluating the query as
    Viewlet rewrites it, and DuckDB, which has them natively, checks that rewrite's results on
    the same table versions."""
    import duckdb
    import sqlglot
    from collections import Counter
    from deltalake import DeltaTable
    from viewlet.frontend.quantified import rewrite_quantified
    from .workload import SCHEMAS
    work = registered_workload(spark, str(tmp_path), 31, rows=12, null_heavy=True)
    rewritten = rewrite_quantified(sqlglot.parse_one(QUANTIFIED, read="spark"), QUANTIFIED,
                                   lambda t: SCHEMAS[t.name].names).sql(dialect="spark")
    rows = []

    def duckdb_agrees():
        con = duckdb.connect()
        for name, path in work.paths.items():
            con.register(name, DeltaTable(path).to_pyarrow_table())
        native = Counter(tuple(r) for r in con.execute(QUANTIFIED).fetchall())
        assert native == Counter(tuple(r) for r in spark.sql(rewritten).collect())
        rows.append(sum(native.values()))

    check_view_through_batches(spark, work, "v_sq_quantified", QUANTIFIED, None, BATCHES,
                               oracle=rewritten, also=duckdb_agrees)
    assert max(rows) > 0
