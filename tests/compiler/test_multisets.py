"""MIN, MAX and the DISTINCT aggregates (multisets kept as maps), in views and in subqueries,
and WITH clauses: the translation equals SQL (DuckDB) on NULL-heavy data with duplicates, and
the compiled programs, run on random batches that delete the current extremes, move values
and empty whole groups, keep every map equal to its definition and give, after every batch,
the rows DuckDB computes (derived from the maps as the runtime derives them)."""
import copy
import datetime as dt
import random
from collections import Counter

import pytest

from compiler_helpers import TABLES, compile_sql, dump, spec_of
from sql_oracle import (assert_translation_equals_sql, duckdb_rows, group_rows, net,
                        program_state, rows_from_state)
from test_randomized import random_batch
from tests.reference.evaluate import ProgramSimulator

TYPED = dict(TABLES, u=[("k", "int", True), ("s", "string", True), ("d", "date", True)])
_STRINGS = ["a", "b", "ab", "B", ""]
_DATES = [dt.date(1994, 12, 31), dt.date(1995, 1, 1), dt.date(1996, 2, 29)]

SHAPES = {
    # aggregate views: the multisets next to the view state
    "min_max": "SELECT r.a, MIN(r.b), MAX(r.b), COUNT(*) FROM r GROUP BY r.a",
    "global": "SELECT MIN(r.a), MAX(r.b), COUNT(DISTINCT r.a), SUM(DISTINCT r.b), "
              "AVG(DISTINCT r.b), COUNT(*) FROM r",
    "distinct_mixed": "SELECT s.b, COUNT(DISTINCT s.c), SUM(DISTINCT s.c), AVG(DISTINCT s.c), "
                      "SUM(s.c), COUNT(s.c), AVG(s.c), MIN(DISTINCT s.c), COUNT(*) FROM s "
                      "GROUP BY s.b",
    "strings_dates": "SELECT u.k, MIN(u.s), MAX(u.s), MIN(u.d), MAX(u.d), COUNT(DISTINCT u.s) "
                     "FROM u GROUP BY u.k",
    "join": "SELECT r.a, MIN(s.c), MAX(s.c + r.b) FROM r JOIN s ON r.b = s.b GROUP BY r.a",
    "left_join": "SELECT r.a, MIN(s.c), MAX(s.c), COUNT(DISTINCT s.c), COUNT(*) FROM r "
                 "LEFT JOIN s ON r.b = s.b GROUP BY r.a",
    "full_join": "SELECT s.c, MAX(r.a), COUNT(DISTINCT r.b), MIN(s.b) FROM r FULL JOIN s "
                 "ON r.b = s.b GROUP BY s.c",
    "left_join_where": "SELECT r.a, MAX(s.c) FROM r LEFT JOIN s ON r.b = s.b "
                       "WHERE s.c IS NULL OR s.c > 1 GROUP BY r.a",
    "having": "SELECT r.a, COUNT(*) FROM r GROUP BY r.a HAVING MIN(r.b) > 0 OR MAX(r.b) IS NULL",
    "spread": "SELECT r.a, MAX(r.b) - MIN(r.b) AS spread FROM r GROUP BY r.a",
    "group_expression": "SELECT r.a % 2, MIN(r.b), MAX(r.a) FROM r GROUP BY r.a % 2",
    "of_group_key": "SELECT r.a, MIN(r.a), COUNT(DISTINCT r.a) FROM r GROUP BY r.a",
    "self_join": "SELECT r1.a, MIN(r2.b) FROM r r1 JOIN r r2 ON r1.b = r2.a GROUP BY r1.a",
    "theta_join": "SELECT r.a, MAX(s.c) FROM r JOIN s ON r.b < s.b GROUP BY r.a",
    "case_argument": "SELECT r.a, MIN(CASE WHEN r.b > 1 THEN r.b END), "
                     "COUNT(DISTINCT COALESCE(r.b, 0)) FROM r GROUP BY r.a",
    "over_union_all": "SELECT x.v, MIN(x.w), COUNT(DISTINCT x.w) FROM (SELECT a AS v, b AS w "
                      "FROM r UNION ALL SELECT b, c FROM s) x GROUP BY x.v",
    "distinct_of_min": "SELECT DISTINCT MIN(r.b) FROM r GROUP BY r.a",
    "with_exists": "SELECT r.a, MIN(r.b) FROM r WHERE EXISTS (SELECT 1 FROM s WHERE s.b = r.a) "
                   "GROUP BY r.a",
    # nested aggregates of a kind (subqueries)
    "scalar_min": "SELECT r.a, r.b FROM r WHERE r.b = (SELECT MIN(s.c) FROM s WHERE s.b = r.a)",
    "scalar_max_uncorrelated": "SELECT r.a FROM r WHERE r.b >= (SELECT MAX(s.c) FROM s)",
    "scalar_count_distinct": "SELECT r.a, COUNT(*) FROM r WHERE r.b < (SELECT COUNT(DISTINCT "
                             "s.c) FROM s WHERE s.b = r.a) GROUP BY r.a",
    "scalar_sum_avg_distinct": "SELECT r.a FROM r WHERE r.b <= (SELECT SUM(DISTINCT s.c) FROM s "
                               "WHERE s.b = r.a) OR r.a > (SELECT AVG(DISTINCT t.d) FROM t)",
    "scalar_min_theta": "SELECT r.a FROM r WHERE r.b > (SELECT MIN(s.c) FROM s WHERE s.b < r.a)",
    "scalar_min_strings": "SELECT u.k FROM u WHERE u.s = (SELECT MAX(u2.s) FROM u u2 "
                          "WHERE u2.k = u.k)",
    "from_min_max": "SELECT x.b, x.mx FROM (SELECT s.b, MAX(s.c) AS mx, MIN(s.c) AS mn FROM s "
                    "GROUP BY s.b) x WHERE x.mx > x.mn OR x.mn IS NULL",
    "grouped_over_from_min": "SELECT x.mn, COUNT(*) FROM (SELECT s.b, MIN(s.c) AS mn FROM s "
                             "GROUP BY s.b) x GROUP BY x.mn",
    "from_having_min": "SELECT x.b, x.n FROM (SELECT s.b, COUNT(*) AS n FROM s GROUP BY s.b "
                       "HAVING MIN(s.c) < 2) x",
    "in_having_max": "SELECT r.a FROM r WHERE r.b IN (SELECT s.b FROM s GROUP BY s.b "
                     "HAVING MAX(s.c) > 1)",
    "over_padding": "SELECT r.a, s.c FROM r LEFT JOIN s ON r.b = s.b WHERE (SELECT MAX(t.d) "
                    "FROM t WHERE t.c = s.c) IS NULL OR (SELECT COUNT(DISTINCT t.d) FROM t "
                    "WHERE t.c = s.c) = 1",
    "min_of_from_sums": "SELECT MIN(x.tot), MAX(x.tot), COUNT(DISTINCT x.tot) FROM (SELECT s.b, "
                        "SUM(s.c) AS tot FROM s GROUP BY s.b) x",
    "max_of_sums": "SELECT x.b FROM (SELECT s.b, SUM(s.c) AS tot FROM s GROUP BY s.b) x "
                   "WHERE x.tot = (SELECT MAX(y.tot) FROM (SELECT s.b, SUM(s.c) AS tot FROM s "
                   "GROUP BY s.b) y)",
    # in SELECT and HAVING subqueries: multisets of the view per state group
    "select_min": "SELECT r.a, (SELECT MIN(s.c) FROM s WHERE s.b = r.a) FROM r",
    "select_strings_dates": "SELECT u.k, (SELECT MAX(u2.s) FROM u u2 WHERE u2.k = u.k), "
                            "(SELECT MIN(u3.d) FROM u u3 WHERE u3.k = u.k) AS d FROM u",
    "select_theta_count_distinct": "SELECT r.a, r.b, (SELECT COUNT(DISTINCT s.c) FROM s "
                                   "WHERE s.b < r.b) FROM r",
    "select_uncorrelated_in_aggregate": "SELECT r.a, SUM(r.b) + (SELECT SUM(DISTINCT s.c) FROM s), "
                                        "(SELECT MAX(t.d) FROM t) FROM r GROUP BY r.a",
    "global_select_avg_distinct": "SELECT COUNT(*), (SELECT AVG(DISTINCT t.d) FROM t), "
                                  "(SELECT MIN(t.c) FROM t) FROM r",
    "having_max": "SELECT r.a, COUNT(*) FROM r GROUP BY r.a HAVING COUNT(*) >= (SELECT MAX(s.c) "
                  "FROM s WHERE s.b = r.a) OR r.a IS NULL",
    "having_min_below_max": "SELECT r.a, SUM(r.b) FROM r GROUP BY r.a HAVING (SELECT MIN(s.c) "
                            "FROM s WHERE s.b = r.a) < (SELECT MAX(s.c) FROM s WHERE s.b = r.a)",
    # WITH clauses
    "with_q15_shape": "WITH rev AS (SELECT s.b AS k, SUM(s.c) AS tot FROM s GROUP BY s.b) "
                      "SELECT r.a, rev.tot FROM r, rev WHERE r.b = rev.k "
                      "AND rev.tot = (SELECT MAX(tot) FROM rev)",
    "with_chain": "WITH x AS (SELECT r.a, r.b FROM r WHERE r.a > 0), y (p, q) AS "
                  "(SELECT a, MIN(b) FROM x GROUP BY a) SELECT p, q FROM y",
    "with_union": "WITH x AS (SELECT s.b, s.c FROM s) SELECT b FROM x UNION SELECT c FROM x",
}
DEPTH_CASES = [(n, None) for n in SHAPES] + [
    (n, d) for n in ("min_max", "global", "left_join", "scalar_min", "from_min_max",
                     "with_q15_shape", "join", "scalar_min_theta", "select_min", "having_max")
    for d in (0, 1)] + [(n, 2) for n in ("join", "scalar_min", "distinct_mixed")]


