"""The reference evaluator (tests.reference.evaluate): SQL NULL semantics, exact decimals,
batch/map atoms, and a cross-check of evaluate(front end) against SQLite on random data."""
import random
import sqlite3
from decimal import Decimal
from fractions import Fraction

import pytest

from compiler_helpers import TABLES, spec_of
from tests.reference.evaluate import Env, ProgramSimulator, eval_scalar, evaluate, run_program
from viewlet.calculus.ir import Cond, Const, DeltaRel, Lift, MapRef, Monomial, Query, Rel, Value
from viewlet.calculus.scalar import Scalar


def q(group, *monos):
    return Query(tuple(group), tuple(Monomial(c, tuple(atoms)) for c, atoms in monos))


def rel(table, **cols):
    names = tuple(sorted(cols))
    return Rel(table, names, tuple(cols[c] for c in names))


def drel(table, **cols):
    names = tuple(sorted(cols))
    return DeltaRel(table, names, tuple(cols[c] for c in names))


def v(name):
    return Value(Scalar.var(name))


def cond(sql):
    return Cond(Scalar.parse(sql))


def rows(*tuples, cols=("a", "b")):
    """(a, b[, mult]) tuples -> [(row, mult)]."""
    out = []
    for t in tuples:
        mult = t[len(cols)] if len(t) > len(cols) else 1
        out.append((dict(zip(cols, t[:len(cols)])), mult))
    return out


# -- relations, projections, multiplicities ---------------------------------------------------

def test_projection_sums_duplicates_and_multiplicities():
    env = {"relations": {"r": rows((1, 2), (1, 2, 2), (1, 3), (2, 2, -1), (2, 9, 1))}}
    assert evaluate(q(["x"], (1, [rel("r", a="x")])), env) == {(1,): 4}
    assert evaluate(q(["x", "y"], (1, [rel("r", a="x", b="y")])), env) == {
        (1, 2): 3, (1, 3): 1, (2, 2): -1, (2, 9): 1}
    assert evaluate(q([], (1, [rel("r", a="x")])), env) == {(): 4}
    # coefficients (also fractional) and constants
    assert evaluate(q([], (Fraction(1, 2), [rel("r", a="x"), Const(3)])), env) == {(): 6}
    assert evaluate(q([], (-2, [rel("r", a="x")])), env) == {(): -8}


def test_zero_results_are_dropped():
    env = {"relations": {"r": rows((1, 2), (1, 2, -1), (3, 4))}}
    assert evaluate(q(["x"], (1, [rel("r", a="x")])), env) == {(3,): 1}
    assert evaluate(q(["x"], (1, [rel("r", a="x")]), (-1, [rel("r", a="x")])), env) == {}


def test_join_null_never_matches():
    env = {"relations": {"r": rows((1, None), (2, 5)), "s": rows((None, 7), (5, 8), cols=("b", "c"))}}
    join = q(["x", "z"], (1, [rel("r", a="x", b="y"), rel("s", b="y", c="z")]))
    assert evaluate(join, env) == {(2, 8): 1}


def test_repeated_variable_in_one_atom_is_sql_equality():
    env = {"relations": {"r": rows((1, 1), (1, 2), (None, None), (3, 3, 2))}}
    assert evaluate(q(["x"], (1, [rel("r", a="x", b="x")])), env) == {(1,): 1, (3,): 2}


def test_null_group_keys_group_together():
    env = {"relations": {"r": rows((None, 1), (None, 2), (1, 3))}}
    assert evaluate(q(["x"], (1, [rel("r", a="x", b="y")])), env) == {(None,): 2, (1,): 1}


# -- conditions, values, assignments --------------------------------------------------------

def test_condition_null_is_not_true():
    env = {"relations": {"r": rows((None, 1), (0, 1), (5, 1))}}
    assert evaluate(q([], (1, [rel("r", a="x"), cond("x > 1")])), env) == {(): 1}
    assert evaluate(q([], (1, [rel("r", a="x"), cond("NOT x > 1")])), env) == {(): 1}
    assert evaluate(q([], (1, [rel("r", a="x"), cond("x IS NULL")])), env) == {(): 1}
    assert evaluate(q([], (1, [rel("r", a="x"), cond("NOT x IS NULL")])), env) == {(): 2}


