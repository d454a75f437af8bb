"""SQL that used to be refused, against the Spark oracle on NULL-heavy random workloads (NULL
join and group keys, duplicate rows, deletes, updates): NATURAL JOIN, INTERSECT / EXCEPT
[ALL], GROUPING SETS / ROLLUP / CUBE with grouping() / grouping_id(), aggregate FILTER,
collect_list / collect_set / array_agg / string_agg / listagg, SELECT without FROM and scalar
subqueries without an aggregate (more than one row: REFRESH fails as Spark does, and the view
is left unchanged).

Each view combines several constructs, to keep the number of Spark cases small; the compiler
tests (tests/compiler/test_more_sql.py) try more shapes against DuckDB without Spark."""
from __future__ import annotations

import os
import zlib

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from .oracle import assert_view_matches, check_view_through_batches
from .workload import registered_workload

VIEWS = {
    # the four multiset set operations, one of them nested in a union branch's operand
    "set_operations":
        "SELECT r.b AS k, r.a AS v FROM r EXCEPT ALL SELECT s.b, s.e FROM s "
        "UNION ALL (SELECT s.b, s.e FROM s INTERSECT SELECT t.e, t.g FROM t) "
        "UNION ALL (SELECT t.e, t.g FROM t EXCEPT SELECT r.a, r.b FROM r) "
        "UNION ALL (SELECT r.a, r.b FROM r INTERSECT ALL (SELECT t.e, t.g FROM t "
        "UNION ALL SELECT s.e, s.b FROM s))",
    # a set operation in FROM, joined and aggregated; one in a NOT IN subquery
    "set_operation_in_from":
        "SELECT x.k, COUNT(*) AS n, SUM(t.g) AS sg FROM (SELECT r.a AS k, r.b AS w FROM r "
        "EXCEPT ALL SELECT s.e, s.b FROM s) x JOIN t ON x.k = t.e "
        "WHERE x.w NOT IN (SELECT t.g FROM t INTERSECT SELECT s.e FROM s) GROUP BY x.k",
    # NATURAL JOIN (on b), ROLLUP with grouping() / grouping_id(), FILTER on COUNT(*), MAX
    "natural_rollup_filter":
        "SELECT a, e, COUNT(*) FILTER (WHERE c > 0) AS npos, SUM(c) AS sc, "
        "MAX(d) FILTER (WHERE f IS NOT NULL) AS mx, grouping(a) AS ga, grouping_id() AS gid "
        "FROM r NATURAL JOIN s GROUP BY ROLLUP(a, e)",
    # GROUPING SETS with a duplicate set and the grand total, expression keys, a DISTINCT
    # aggregate with FILTER, HAVING, a NATURAL LEFT JOIN of a FROM subquery
    "grouping_sets":
        "SELECT r.a % 2 AS p, t.h, COUNT(DISTINCT r.b) FILTER (WHERE t.g > 1) AS cb, "
        "SUM(r.c) AS sc, grouping_id(r.a % 2, t.h) AS gid FROM r JOIN t ON r.a = t.e "
        "GROUP BY GROUPING SETS ((r.a % 2, t.h), (t.h), (), (t.h)) HAVING COUNT(*) > 1",
    "cube_natural_left":
        "SELECT e, h, COUNT(*) AS n, SUM(g) AS sg FROM t NATURAL LEFT JOIN "
        "(SELECT s.e, MAX(s.f) AS mf FROM s GROUP BY s.e) x GROUP BY CUBE(e, h)",
    # SELECT without FROM: constants in FROM, scalar subqueries over constants, a union
    # branch; a scalar subquery without an aggregate that returns at most one row per u.a
    "without_from":
        "SELECT u.a, u.one, u.tag, (SELECT 5) AS five, (SELECT x.n FROM (SELECT s.b, COUNT(*) "
        "AS n FROM s GROUP BY s.b) x WHERE x.b = u.a) AS nb FROM (SELECT r.a, c.one, c.tag FROM r "
        "CROSS JOIN (SELECT 1 AS one, 'k' AS tag) c WHERE r.b <> (SELECT 2) OR r.b IN "
        "(SELECT 3)) u",
    # (a correlated scalar subquery over this union fails in Spark 4.0's optimizer,
    # PushProjectionThroughUnion: key not found, so the union is a view of its own)
    "union_with_a_row_without_from":
        "SELECT r.a, r.b FROM r WHERE r.b <> (SELECT 2) UNION ALL SELECT 7, 5",
}
BATCHES = 3