def null_heavy_row(rng, table):
    """Small domains, a third NULLs in every column."""
    row = {}
    for col, typ, _ in TYPED[table]:
        if rng.random() < 0.3:
            row[col] = None
        elif typ == "string":
            row[col] = rng.choice(_STRINGS)
        elif typ == "date":
            row[col] = rng.choice(_DATES)
        else:
            row[col] = rng.randrange(4)
    return row


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_translation_equals_sql(name):
    assert_translation_equals_sql(name, SHAPES[name], spec_of(SHAPES[name], TYPED), TYPED,
                                  null_heavy_row)


# -- batches that hit the extremes -------------------------------------------------------------

def _live(rows):
    """The rows of a relation given as (row, signed multiplicity) changes, one per copy."""
    counts = Counter()
    for row, m in rows:
        counts[tuple(sorted(row.items()))] += m
    return [dict(k) for k, m in counts.items() for _ in range(m)]


def extreme_batch(rng, relations, tables=TYPED, row=null_heavy_row):
    """A random batch plus one targeted change: every row holding a column's current least
    or greatest value deleted or moved to another value, or every row of a group deleted."""
    batch = random_batch(rng, tables, relations, row)
    table = rng.choice(sorted(relations))
    live = _live(relations[table])
    if not live:
        return batch
    col = rng.choice([c for c, _, _ in tables[table]])
    values = [r[col] for r in live if r[col] is not None]
    roll = rng.random()
    if values and roll < 0.7:
        target = min(values) if rng.random() < 0.5 else max(values)
        hit = [r for r in live if r[col] == target]
        changes = [(r, -1) for r in hit]
        if roll < 0.35:                          # an update that moves the extreme
            changes += [(dict(r, **{col: row(rng, table)[col]}), 1) for r in hit]
    else:                                        # a group empties out
        key = rng.choice(live)[col]
        changes = [(r, -1) for r in live if r[col] == key or (key is None and r[col] is None)]
    batch[table] = changes + [c for c in batch.get(table, []) if c[1] > 0]
    return batch


