"""Hostile input: odd identifiers and paths never break generated SQL or leave the
warehouse; malformed DDL is a parse error with a position; a fuzz run of malformed and
unsupported queries gets clean Viewlet errors and leaves no state behind."""
from __future__ import annotations

import os
import random
from decimal import Decimal

import pyarrow as pa
import pytest
from deltalake import write_deltalake
from pyspark.errors import AnalysisException, ParseException

import viewlet

ODD_COLUMNS = ["we\"ird", "sp ace", "back`tick", "ünïcødé", "'; DROP TABLE x; --", "select"]


def _odd_table(root):
    path = os.path.join(root, "dir with space", "ü'q\"uote", "t`b")
    rng = random.Random(5)
    data = {c: pa.array([rng.randint(0, 3) for _ in range(20)], pa.int32()) for c in ODD_COLUMNS}
    data["amount"] = pa.array([Decimal(rng.randint(-99, 99)) / 10 for _ in range(20)],
                              pa.decimal128(8, 1))
    write_deltalake(path, pa.table(data), configuration={"delta.enableChangeDataFeed": "true"})
    return path


def q(name):
    return "`" + name.replace("`", "``") + "`"


def _state(vl):
    root = os.path.join(vl.warehouse, "views")
    dirs = set(os.listdir(root)) if os.path.exists(root) else set()
    return sorted((e.kind, e.name) for e in vl.ctx.catalog.entries()), dirs


def _assert_same_rows(spark, view, query):
    """The oracle without chispa (which cannot select a column named with a backtick);
    exact, as every value here is an integer or a decimal."""
    actual, expected = spark.sql(f"SELECT * FROM {view}"), spark.sql(query)
    assert actual.columns == expected.columns
    assert sorted(map(tuple, actual.collect())) == sorted(map(tuple, expected.collect()))


def test_odd_column_names_and_paths(spark, vl, tmp_path):
    path = _odd_table(str(tmp_path))
    viewlet.register_table(spark, "odd_t", path, replace=True)
    keys = ", ".join(f"o.{q(c)}" for c in ODD_COLUMNS[:3])
    sums = ", ".join(f"SUM(o.{q(c)}) AS {q('s ' + c)}" for c in ODD_COLUMNS[3:])
    for name, source in [("hi_named", "odd_t o"), ("hi_path", f"delta.{q(path)} o")]:
        query = f"SELECT {keys}, {sums}, SUM(o.amount) AS {q('tot`al')}, COUNT(*) AS n " \
                f"FROM {source} GROUP BY {keys}"
        spark.sql(f"CREATE INCREMENTAL VIEW {name} AS {query}")
        extra = {c: pa.array([1, 2], pa.int32()) for c in ODD_COLUMNS}
        extra["amount"] = pa.array([Decimal("1.5"), Decimal("-2.0")], pa.decimal128(8, 1))
        write_deltalake(path, pa.table(extra), mode="append")
        spark.sql(f"REFRESH INCREMENTAL VIEW {name}")
        _assert_same_rows(spark, name, query)
        for loc in (vl.ctx.catalog.find(name).location,):
            assert os.path.realpath(loc).startswith(os.path.realpath(vl.warehouse) + os.sep)
        spark.sql(f"DROP INCREMENTAL VIEW {name}")


@pytest.mark.parametrize("name", ["`../../escape`", "`a b`", "`x'y`", "`ünï`", "`a``b`",
                                  "`v; DROP TABLE t`", "`/tmp/abs`"])
def test_odd_quoted_view_names_stay_inside_the_warehouse(spark, vl, name):
    """A quoted name may hold any characters (Spark's rules, docs/sql-reference.md#names):
    it names the view and never reaches a path or generated SQL unquoted."""
    before = _state(vl)
    spark.sql(f"CREATE INCREMENTAL VIEW {name} AS SELECT 1 AS x")
    try:
        assert [tuple(r) for r in spark.sql(f"SELECT * FROM {name}").collect()] == [(1,)]
        plain = name[1:-1].replace("``", "`")
        loc = vl.ctx.catalog.find(plain).location
        assert os.path.realpath(loc).startswith(os.path.realpath(vl.warehouse) + os.sep)
    finally:
        spark.sql(f"DROP INCREMENTAL VIEW {name}")
    assert _state(vl) == before


