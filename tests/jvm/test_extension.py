"""Viewlet's JVM extension: statement routing, error mapping, relation resolution."""

import datetime
import decimal

import pytest
from pyspark.errors import AnalysisException, ParseException

from viewlet.jvm import BRIDGE_CLASS

NOT_ENABLED = (
    "Viewlet is configured on this Spark session but not enabled: call viewlet.enable(spark) "
    "in Python (the spark-sql shell: start it with 'viewlet sql')."
)


# ------------------------------------------------------------------ statement routing


def test_ddl_routed_with_schema_and_rows(jvm_spark, handler):
    sql = "-- a comment\n/* block */ CREATE INCREMENTAL VIEW v AS SELECT 1 ;"
    df = jvm_spark.sql(sql)
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("name", "string"), ("n", "bigint"), ("ok", "boolean"), ("ts", "timestamp"),
        ("amount", "decimal(10,2)"),
    ]
    rows = [tuple(r) for r in df.collect()]
    assert rows == [
        ("v1", 3, True, datetime.datetime(2024, 1, 2, 3, 4, 5), decimal.Decimal("1.25")),
        (None, None, None, None, None),
    ]
    text = sql.rstrip(" ;")
    assert handler.calls == [("describe", text), ("execute", text)]  # run once, after parse


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE INCREMENTAL VIEW v AS SELECT * FROM t",
        "create or replace incremental view v as select * from t",
        "CREATE\n  OR   REPLACE\tINCREMENTAL VIEW v AS SELECT 1",
        "DROP INCREMENTAL VIEW v",
        "REFRESH INCREMENTAL VIEW v",
        "SHOW INCREMENTAL VIEWS",
        "DESCRIBE INCREMENTAL VIEW v",
        "DESC INCREMENTAL VIEW v",
        "EXPLAIN INCREMENTAL VIEW v",
        "ALTER INCREMENTAL VIEW v SET TBLPROPERTIES ('a'='b')",
        "/* c /* nested */ */ -- x\n  SHOW INCREMENTAL VIEWS;",
        "CREATE MATERIALIZED VIEW v SCHEDULE EVERY 1 HOUR AS SELECT 1",
        "create or refresh materialized view v as select 1",
        "REFRESH MATERIALIZED VIEW v FULL",
        "DROP MATERIALIZED VIEW IF EXISTS v",
        "ALTER MATERIALIZED VIEW v ADD SCHEDULE EVERY 2 HOURS",
        "SHOW MATERIALIZED VIEWS",
        # Spark 4.1+ parses these itself (Declarative Pipelines) when Viewlet does not claim them
        "EXPLAIN CREATE MATERIALIZED VIEW v AS SELECT 1",
        "explain create or refresh materialized view v as select 1",
        "EXPLAIN EXTENDED CREATE MATERIALIZED VIEW v AS SELECT 1",
        "CREATE /* c */ MATERIALIZED -- d\n VIEW v AS SELECT 1",
        "EXPLAIN/**/CREATE INCREMENTAL VIEW v AS SELECT 1",
    ],
)
def test_every_statement_kind_is_routed(jvm_spark, handler, sql):
    handler.describe_reply = {"columns": [{"name": "x", "type": "int"}]}
    handler.execute_reply = {"rows": [[7]]}
    assert jvm_spark.sql(sql).collect()[0].x == 7
    assert handler.of("execute") == [sql.rstrip(" ;")]


def test_parse_has_no_side_effects(jvm_spark, handler):
    parser = jvm_spark._jsparkSession.sessionState().sqlParser()
    plan = parser.parsePlan("DROP INCREMENTAL VIEW v")
    assert "ViewletCommand" in plan.toString()
    assert handler.of("describe") == ["DROP INCREMENTAL VIEW v"]
    assert handler.of("execute") == []


