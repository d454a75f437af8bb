"""The local target's translation against Spark itself: every accepted expression gives
Spark's type and Spark's values (exact for integers, decimals, strings, dates), on data with
NULLs, zeros, negatives and halves that rounding must get right; refused constructs are
refused, and an error Spark raises is an error locally too."""
from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

import pyarrow as pa
import pytest
import sqlglot

from viewlet.engine.local.executor import LocalEngine, LocalEngineError
from viewlet.plan.local.translate import Translator
from viewlet.plan.local.types import NotLocal, from_arrow

ROWS = 240


def _data(seed=5) -> pa.Table:
    rng = random.Random(seed)

    def maybe(v):
        return None if rng.random() < 0.12 else v

    cols = {"rid": [], "i": [], "b": [], "d": [], "e": [], "x": [], "t": [], "dt": []}
    for rid in range(ROWS):
        cols["rid"].append(rid)
        cols["i"].append(maybe(rng.randint(-6, 6)))
        cols["b"].append(maybe(rng.randint(-10 ** 6, 10 ** 6)))
        # halves and values whose products and quotients need rounding
        cols["d"].append(maybe(Decimal(rng.randint(-99999, 99999)) / 100))
        cols["e"].append(maybe(Decimal(rng.choice([rng.randint(-10 ** 8, 10 ** 8), 5, -5, 15, 25])) / 10 ** 4))
        cols["x"].append(maybe(rng.uniform(-1000, 1000)))
        cols["t"].append(maybe(rng.choice(["a", "ab", "abc_d", "b%c", "", "Ünï", "a b", "zz"])))
        cols["dt"].append(maybe(dt.date(1990, 1, 1) + dt.timedelta(days=rng.randint(0, 12000))))
    schema = pa.schema([("rid", pa.int32()), ("i", pa.int32()), ("b", pa.int64()),
                        ("d", pa.decimal128(15, 2)), ("e", pa.decimal128(38, 4)),
                        ("x", pa.float64()), ("t", pa.string()), ("dt", pa.date32())])
    return pa.table(cols, schema=schema)


@pytest.fixture(scope="module")
def tr(spark):
    data = _data()
    spark.createDataFrame(data).createOrReplaceTempView("tr")
    engine = LocalEngine(threads=1)
    yield data, engine
    engine.close()


def _columns(data: pa.Table):
    return [(f.name, from_arrow(f.type)) for f in data.schema]


def _local(data, engine, sql: str, ansi: bool = True):
    tree, cols = Translator({"tr": _columns(data)}, ansi=ansi).query(sqlglot.parse_one(sql, read="spark"))
    return engine.query(tree.sql(dialect="duckdb"), {"tr": data}), cols


