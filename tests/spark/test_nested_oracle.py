"""Subqueries and nested aggregates against the Spark oracle: after every refresh of random
insert/delete/update batches the view equals Spark's evaluation of its defining query."""
from __future__ import annotations

import re
import zlib

import pytest

from .oracle import check_view_through_batches
from .workload import registered_workload

SHAPES = {
    "scalar_eq_corr_sum": "SELECT r.a, COUNT(*) AS n, SUM(r.c) AS sc FROM r "
                          "WHERE r.c < (SELECT SUM(s.f) FROM s WHERE s.b = r.b) GROUP BY r.a",
    "scalar_self_avg_q17": "SELECT SUM(r1.c) AS sc FROM r r1 "
                           "WHERE r1.c < 0.8 * (SELECT AVG(r2.c) FROM r r2 WHERE r2.a = r1.a)",
    # Q17a's shape (r for lineitem, s for part): the summed column is not the compared one
    "scalar_corr_sum_q17a": "SELECT SUM(r.a) AS sa FROM r, s WHERE s.b = r.b "
                            "AND r.c < 0.5 * (SELECT SUM(r2.c) FROM r r2 WHERE r2.b = s.b)",
    "scalar_uncorrelated": "SELECT s.e, COUNT(*) AS n FROM s WHERE s.f > (SELECT AVG(s2.f) FROM s s2) "
                           "GROUP BY s.e",
    "scalar_inequality_corr": "SELECT r.a, COUNT(*) AS n FROM r "
                              "WHERE 3 > (SELECT COUNT(*) FROM s WHERE s.b > r.b) GROUP BY r.a",
    "exists_not_exists": "SELECT r.a, COUNT(*) AS n FROM r WHERE EXISTS (SELECT 1 FROM s WHERE "
                         "s.b = r.b) AND NOT EXISTS (SELECT 1 FROM t WHERE t.e = r.a) GROUP BY r.a",
    "in_not_in": "SELECT r.a, COUNT(*) AS n FROM r WHERE r.b IN (SELECT s.e FROM s) "
                 "AND r.a NOT IN (SELECT t.g FROM t) GROUP BY r.a",
    "in_grouped_having": "SELECT r.a, SUM(r.c) AS sc FROM r WHERE r.b IN (SELECT s.b FROM s "
                         "GROUP BY s.b HAVING SUM(s.f) > 2) GROUP BY r.a",
    "nested_twice": "SELECT r.a, COUNT(*) AS n FROM r WHERE 1 <= (SELECT COUNT(*) FROM s WHERE "
                    "s.b = r.b AND 1 < (SELECT SUM(t.g) FROM t WHERE t.e = s.e)) GROUP BY r.a",
    "spj_subquery": "SELECT r.a, r.b FROM r WHERE r.a > (SELECT COUNT(*) FROM t WHERE t.e = r.b)",
    "from_aggregating": "SELECT x.n, COUNT(*) AS k, SUM(x.sc) AS ssc FROM (SELECT r.b, COUNT(*) AS n, "
                        "SUM(r.c) AS sc FROM r GROUP BY r.b) x GROUP BY x.n",
    "from_aggregating_join": "SELECT s.e, SUM(x.sc) AS ssc FROM s, (SELECT r.b, SUM(r.c) AS sc FROM r "
                             "GROUP BY r.b) x WHERE s.b = x.b GROUP BY s.e",
    "from_plain": "SELECT y.k, COUNT(*) AS n FROM (SELECT r.a + 1 AS k, s.e FROM r, s "
                  "WHERE r.b = s.b) y WHERE y.e > 0 GROUP BY y.k",
}
CASES = [(name, None) for name in SHAPES] + [("scalar_eq_corr_sum", 1), ("in_not_in", 0)]
BATCHES = 2


@pytest.mark.parametrize("shape,depth", CASES,
                         ids=[f"{n}-depth{'inf' if d is None else d}" for n, d in CASES])
def test_nested_view_equals_recompute(spark, vl, tmp_path, shape, depth):
    seed = zlib.crc32(f"nested/{shape}/{depth}".encode())
    work = registered_workload(spark, str(tmp_path), seed)
    view = f"v_{shape}_{'inf' if depth is None else depth}"
    check_view_through_batches(spark, work, view, SHAPES[shape], depth, BATCHES)


def _canonical_aggregates(phase) -> list:
    """The phase's CTEs that aggregate (GROUP BY), as texts in which every CTE a text reads
    is replaced by that CTE's own canonical text and output column names are erased: two
    equal entries compute the same rows under different names."""
    canon = {}
    out = []
    for cte in phase.tree.args["with_"].expressions:
        text = re.sub(r"\bsq\d+\b", lambda m: canon.get(m.group(0), m.group(0)), cte.this.sql())
        text = re.sub(r'"[ci]\d+"', '"col"', text)
        canon[cte.alias_or_name] = f"({text})"
        if "GROUP BY" in text:
            out.append(text)
    return out


def test_a_nested_aggregate_under_two_joins_is_computed_once(spark, vl, tmp_path):
    """Q17a's shape (r for lineitem, s for part): a batch of r reads the per-part sum of r
    under each of the joins of its delta. The nested aggregate is the same query under all
    of them, and the batch plan computes it once (plan/lower.py input_column), not once per
    enclosing join (which failed before: the enclosing joins number their columns apart)."""
    registered_workload(spark, str(tmp_path), seed=73)
    spark.sql(f"CREATE INCREMENTAL VIEW v_nested_once AS {SHAPES['scalar_corr_sum_q17a']}")
    try:
        view = vl.ctx.load("v_nested_once")
        phases = view.batch_plan(("r",), ("r",)).phases
        assert any(_canonical_aggregates(p) for p in phases), \
            "the plan has no nested aggregate: the test reads the wrong plan"
        for phase in phases:       # each phase is one query
            aggregates = _canonical_aggregates(phase)
            repeated = {text for text in aggregates if aggregates.count(text) > 1}
            assert not repeated, f"computed more than once: {sorted(repeated)[:2]}"
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS v_nested_once")


def test_the_value_columns_of_one_nested_join_are_one_block(spark, vl, tmp_path):
    """Q17a's shape again: the view's state has a value column per output (the row count
    `__count`, the sum `s0`, the count of summed values that are not NULL `n0`), so the
    delta of r has a statement per column over the same join and per-part nested sums. The
    statements of `__count` and `s0` differ only in the column they multiply by, and each
    of their joins is computed once, as one block writing both (plan/lower.py carries
    every column through a nested stage), not once per column (which failed before: each
    enclosing query multiplied by its own column). `n0`'s statement also filters the
    enclosing rows (r.a IS NOT NULL), which keeps its joins apart."""
    registered_workload(spark, str(tmp_path), seed=79)
    spark.sql(f"CREATE INCREMENTAL VIEW v_nested_fused AS {SHAPES['scalar_corr_sum_q17a']}")
    try:
        view = vl.ctx.load("v_nested_fused")
        state = view.compiled.program.view_map
        assert {"__count", "s0"} <= set(view.map_schema(state).values)
        blocks = [b for p in view.batch_plan(("r",), ("r",)).phases for b in p.blocks]
        written = [{m.column for m in b.members if m.target == state} for b in blocks]
        fused = [cols for cols in written if cols & {"__count", "s0"}]
        assert fused, "no block of r's delta writes the view's count or sum"
        for cols in fused:
            assert {"__count", "s0"} <= cols, f"a block writes only {sorted(cols)}"
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS v_nested_fused")
