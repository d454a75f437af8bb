"""Randomized equivalence: compiled trigger programs vs re-evaluation.

For each query shape and depth, random batches of inserts and deletes (duplicate rows, NULLs,
several relations in one batch, rows inserted and deleted in the same batch) run through the
program under Viewlet's batch semantics (tests.reference.evaluate.ProgramSimulator). After
every batch every view-state column, and every auxiliary map, must equal its defining query
evaluated over the current relations. Seeded and deterministic.
"""
import random
from collections import Counter
from decimal import Decimal

import pytest

from compiler_helpers import Q3_TABLES, TABLES, compile_sql, dump
from tests.reference.evaluate import ProgramSimulator

Q3 = ("select l.ordkey, o.sprior, sum(l.extprice) from customer c, orders o, lineitem l "
      "where c.custkey = o.custkey and l.ordkey = o.ordkey group by l.ordkey, o.sprior")

SHAPES = {
    "join_filter_group":
        "SELECT r.a, SUM(s.c) FROM r JOIN s ON r.b = s.b WHERE s.c > 2 GROUP BY r.a",
    "chain3":
        "SELECT r.a, t.d, COUNT(*), SUM(r.a * t.d) FROM r, s, t "
        "WHERE r.b = s.b AND s.c = t.c GROUP BY r.a, t.d",
    "star3_by_middle":
        "SELECT s.b, SUM(r.a), SUM(t.d) FROM r, s, t WHERE r.b = s.b AND s.c = t.c GROUP BY s.b",
    "chain3_theta":
        "SELECT COUNT(*) FROM r, s, t WHERE r.b = s.b AND s.c = t.c AND r.a < t.d",
    "self_join":
        "SELECT r1.a, COUNT(*), SUM(r2.a) FROM r r1, r r2 WHERE r1.b = r2.b GROUP BY r1.a",
    "self_join_fk":
        "SELECT r1.a, COUNT(*) FROM r r1, r r2 WHERE r1.b = r2.a GROUP BY r1.a",
    "self_theta":
        "SELECT COUNT(*) FROM r r1, r r2 WHERE r1.a < r2.a",
    "theta":
        "SELECT r.a, COUNT(*), SUM(s.c) FROM r, s WHERE r.b < s.b GROUP BY r.a",
    "between_theta":
        "SELECT r.a, COUNT(*) FROM r, s WHERE s.c BETWEEN r.a AND r.b GROUP BY r.a",
    "or_not":
        "SELECT s.c, COUNT(*) FROM r, s WHERE r.b = s.b AND (r.a > 1 OR NOT s.c = 2) GROUP BY s.c",
    "group_exprs":
        "SELECT r.a % 3, r.a + s.c, COUNT(*) FROM r, s WHERE r.b = s.b GROUP BY r.a % 3, r.a + s.c",
    "sum_product":
        "SELECT SUM(r.a * s.c) FROM r, s WHERE r.b = s.b",
    "count_nullable":
        "SELECT s.c, COUNT(s.b), COUNT(r.a), COUNT(r.a + s.c) FROM r, s WHERE r.b = s.b GROUP BY s.c",
    "avg":
        "SELECT s.b, AVG(r.a), AVG(r.a * s.c), AVG(r.a - s.c) FROM r JOIN s ON r.b = s.b "
        "GROUP BY s.b",
    "cyclic_triangle":
        "SELECT s.c, COUNT(*) FROM r JOIN s ON r.b = s.b JOIN t ON t.c = s.c AND t.d = r.a "
        "GROUP BY s.c",
    "shared_key_cycle":         # r2's delta keys r1 and t, which s and t join on r1.b: cut there
        "SELECT r1.a, COUNT(*), SUM(t.d) FROM r r1, s, t, r r2 "
        "WHERE r1.b = s.b AND s.b = t.c AND r2.a = r1.a AND r2.b = t.d GROUP BY r1.a",
    "constants":
        "SELECT r.a, SUM(2), COUNT(1), SUM(r.b * 3 + 1), SUM(1.5 * r.b) FROM r "
        "WHERE r.a IN (1, 2, 3) OR r.b BETWEEN 2 AND 4 GROUP BY r.a",
    "conditional_sum":
        "SELECT r.a, SUM(CASE WHEN s.c > 1 THEN r.b ELSE 0 END), SUM(COALESCE(s.c, 1) * r.b) "
        "FROM r, s WHERE r.b = s.b GROUP BY r.a",
    "global":
        "SELECT COUNT(*), SUM(t.d) FROM s, t WHERE s.c = t.c AND t.d IS NOT NULL",
    "cross_product":
        "SELECT r.a, t.d, COUNT(*) FROM r, t WHERE r.a = t.d + 1 GROUP BY r.a, t.d",
    "spj":
        "SELECT r.a, s.c FROM r, s WHERE r.b = s.b AND r.a <> s.c",
    "spj_exprs":
        "SELECT r.a + 1 AS x, s.c, t.d FROM r JOIN s USING (b) JOIN t ON s.c = t.c",
    "decimal_orders":
        "SELECT o.custk, SUM(li.price * o.xch) FROM orders o, lineitem li "
        "WHERE o.ordk = li.ordk GROUP BY o.custk",
    "tpch_q3_like": Q3,
}
DEPTHS = [None, 0, 1, 2]
SEEDS = range(2)
BATCHES = 12