def test_statement_detection(jvm_spark):
    parser = getattr(jvm_spark._jvm, "io.viewlet.spark.ViewletParser")
    assert parser.isViewletStatement("show incremental views")
    assert parser.isViewletStatement("  -- c\n DESC INCREMENTAL VIEW v;")
    assert not parser.isViewletStatement("SELECT 'CREATE INCREMENTAL VIEW v'")
    assert not parser.isViewletStatement("CREATE VIEW incremental_view AS SELECT 1")
    assert not parser.isViewletStatement("SHOW INCREMENTAL VIEWSX")
    assert not parser.isViewletStatement("CREATE TEMP INCREMENTAL VIEW v AS SELECT 1")
    assert parser.isViewletStatement("CREATE OR REFRESH MATERIALIZED VIEW v AS SELECT 1")
    assert not parser.isViewletStatement("CREATE OR REFRESH VIEW v AS SELECT 1")
    assert not parser.isViewletStatement("REFRESH TABLE materialized")
    assert parser.isViewletStatement("EXPLAIN COST create materialized view v AS SELECT 1")
    assert parser.isViewletStatement("CREATE/* c */MATERIALIZED VIEW`v` AS SELECT 1")
    assert not parser.isViewletStatement("EXPLAIN CREATE VIEW v AS SELECT 1")
    assert not parser.isViewletStatement("EXPLAIN SELECT 'CREATE MATERIALIZED VIEW v'")
    assert not parser.isViewletStatement("EXPLAIN EXTENDED INCREMENTAL VIEW v")
    assert not parser.isViewletStatement("CREATE MATERIALIZED_VIEW v AS SELECT 1")


def _spark_parses_materialized_views(spark):
    """Spark 4.1+ has its own CREATE MATERIALIZED VIEW (Declarative Pipelines)."""
    try:
        spark._jvm.java.lang.Class.forName(
            "org.apache.spark.sql.catalyst.plans.logical.CreateMaterializedViewAsSelect")
        return True
    except Exception:  # noqa: BLE001 - py4j's error for ClassNotFoundException
        return False


@pytest.mark.parametrize("script", [
    "BEGIN CREATE MATERIALIZED VIEW v AS SELECT 1; END",
    "BEGIN IF 1 = 1 THEN EXPLAIN CREATE MATERIALIZED VIEW v AS SELECT 1; END IF; END",
])
def test_materialized_view_in_a_sql_script_is_a_parse_error(jvm_spark, handler, script):
    """Viewlet's statements are decided on a statement's text, so one nested in a SQL script
    is Spark's: a syntax error before 4.1, and on 4.1+ Viewlet's error, not Spark's
    pipeline-dataset refusal."""
    with pytest.raises(ParseException) as err:
        jvm_spark.sql(script).collect()
    message = str(err.value)
    if _spark_parses_materialized_views(jvm_spark):
        assert message.startswith("Viewlet's CREATE MATERIALIZED VIEW runs as a statement of its "
                                  "own (one spark.sql call), not inside a SQL script")
        assert "CREATE_PIPELINE_DATASET" not in message
    else:
        assert "Syntax error at or near 'MATERIALIZED'" in message
    assert handler.calls == []


def test_spark_parses_switch_leaves_a_threads_statements_to_spark(jvm_spark, handler):
    """ViewletParser.setSparkParses (viewlet pipelines: SDP parses a pipeline's SQL files):
    while on, this thread's statements are Spark's alone (its own CREATE MATERIALIZED VIEW
    node on 4.1+, a syntax error before); off again, they are Viewlet's."""
    import threading
    parser = jvm_spark._jvm.io.viewlet.spark.ViewletParser
    statement = "CREATE MATERIALIZED VIEW v AS SELECT 1"
    parser.setSparkParses(True)
    try:
        other = {}
        thread = threading.Thread(target=lambda: other.update(
            routed=parser.sparkParses()))      # PySpark pins threads: another JVM thread
        thread.start()
        thread.join()
        assert other == {"routed": False}
        if _spark_parses_materialized_views(jvm_spark):
            plan = jvm_spark._jsparkSession.sessionState().sqlParser().parsePlan(statement)
            assert plan.nodeName() == "CreateMaterializedViewAsSelect"
        else:
            with pytest.raises(Exception, match="MATERIALIZED"):
                jvm_spark._jsparkSession.sessionState().sqlParser().parsePlan(statement)
        assert handler.calls == []                  # Viewlet never saw it
    finally:
        parser.setSparkParses(False)
    plan = jvm_spark._jsparkSession.sessionState().sqlParser().parsePlan(statement)
    assert plan.nodeName() != "CreateMaterializedViewAsSelect"   # Viewlet's command again
    assert ("describe", statement) in handler.calls


