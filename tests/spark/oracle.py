"""The oracle: a view must equal what Spark SQL computes for its defining query."""
from __future__ import annotations

import os

from chispa import assert_approx_df_equality, assert_df_equality

DOUBLE_TOLERANCE = 1e-6   # doubles drift under incremental sums; decimals and integers are exact
#: the target every test batch runs on (conftest.py sets spark.viewlet.engine from it): CI
#: runs the oracle tests once with each
ENGINE = os.environ.get("VIEWLET_TEST_ENGINE", "local")  # noqa: documented, read by conftest


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
    from viewlet.runtime import targets
    ctx = viewlet.context(spark)
    if ctx.catalog.find(view, "view") is None:       # rows of a view read some other way
        return
    loaded = ctx.load(view)
    stats = loaded.manifest.last_committed().stats or {}
    engine, wanted = stats.get("engine"), targets.setting(loaded)
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
    """`engine=False`: a test that makes batches fall back on purpose checks that itself."""
    if engine:
        assert_ran_on_test_engine(spark, view)
    actual = spark.sql(f"SELECT * FROM {view}")
    expected = spark.sql(query)
    assert actual.columns == expected.columns
    # types without nullability (as chispa's ignore_nullable below): an array's containsNull
    # is not kept by the Delta result table (collect_list: array<int> either way)
    assert [f.dataType.simpleString() for f in actual.schema.fields] == \
        [f.dataType.simpleString() for f in expected.schema.fields]
    if any(f.dataType.typeName() in ("double", "float") for f in expected.schema.fields):
        assert_approx_df_equality(actual, expected, DOUBLE_TOLERANCE, ignore_nullable=True,
                                  ignore_row_order=True)
    else:
        # metadata: Spark marks generated column names (`sum(x)`), not part of the data
        assert_df_equality(actual, expected, ignore_nullable=True, ignore_row_order=True,
                           ignore_metadata=True)


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
                spark.sql(f"REFRESH INCREMENTAL VIEW {view}")
            assert_view_matches(spark, view, oracle or query)
            if also is not None:
                also()
    finally:
        spark.sql(f"DROP INCREMENTAL VIEW IF EXISTS {view}")
