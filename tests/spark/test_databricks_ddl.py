"""Databricks' materialized-view DDL run through spark.sql as a notebook written for Databricks
would: CREATE [OR REFRESH] MATERIALIZED VIEW, SCHEDULE EVERY (continuous refresh), ALTER ...
ADD | ALTER | DROP SCHEDULE, REFRESH ... [FULL], DROP, EXPLAIN CREATE; every view checked
against Spark. Spark 4.1+ has a CREATE MATERIALIZED VIEW of its own (Declarative Pipelines):
in a Viewlet session these statements are Viewlet's on every Spark."""
from __future__ import annotations

import pytest
from chispa import assert_df_equality
from pyspark.errors import AnalysisException, ParseException

from .oracle import assert_view_matches
from .workload import registered_workload

QUERY = "SELECT r.a, SUM(r.c) AS sc, COUNT(*) AS n FROM r GROUP BY r.a"
WIDER = "SELECT r.a, SUM(r.c) AS sc, COUNT(*) AS n, MAX(r.b) AS mb FROM r GROUP BY r.a"


@pytest.fixture
def work(spark, vl, tmp_path):
    w = registered_workload(spark, str(tmp_path), seed=211, rows=10)
    yield w
    vl.stop()


def _r_commit(work):
    while "r" not in work.batch():
        pass


def _history(spark, name):
    return spark.sql(f"SELECT batch, status, message FROM viewlet_history('{name}')").collect()


def test_create_refresh_drop_materialized_view(spark, vl, work):
    row = spark.sql(f"CREATE MATERIALIZED VIEW db_mv AS {QUERY}").collect()[0]
    assert row.status == "created" and "db_mv" in vl.view_names()
    assert_view_matches(spark, "db_mv", QUERY)
    _r_commit(work)
    assert spark.sql("REFRESH MATERIALIZED VIEW db_mv").collect()[0].status == "refreshed"
    assert_view_matches(spark, "db_mv", QUERY)
    _r_commit(work)
    full = spark.sql("REFRESH MATERIALIZED VIEW db_mv FULL").collect()[0]
    assert full.status == "rebuilt" and full.batch == 2
    assert_view_matches(spark, "db_mv", QUERY)
    assert [r.view for r in spark.sql("SHOW MATERIALIZED VIEWS").collect()].count("db_mv") == 1
    assert spark.sql("DROP MATERIALIZED VIEW db_mv").collect()[0].status == "dropped"
    assert spark.sql("DROP MATERIALIZED VIEW IF EXISTS db_mv").collect()[0].status == "not found"
    assert "db_mv" not in vl.view_names()


def test_create_or_refresh_creates_refreshes_or_replaces(spark, vl, work):
    first = spark.sql(f"CREATE OR REFRESH MATERIALIZED VIEW db_cor AS {QUERY}").collect()[0]
    assert first.status == "created"
    _r_commit(work)
    again = spark.sql(f"CREATE OR REFRESH MATERIALIZED VIEW db_cor AS {QUERY}").collect()[0]
    assert again.status == "refreshed" and again.rows >= 1      # the same definition: a batch
    assert_view_matches(spark, "db_cor", QUERY)
    same = spark.sql(f"CREATE OR REFRESH MATERIALIZED VIEW db_cor AS {QUERY}").collect()[0]
    assert same.status == "up to date"
    _r_commit(work)
    new = spark.sql(f"CREATE OR REFRESH MATERIALIZED VIEW db_cor AS {WIDER}").collect()[0]
    assert new.status.startswith("replaced: ")   # a new query: its maps kept or loaded
    assert_view_matches(spark, "db_cor", WIDER)
    deeper = spark.sql(f"CREATE OR REFRESH MATERIALIZED VIEW db_cor WITH (depth = 1) AS {WIDER}")
    assert deeper.collect()[0].status.startswith("replaced: ")
    assert vl.ctx.catalog.find("db_cor").spec["depth"] == 1
    history = _history(spark, "db_cor")
    # the replaces' refreshes first (the pending commit: batch 2; nothing new: no batch)
    assert [(h.batch, h.status) for h in history] == [
        (4, "replaced"), (3, "replaced"), (2, "committed"), (1, "committed"), (0, "created")]
    assert history[0].message.startswith("CREATE OR REFRESH with a new setting of depth: ")
    assert history[1].message.startswith("CREATE OR REFRESH with a new query: 1 map(s) kept")
    _r_commit(work)
    spark.sql("REFRESH MATERIALIZED VIEW db_cor")
    assert_view_matches(spark, "db_cor", WIDER)
    spark.sql("DROP MATERIALIZED VIEW db_cor")