# Spark orders collect_list / collect_set / string_agg without WITHIN GROUP as rows arrive;
# Viewlet gives ascending order, so the oracle sorts Spark's (WITHIN GROUP: exactly Spark's)
COLLECTS = ("SELECT r.a, collect_list(r.b) AS lb, collect_set(r.c) AS sc, "
            "array_agg(r.c) FILTER (WHERE r.b > 1) AS ac, "
            "listagg(r.b, ',') WITHIN GROUP (ORDER BY r.b DESC) AS lg, "
            "string_agg(DISTINCT t.h, '|') AS sh, listagg(t.h) AS lh "
            "FROM r LEFT JOIN t ON r.a = t.e GROUP BY r.a")
COLLECTS_SORTED = (
    "SELECT r.a, array_sort(collect_list(r.b)) AS lb, array_sort(collect_set(r.c)) AS sc, "
    "array_sort(array_agg(r.c) FILTER (WHERE r.b > 1)) AS ac, "
    "listagg(r.b, ',') WITHIN GROUP (ORDER BY r.b DESC) AS lg, "
    "CASE WHEN size(collect_set(t.h)) > 0 THEN array_join(array_sort(collect_set(t.h)), '|') "
    "END AS sh, "
    "CASE WHEN size(collect_list(t.h)) > 0 THEN array_join(array_sort(collect_list(t.h)), '') "
    "END AS lh FROM r LEFT JOIN t ON r.a = t.e GROUP BY r.a")
GLOBAL_COLLECTS = ("SELECT collect_list(t.g) AS lg, listagg(t.h, '-') AS lh, COUNT(*) AS n "
                   "FROM t WHERE t.g > 100")
GLOBAL_COLLECTS_SORTED = (
    "SELECT array_sort(collect_list(t.g)) AS lg, CASE WHEN size(collect_list(t.h)) > 0 THEN "
    "array_join(array_sort(collect_list(t.h)), '-') END AS lh, COUNT(*) AS n "
    "FROM t WHERE t.g > 100")


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_view_equals_recompute_after_every_batch(spark, vl, tmp_path, name):
    work = registered_workload(spark, str(tmp_path), zlib.crc32(f"more/{name}".encode()),
                               null_heavy=True)
    check_view_through_batches(spark, work, f"v_more_{name}", VIEWS[name], None, BATCHES)


def test_set_operations_at_depth_one(spark, vl, tmp_path):
    work = registered_workload(spark, str(tmp_path), zlib.crc32(b"more/depth1"), null_heavy=True)
    check_view_through_batches(spark, work, "v_more_depth1", VIEWS["set_operations"], 1, BATCHES)


@pytest.mark.parametrize("query,oracle", [(COLLECTS, COLLECTS_SORTED),
                                          (GLOBAL_COLLECTS, GLOBAL_COLLECTS_SORTED)],
                         ids=["grouped", "global"])
def test_collections_equal_spark_in_ascending_order(spark, vl, tmp_path, query, oracle):
    work = registered_workload(spark, str(tmp_path), zlib.crc32(query.encode()), null_heavy=True)
    check_view_through_batches(spark, work, f"v_more_collects_{zlib.crc32(query.encode())}",
                               query, None, BATCHES, oracle=oracle)


def _rows(spark, sql):
    return sorted(map(tuple, spark.sql(sql).collect()), key=repr)


@pytest.mark.parametrize("options", ["", "WITH (engine = 'distributed')"],
                         ids=["session", "distributed"])