def _changed_keys(before, after):
    return {k for k in set(before) | set(after) if before.get(k, 0) != after.get(k, 0)}


def check_program(sql, depth, seed=0, batches=8, tables=TYPED, row=null_heavy_row, caches=False):
    """Maps equal their definitions, the rows derived from them equal DuckDB's, and a batch
    changes no group's row outside the groups `Program.result_sources` says it touched.
    Returns the number of batches after which the view had rows."""
    spec, program = compile_sql(sql, depth=depth, tables=tables, caches=caches)
    rng = random.Random(f"{sql}|{seed}")
    initial = {t: [(row(rng, t), 1) for _ in range(rng.randrange(3, 9))]
               for t in program.relations()}
    sim = ProgramSimulator(program, initial)
    sources = program.result_sources()
    nonempty = 0
    for i in range(batches):
        before_maps = copy.deepcopy(sim.maps)
        before_rows = group_rows(spec, program_state(spec, program, sim))
        batch = extreme_batch(rng, sim.relations, tables, row)
        sim.apply(batch)
        expected = sim.expected_all()
        where = f"after batch {i} (depth {depth}):\n  batch {batch}\n{dump(program)}"
        for name in program.maps:
            assert sim.maps[name] == expected[name], f"{name} {where}"
        state = program_state(spec, program, sim)
        got = rows_from_state(spec, state)
        want = duckdb_rows(sql, tables, net(sim.relations))
        nonempty += bool(want)
        assert got == want, f"rows {where}\n got  {sorted(got.items(), key=str)}\n" \
                            f" want {sorted(want.items(), key=str)}"
        if spec.is_aggregate:
            touched = set()
            for name, n in sources.items():
                for col in program.maps[name].values:
                    touched |= {k[:n] for k in _changed_keys(before_maps[name][col],
                                                              sim.maps[name][col])}
            after_rows = group_rows(spec, state)
            changed = {k for k in set(before_rows) | set(after_rows)
                       if before_rows.get(k) != after_rows.get(k)}
            if spec.group:
                assert changed <= touched, f"untouched groups changed {changed - touched} {where}"
    return nonempty