def test_value_null_contributes_zero():
    env = {"relations": {"r": rows((None, 1), (2, 1), (3, 1, 2))}}
    assert evaluate(q([], (1, [rel("r", a="x"), v("x")])), env) == {(): 8}
    assert evaluate(q(["x"], (1, [rel("r", a="x"), v("x")])), env) == {(2,): 2, (3,): 6}


def test_lift_binds_and_tests_null_safe():
    env = {"relations": {"r": rows((None, None), (1, 1), (1, 2), (2, None))}}
    # g := a binds a fresh variable (NULL included)
    lift = Lift("g", Scalar.parse("x + 1"))
    assert evaluate(q(["g"], (1, [rel("r", a="x"), lift])), env) == {(None,): 1, (2,): 2, (3,): 1}
    # y := x where the relation binds y: a NULL-safe test applied after the relation atom
    test = q(["x"], (1, [rel("r", a="x", b="y"), Lift("y", Scalar.var("x"))]))
    assert evaluate(test, env) == {(None,): 1, (1,): 1}


def test_lift_before_map_key_is_null_safe_like_the_spark_lowering():
    # m binds g from its keys, then the assignment tests g <=> x (NULL keys match)
    env = {"relations": {"r": rows((None, 0), (1, 0))}, "maps": {"m": {(None,): 10, (1,): 100}}}
    query = q([], (1, [rel("r", a="x"), MapRef("m", ("g",)), Lift("g", Scalar.var("x"))]))
    assert evaluate(query, env) == {(): 110}


def test_chained_assignments():
    env = {"relations": {"r": rows((1, 2))}}
    query = q(["h"], (1, [rel("r", a="x"), Lift("g", Scalar.parse("x * 10")),
                          Lift("h", Scalar.parse("g + 1"))]))
    assert evaluate(query, env) == {(11,): 1}


# -- batches and maps -----------------------------------------------------------------------

def test_delta_and_map_atoms():
    env = Env(relations={"r": rows((7, 7))},
              deltas={"r": rows((1, 10), (1, 10, 2), (2, 20, -1), (3, None))},
              maps={"m": {(10,): 5, (20,): 7, (None,): 100}, "k": {(): 3}})
    query = q(["x"], (1, [drel("r", a="x", b="y"), MapRef("m", ("y",)), MapRef("k", ())]))
    assert evaluate(query, env) == {(1,): 45, (2,): -21}
    # the map binds its key variables when nothing else does
    assert evaluate(q(["y"], (1, [MapRef("m", ("y",))])), env) == {(10,): 5, (20,): 7, (None,): 100}


def test_keyword_environment_and_errors():
    query = q([], (1, [MapRef("missing", ())]))
    with pytest.raises(KeyError, match="missing"):
        evaluate(query, maps={})
    with pytest.raises(KeyError, match="batch"):
        evaluate(q([], (1, [drel("r", a="x")])), relations={"r": []})
    with pytest.raises(ValueError, match="not bound"):
        evaluate(q(["z"], (1, [rel("r", a="x")])), relations={"r": rows((1, 1))})
    with pytest.raises(ValueError, match="unbound"):
        evaluate(q([], (1, [rel("r", a="x"), cond("y > 1")])), relations={"r": rows((1, 1))})


# -- scalars --------------------------------------------------------------------------------

