"""The oracle: a view must equal what Spark SQL computes for its defining query."""
from __future__ import annotations

import os

from chispa.row_comparer import are_rows_approx_equal
from chispa.rows_comparer import assert_basic_rows_equality, assert_generic_rows_equality

DOUBLE_TOLERANCE = 1e-6   # doubles drift under incremental sums; decimals and integers are exact
#: the target every test batch runs on (conftest.py sets spark.viewlet.engine from it): CI
#: runs the oracle tests once with each
ENGINE = os.environ.get("VIEWLET_TEST_ENGINE", "local")  # noqa: documented, read by conftest
#: the restart variant: every REFRESH the oracle runs goes to another Python process (its own
#: session, another PYTHONHASHSEED: tests/spark/other_process.py), as after a kernel restart
RESTART = os.environ.get("VIEWLET_TEST_RESTART") == "1"


def refresh(spark, view: str, full: bool = False):
    """REFRESH INCREMENTAL VIEW `view` [FULL]: here, or in the other process under
    VIEWLET_TEST_RESTART=1. The statement's result row as a dict."""
    statement = f"REFRESH INCREMENTAL VIEW {view}{' FULL' if full else ''}"
    if RESTART:
        from .other_process import other_process
        return other_process(spark).sql(statement)[0]
    return spark.sql(statement).first().asDict()


def explain_parts(spark, view: str):
    """EXPLAIN INCREMENTAL VIEW's rows (one per line) as (trigger program, execution) texts."""
    text = "\n".join(r.plan for r in spark.sql(f"EXPLAIN INCREMENTAL VIEW {view}").collect())
    program, execution = text.split("\n\nExecution (", 1)
    return program, "Execution (" + execution


def assert_ran_on_test_engine(spark, view: str):
    """The view's last batch ran on the target its settings ask for (the view's engine
    option, else the session's, which conftest.py sets from VIEWLET_TEST_ENGINE): a batch
    the local target could not run is a failure unless the view uses SQL it refuses up
    front (then the batch ran on Spark, saying why)."""
    import viewlet
    ctx = viewlet.context(spark).ctx
    if ctx.catalog.find(view, "view") is None:       # rows of a view read some other way
        return
    loaded = ctx.load(view)
    stats = loaded.manifest.last_committed().stats or {}
    engine, wanted = stats.get("engine"), loaded.settings.engine
    if os.environ.get("VIEWLET_TEST_SHOW_ENGINE"):
        print(f"[engine] {view}: {engine}: {stats.get('engine_reason')}")
    if engine is None or wanted == "auto":           # no batch yet, or the cost rule decides
        return
    if wanted == "local" and engine != "local":
        assert stats.get("engine_reason", "").startswith("the local target cannot run this view"), \
            f"{view}: the batch fell back to Spark: {stats.get('engine_reason')}"
    else:
        assert engine == wanted, f"{view}: ran on {engine}: {stats.get('engine_reason')}"


def assert_view_matches(spark, view: str, query: str, engine: bool = True):
    """The view's rows equal Spark's by column name and position: the same column names in
    the same order, then rows compared position by position (so two same-typed columns
    swapped under each other's names differ). `engine=False`: a test that makes batches
    fall back on purpose checks that itself."""
    if engine:
        assert_ran_on_test_engine(spark, view)
    actual = spark.sql(f"SELECT * FROM {view}")
    expected = spark.sql(query)
    assert actual.columns == expected.columns
    # types without nullability: an array's containsNull is not kept by the Delta result
    # table (collect_list: array<int> either way)
    assert [f.dataType.simpleString() for f in actual.schema.fields] == \
        [f.dataType.simpleString() for f in expected.schema.fields]
    approx = any(f.dataType.typeName() in ("double", "float") for f in expected.schema.fields)
    got, want = _both_sorted(actual, expected)
    if approx:
        assert_generic_rows_equality(got, want, are_rows_approx_equal,
                                     {"precision": DOUBLE_TOLERANCE})
    else:
        assert_basic_rows_equality(got, want)


#: the column telling the view's rows (0) from Spark's (1) in _both_sorted's one query
SIDE = "__oracle_side"


def _both_sorted(actual, expected):
    """The rows of `actual` and of `expected` (same columns and types), each sorted by every
    column (in_row_order), from one Spark job over their union, where comparing the two
    DataFrames ran a job for each. Rows name their columns by position and name (a query may
    repeat a name), so the comparison stays positional."""
    from pyspark.sql import Row
    from pyspark.sql import functions as F
    names = [f"{i}:{c}" for i, c in enumerate(expected.columns)]
    positional = [f"_{i}" for i in range(len(names))]
    both = actual.toDF(*positional).withColumn(SIDE, F.lit(0)).unionAll(
        expected.toDF(*positional).withColumn(SIDE, F.lit(1)))
    rows = in_row_order(both, first=[SIDE]).collect()
    make = Row(*names)
    sides = ([], [])
    for r in rows:
        sides[r[-1]].append(make(*r[:-1]))
    return sides