def test_scalar_subquery_with_several_rows_fails_refresh_and_leaves_the_view(spark, vl, tmp_path,
                                                                             options):
    """A scalar subquery without an aggregate: its one row's value, NULL without rows; when
    it returns several rows for a row the view needs, REFRESH fails as Spark's query does
    (SCALAR_SUBQUERY_TOO_MANY_ROWS), names the subquery, and leaves the view as it was; once
    the data is fixed, the next REFRESH brings the view up to date. On the executors too: a
    batch computes its result rows before writing any map, so the failed batch is dropped."""
    import viewlet
    p_schema = pa.schema([("k", pa.int32()), ("v", pa.string())])
    paths = {name: os.path.join(str(tmp_path), name) for name in ("p", "q")}
    write_deltalake(paths["p"], pa.table({"k": [1, 2, 5], "v": ["a", "b", None]}, schema=p_schema),
                    configuration={"delta.enableChangeDataFeed": "true"})
    write_deltalake(paths["q"], pa.table({"k": pa.array([1, 2, 2, 3, None], pa.int32())}),
                    configuration={"delta.enableChangeDataFeed": "true"})
    for name, path in paths.items():
        viewlet.register_table(spark, name, path, replace=True)
    query = ("SELECT q.k, (SELECT p.v FROM p WHERE p.k = q.k) AS v FROM q "
             "WHERE q.k < (SELECT p.k FROM p WHERE p.v = 'b') + 2")
    spark.sql(f"CREATE INCREMENTAL VIEW v_single {options} AS {query}")
    try:
        assert_view_matches(spark, "v_single", query)
        before = _rows(spark, "SELECT * FROM v_single")
        assert (2, "b") in before and (1, "a") in before and (3, None) in before
        write_deltalake(paths["p"], pa.table({"k": [2], "v": ["c"]}, schema=p_schema), mode="append")
        with pytest.raises(Exception, match="SCALAR_SUBQUERY_TOO_MANY_ROWS"):
            spark.sql(query).collect()                       # Spark's own evaluation
        with pytest.raises(Exception) as err:
            spark.sql("REFRESH INCREMENTAL VIEW v_single")
        text = str(err.value)
        assert "scalar subquery at line 1" in text and "returned more than one row" in text \
            and "SCALAR_SUBQUERY_TOO_MANY_ROWS" in text, text
        assert _rows(spark, "SELECT * FROM v_single") == before
        history = spark.sql("DESCRIBE INCREMENTAL VIEW v_single HISTORY").collect()
        assert history[0]["status"].startswith("failed (SCALAR_SUBQUERY_TOO_MANY_ROWS)"), history
        DeltaTable(paths["p"]).delete("v = 'c'")
        spark.sql("REFRESH INCREMENTAL VIEW v_single")
        assert_view_matches(spark, "v_single", query, engine=False)
        # an uncorrelated one: several rows fail the batch too
        write_deltalake(paths["p"], pa.table({"k": [7], "v": ["b"]}, schema=p_schema), mode="append")
        with pytest.raises(Exception, match="more than one row"):
            spark.sql("REFRESH INCREMENTAL VIEW v_single")
        assert _rows(spark, "SELECT * FROM v_single") == before
        DeltaTable(paths["p"]).delete("k = 7")
        write_deltalake(paths["q"], pa.table({"k": pa.array([1, 4], pa.int32())}), mode="append")
        spark.sql("REFRESH INCREMENTAL VIEW v_single")
        assert_view_matches(spark, "v_single", query, engine=False)
        if options:
            engines = {r["engine"] for r in spark.sql(
                "DESCRIBE INCREMENTAL VIEW v_single HISTORY").collect() if r["status"] == "committed"}
            assert engines == {"distributed"}, engines
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS v_single")


def test_a_view_of_constants(spark, vl, tmp_path):
    """A SELECT without FROM reads no table: its one row never changes."""
    query = "SELECT 1 AS one, 'x' AS tag, CAST(2.5 AS DECIMAL(4,1)) AS d, DATE '2024-01-31' AS day"
    spark.sql(f"CREATE INCREMENTAL VIEW v_constants AS {query}")
    try:
        assert_view_matches(spark, "v_constants", query)
        spark.sql("REFRESH INCREMENTAL VIEW v_constants")
        assert_view_matches(spark, "v_constants", query)
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS v_constants")