@pytest.mark.parametrize("sql, binding, expected", [
    ("x + y * 2", {"x": 1, "y": 3}, 7),
    ("(x - y) * -1", {"x": 1, "y": 3}, 2),
    ("x / y", {"x": 1, "y": 3}, Fraction(1, 3)),
    ("x / y", {"x": 1, "y": 0}, None),
    ("x % 3", {"x": -7}, -1),
    ("x % 0", {"x": 7}, None),
    ("x + y", {"x": None, "y": 3}, None),
    ("x * 1.5", {"x": 3}, Fraction(9, 2)),
    ("x * y", {"x": Decimal("0.10"), "y": Decimal("0.20")}, Decimal("0.02")),
    ("x = y", {"x": 1, "y": Decimal("1.00")}, True),
    ("x <> y", {"x": 1, "y": None}, None),
    ("x >= 2 AND y < 3", {"x": 2, "y": 2}, True),
    ("x > 2 AND y < 3", {"x": None, "y": 5}, False),
    ("x > 2 AND y < 3", {"x": None, "y": 1}, None),
    ("x > 2 OR y < 3", {"x": None, "y": 1}, True),
    ("x > 2 OR y < 3", {"x": None, "y": 5}, None),
    ("NOT x > 2", {"x": None}, None),
    ("x IS NULL", {"x": None}, True),
    ("x IS NOT NULL", {"x": None}, False),
    ("x IN (1, 2, 3)", {"x": 2}, True),
    ("x IN (1, 2, NULL)", {"x": 5}, None),
    ("x IN (1, 2)", {"x": None}, None),
    ("x NOT IN (1, 2)", {"x": 5}, True),
    ("x BETWEEN 1 AND y", {"x": 3, "y": 3}, True),
    ("x BETWEEN 1 AND y", {"x": 0, "y": None}, False),
    ("x BETWEEN 1 AND y", {"x": 2, "y": None}, None),
    ("x = 'abc'", {"x": "abc"}, True),
    ("x < 'b'", {"x": "abc"}, True),
    ("TRUE AND x", {"x": True}, True),
    ("NULL", {}, None),
    ("x <=> y", {"x": None, "y": None}, True),
    ("CASE WHEN x > 1 THEN y ELSE 0 END", {"x": 2, "y": 5}, 5),
    ("CASE WHEN x > 1 THEN y ELSE 0 END", {"x": None, "y": 5}, 0),
    ("CASE WHEN x > 1 THEN y END", {"x": 0, "y": 5}, None),
    ("CASE x WHEN 1 THEN 10 WHEN 2 THEN 20 END", {"x": 2}, 20),
    ("IF(x > 1, 1, 2)", {"x": None}, 2),
    ("COALESCE(x, y, 3)", {"x": None, "y": None}, 3),
])
def test_scalars(sql, binding, expected):
    got = eval_scalar(Scalar.parse(sql), binding)
    assert got == expected and (got is None) == (expected is None)
    if isinstance(expected, bool):
        assert got is expected


def test_decimals_stay_exact():
    env = {"relations": {"r": [({"a": Decimal("0.1"), "b": 1}, 1)] * 10}}
    assert evaluate(q([], (1, [rel("r", a="x"), v("x")])), env) == {(): 1}
    env = {"relations": {"r": [({"a": Decimal("0.10"), "b": Decimal("0.3")}, 3)]}}
    got = evaluate(q([], (1, [rel("r", a="x", b="y"), v("x"), v("y")])), env)
    assert got == {(): Decimal("0.09")}


@pytest.mark.parametrize("sql", ["upper(x) = 'A'", "CAST(x AS TIMESTAMP) > 1", "x IS TRUE",
                                 "x RLIKE 'a'", "rand() > 0.5", "SUM(x) > 1"])
def test_unsupported_scalars_raise(sql):
    with pytest.raises(NotImplementedError):
        eval_scalar(Scalar.parse(sql), {"x": 1})