def _tables_for(name):
    return Q3_TABLES if name == "tpch_q3_like" else TABLES


def random_row(rng, columns):
    row = {}
    for col, typ, nullable in columns:
        if nullable and rng.random() < 0.15:
            row[col] = None
        elif typ.startswith("decimal"):
            row[col] = Decimal(rng.randrange(0, 400)) / 100
        elif typ == "string":
            row[col] = rng.choice("xy")
        else:
            row[col] = rng.randrange(5)
    return row


def _key(row):
    return tuple(sorted(row.items()))


def random_batch(rng, tables, relations, row=None):
    row = row or (lambda rng, table: random_row(rng, tables[table]))
    batch = {}
    names = sorted(relations)
    for table in rng.sample(names, rng.randrange(1, len(names) + 1)):
        live = Counter()
        for existing, m in relations[table]:
            live[_key(existing)] += m
        live = [dict(k) for k, m in live.items() for _ in range(m) if m > 0]
        changes = []
        for _ in range(rng.randrange(1, 6)):
            roll = rng.random()
            if live and roll < 0.3:                       # delete an existing row
                changes.append((live.pop(rng.randrange(len(live))), -1))
            elif roll < 0.45:                             # insert and delete in one batch
                new = row(rng, table)
                changes += [(new, 1), (dict(new), -1)]
            elif live and roll < 0.55:                    # update: delete + insert
                old = live.pop(rng.randrange(len(live)))
                new = dict(old)
                col = rng.choice(sorted(new))
                new[col] = row(rng, table)[col]
                changes += [(old, -1), (new, 1)]
            else:                                         # insert, maybe duplicated
                new = row(rng, table)
                changes.append((new, rng.choice([1, 1, 1, 2])))
                if rng.random() < 0.2:
                    changes.append((dict(new), 1))
        batch[table] = changes
    return batch


def check_equivalence(sql, depth, seed, tables=TABLES, batches=BATCHES, row=None, caches=False,
                      fuse=True):
    """Run random batches through the compiled program, comparing every map with its
    definition after each batch. `row(rng, table)` makes a random row (default: by type)."""
    row = row or (lambda rng, table: random_row(rng, tables[table]))
    spec, program = compile_sql(sql, depth=depth, tables=tables, caches=caches, fuse=fuse)
    rng = random.Random(f"{sql}|{seed}")          # the same data at every depth
    initial = {t: [(row(rng, t), 1) for _ in range(rng.randrange(2, 9))]
               for t in program.relations()}
    sim = ProgramSimulator(program, initial)
    sim.nonempty = 0
    for i in range(batches):
        batch = random_batch(rng, tables, sim.relations, row)
        sim.apply(batch)
        expected = sim.expected_all()
        for name in program.maps:
            got, want = sim.maps[name], expected[name]
            assert got == want, (f"{name} after batch {i} (seed {seed}, depth {depth}):\n"
                                 f"  batch {batch}\n  got  {got}\n  want {want}\n{dump(program)}")
        sim.nonempty += any(sim.maps[program.view_map].values())
    return sim


@pytest.mark.parametrize("depth", DEPTHS, ids=lambda d: f"depth{d}")
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_program_equals_reevaluation(name, depth):
    nonempty = 0
    for seed in SEEDS:
        nonempty += check_equivalence(SHAPES[name], depth, seed, tables=_tables_for(name)).nonempty
    # the random data must exercise the program: the view is mostly non-empty
    assert nonempty >= BATCHES * len(SEEDS) // 3, nonempty


# -- known bug: maps over different columns of one table are merged ---------------------------

SELF_JOIN_PROJECTIONS = "SELECT COUNT(*) FROM r r1, r r2 WHERE r1.b = r2.a"
SELF_JOIN_3 = "SELECT COUNT(*) FROM r r1, r r2, r r3 WHERE r1.b = r2.a AND r2.b = r3.a"
_DEDUP_BUG = ("duplicate-map elimination ignores relation columns: canonicalize() prints atoms "
              "with compiler.printer.show, which omits Rel columns, so Sum[x](r(a=x)) and "
              "Sum[x](r(b=x)) become one map (see test_canonical.py)")


@pytest.mark.parametrize("sql, depth", [
    (SELF_JOIN_PROJECTIONS, None),
    (SELF_JOIN_PROJECTIONS, 2),
    (SELF_JOIN_PROJECTIONS, 1),
    (SELF_JOIN_PROJECTIONS, 0),
    (SELF_JOIN_3, None),
    (SELF_JOIN_3, 2),
    (SELF_JOIN_3, 1),
])
def test_self_join_over_different_columns(sql, depth):
    for seed in SEEDS:
        check_equivalence(sql, depth, seed)
