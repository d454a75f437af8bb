"""A Spark-free oracle for the SQL front end: a view's rows computed from its translated state
(the calculus queries evaluated by the reference evaluator, the result rows derived from the
state as engine/batch/result_sql.py does) against DuckDB running the view's SQL on the same rows.

Used for constructs whose semantics live in the translation (outer joins, DISTINCT, UNION,
MIN / MAX and DISTINCT aggregates read from multisets):
fast enough to try many shapes and seeds; the Spark oracle (tests/spark) is the real check
of types and the batch path."""
from __future__ import annotations

import random
from collections import Counter
from decimal import Decimal
from fractions import Fraction

import duckdb

from tests.reference.evaluate import eval_scalar, evaluate, multiset_value
from viewlet.calculus.ir import COUNT_DISTINCT, SUM_DISTINCT
from viewlet.calculus.scalar import Scalar
from viewlet.compiler.program import VALUE
from viewlet.frontend.spec import COUNT_COLUMN
from viewlet.frontend.multisets import AVG_DISTINCT

_DUCK_TYPES = {"int": "INTEGER", "bigint": "BIGINT", "string": "VARCHAR", "date": "DATE"}


def state_rows(spec, relations):
    """{state column or multiset name: {key: value}} of the view state and its multisets
    over the relations."""
    out = {col: evaluate(q, relations=relations) for col, q in spec.columns.items()}
    out.update({name: evaluate(m.query, relations=relations) for name, m in spec.multisets.items()})
    return out


def program_state(spec, program, sim):
    """The same from a simulated program's maps (what the runtime derives the view from)."""
    out = dict(sim.maps[program.view_map])
    out.update({name: sim.maps[name][VALUE] for name in spec.multisets})
    return out


def _agg_value(agg, state, key, values_of):
    if agg.multiset is not None:
        counts = values_of(agg.multiset, key)
        if agg.kind == AVG_DISTINCT:
            n = multiset_value(COUNT_DISTINCT, counts)
            return None if n == 0 else Fraction(multiset_value(SUM_DISTINCT, counts)) / n
        return multiset_value(agg.kind, counts)
    count = state[agg.count_column].get(key, 0)
    if agg.kind in ("count", "count_star"):
        return count
    if count == 0:
        return None
    total = state[agg.sum_column].get(key, 0)
    return total if agg.kind == "sum" else Fraction(total) / count


def group_rows(spec, state):
    """{group key: (output row, copies)} derived from the state as the runtime does: the
    groups with rows (one global row always), HAVING applied, aggregates of multiset kinds
    read from their multisets, subqueries of SELECT / HAVING from their state columns and
    multisets."""
    counts = state[COUNT_COLUMN]
    keys = set(counts)
    if spec.is_aggregate and not spec.group:
        keys = {()}
    index = {}
    for name in spec.multisets:
        by_group = {}
        for k, c in state[name].items():
            by_group.setdefault(k[:-1], {})[k[-1]] = c
        index[name] = by_group

    def values_of(name, key):
        return index[name].get(key, {})

    out = {}
    for key in keys:
        binding = dict(zip(spec.group, key))
        for agg in spec.aggregates:
            binding[agg.placeholder] = _agg_value(agg, state, key, values_of)
        # subqueries in SELECT / HAVING: nested sums from state columns, nested MIN / MAX /
        # DISTINCT aggregates from their multisets (engine/batch/result_sql.py `_state_values`)
        for var, column in spec.value_columns.items():
            binding[var] = state[column].get(key, 0)
        for var, (name, kind) in spec.value_multisets.items():
            binding[var] = multiset_value(kind, values_of(name, key))
        for sub in spec.subqueries:
            binding[sub.placeholder] = eval_scalar(sub.expr, binding)
        if spec.having is not None and eval_scalar(spec.having, binding) is not True:
            continue
        row = tuple(_plain(eval_scalar(o.expr, binding)) for o in spec.outputs)
        out[key] = (row, 1 if spec.is_aggregate or spec.distinct else counts[key])
    return out


def rows_from_state(spec, state) -> Counter:
    out = Counter()
    for row, copies in group_rows(spec, state).values():
        out[row] += copies
    return +out


def view_rows(spec, relations) -> Counter:
    """The view's result rows (a bag) derived from its state."""
    return rows_from_state(spec, state_rows(spec, relations))


def net(relations):
    """Relations as lists of (row, positive multiplicity): inserts and deletes netted."""
    out = {}
    for name, rows in relations.items():
        counts = Counter()
        first = {}
        for row, m in rows:
            key = tuple(sorted(row.items()))
            counts[key] += m
            first.setdefault(key, row)
        out[name] = [(dict(first[k]), m) for k, m in counts.items() if m > 0]
    return out


def duckdb_rows(sql: str, tables, relations) -> Counter:
    """The rows DuckDB computes for the query over the relations (r, s, t as in
    compiler_helpers.TABLES)."""
    con = duckdb.connect()
    for name, cols in tables.items():
        if name not in relations:
            continue
        ddl = ", ".join(f"{c} {_DUCK_TYPES.get(t, t.upper())}" for c, t, _ in cols)
        con.execute(f"CREATE TABLE {name} ({ddl})")
        rows = [tuple(row[c] for c, _, _ in cols) for row, m in relations[name] for _ in range(m)]
        if rows:
            con.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' for _ in cols)})", rows)
    return Counter(tuple(_plain(v) for v in row) for row in con.execute(sql).fetchall())


def _plain(v):
    """Numbers compared by value (DuckDB floats for averages: rounded)."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, Decimal, Fraction)):
        f = Fraction(v)
        return f.numerator if f.denominator == 1 else round(float(f), 9)
    if isinstance(v, float):
        return int(v) if v.is_integer() else round(v, 9)
    return v


__all__ = ["view_rows", "duckdb_rows", "state_rows", "program_state", "group_rows",
           "rows_from_state", "net", "Scalar"]


def random_relations(seed, row, tables, rows=7):
    """Random contents of `tables` (each row from `row(rng, table)`), with duplicate rows."""
    rng = random.Random(seed)
    out = {}
    for t in tables:
        rels = [(row(rng, t), 1) for _ in range(rng.randrange(0, rows))]
        rels += [(dict(r), 1) for r, _ in rels[:2]]          # duplicate rows
        out[t] = rels
    return out


def assert_translation_equals_sql(name, sql, spec, tables, row, seeds=12):
    """The view rows derived from the translated state equal DuckDB's for `sql`, on random
    relations."""
    for seed in range(seeds):
        rels = random_relations(f"{name}/{seed}", row, tables)
        got, want = view_rows(spec, rels), duckdb_rows(sql, tables, rels)
        assert got == want, f"seed {seed}\n{rels}\n got  {sorted(got.items(), key=str)}\n" \
                            f" want {sorted(want.items(), key=str)}"