SCALARS = [
    # arithmetic, with Spark's decimal result types (rounding past 38 digits)
    "d + e", "d - i", "d * e", "e * e", "e * e * d", "d * 3", "i + b", "i * i", "b - i",
    "d / e", "d / 3", "i / b", "b / 7", "e / d", "0.005 * d", "d % 7", "b % 5", "i % 4",
    "-d", "-(i + 1)", "x * d", "x + i", "x / 3", "d * 1.5 - e / 4",
    # conditionals widen their branches
    "COALESCE(d, e)", "COALESCE(i, b, 0)", "CASE WHEN i > 0 THEN d WHEN i < 0 THEN e END",
    "CASE WHEN i > 0 THEN i ELSE b END", "IF(i > 2, d, i)", "NULLIF(i, 0) IS NULL",
    # casts: truncation toward zero, half-up rounding of decimals, widening
    "CAST(d AS INT)", "CAST(e AS BIGINT)", "CAST(x AS BIGINT)", "CAST(i AS DECIMAL(5,1))",
    "CAST(e AS DECIMAL(10,1))", "CAST(d AS DOUBLE)", "CAST(b AS DOUBLE)", "CAST(i AS BIGINT)",
    # comparisons and logic, NULL semantics
    "d > e", "i = b", "d <=> e", "i <=> NULL", "i BETWEEN -1 AND 3", "i IN (1, 2, 3)",
    "NOT (i > 2)", "i > 0 AND d > 0", "i > 0 OR d IS NULL", "x < d",
    # strings and dates
    "t LIKE 'a%'", "t LIKE '%\\\\_%'", "t LIKE 'b\\\\%c'", "NOT t LIKE '%b%'", "substring(t, 2, 2)",
    "substr(t, 1)", "length(t)", "concat(t, '-', t)", "t || 'x'", "t = 'ab'", "t < 'ab'",
    "year(dt)", "month(dt)", "dayofmonth(dt)", "day(dt)", "quarter(dt)", "date_add(dt, 30)",
    "datediff(dt, DATE '2000-01-01')", "dt > DATE '2000-02-29'", "abs(d)", "abs(i)",
    # date and interval: days, and months as ADD_MONTHS (the 31st clamped to a month's end)
    "dt + INTERVAL '1' MONTH", "dt - INTERVAL '3' MONTH", "INTERVAL 3 MONTHS + dt",
    "dt + INTERVAL '-1' MONTH", "dt + INTERVAL '2' YEAR", "dt + INTERVAL '1-2' YEAR TO MONTH",
    "dt - INTERVAL '-1-5' YEAR TO MONTH", "dt + INTERVAL '90' DAY", "dt - INTERVAL 3 DAYS",
    "dt < DATE '1996-01-01' + INTERVAL '3' MONTH", "add_months(dt, i)", "add_months(dt, -14)",
    # ROUND of integers and decimals, half away from zero, Spark's result types
    "round(d, 1)", "round(d)", "round(d, 3)", "round(e, 2)", "round(e, 0)", "round(d, -1)",
    "round(e * d, 3)", "round(i, 0)", "round(i, 2)", "round(b, -2)", "round(d * 3, 1)", "round(-d, -2)", "round(e, 3)",
    # a check that never fails (scalar subqueries without an aggregate)
    "CASE WHEN i > 100 THEN raise_error('more than one row') ELSE d END",
    # NULLs skipped, widened (INTERSECT / EXCEPT ALL multiplicities are LEAST / GREATEST)
    "LEAST(i, b)", "GREATEST(i - b, 0)", "LEAST(d, e, i)", "GREATEST(d, NULL)",
]

AGGREGATES = ["SUM(d)", "SUM(i)", "SUM(b)", "SUM(e * d)", "COUNT(t)", "COUNT(*)", "MIN(t)",
              "MAX(dt)", "MIN(d)", "MAX(e)", "SUM(x)", "COALESCE(SUM(d), 0)",
              "COUNT(DISTINCT i)", "ROUND(SUM(e * d), 2)"]


def _rows(table: pa.Table, column: str):
    return dict(zip(table.column("rid").to_pylist(), table.column(column).to_pylist()))


def _same(a, b, double: bool) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if double:
        return a == pytest.approx(b, rel=1e-12, abs=1e-12)
    return a == b and type(a) is type(b) or (isinstance(a, bool) and a == b)


@pytest.mark.parametrize("expr", SCALARS)
def test_scalar_equals_spark(spark, tr, expr):
    data, engine = tr
    sql = f"SELECT rid, {expr} AS v FROM tr"
    expected = spark.sql(sql)
    want_type = expected.schema["v"].dataType.simpleString()
    got, cols = _local(data, engine, sql)
    assert cols[1][1].spark_sql() == want_type, f"{expr}: type {cols[1][1].spark_sql()} != {want_type}"
    want = {r["rid"]: r["v"] for r in expected.collect()}
    have = _rows(got, "v")
    double = want_type in ("double", "float")
    bad = [(rid, want[rid], have.get(rid)) for rid in want if not _same(want[rid], have.get(rid), double)]
    assert not bad, f"{expr}: (rid, Spark, local) differ: {bad[:5]}"