def in_row_order(df, first=()):
    """`df`'s rows sorted by the columns `first`, then by every other column (complex values
    by their hash), as chispa's ignore_row_order sorts them, but in one partition: one Spark
    job that runs the query once, where a global sort runs it twice (a sampling job for its
    range boundaries, then the sort). The oracle's results are small."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, MapType, StructType
    from viewlet.plan.lower import q
    fields = sorted(df.schema.fields, key=lambda f: f.name not in first)
    keys = [F.hash(F.col(q(f.name))) if isinstance(f.dataType, (ArrayType, MapType, StructType))
            else F.col(q(f.name)) for f in fields]
    return df.coalesce(1).sortWithinPartitions(*keys)


def check_view_through_batches(spark, work, view: str, query: str, depth, batches: int,
                               oracle: str = None, also=None, options: str = None):
    """CREATE the view, then after the initial load and after each of `batches` workload
    batches, REFRESH and compare with Spark's recompute of `oracle` (default: the query);
    `also()` runs after each comparison (further checks); DROP the view at the end.
    `options`: more view options (`caches = true`)."""
    given = ([] if depth is None else [f"depth = {depth}"]) + ([options] if options else [])
    options = f" WITH ({', '.join(given)})" if given else ""
    spark.sql(f"CREATE INCREMENTAL VIEW {view}{options} AS {query}")
    try:
        for i in range(batches + 1):
            if i:
                work.batch()
                refresh(spark, view)
            assert_matches(spark, view, oracle or query)
            if also is not None:
                also()
    finally:
        spark.sql(f"DROP INCREMENTAL VIEW IF EXISTS {view}")


def _key(value):
    """A sort key for any row value (NULL first, numbers, then the rest by type name)."""
    if value is None:
        return (0, "", 0)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (1, "", value)
    from decimal import Decimal
    if isinstance(value, Decimal):
        return (1, "", value)
    return (2, type(value).__name__, value)


def _close(a, b, tol: float) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        import math
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return abs(a - b) <= tol * max(1.0, abs(b))
    return a == b


def _contained(rows, pool, tol: float):
    """Each row of `rows` matched to its own row of `pool` (doubles within `tol`): the rows
    that found none."""
    from collections import Counter
    exact = Counter(pool)
    left, missing = [], []
    for r in rows:
        if exact[r] > 0:
            exact[r] -= 1
        else:
            left.append(r)
    rest = list(exact.elements())
    for r in left:
        j = next((i for i, p in enumerate(rest)
                  if len(p) == len(r) and all(_close(a, b, tol) for a, b in zip(r, p))), None)
        if j is None:
            missing.append(r)
        else:
            rest.pop(j)
    return missing


def order_columns(query: str, columns) -> list:
    """The output columns a query's top-level ORDER BY names (by name or position)."""
    import sqlglot
    from sqlglot import exp
    tree = sqlglot.parse_one(query, read="spark")
    order = tree.args.get("order")
    out = []
    for item in (order.expressions if order is not None else []):
        node = item.this
        if isinstance(node, exp.Literal):
            out.append(columns[int(node.this) - 1])
        else:
            assert isinstance(node, exp.Column), f"order by an output column: {node.sql()}"
            out.append(next(c for c in columns if c.lower() == node.name.lower()))
    return out


def unlimited(query: str) -> str:
    """The query without its top-level ORDER BY / LIMIT / OFFSET."""
    import sqlglot
    tree = sqlglot.parse_one(query, read="spark")
    for key in ("order", "limit", "offset"):
        tree.set(key, None)
    return tree.sql(dialect="spark")


def assert_top_n_matches(spark, view: str, query: str, engine: bool = True):
    """A view with ORDER BY ... LIMIT equals Spark's answer modulo ties: as many rows, the
    multiset of their ORDER BY keys equal to that of Spark's rows, and each row a row of the
    query without LIMIT (Spark breaks ties arbitrarily, Viewlet by the output columns)."""
    if engine:
        assert_ran_on_test_engine(spark, view)
    actual = spark.sql(f"SELECT * FROM {view}")
    expected = spark.sql(query)
    assert actual.columns == expected.columns
    assert [f.dataType for f in actual.schema.fields] == [f.dataType for f in expected.schema.fields]
    got = [tuple(r) for r in actual.collect()]
    want = [tuple(r) for r in expected.collect()]
    assert len(got) == len(want), f"{view}: {len(got)} rows, Spark has {len(want)}:\n{got}\n{want}"
    keys = [expected.columns.index(c) for c in order_columns(query, expected.columns)]
    got_keys = sorted((tuple(r[i] for i in keys) for r in got), key=lambda t: [_key(v) for v in t])
    want_keys = sorted((tuple(r[i] for i in keys) for r in want), key=lambda t: [_key(v) for v in t])
    assert all(len(a) == len(b) and all(_close(x, y, DOUBLE_TOLERANCE) for x, y in zip(a, b))
               for a, b in zip(got_keys, want_keys)), \
        f"{view}: ORDER BY keys {got_keys}, Spark's {want_keys}"
    everything = [tuple(r) for r in spark.sql(unlimited(query)).collect()]
    missing = _contained(got, everything, DOUBLE_TOLERANCE)
    assert not missing, f"{view}: rows not in the query's result: {missing}"


def has_limit(query: str) -> bool:
    import sqlglot
    return sqlglot.parse_one(query, read="spark").args.get("limit") is not None


def assert_matches(spark, view: str, query: str, engine: bool = True):
    """assert_view_matches, or assert_top_n_matches for a query with LIMIT."""
    check = assert_top_n_matches if has_limit(query) else assert_view_matches
    check(spark, view, query, engine)