def test_history_table_function_reads_the_handler(jvm_spark, handler):
    """viewlet_history('v') is DESCRIBE INCREMENTAL VIEW `v` HISTORY as a table."""
    handler.describe_reply = {"columns": [{"name": "batch", "type": "bigint"},
                                          {"name": "status", "type": "string"}]}
    handler.execute_reply = {"rows": [[1, "committed"], [0, "created"]]}
    rows = jvm_spark.sql("SELECT status FROM viewlet_history('my `view') WHERE batch = 0").collect()
    assert [r.status for r in rows] == ["created"]
    assert handler.of("execute") == ["DESCRIBE INCREMENTAL VIEW `my ``view` HISTORY"]
    with pytest.raises(AnalysisException, match="takes one argument"):
        jvm_spark.sql("SELECT * FROM viewlet_history(1)").collect()


# ------------------------------------------------------------------ errors


def test_describe_parse_error_is_parse_exception(jvm_spark, handler):
    sql = "CREATE INCREMENTAL VIEW v AS\nSELECT FROMM t"
    handler.describe_reply = {
        "error": {"kind": "parse", "message": "unexpected FROMM", "position": sql.index("FROMM")}
    }
    with pytest.raises(ParseException) as err:
        jvm_spark.sql(sql)
    message = str(err.value).split("\n\nJVM stacktrace:")[0]
    assert message.startswith("unexpected FROMM (line 2, pos 7)")
    assert "== SQL ==\nCREATE INCREMENTAL VIEW v AS\nSELECT FROMM t\n-------^^^" in message
    assert err.value.getCondition() == "PARSE_SYNTAX_ERROR"
    assert handler.of("execute") == []


def test_describe_analysis_error_is_analysis_exception(jvm_spark, handler):
    handler.describe_reply = {
        "error": {"kind": "analysis", "message": "table t not found", "position": None}
    }
    with pytest.raises(AnalysisException) as err:
        jvm_spark.sql("CREATE INCREMENTAL VIEW v AS SELECT * FROM t")
    assert not isinstance(err.value, ParseException)
    assert str(err.value).split("\n\nJVM stacktrace:")[0] == "table t not found"
    assert handler.of("execute") == []


def test_execute_error_is_analysis_exception(jvm_spark, handler):
    handler.execute_reply = {"error": {"kind": "runtime", "message": "view v is stale"}}
    with pytest.raises(AnalysisException) as err:
        jvm_spark.sql("REFRESH INCREMENTAL VIEW v")
    assert str(err.value).split("\n\nJVM stacktrace:")[0] == "view v is stale"


def test_python_exception_in_handler_becomes_analysis_exception(jvm_spark, handler):
    handler.execute_reply = ValueError("boom in python")
    with pytest.raises(AnalysisException) as err:
        jvm_spark.sql("REFRESH INCREMENTAL VIEW v")
    message = str(err.value).split("\n\nJVM stacktrace:")[0]
    assert message == "ValueError: boom in python"


def test_bad_type_in_describe_reply(jvm_spark, handler):
    handler.describe_reply = {"columns": [{"name": "x", "type": "no_such_type"}]}
    with pytest.raises(AnalysisException, match="unknown type 'no_such_type'"):
        jvm_spark.sql("SHOW INCREMENTAL VIEWS")


def test_without_handler_says_not_enabled(jvm_spark, no_handler):
    with pytest.raises(AnalysisException) as err:
        jvm_spark.sql("SHOW INCREMENTAL VIEWS")
    assert str(err.value).split("\n\nJVM stacktrace:")[0] == NOT_ENABLED
    assert not getattr(jvm_spark._jvm, BRIDGE_CLASS).isRegistered()


# ------------------------------------------------------------------ Spark SQL untouched


def test_other_sql_is_untouched(jvm_spark, handler):
    assert jvm_spark.sql("SELECT 41 + 1 AS x").collect()[0].x == 42
    jvm_spark.sql("CREATE OR REPLACE TEMP VIEW incremental_view AS SELECT 1 AS a")
    assert jvm_spark.sql("SELECT a FROM incremental_view").collect()[0].a == 1
    assert jvm_spark.sql("SELECT 'DROP INCREMENTAL VIEW v' AS s").collect()[0].s.startswith("DROP")
    assert handler.calls == []


