"""Nested aggregates and subqueries: compiled programs vs re-evaluation on random batches
(reference evaluator, no Spark), at every depth."""
import pytest

from compiler_helpers import compile_sql, dump
from test_randomized import check_equivalence, SEEDS

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


QUANTIFIED_SHAPES = {
    "all_correlated":
        "SELECT r.a, COUNT(*) FROM r WHERE r.b > ALL (SELECT s.c FROM s WHERE s.b = r.a) GROUP BY r.a",
    "any_equality":
        "SELECT r.a, COUNT(*) FROM r WHERE r.b = ANY (SELECT s.c FROM s WHERE s.b > 1) GROUP BY r.a",
    "not_some_inequality":
        "SELECT COUNT(*) FROM r WHERE NOT (r.a < SOME (SELECT t.d FROM t WHERE t.c <> r.b))",
}

SELECT_SHAPES = {
    "spj_count_equality":
        "SELECT r.a, (SELECT COUNT(*) FROM s WHERE s.b = r.b) FROM r",
    "spj_sum_inequality":
        "SELECT r.a, (SELECT SUM(s.c) FROM s WHERE s.b > r.b) AS x FROM r",
    "spj_exists_in_all":
        "SELECT r.a, EXISTS (SELECT 1 FROM t WHERE t.c = r.b), r.b IN (SELECT s.c FROM s), "
        "r.a >= ALL (SELECT t.d FROM t) FROM r",
    "spj_self":
        "SELECT r.a, (SELECT COUNT(*) FROM r r2 WHERE r2.b = r.a) FROM r",
    "aggregate_uncorrelated":
        "SELECT r.a, SUM(r.b) * (SELECT COUNT(*) FROM s) FROM r GROUP BY r.a",
    "aggregate_grouped_subquery":
        "SELECT r.a, COUNT(*), (SELECT SUM(s.c) FROM s WHERE s.b = r.a) FROM r GROUP BY r.a, 3",
    "aggregate_exists_on_key":
        "SELECT r.a, COUNT(*), EXISTS (SELECT 1 FROM s WHERE s.b = r.a) FROM r GROUP BY r.a",
    "having_inequality":
        "SELECT r.a, COUNT(*) FROM r GROUP BY r.a HAVING COUNT(*) > (SELECT COUNT(*) FROM s "
        "WHERE s.b > r.a)",
    "global":
        "SELECT COUNT(*) + (SELECT COUNT(*) FROM s), SUM(r.a) FROM r",
}


@pytest.mark.parametrize("depth", [None, 1, 0], ids=lambda d: f"depth{d}")
@pytest.mark.parametrize("name", sorted(QUANTIFIED_SHAPES) + sorted(SELECT_SHAPES))
def test_quantified_and_select_subqueries_equal_reevaluation(name, depth):
    sql = QUANTIFIED_SHAPES.get(name) or SELECT_SHAPES[name]
    nonempty = 0
    for seed in SEEDS:
        nonempty += check_equivalence(sql, depth, seed).nonempty
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


def test_explain_labels_each_statement_with_its_strategy():
    from viewlet.api.explain import explain_program
    _, corr = compile_sql(SHAPES["scalar_eq_corr"])
    text = explain_program("v", SHAPES["scalar_eq_corr"], corr)
    # a batch of s touches some r.a values: only those are revisited
    s_lines = text.split("ON BATCH ds:")[1].split("ON BATCH")[0]
    assert "-- incremental-domain" in s_lines and "Dom[" in s_lines
    _, uncorr = compile_sql(SHAPES["scalar_uncorrelated"])
    text = explain_program("v", SHAPES["scalar_uncorrelated"], uncorr)
    s_lines = text.split("ON BATCH ds:")[1].split("ON BATCH")[0]
    assert "-- reevaluate (old and new nested values)" in s_lines
    r_lines = text.split("ON BATCH dr:")[1].split("ON BATCH")[0]
    assert "-- incremental" in r_lines and "reevaluate" not in r_lines


def test_nested_queries_are_decorrelated_into_maps():
    """Rule 4: the nested SUM per r.a becomes a map keyed by the correlation variable, the
    statements for r read it instead of scanning s."""
    _, program = compile_sql(SHAPES["scalar_eq_corr"])
    for s in program.statements_for("r"):
        assert not s.relations_read()
        if s.target == program.view_map:
            assert s.maps_read()
    keyed_by_corr = [m for n, m in program.maps.items()
                     if n != program.view_map and m.relations() == {"s"} and len(m.keys) == 1]
    assert keyed_by_corr


SHARED = {
    # the same uncorrelated AVG twice (different aliases), as one
    "avg_twice": ("SELECT r.a, COUNT(*) FROM r WHERE r.b > (SELECT AVG(s.c) FROM s) "
                  "AND r.a < (SELECT AVG(x.c) FROM s x) GROUP BY r.a",
                  "SELECT r.a, COUNT(*) FROM r WHERE r.b > (SELECT AVG(s.c) FROM s) "
                  "AND r.a < r.b + 1 GROUP BY r.a"),
    # the same correlated EXISTS in two branches of an OR
    "exists_in_two_branches": (
        "SELECT r.a, COUNT(*) FROM r WHERE (r.a = 1 AND EXISTS (SELECT 1 FROM s WHERE s.b = r.b)) "
        "OR (r.a = 2 AND EXISTS (SELECT 1 FROM s s2 WHERE s2.b = r.b)) GROUP BY r.a",
        "SELECT r.a, COUNT(*) FROM r WHERE (r.a = 1 OR r.a = 2) AND EXISTS (SELECT 1 FROM s "
        "WHERE s.b = r.b) GROUP BY r.a"),
    # one subquery in WHERE and in SELECT
    "where_and_select": (
        "SELECT r.a, SUM(r.b) + (SELECT COUNT(*) FROM s) FROM r WHERE r.b > (SELECT COUNT(*) FROM s) "
        "GROUP BY r.a",
        "SELECT r.a, SUM(r.b) + (SELECT COUNT(*) FROM s) FROM r WHERE r.b > 2 GROUP BY r.a"),
}


@pytest.mark.parametrize("name", sorted(SHARED))
def test_a_shared_subquery_compiles_to_one_set_of_maps(name):
    """Duplicate-map elimination over the whole program: a subquery used in two places gets
    the maps it gets when used once, and each statement evaluates it once (its two nested
    aggregates are unified)."""
    from viewlet.calculus.ir import Nested, walk_atoms
    from compiler_helpers import canonical_defs
    shared, single = SHARED[name]
    _, program = compile_sql(shared)
    _, reference = compile_sql(single)
    subquery_maps = {t for t in canonical_defs(program) if "r(" not in t}
    assert subquery_maps == {t for t in canonical_defs(reference) if "r(" not in t}, dump(program)
    for stmts in program.triggers.values():
        for s in stmts:
            for m in s.rhs.monomials:
                queries = [a.query for a in m.atoms if isinstance(a, Nested)]
                assert len(queries) == len(set(queries)), dump(program)

    def distinct_nested(prog):
        from viewlet.calculus.canonical import canonicalize
        state = prog.maps[prog.view_map]
        return {canonicalize(a.query) for q in state.values.values() for a in walk_atoms(q)
                if isinstance(a, Nested)}
    assert distinct_nested(program) == distinct_nested(reference), dump(program)