@pytest.mark.parametrize("name,depth", DEPTH_CASES, ids=[f"{n}-depth{d}" for n, d in DEPTH_CASES])
def test_program_rows_equal_sql(name, depth):
    check_program(SHAPES[name], depth)


CACHED = {
    # inequality correlations: the nested multisets become view caches keyed by input and value
    "scalar_min_theta": SHAPES["scalar_min_theta"],
    "count_distinct_theta": "SELECT r.a, COUNT(*) FROM r WHERE r.b < (SELECT COUNT(DISTINCT s.c) "
                            "FROM s WHERE s.b > r.a) GROUP BY r.a",
    "view_min_over_theta": "SELECT r.a, MIN(r.b), MAX(r.b) FROM r WHERE r.b >= (SELECT "
                           "MAX(s.c) FROM s WHERE s.b <= r.a) GROUP BY r.a",
}


@pytest.mark.parametrize("name,depth", [(n, d) for n in CACHED for d in (None, 2)])
def test_view_caches_of_nested_multisets(name, depth):
    """With the caches option a nested MIN / MAX / DISTINCT aggregate correlated on an
    inequality is kept as a cache keyed by its inputs and its value; the program still gives
    DuckDB's rows after every batch."""
    _, program = compile_sql(CACHED[name], depth=depth, tables=TYPED, caches=True)
    caches = [m for m in program.maps.values() if m.cache]
    assert caches and all(len(m.keys) == 2 for m in caches), dump(program)
    check_program(CACHED[name], depth, caches=True)


def test_update_moving_the_minimum_touches_its_group_through_the_multiset_only():
    """An UPDATE of r.b (the row count unchanged) changes no view-state key but the
    multiset's; the group it moves is a prefix of a changed multiset key."""
    spec, program = compile_sql("SELECT r.a, MIN(r.b) FROM r GROUP BY r.a", tables=TYPED)
    sim = ProgramSimulator(program, {"r": [({"a": 1, "b": 1}, 1), ({"a": 1, "b": 5}, 1)]})
    before = copy.deepcopy(sim.maps)
    sim.apply({"r": [({"a": 1, "b": 1}, -1), ({"a": 1, "b": 7}, 1)]})
    assert sim.maps[program.view_map] == before[program.view_map]
    (ms,) = spec.multisets
    assert program.result_sources() == {program.view_map: 1, ms: 1}
    assert _changed_keys(before[ms]["__v"], sim.maps[ms]["__v"]) == {(1, 1), (1, 7)}
    assert rows_from_state(spec, program_state(spec, program, sim)) == Counter({(1, 5): 1})


