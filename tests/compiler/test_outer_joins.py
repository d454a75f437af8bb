"""Outer joins: the translation equals SQL (DuckDB) on NULL-heavy data with duplicates, and
the compiled programs equal re-evaluation on random batches (padding rows appear and vanish
as matches come and go)."""

import pytest

from compiler_helpers import TABLES, spec_of
from sql_oracle import assert_translation_equals_sql
from test_randomized import check_equivalence

SHAPES = {
    "left": "SELECT r.a, r.b, s.c FROM r LEFT JOIN s ON r.b = s.b",
    "right": "SELECT r.a, s.b, s.c FROM r RIGHT OUTER JOIN s ON r.b = s.b",
    "full": "SELECT r.a, r.b, s.b, s.c FROM r FULL OUTER JOIN s ON r.b = s.b",
    "left_one_sided_on": "SELECT r.a, s.c FROM r LEFT JOIN s ON r.b = s.b AND r.a > 1 AND s.c < 3",
    "left_on_right_only": "SELECT r.a, s.c FROM r LEFT JOIN s ON s.c > 2",
    "full_on_theta": "SELECT r.a, s.c FROM r FULL JOIN s ON r.a < s.c AND r.b <> 2",
    "left_chain": "SELECT r.a, s.c, t.d FROM r LEFT JOIN s ON r.b = s.b LEFT JOIN t ON s.c = t.c",
    "left_then_inner": "SELECT r.a, s.c, t.d FROM r LEFT JOIN s ON r.b = s.b JOIN t ON s.c = t.c",
    "inner_then_right": "SELECT r.a, s.c, t.d FROM r JOIN s ON r.b = s.b RIGHT JOIN t ON s.c = t.c",
    "full_chain": "SELECT r.a, s.b, t.d FROM r FULL JOIN s ON r.b = s.b FULL JOIN t ON s.c = t.c",
    "right_of_left": "SELECT r.a, s.c, t.d FROM r LEFT JOIN s ON r.b = s.b "
                     "RIGHT JOIN t ON t.c = s.c",
    "where_is_null_anti": "SELECT r.a FROM r LEFT JOIN s ON r.b = s.b WHERE s.c IS NULL",
    "where_on_padded": "SELECT r.a, s.c FROM r LEFT JOIN s ON r.b = s.b "
                       "WHERE s.c > 1 OR s.c IS NULL OR COALESCE(s.c, r.a) = 0",
    "using_left": "SELECT b, r.a, s.c FROM r LEFT JOIN s USING (b)",
    "using_right": "SELECT b, r.a, s.c FROM r RIGHT JOIN s USING (b)",
    "using_full": "SELECT b, r.a, s.c FROM r FULL JOIN s USING (b) WHERE b IS NULL OR b < 3",
    "self_left": "SELECT r1.a, r2.a FROM r r1 LEFT JOIN r r2 ON r1.b = r2.a",
    "case_over_padding": "SELECT r.a, CASE WHEN s.c IS NULL THEN -1 ELSE s.c * 2 END FROM r "
                         "LEFT JOIN s ON r.b = s.b",
    "group_by_padded": "SELECT s.c, COUNT(*), COUNT(r.a), SUM(r.a) FROM r LEFT JOIN s "
                       "ON r.b = s.b GROUP BY s.c",
    "right_aggregates": "SELECT s.c, COUNT(*), COUNT(r.a), SUM(r.a), AVG(r.a) FROM r RIGHT JOIN s "
                        "ON r.b = s.b GROUP BY s.c",
    "global_over_left": "SELECT COUNT(*), COUNT(s.c), SUM(s.c), SUM(r.a) FROM r "
                        "LEFT JOIN s ON r.b = s.b",
    "q13_shape": "SELECT cnt, COUNT(*) FROM (SELECT r.a, COUNT(s.c) AS cnt FROM r LEFT JOIN s "
                 "ON r.b = s.b AND s.c <> 1 GROUP BY r.a) x GROUP BY cnt",
    "derived_side": "SELECT r.a, x.c1 FROM r LEFT JOIN (SELECT s.b, s.c + 1 AS c1 FROM s "
                    "WHERE s.c > 0) x ON r.b = x.b",
    "aggregating_side": "SELECT r.a, x.sc FROM r LEFT JOIN (SELECT s.b, SUM(s.c) AS sc FROM s "
                        "GROUP BY s.b) x ON r.b = x.b",
    "exists_over_padded": "SELECT r.a, s.c FROM r LEFT JOIN s ON r.b = s.b "
                          "WHERE NOT EXISTS (SELECT 1 FROM t WHERE t.c = s.c)",
    "outer_join_in_exists": "SELECT r.a FROM r WHERE EXISTS (SELECT 1 FROM s LEFT JOIN t "
                            "ON s.c = t.c WHERE s.b = r.b AND t.d IS NULL)",
    "outer_join_in_in": "SELECT r.a, COUNT(*) FROM r WHERE r.b IN (SELECT s.b FROM s FULL JOIN t "
                        "ON s.c = t.c) GROUP BY r.a",
    "group_by_coalesce_padded": "SELECT COALESCE(s.c, -1), COUNT(*) FROM r LEFT JOIN s "
                                "ON r.b = s.b GROUP BY COALESCE(s.c, -1)",
    "outer_join_of_outer_join_groups": "SELECT r.a, x.n FROM r LEFT JOIN (SELECT s.b, "
                                       "COUNT(*) AS n FROM s LEFT JOIN t ON s.c = t.c "
                                       "GROUP BY s.b) x ON r.b = x.b",
    "scalar_subquery_over_padded": "SELECT r.a, s.c FROM r LEFT JOIN s ON r.b = s.b "
                                   "WHERE s.c = (SELECT COUNT(*) FROM t WHERE t.c = s.c)",
    "derived_expression_join": "SELECT x.k, s.c FROM (SELECT r.a + 1 AS k FROM r) x "
                               "JOIN s ON x.k = s.b",
}
# compiled programs: every shape at unlimited depth, a few at depth 1
PROGRAM_CASES = [(n, None) for n in SHAPES] + [(n, 1) for n in ("left", "full_chain",
                                                                "group_by_padded", "q13_shape")]