def test_like_year_substring_and_decimal_cast():
    import datetime
    assert eval_scalar(Scalar.parse("x LIKE 'a%c_'"), {"x": "abcd"}) is True
    assert eval_scalar(Scalar.parse("x LIKE '%green%'"), {"x": "dark grey"}) is False
    assert eval_scalar(Scalar.parse("x LIKE 'a'"), {"x": None}) is None
    # sqlglot parses `x NOT LIKE p` as one LIKE node with negate=True
    assert eval_scalar(Scalar.parse("x NOT LIKE '%special%'"), {"x": "plain"}) is True
    assert eval_scalar(Scalar.parse("x NOT LIKE '%special%'"), {"x": "a special"}) is False
    assert eval_scalar(Scalar.parse("x NOT LIKE 'a'"), {"x": None}) is None
    assert eval_scalar(Scalar.parse("YEAR(x)"), {"x": datetime.date(1995, 3, 1)}) == 1995
    assert eval_scalar(Scalar.parse("SUBSTRING(x, 1, 2)"), {"x": "13-555"}) == "13"
    d = datetime.date
    assert eval_scalar(Scalar.parse("DATE '1996-01-31' + INTERVAL '1' MONTH"), {}) == d(1996, 2, 29)
    assert eval_scalar(Scalar.parse("x - INTERVAL 1 DAY"), {"x": d(1996, 3, 1)}) == d(1996, 2, 29)
    assert eval_scalar(Scalar.parse("x + INTERVAL '1' YEAR"), {"x": d(1996, 2, 29)}) == d(1997, 2, 28)
    # Spark rounds decimals HALF_UP when casting
    assert eval_scalar(Scalar.parse("CAST(x AS DECIMAL(10, 1))"), {"x": Decimal("2.25")}) == \
        Fraction(23, 10)
    assert eval_scalar(Scalar.parse("CAST(x AS DECIMAL(10, 1))"), {"x": Decimal("-2.25")}) == \
        Fraction(-23, 10)


# -- the simulator on a hand-written program ------------------------------------------------

def test_simulator_reads_old_maps_and_applies_earlier_relations():
    """COUNT(r x s) by hand at depth 1: the s trigger reads r with the batch's r changes."""
    from viewlet.compiler.program import MapDef, Program, Statement
    view = q([], (1, [rel("r", a="x"), rel("s", b="y")]))
    p = Program(view_map="v", depth=1)
    p.maps["v"] = MapDef("v", (), {"__count": view}, 0)
    p.add_statement("r", Statement("v", "__count", q([], (1, [drel("r", a="x"), rel("s", b="y")]))))
    p.add_statement("s", Statement("v", "__count", q([], (1, [rel("r", a="x"), drel("s", b="y")]))))
    assert p.relations() == ["r", "s"]
    final = run_program(p, {"r": rows((1, 0)), "s": rows((0, 1), cols=("b", "c"))},
                        [{"r": rows((2, 0), (3, 0)), "s": rows((5, 5), cols=("b", "c"))},
                         {"s": rows((0, 1, -1), cols=("b", "c"))}])
    assert final == {"v": {"__count": {(): 3}}}


def test_simulator_reevaluate_and_zero_removal():
    from viewlet.compiler.program import MapDef, Program, Statement
    view = q(["x"], (1, [rel("r", a="x")]))
    p = Program(view_map="v", depth=0)
    p.maps["v"] = MapDef("v", ("x",), {"__count": view}, 0)
    p.add_statement("r", Statement("v", "__count", view, "reevaluate"))
    sim = ProgramSimulator(p, {"r": rows((1, 0), (2, 0))})
    sim.apply({"r": rows((1, 0, -1), (3, 0))})
    assert sim.maps == {"v": {"__count": {(2,): 1, (3,): 1}}} and sim.batches == 1
    assert sim.expected() == sim.maps["v"]
    # incremental statements drop entries that reach zero
    p.triggers.clear()
    p.add_statement("r", Statement("v", "__count", q(["x"], (1, [drel("r", a="x")]))))
    sim = ProgramSimulator(p, {"r": rows((1, 0), (2, 0))})
    sim.apply({"r": rows((1, 0, -1), (3, 0))})
    assert sim.maps == {"v": {"__count": {(2,): 1, (3,): 1}}}


# -- cross-check: evaluate(front end) == SQLite ----------------------------------------------