def test_schedule_is_continuous_refresh(spark, vl, work):
    spark.sql(f"CREATE MATERIALIZED VIEW db_sched SCHEDULE EVERY 1 SECOND AS {QUERY}")
    assert vl.ctx.catalog.find("db_sched").spec["refresh"] == 1.0
    _r_commit(work)                     # picked up by the session's background refresh
    assert vl.ctx.continuous.wait_for_batches("db_sched", 1, timeout=600)
    vl.stop()                           # waits for the batch in flight
    assert [h.status for h in _history(spark, "db_sched")][0] == "committed"
    spark.sql("REFRESH MATERIALIZED VIEW db_sched")   # commits the loop had not reached yet
    assert_view_matches(spark, "db_sched", QUERY)
    with pytest.raises(AnalysisException, match="already has a schedule.*ALTER SCHEDULE"):
        spark.sql("ALTER MATERIALIZED VIEW db_sched ADD SCHEDULE EVERY 1 HOUR")
    row = spark.sql("ALTER MATERIALIZED VIEW db_sched ALTER SCHEDULE REFRESH EVERY 2 HOURS").collect()[0]
    assert row.refresh == "every 2 hours" and vl.ctx.catalog.find("db_sched").spec["refresh"] == 7200
    shown = {r.view: r for r in spark.sql("SHOW MATERIALIZED VIEWS").collect()}
    assert shown["db_sched"].refresh.startswith("every 2 hours")
    assert spark.sql("ALTER MATERIALIZED VIEW db_sched DROP SCHEDULE").collect()[0].refresh == "manual"
    assert vl.ctx.catalog.find("db_sched").spec["refresh"] is None
    assert not vl.ctx.continuous.running("db_sched")
    with pytest.raises(AnalysisException, match="has no schedule.*ADD SCHEDULE"):
        spark.sql("ALTER MATERIALIZED VIEW db_sched DROP SCHEDULE")
    spark.sql("ALTER MATERIALIZED VIEW db_sched ADD SCHEDULE EVERY 1 DAY")
    assert vl.ctx.catalog.find("db_sched").spec["refresh"] == 86400
    vl.stop()
    spark.sql("DROP MATERIALIZED VIEW db_sched")


def test_cron_schedules_are_refused_with_the_remedy(spark, vl, work):
    with pytest.raises(ParseException, match="SCHEDULE CRON is not supported.*EVERY 1 HOUR"):
        spark.sql(f"CREATE MATERIALIZED VIEW db_cron SCHEDULE CRON '0 0 * * * ?' AS {QUERY}")
    assert "db_cron" not in vl.view_names()


def _program(spark, name):
    """EXPLAIN MATERIALIZED VIEW's first part: the trigger program, before where batches run."""
    lines = [r.plan for r in spark.sql(f"EXPLAIN MATERIALIZED VIEW {name}").collect()]
    execution = next(i for i, line in enumerate(lines) if line.startswith("Execution ("))
    assert lines[execution - 1] == ""
    return lines[:execution - 1]


def test_explain_create_prints_the_program_create_compiles_and_creates_nothing(spark, vl, work):
    # Spark 4.1+ planned this as its pipeline dataset and returned its refusal as the plan
    statement = f"EXPLAIN CREATE MATERIALIZED VIEW db_ex WITH (depth = 1) AS {QUERY}"
    explained = spark.sql(statement)
    assert "db_ex" not in vl.view_names()
    # comments between the words, as Spark's lexer allows: still Viewlet's
    created = spark.sql(f"CREATE /* Databricks */ MATERIALIZED -- spelling\n VIEW db_ex "
                        f"WITH (depth = 1) AS {QUERY}").collect()[0]
    assert created.status == "created"
    assert_view_matches(spark, "db_ex", QUERY)
    program = _program(spark, "db_ex")
    assert program[1] == "  depth: 1 (first-order IVM)"
    expected = [(line,) for line in program] + [("",), ("Not created: EXPLAIN CREATE compiles the "
                                                        "definition only.",)]
    assert_df_equality(explained, spark.createDataFrame(expected, "plan string"))
    refreshed = spark.sql(f"EXPLAIN CREATE OR REFRESH MATERIALIZED VIEW db_ex WITH (depth = 1) "
                          f"AS {QUERY}")
    assert_df_equality(refreshed, explained)
    assert [h.status for h in _history(spark, "db_ex")] == ["created"]   # nothing ran
    spark.sql("DROP MATERIALIZED VIEW db_ex")


def test_explain_create_errors_are_viewlets(spark, vl, work):
    with pytest.raises(ParseException, match="EXPLAIN EXTENDED is Spark's.*EXPLAIN CREATE "
                                             r"\.\.\. without it"):
        spark.sql(f"EXPLAIN EXTENDED CREATE MATERIALIZED VIEW db_ex AS {QUERY}")
    statement = "EXPLAIN CREATE MATERIALIZED VIEW db_ex AS SELECT r.zz FROM r"
    with pytest.raises(AnalysisException) as err:
        spark.sql(statement)
    message = str(err.value).split("\n\nJVM stacktrace:")[0]
    assert "Did you mean" in message
    caret = message.split("\n")[-2]                # positioned in the statement, as CREATE's
    assert caret.endswith("^^^") and statement[len(caret) - 3:].startswith("zz FROM")
    assert "db_ex" not in vl.view_names()


def test_explain_create_says_why_a_query_is_not_incremental(spark, vl, work):
    lines = [r.plan for r in spark.sql(
        "EXPLAIN CREATE MATERIALIZED VIEW db_ex AS SELECT STDDEV(r.a) AS sd FROM r").collect()]
    assert lines[0] == "Incremental view db_ex: not maintained incrementally."
    assert lines[1].startswith("  Unsupported in an incremental view: the aggregate STDDEV "
                               "at line 1, column 8"), lines
    assert lines[-1].startswith("Not created")
    assert "db_ex" not in vl.view_names()
