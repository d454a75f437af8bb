"""Subqueries in SELECT / HAVING and quantified comparisons (ALL / ANY / SOME) against the
Spark oracle, over random insert/delete/update batches with NULLs and duplicates.

Spark 4.0 does not parse quantified comparisons: the oracle for them is Spark evaluating the
query as Viewlet rewrites it (`frontend/quantified.py`), and DuckDB, which implements them
natively, checks that rewrite's three-valued results on the same table versions."""
from __future__ import annotations

import zlib
from collections import Counter

import pytest
import sqlglot

from .oracle import check_view_through_batches
from .workload import SCHEMAS, registered_workload

SHAPES = {
    # views without aggregates: the subqueries' inputs become hidden state keys
    "spj": "SELECT r.a, (SELECT COUNT(*) FROM s WHERE s.b = r.b) AS n, "
           "(SELECT SUM(s.f) FROM s WHERE s.b > r.b) AS sf, "
           "(SELECT SUM(r2.d) FROM r r2 WHERE r2.a = r.a) AS sd, "
           "EXISTS (SELECT 1 FROM t WHERE t.e = r.b) AS ex, "
           "r.b NOT IN (SELECT s.e FROM s) AS nin, "
           "NOT (r.b IN (SELECT t.g FROM t) AND r.a > 1) AS nand FROM r",
    # aggregate views: uncorrelated values, a subquery that is a GROUP BY item, HAVING
    "aggregate_uncorrelated": "SELECT r.a, SUM(r.c) / (SELECT SUM(s.f) FROM s) AS share, "
                              "COUNT(*) + (SELECT COUNT(*) FROM t) AS k FROM r GROUP BY r.a",
    "aggregate_grouped_having": "SELECT r.a, COUNT(*) AS n, (SELECT AVG(s.f) FROM s "
                                "WHERE s.b = r.a) AS af FROM r GROUP BY r.a, 3 HAVING COUNT(*) >= "
                                "(SELECT COUNT(*) FROM t WHERE t.e > r.a)",
    "global": "SELECT COUNT(*) AS n, SUM(r.d) * (SELECT COUNT(*) FROM s) AS x, "
              "(SELECT SUM(s.f) FROM s WHERE s.e > 1) AS y FROM r WHERE r.a > 3",
}
QUANTIFIED = {
    "where": "SELECT r.a, COUNT(*) AS n FROM r WHERE r.b <> ALL (SELECT s.e FROM s "
             "WHERE s.b = r.a) OR r.a = ANY (SELECT t.g FROM t) GROUP BY r.a",
    "select": "SELECT r.a, r.b, r.b < ANY (SELECT t.g FROM t WHERE t.e > r.a) AS q1, "
              "r.a >= ALL (SELECT t.g FROM t WHERE t.h <> 'y') AS q2 FROM r",
}
BATCHES = 2


def _seed(name: str) -> int:
    return zlib.crc32(f"select/{name}".encode())


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_output_subqueries_equal_recompute(spark, vl, tmp_path, shape):
    work = registered_workload(spark, str(tmp_path), _seed(shape))
    check_view_through_batches(spark, work, f"v_sel_{shape}", SHAPES[shape], None, BATCHES)


def _spark_text(query: str) -> str:
    from viewlet.frontend.quantified import rewrite_quantified
    tree = sqlglot.parse_one(query, read="spark")
    return rewrite_quantified(tree, query, lambda t: SCHEMAS[t.name].names).sql(dialect="spark")


def _rows(rows) -> Counter:
    return Counter(tuple(r) for r in rows)


@pytest.mark.parametrize("shape", sorted(QUANTIFIED))
def test_quantified_comparisons_equal_recompute(spark, vl, tmp_path, shape):
    import duckdb
    from deltalake import DeltaTable
    work = registered_workload(spark, str(tmp_path), _seed(shape))
    query = QUANTIFIED[shape]
    rewritten = _spark_text(query)
    assert " ALL " not in rewritten.upper() and " ANY" not in rewritten.upper()

    def duckdb_agrees():
        con = duckdb.connect()
        for name, path in work.paths.items():
            con.register(name, DeltaTable(path).to_pyarrow_table())
        native = _rows(con.execute(query).fetchall())
        assert native == _rows(spark.sql(rewritten).collect())
        if shape == "select":                                     # NULL results occur
            assert any(v is None for row in native for v in row[2:])

    check_view_through_batches(spark, work, f"v_q_{shape}", query, None, 1,
                               oracle=rewritten, also=duckdb_agrees)