@pytest.mark.parametrize("text,position", [
    ("CREATE INCREMENTAL VIEW v WITH (depth = 1 AS SELECT 1", 42),
    ("CREATE INCREMENTAL VIEW v WITH (colour = 'red') AS SELECT 1", 41),
    ("CREATE INCREMENTAL VIEW AS SELECT 1", 24),
    ("CREATE INCREMENTAL VIEW v AS", 28),
    ("DROP INCREMENTAL VIEW v extra", 24),
    ("ALTER INCREMENTAL VIEW v SET REFRESH EVERY 'soon'", 43),
    ("ALTER INCREMENTAL VIEW v SET REFRESH SOMETIMES", 37),
    ("REFRESH INCREMENTAL VIEW v PARTIAL", 27),
])
def test_malformed_ddl_is_a_parse_error_with_position(spark, vl, text, position):
    from viewlet.api import ddl
    from viewlet.errors import ViewletParseError
    with pytest.raises(ViewletParseError) as err:
        ddl.parse(text)
    assert err.value.position == position and str(position) in err.value.message
    with pytest.raises(ParseException):
        spark.sql(text)


SEEDS = [
    "SELECT r.a, SUM(r.c) AS sc FROM r GROUP BY r.a",
    "SELECT r.a, s.e, COUNT(*) AS n FROM r JOIN s ON r.b = s.b WHERE s.e > 1 GROUP BY r.a, s.e",
    "SELECT COUNT(*) AS n, AVG(r.d) AS ad FROM r",
]
UNSUPPORTED = [
    "SELECT r.a, MIN(r.c) FROM r GROUP BY r.a", "SELECT DISTINCT r.a FROM r",
    "SELECT r.a FROM r UNION SELECT s.b FROM s", "SELECT r.a FROM r LIMIT 3",
    "SELECT r.a, ROW_NUMBER() OVER (ORDER BY r.a) FROM r", "SELECT r.a FROM r FULL JOIN s ON r.b = s.b",
    "SELECT r.a FROM r WHERE EXISTS (SELECT 1 FROM s)", "SELECT r.a, rand() FROM r",
    "SELECT r.a, COUNT(DISTINCT r.b) FROM r GROUP BY r.a", "WITH x AS (SELECT 1) SELECT * FROM x",
    "SELECT * FROM r", "SELECT r.a FROM r TABLESAMPLE (10 PERCENT)", "SELECT current_date() FROM r",
    "SELECT r.a FROM r CROSS JOIN LATERAL (SELECT r.b) x", "SELECT explode(array(r.a)) FROM r",
    "SELECT r.a FROM nowhere.r", "SELECT nothere FROM r", "SELECT r.a FROM delta.`/no/where`",
    "SELECT r.a FROM r GROUP BY CUBE(r.a)", "SELECT r.zz FROM r",
]
JUNK = ["(", ")", "'", "`", "\"", ",", "SELECT", "FROM", "GROUP BY", "JOIN", "ON", "--", "/*",
        ";", "ü", "\\", "$", "{", "}", "DROP TABLE r", "1e999", "NULL", "*", "OVER (", "AS"]


def _mutants(rng, n):
    out = list(UNSUPPORTED)
    while len(out) < n:
        text = rng.choice(SEEDS)
        kind = rng.randrange(4)
        if kind == 0:                                   # truncated
            text = text[:rng.randrange(1, len(text))]
        elif kind == 1:                                 # junk inserted
            i = rng.randrange(len(text))
            text = text[:i] + " " + rng.choice(JUNK) + " " + text[i:]
        elif kind == 2:                                 # a token deleted
            words = text.split()
            del words[rng.randrange(len(words))]
            text = " ".join(words)
        else:                                           # two mutations
            i, j = sorted(rng.sample(range(len(text)), 2))
            text = text[:i] + rng.choice(JUNK) + text[j:]
        out.append(text)
    return out


def test_fuzzed_creates_fail_cleanly_and_leave_nothing(spark, vl, tmp_path):
    from tests.spark.workload import Workload
    work = Workload(str(tmp_path), seed=3, rows=6)
    for name, path in work.paths.items():
        viewlet.register_table(spark, name, path, replace=True)
    before = _state(vl)
    rng = random.Random(2024)
    refused = 0
    for i, query in enumerate(_mutants(rng, 90)):
        try:
            spark.sql(f"CREATE INCREMENTAL VIEW fuzz_{i} AS {query}")
        except (AnalysisException, ParseException) as e:
            text = str(e)
            assert "internal error" not in text.lower(), (query, text)
            assert _state(vl) == before, query
            refused += 1
        else:       # a mutation that is still a valid view: fine, remove it
            spark.sql(f"DROP INCREMENTAL VIEW fuzz_{i}")
            assert _state(vl) == before, query
    assert refused >= 70
