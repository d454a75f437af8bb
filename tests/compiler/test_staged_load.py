"""The staged load (compiler/staged_load.py): each round's statements, evaluated over the
base tables and the maps of earlier rounds, give every map its definition's value."""
import random

import pytest

from compiler_helpers import compile_sql
from test_tpch import _DATES, TABLES as TPCH_TABLES, _keyed_tpch, load_query
from tests.reference.evaluate import Env, ProgramSimulator, _reorder, evaluate
from viewlet.calculus.ir import MapRef, walk_atoms
from viewlet.compiler.staged_load import load_order, load_rounds, staged_load

TPCH_ROWS = {"lineitem": 6000, "orders": 1500, "customer": 150, "supplier": 10, "nation": 25,
             "region": 5}

GENERIC = {
    "join3": "SELECT r.a, SUM(t.d * r.b) AS x, COUNT(*) AS n FROM r, s, t "
             "WHERE r.b = s.b AND s.c = t.c GROUP BY r.a",
    "join3_filtered": "SELECT s.c, SUM(r.a) AS x FROM r JOIN s ON r.b = s.b JOIN t ON s.c = t.c "
                      "WHERE t.d > 1 GROUP BY s.c",
    "minmax": "SELECT r.a, MIN(s.c) AS lo, MAX(s.c) AS hi FROM r, s WHERE r.b = s.b GROUP BY r.a",
    "distinct": "SELECT r.a, COUNT(DISTINCT s.c) AS n FROM r, s WHERE r.b = s.b GROUP BY r.a",
    "nested": "SELECT r.a, SUM(r.b) AS x FROM r WHERE r.b < (SELECT SUM(s.c) FROM s "
              "WHERE s.b = r.a) GROUP BY r.a",
    "exists": "SELECT r.a, COUNT(*) AS n FROM r, s WHERE r.b = s.b AND EXISTS "
              "(SELECT 1 FROM t WHERE t.c = s.c) GROUP BY r.a",
    "union": "SELECT a, SUM(b) AS x FROM (SELECT r.a, s.c AS b FROM r JOIN s ON r.b = s.b "
             "UNION ALL SELECT t.c AS a, t.d AS b FROM t JOIN s ON t.c = s.c) u GROUP BY a",
    "outer": "SELECT r.a, COUNT(s.c) AS n FROM r LEFT JOIN s ON r.b = s.b GROUP BY r.a",
}


def _generic_tables(rng):
    def rows(cols, n):
        return [({c: rng.choice([None, 0, 1, 2, 3]) if rng.random() < 0.1 else rng.randrange(4)
                  for c in cols}, 1) for _ in range(n)]
    return {"r": rows(("a", "b"), 14), "s": rows(("b", "c"), 12), "t": rows(("c", "d"), 10)}


def _check_rounds(program, tables, rows):
    """Every staged statement over the definitions' values of the maps it reads, summed per
    map column, equals that column's definition; a round reads only earlier rounds' maps.
    Returns how many rows the maps of later rounds hold."""
    load = staged_load(program, list(program.maps), rows)
    sim = ProgramSimulator(program, tables)
    defined = sim.map_values()
    env = Env(relations=sim.relations, maps=defined)
    done, later = set(), 0
    for trigger in load_rounds(load):
        got = {}
        statements = load.statements_for(trigger)
        for s in statements:
            assert {a.name for a in walk_atoms(s.rhs) if isinstance(a, MapRef)} <= done, trigger
            column = got.setdefault((s.target, s.column), {})
            for k, v in _reorder(evaluate(s.rhs, env), s.rhs.group,
                                 program.maps[s.target].keys).items():
                column[k] = column.get(k, 0) + v
        for (target, column), values in got.items():
            values = {k: v for k, v in values.items() if v != 0}
            assert values == sim.maps[target][column], (trigger, target, column)
            later += len(values) if trigger != load_rounds(load)[0] else 0
        done |= {s.target for s in statements}
    assert done == set(program.maps)
    return later


@pytest.mark.parametrize("name", ["q3", "q5", "q10", "q18a", "q22a", "q1"])
@pytest.mark.parametrize("depth", [None, 1, 2], ids=lambda d: f"depth{d}")
def test_tpch_maps_load_in_rounds_to_their_definitions(name, depth):
    _, program = compile_sql(load_query(name), depth, tables=TPCH_TABLES)
    later = 0
    for seed in range(3):
        rng = random.Random(seed)
        tables = _keyed_tpch(rng)
        for row, _ in tables["orders"]:
            row["o_orderdate"] = rng.choice(_DATES)
        later += _check_rounds(program, tables, TPCH_ROWS)
    staged = len(load_rounds(staged_load(program, list(program.maps), TPCH_ROWS))) > 1
    assert later > 0 or not staged, "the random data never filled a map of a later round"


@pytest.mark.parametrize("name", sorted(GENERIC))
def test_maps_load_in_rounds_to_their_definitions(name):
    _, program = compile_sql(GENERIC[name])
    rows = {"r": 3, "s": 2, "t": 1}
    later = sum(_check_rounds(program, _generic_tables(random.Random(seed)), rows)
                for seed in range(3))
    staged = len(load_rounds(staged_load(program, list(program.maps), rows))) > 1
    assert later > 0 or not staged, "the random data never filled a map of a later round"


def test_q3_loads_lineitem_once_and_joins_the_sums():
    """Q3: lineitem is read by one map (summed by order key); the maps over lineitem and
    orders load from orders' trigger, the view's state from customer's, the smallest."""
    _, program = compile_sql(load_query("q3"), tables=TPCH_TABLES)
    load = staged_load(program, list(program.maps), TPCH_ROWS)
    rounds = load_rounds(load)
    assert len(rounds) == 3
    reading_lineitem = {s.target for t in rounds for s in load.statements_for(t)
                        if "lineitem" in s.rhs.relations()}
    assert reading_lineitem == {"m3_lineitem"}
    last = load.statements_for(rounds[-1])
    assert {s.target for s in last} == {program.view_map}
    assert all(s.rhs.relations() == {"customer"} for s in last)
    # without the sizes the choice is still made, deterministically (by name)
    assert load_rounds(staged_load(program, list(program.maps))) == rounds
    # load_order (what EXPLAIN prints) says the same: the round, relation and maps read
    order = {m.name: m for m in load_order(program, list(program.maps), TPCH_ROWS)}
    assert order["m3_lineitem"] == ("m3_lineitem", 0, None, ())
    view = order[program.view_map]
    assert (view.round, view.via) == (2, "customer")
    assert set(view.reads) == {a.name for s in last for a in walk_atoms(s.rhs)
                               if isinstance(a, MapRef)}
    for m in order.values():
        assert {s.target for s in load.statements_for(rounds[m.round])} >= {m.name}


def test_unstaged_load_is_one_round_of_definitions():
    _, program = compile_sql(load_query("q3"), tables=TPCH_TABLES)
    load = staged_load(program, list(program.maps), TPCH_ROWS, stage=False)
    assert load_rounds(load) == ("__viewlet_load0",)
    assert all(s.rhs == program.maps[s.target].values[s.column]
               for s in load.statements_for("__viewlet_load0"))
