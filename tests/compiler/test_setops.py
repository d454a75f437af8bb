"""SELECT DISTINCT and UNION [ALL]: the translation equals SQL (DuckDB) on NULL-heavy data with
duplicates, and the compiled programs equal re-evaluation on random batches."""
import pytest

from compiler_helpers import TABLES, spec_of
from sql_oracle import assert_translation_equals_sql
from test_outer_joins import null_heavy_row
from test_randomized import check_equivalence

SHAPES = {
    "distinct_join": "SELECT DISTINCT r.a, s.c FROM r JOIN s ON r.b = s.b",
    "distinct_expressions": "SELECT DISTINCT r.a % 2, r.b IS NULL, COALESCE(r.b, -1) FROM r",
    "distinct_noop_over_groups": "SELECT DISTINCT r.a, COUNT(*) FROM r GROUP BY r.a",
    "distinct_over_aggregate": "SELECT DISTINCT COUNT(*) FROM r GROUP BY r.a",
    "distinct_over_having": "SELECT DISTINCT r.b, COUNT(*) FROM r GROUP BY r.a, r.b "
                            "HAVING SUM(r.a) > 1 OR r.b IS NULL",
    "distinct_global": "SELECT DISTINCT COUNT(*), SUM(r.a) FROM r",
    "union_all": "SELECT r.a, r.b FROM r UNION ALL SELECT s.b, s.c FROM s",
    "union": "SELECT r.a FROM r UNION SELECT s.c FROM s UNION SELECT t.d FROM t",
    "union_all_of_union": "SELECT r.a FROM r UNION ALL (SELECT s.c FROM s UNION SELECT t.d FROM t)",
    "union_of_aggregates": "SELECT r.a, COUNT(*) FROM r GROUP BY r.a "
                           "UNION ALL SELECT s.c, SUM(s.b) FROM s GROUP BY s.c",
    "union_expressions": "SELECT r.a + 1 FROM r WHERE r.b > 0 UNION ALL SELECT s.c * 2 FROM s",
    "aggregate_over_union": "SELECT u.k, COUNT(*), SUM(u.v), COUNT(u.v) FROM (SELECT r.a AS k, "
                            "r.b AS v FROM r UNION ALL SELECT s.c, s.b FROM s WHERE s.b > 0) u "
                            "GROUP BY u.k",
    "global_over_union": "SELECT COUNT(*), SUM(u.k) FROM (SELECT r.a AS k FROM r "
                         "UNION ALL SELECT s.c FROM s) u",
    "union_joined": "SELECT u.k, t.d FROM (SELECT r.a AS k FROM r UNION SELECT s.c FROM s) u "
                    "JOIN t ON u.k = t.c",
    "union_outer_joined": "SELECT t.c, u.k FROM t LEFT JOIN (SELECT r.a AS k FROM r "
                          "UNION ALL SELECT s.b FROM s) u ON t.c = u.k",
    "union_of_outer_join": "SELECT r.a, s.c FROM r LEFT JOIN s ON r.b = s.b "
                           "UNION ALL SELECT t.c, t.d FROM t",
    "distinct_subquery": "SELECT x.a, COUNT(*) FROM (SELECT DISTINCT r.a, r.b FROM r) x "
                         "GROUP BY x.a",
    "distinct_subquery_joined": "SELECT x.a, s.c FROM (SELECT DISTINCT r.a, r.b FROM r) x "
                                "JOIN s ON x.b = s.b",
    "having_subquery": "SELECT x.a, x.sb FROM (SELECT r.a, SUM(r.b) AS sb FROM r GROUP BY r.a "
                       "HAVING COUNT(*) > 1 AND r.a IS NOT NULL) x",
    "having_unselected_column": "SELECT x.a FROM (SELECT r.a, COUNT(*) AS n FROM r "
                                "GROUP BY r.a HAVING SUM(r.b) > 1) x",
}
PROGRAM_CASES = [(n, None) for n in SHAPES] + [(n, 1) for n in ("union_all", "union",
                                                                "aggregate_over_union")]


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_translation_equals_sql(name):
    assert_translation_equals_sql(name, SHAPES[name], spec_of(SHAPES[name]), TABLES,
                                  null_heavy_row)


@pytest.mark.parametrize("name,depth", PROGRAM_CASES,
                         ids=[f"{n}-depth{d}" for n, d in PROGRAM_CASES])
def test_program_equals_reevaluation(name, depth):
    check_equivalence(SHAPES[name], depth, seed=0, batches=8, row=null_heavy_row)