def test_aggregates_share_one_multiset_per_argument():
    spec, program = compile_sql("SELECT r.a, MIN(r.b), MAX(r.b), COUNT(DISTINCT r.b), "
                                "SUM(DISTINCT b), MIN(r.b + 0), MAX(r.a) FROM r GROUP BY r.a",
                                tables=TYPED)
    by_arg = {a.sql: a.multiset for a in spec.aggregates}
    assert len(set(by_arg.values())) == 3, by_arg
    assert by_arg["MIN(r.b)"] == by_arg["MAX(r.b)"] == by_arg["COUNT(DISTINCT r.b)"] \
        == by_arg["SUM(DISTINCT `r`.b)"]
    assert sorted(m.name for m in program.multisets()) == sorted(spec.multisets)
    for m in program.multisets():
        assert m.level == 0 and m.group_keys == 1 and m.keys[:1] == spec.group


def test_nested_kinds_are_distinct_maps_of_one_multiset():
    """A MIN and a MAX subquery over the same rows read the same multiset map (duplicate-map
    elimination) through nested aggregates of different kinds."""
    from viewlet.calculus.ir import MapRef, Nested, walk_atoms
    _, program = compile_sql("SELECT r.a FROM r WHERE r.b > (SELECT MIN(s.c) FROM s WHERE s.b = r.a)"
                             " AND r.b < (SELECT MAX(s.c) FROM s WHERE s.b = r.a)", tables=TYPED)
    (stmt,) = program.statements_for("r")[:1]
    nested = [a for a in walk_atoms(stmt.rhs) if isinstance(a, Nested)]
    assert sorted(a.kind for a in nested) == ["max", "min"]
    maps = {m.name for a in nested for m in walk_atoms(a.query) if isinstance(m, MapRef)}
    assert len(maps) == 1 and program.maps[maps.pop()].level == 1, dump(program)


def test_select_and_having_subqueries_read_view_multisets():
    """A nested MIN / MAX / DISTINCT aggregate of a SELECT or HAVING subquery has no state
    column: its multiset per state group is a multiset of the view (MIN and MAX of one
    subquery share it), which the result reads like a MIN / MAX aggregate's."""
    spec = spec_of(SHAPES["having_min_below_max"], TYPED)
    assert not spec.value_columns and len(spec.multisets) == 1, spec.value_multisets
    (name,) = spec.multisets
    assert sorted(spec.value_multisets.values()) == [(name, "max"), (name, "min")]
    assert spec.multisets[name].query.group[:-1] == spec.group
    spec = spec_of("SELECT r.a, COUNT(*), (SELECT COUNT(*) FROM s WHERE s.b = r.a), "
                   "(SELECT MAX(s.c) FROM s WHERE s.b = r.a) FROM r GROUP BY r.a, 3, 4", TYPED)
    assert len(spec.value_columns) == 1 and len(spec.value_multisets) == 1


def test_a_subquery_of_a_kind_used_twice_is_one_nested_aggregate():
    """Two copies of a MIN subquery (value variables named apart) unify into one nested
    aggregate; a MIN and a MAX of the same rows do not."""
    from viewlet.calculus.ir import Nested
    twice = spec_of("SELECT r.a FROM r WHERE r.b > (SELECT MIN(s.c) FROM s) "
                    "AND r.a < (SELECT MIN(x.c) FROM s x)", TYPED)
    both = spec_of("SELECT r.a FROM r WHERE r.b > (SELECT MIN(s.c) FROM s) "
                   "AND r.a < (SELECT MAX(x.c) FROM s x)", TYPED)

    def kinds(spec):
        (q,) = spec.columns.values()
        return sorted(a.kind for m in q.monomials for a in m.atoms if isinstance(a, Nested))
    assert kinds(twice) == ["min"] and kinds(both) == ["max", "min"]


def test_explain_names_the_kind():
    from viewlet.api.explain import explain_program
    _, program = compile_sql("SELECT r.a, MIN(r.b) FROM r WHERE r.b = (SELECT MAX(s.c) FROM s "
                             "WHERE s.b = r.a) GROUP BY r.a", tables=TYPED)
    text = explain_program("v", "q", program)
    assert ":= MAX[" in text and "multiset of the view state" in text, text