@pytest.mark.parametrize("expr", AGGREGATES)
def test_aggregate_equals_spark(spark, tr, expr):
    data, engine = tr
    sql = f"SELECT i % 3 AS rid, {expr} AS v FROM tr GROUP BY i % 3"
    expected = spark.sql(sql)
    want_type = expected.schema["v"].dataType.simpleString()
    got, cols = _local(data, engine, sql)
    assert cols[1][1].spark_sql() == want_type
    want = {r["rid"]: r["v"] for r in expected.collect()}
    have = _rows(got, "v")
    double = want_type in ("double", "float")
    assert all(_same(want[k], have.get(k), double) for k in want), (want, have)


def test_window_running_sum_orders_nulls_as_spark(spark, tr):
    data, engine = tr
    sql = ("SELECT rid, SUM(d) OVER (ORDER BY i ASC, rid DESC ROWS BETWEEN UNBOUNDED PRECEDING "
           "AND CURRENT ROW) AS v FROM tr")
    want = {r["rid"]: r["v"] for r in spark.sql(sql).collect()}
    got, _ = _local(data, engine, sql)
    assert _rows(got, "v") == want


WINDOWS = [   # the window functions of views (engine/batch/window_sql.py, over columns); rid breaks
    # order ties
    "ROW_NUMBER() OVER (PARTITION BY i ORDER BY d DESC, rid)",
    "RANK() OVER (PARTITION BY i ORDER BY t)",
    "DENSE_RANK() OVER (ORDER BY dt DESC NULLS FIRST)",
    "COUNT(*) OVER (PARTITION BY i)", "COUNT(x) OVER (PARTITION BY t)",
    "MIN(t) OVER (PARTITION BY i)", "MAX(dt) OVER (PARTITION BY t)",
    "MAX(e) OVER (PARTITION BY i ORDER BY rid ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING)",
    "SUM(b) OVER (PARTITION BY i ORDER BY d RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)",
    "SUM(e) OVER (PARTITION BY t ORDER BY rid DESC ROWS BETWEEN UNBOUNDED PRECEDING "
    "AND UNBOUNDED FOLLOWING)",
    # AVG as engine/batch/window_sql.py writes it for decimals
    "CASE WHEN COUNT(d) OVER (PARTITION BY i) = 0 THEN NULL ELSE CAST(CAST(SUM(d) OVER "
    "(PARTITION BY i) AS DECIMAL(25,2)) / CAST(COUNT(d) OVER (PARTITION BY i) AS DECIMAL(20,0)) "
    "AS DECIMAL(19,6)) END",
]


@pytest.mark.parametrize("expr", WINDOWS)
def test_window_function_equals_spark(spark, tr, expr):
    data, engine = tr
    sql = f"SELECT rid, {expr} AS v FROM tr"
    expected = spark.sql(sql)
    want_type = expected.schema["v"].dataType.simpleString()
    got, cols = _local(data, engine, sql)
    assert cols[1][1].spark_sql() == want_type, f"{expr}: type {cols[1][1].spark_sql()} != {want_type}"
    want = {r["rid"]: r["v"] for r in expected.collect()}
    have = _rows(got, "v")
    bad = [(rid, want[rid], have.get(rid)) for rid in want if not _same(want[rid], have.get(rid), False)]
    assert not bad, f"{expr}: (rid, Spark, local) differ: {bad[:5]}"
    assert spark.sql(f"SELECT AVG(d) OVER (PARTITION BY i) AS v FROM tr").schema["v"].dataType \
        .simpleString() == "decimal(19,6)"


@pytest.mark.parametrize("expr", ["upper(t)", "CAST(x AS DECIMAL(10,2))", "CAST(d AS STRING)",
                                  "CAST(t AS INT)", "round(x, 1)", "round(d, i)", "t LIKE t",
                                  "current_date()", "rand()", "x IN (SELECT 1)",
                                  "dt + INTERVAL '3' HOUR", "dt + INTERVAL 1 YEAR 2 MONTHS",
                                  "d + INTERVAL '1' DAY", "raise_error(t)", "add_months(dt, b)",
                                  "SUM(d) OVER (ORDER BY i RANGE BETWEEN 1 PRECEDING AND CURRENT ROW)",
                                  "LAG(d) OVER (ORDER BY rid)"])