def test_spark_syntax_errors_are_sparks(jvm_spark, handler):
    with pytest.raises(ParseException) as err:
        jvm_spark.sql("SELEC 1")
    assert err.value.getCondition() == "PARSE_SYNTAX_ERROR"
    assert "Syntax error at or near 'SELEC'" in str(err.value)
    assert handler.calls == []


# ------------------------------------------------------------------ relation resolution


def test_resolves_delta_path(jvm_spark, handler):
    handler.relations[("delta", "/tmp/viewlet-t")] = lambda: jvm_spark.range(3)
    rows = jvm_spark.sql("SELECT id FROM delta.`/tmp/viewlet-t` ORDER BY id").collect()
    assert [r.id for r in rows] == [0, 1, 2]
    assert handler.of("resolve") == [("delta", "/tmp/viewlet-t")]


def test_resolves_unknown_name_with_qualification(jvm_spark, handler):
    handler.relations[("v",)] = lambda: jvm_spark.range(3)
    rows = jvm_spark.sql("SELECT v.id FROM v WHERE v.id > 0 ORDER BY v.id").collect()
    assert [r.id for r in rows] == [1, 2]


def test_resolves_multipart_name(jvm_spark, handler):
    handler.relations[("nodb", "v")] = lambda: jvm_spark.range(2)
    assert jvm_spark.sql("SELECT v.id FROM nodb.v").count() == 2
    assert handler.of("resolve") == [("nodb", "v")]


def test_same_name_resolved_once_per_query(jvm_spark, handler):
    handler.relations[("v",)] = lambda: jvm_spark.range(3)
    rows = jvm_spark.sql("SELECT a.id FROM v a JOIN v b ON a.id = b.id").collect()
    assert sorted(r.id for r in rows) == [0, 1, 2]
    assert handler.of("resolve") == [("v",)]


def test_resolves_in_subqueries_and_ctes(jvm_spark, handler):
    handler.relations[("v",)] = lambda: jvm_spark.range(3)
    q = "SELECT id FROM range(5) WHERE id IN (SELECT id FROM v WHERE id > 0)"
    assert sorted(r.id for r in jvm_spark.sql(q).collect()) == [1, 2]
    assert jvm_spark.sql("WITH c AS (SELECT id FROM v) SELECT count(*) AS n FROM c").first().n == 3


def test_python_exception_in_resolve_becomes_analysis_exception(jvm_spark, handler):
    def broken():
        raise KeyError("catalog down")

    handler.relations[("v",)] = broken
    with pytest.raises(AnalysisException) as err:
        jvm_spark.sql("SELECT * FROM v")
    assert str(err.value).split("\n\nJVM stacktrace:")[0] == "KeyError: 'catalog down'"


def test_unknown_name_still_not_found(jvm_spark, handler):
    with pytest.raises(AnalysisException) as err:
        jvm_spark.sql("SELECT * FROM nosuch_table")
    assert err.value.getCondition() == "TABLE_OR_VIEW_NOT_FOUND"
    assert ("nosuch_table",) in handler.of("resolve")


def test_known_names_never_reach_handler(jvm_spark, handler):
    jvm_spark.range(2).createOrReplaceTempView("known_view")
    assert jvm_spark.sql("SELECT * FROM known_view").count() == 2
    assert jvm_spark.table("known_view").count() == 2
    assert handler.calls == []


def test_insert_target_is_not_resolved(jvm_spark, handler, tmp_path):
    handler.relations[("v",)] = lambda: jvm_spark.range(3)
    with pytest.raises(AnalysisException):
        jvm_spark.sql("INSERT INTO v VALUES (1)")
    assert ("v",) not in handler.of("resolve")

    jvm_spark.sql(f"CREATE TABLE tgt (id BIGINT) USING parquet LOCATION '{tmp_path}/tgt'")
    try:
        jvm_spark.sql("INSERT INTO tgt SELECT id FROM v")  # v in read position: resolved
        assert jvm_spark.table("tgt").count() == 3
    finally:
        jvm_spark.sql("DROP TABLE tgt")