CROSS = [
    ("SELECT r.a, SUM(s.c) FROM r JOIN s ON r.b = s.b WHERE s.c > 2 GROUP BY r.a",
     "SELECT r.a, COUNT(*), SUM(s.c), COUNT(s.c) FROM r JOIN s ON r.b = s.b WHERE s.c > 2 "
     "GROUP BY r.a"),
    ("SELECT s.c, COUNT(s.b), COUNT(r.a), AVG(r.a * s.b) FROM r, s WHERE r.b = s.b GROUP BY s.c",
     "SELECT s.c, COUNT(*), COUNT(s.b), COUNT(r.a), SUM(r.a * s.b), COUNT(r.a * s.b) "
     "FROM r, s WHERE r.b = s.b GROUP BY s.c"),
    ("SELECT r.a % 3, r.a + s.c, COUNT(*) FROM r, s WHERE r.b = s.b AND (r.a > 1 OR NOT s.c = 2) "
     "GROUP BY r.a % 3, r.a + s.c",
     "SELECT r.a % 3, r.a + s.c, COUNT(*) FROM r, s WHERE r.b = s.b AND (r.a > 1 OR NOT s.c = 2) "
     "GROUP BY r.a % 3, r.a + s.c"),
    ("SELECT r.a, SUM(2), COUNT(1), SUM(r.b * 3 + 1), SUM(1.5 * r.b) FROM r "
     "WHERE r.a IN (1, 2, 3) OR r.b BETWEEN 2 AND 4 GROUP BY r.a",
     "SELECT r.a, COUNT(*), SUM(2), SUM(r.b * 3 + 1), COUNT(r.b * 3 + 1), SUM(1.5 * r.b), "
     "COUNT(r.b) FROM r WHERE r.a IN (1, 2, 3) OR r.b BETWEEN 2 AND 4 GROUP BY r.a"),
    ("SELECT r.a, s.c FROM r, s WHERE r.b < s.b",
     "SELECT r.a, s.c, COUNT(*) FROM r, s WHERE r.b < s.b GROUP BY r.a, s.c"),
    ("SELECT r.a + 1 AS x, s.c FROM r JOIN s USING (b)",
     "SELECT r.a + 1, s.c, COUNT(*) FROM r JOIN s USING (b) GROUP BY r.a + 1, s.c"),
    ("SELECT r1.a, COUNT(*), SUM(r2.b) FROM r r1, r r2 WHERE r1.b = r2.a AND r1.a < r2.b "
     "GROUP BY r1.a",
     "SELECT r1.a, COUNT(*), SUM(r2.b), COUNT(r2.b) FROM r r1, r r2 "
     "WHERE r1.b = r2.a AND r1.a < r2.b GROUP BY r1.a"),
    ("SELECT COUNT(*), SUM(r.a * t.d) FROM r, s, t WHERE r.b = s.b AND s.c = t.c AND r.a <> t.d",
     "SELECT COUNT(*), SUM(r.a * t.d), COUNT(r.a * t.d) FROM r, s, t "
     "WHERE r.b = s.b AND s.c = t.c AND r.a <> t.d"),
]


def _random_tables(rng, n=8):
    out = {}
    for t in ("r", "s", "t"):
        out[t] = [({c: (None if nullable and rng.random() < 0.2 else rng.randrange(5))
                    for c, _, nullable in TABLES[t]}, 1) for _ in range(n)]
    return out


@pytest.mark.parametrize("view_sql, sqlite_sql", CROSS, ids=[c[0][:60] for c in CROSS])
def test_evaluate_front_end_matches_sqlite(view_sql, sqlite_sql):
    spec = spec_of(view_sql)
    ngroup = len(spec.group)
    for seed in range(3):
        tables = _random_tables(random.Random(seed))
        db = sqlite3.connect(":memory:")
        for t, trows in tables.items():
            cols = [c for c, _, _ in TABLES[t]]
            db.execute(f"CREATE TABLE {t} ({', '.join(cols)})")
            db.executemany(f"INSERT INTO {t} VALUES ({', '.join('?' * len(cols))})",
                           [tuple(row[c] for c in cols) for row, _ in trows])
        expected = {c: {} for c in spec.columns}
        for rec in db.execute(sqlite_sql):
            key, values = tuple(rec[:ngroup]), rec[ngroup:]
            assert len(values) == len(spec.columns)
            for col, val in zip(spec.columns, values):
                if val:  # NULL sums and zeros are absent from the state
                    expected[col][key] = val
        got = {c: evaluate(query, relations=tables) for c, query in spec.columns.items()}
        assert got == expected, (seed, view_sql)