def test_constructs_without_an_exact_equivalent_are_refused(tr, expr):
    data, engine = tr
    with pytest.raises(NotLocal):
        _local(data, engine, f"SELECT rid, {expr} AS v FROM tr")


def test_division_by_zero_is_an_error_where_spark_raises_one(spark, tr):
    from pyspark.errors import ArithmeticException
    data, engine = tr
    sql = "SELECT rid, b / i AS v FROM tr"      # i is 0 on some rows
    with pytest.raises(ArithmeticException):
        spark.sql(sql).collect()
    with pytest.raises(LocalEngineError, match="DIVIDE_BY_ZERO"):
        _local(data, engine, sql)
    for safe in ("CASE WHEN i = 0 THEN NULL ELSE b / i END", "d / NULLIF(i, 0)"):
        expected = {r["rid"]: r["v"] for r in spark.sql(f"SELECT rid, {safe} AS v FROM tr").collect()}
        got, _ = _local(data, engine, f"SELECT rid, {safe} AS v FROM tr")
        assert all(_same(expected[k], v, isinstance(v, float)) for k, v in _rows(got, "v").items())


def test_raise_error_fails_the_local_query_where_spark_raises(spark, tr):
    data, engine = tr
    sql = "SELECT rid, CASE WHEN i > 5 THEN raise_error('several rows') ELSE i END AS v FROM tr"
    assert 6 in data.column("i").to_pylist()
    with pytest.raises(Exception, match="several rows"):
        spark.sql(sql).collect()
    with pytest.raises(LocalEngineError, match="several rows"):
        _local(data, engine, sql)


def test_division_by_zero_without_ansi_is_null(tr):
    data, engine = tr
    got, _ = _local(data, engine, "SELECT rid, d / i AS v, b / i AS w FROM tr", ansi=False)
    zero = [r for r, i in zip(data.column("rid").to_pylist(), data.column("i").to_pylist()) if i == 0]
    assert zero and all(_rows(got, "v")[r] is None and _rows(got, "w")[r] is None for r in zero)


def test_month_intervals_clamp_month_ends_as_spark(spark):
    """Months added to the last days of months (leap years, centuries, NULL): Spark's
    ADD_MONTHS clamps to the target month's last day, and so must the local target."""
    days = [dt.date(1996, 1, 29), dt.date(1996, 1, 31), dt.date(1996, 2, 29), dt.date(1995, 12, 31),
            dt.date(2000, 2, 29), dt.date(1900, 3, 31), dt.date(2023, 5, 31), None]
    data = pa.table({"rid": pa.array(range(len(days)), pa.int32()),
                     "dt": pa.array(days, pa.date32())})
    spark.createDataFrame(data).createOrReplaceTempView("month_ends")
    engine = LocalEngine(threads=1)
    try:
        for expr in ["dt + INTERVAL '1' MONTH", "dt - INTERVAL '1' MONTH", "dt + INTERVAL '1' YEAR",
                     "dt + INTERVAL '1-1' YEAR TO MONTH", "INTERVAL 13 MONTHS + dt",
                     "add_months(dt, 1)", "add_months(dt, -13)", "add_months(dt, NULL)"]:
            sql = f"SELECT rid, {expr} AS v FROM month_ends"
            tree, _ = Translator({"month_ends": _columns(data)}).query(
                sqlglot.parse_one(sql, read="spark"))
            got = engine.query(tree.sql(dialect="duckdb"), {"month_ends": data})
            want = {r["rid"]: r["v"] for r in spark.sql(sql).collect()}
            assert _rows(got, "v") == want, expr
    finally:
        engine.close()