def null_heavy_row(rng, table):
    """Small domains, a third NULLs in every column (join keys included)."""
    return {c: None if rng.random() < 0.3 else rng.randrange(4) for c, _, _ in TABLES[table]}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_translation_equals_sql(name):
    assert_translation_equals_sql(name, SHAPES[name], spec_of(SHAPES[name]), TABLES,
                                  null_heavy_row)


@pytest.mark.parametrize("name,depth", PROGRAM_CASES,
                         ids=[f"{n}-depth{d}" for n, d in PROGRAM_CASES])
def test_program_equals_reevaluation(name, depth):
    check_equivalence(SHAPES[name], depth, seed=0, batches=8, row=null_heavy_row)


@pytest.mark.parametrize("where", ["s.c = 1", "s.c > r.a", "s.c IN (1, 2)", "s.c LIKE '1%'",
                                   "NOT s.c IS NULL AND r.a > 0"])
def test_null_rejecting_where_compiles_to_the_inner_join(where):
    """A WHERE condition that is never true on padding (NULL) drops the padding part at
    compile time: no nested match count, the inner join's program."""
    from viewlet.calculus.ir import Nested, walk_atoms
    outer = spec_of(f"SELECT r.a, COUNT(*) FROM r LEFT JOIN s ON r.b = s.b WHERE {where} "
                    "GROUP BY r.a")
    inner = spec_of(f"SELECT r.a, COUNT(*) FROM r JOIN s ON r.b = s.b WHERE {where} GROUP BY r.a")
    for col, q in outer.columns.items():
        assert not any(isinstance(a, Nested) for a in walk_atoms(q)), q
        assert len(q.monomials) == len(inner.columns[col].monomials)


def test_padding_survives_where_that_accepts_null():
    from viewlet.calculus.ir import Nested, walk_atoms
    spec = spec_of("SELECT r.a FROM r LEFT JOIN s ON r.b = s.b WHERE s.c IS NULL OR s.c > 2")
    (q,) = spec.columns.values()
    assert any(isinstance(a, Nested) for a in walk_atoms(q))


@pytest.mark.parametrize("pred, values", [
    ("CAST(NULL AS INT) = x", {"N"}), ("NULL + 1 > x", {"N"}), ("x LIKE NULL", {"N"}),
    ("NOT (CAST(NULL AS INT) = x)", {"N"}), ("CAST(NULL AS INT) = x OR x > 1", {"N", "T"}),
    ("CAST(NULL AS INT) = x AND x > 1", {"N", "F"}), ("CAST(NULL AS INT) IS NULL", {"T"}),
    ("NOT NULL IS NULL", {"F"}), ("NULL <=> NULL", {"T"}), ("1 <=> NULL", {"F"}),
    ("0 = 0", {"T"}), ("-1 > 2", {"F"}), ("x = y", {"N", "T", "F"}),
    ("COALESCE(NULL, x) = 1", {"N", "T", "F"}),
])
def test_truth_values_of_predicates_with_null_literals(pred, values):
    from viewlet.calculus.nulls import truth_values
    from viewlet.calculus.scalar import Scalar
    assert truth_values(Scalar.parse(pred).ast) == frozenset(values)
