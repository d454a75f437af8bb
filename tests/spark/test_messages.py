"""What a user reads when something is wrong, through spark.sql: syntax errors in the view's
query point at the token with Spark's caret; misspelled columns and tables suggest the
nearest names; a name taken by a base table or by Spark's catalog says so; file paths that
are not Delta say that base tables must be Delta; a missing table offers a SQL remedy;
EXPLAIN shows one line per row."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.errors import AnalysisException, ParseException

from .workload import registered_workload


@pytest.fixture
def work(spark, vl, tmp_path):
    return registered_workload(spark, str(tmp_path), seed=217, rows=6)


def _caret_under(message: str, token: str):
    """The line Spark's caret points into, and the text the caret stands under."""
    lines = message.split("\n")
    caret = next(i for i, line in enumerate(lines) if line.endswith("^^^"))
    column = len(lines[caret]) - 3
    return lines[caret - 1][column:column + len(token)]


@pytest.mark.parametrize("query, token, near", [
    ("SELECT r.a, COUNT(*) AS n\nFROM r\nWHER r.a > 1\nGROUP BY r.a", "r.a", "'r'"),
    ("SELECT r.a, COUNT(*) AS n FROM r GROUP BY r.a HAVIN COUNT(*) > 1", "COUNT", "'COUNT'"),
    ("SELECT r.a FROM r WHERE ((r.a > 1)", "", "end of input"),
])
def test_syntax_errors_point_at_the_token(spark, vl, work, query, token, near):
    statement = f"CREATE INCREMENTAL VIEW msg_syntax AS\n{query}"
    with pytest.raises(ParseException) as err:
        spark.sql(statement)
    message = str(err.value).split("\n\nJVM stacktrace:")[0]
    assert f"Syntax error at or near {near}" in message and "in the view's query" in message
    assert "== SQL ==" in message
    if token:
        assert _caret_under(message, token) == token
    assert "msg_syntax" not in vl.view_names()


@pytest.mark.parametrize("query, suggestion", [
    ("SELECT r.a, SUM(r.cc) AS s FROM r GROUP BY r.a", "Did you mean one of the following? [`r`.`c`"),
    ("SELECT aa, COUNT(*) AS n FROM r GROUP BY aa", "Did you mean one of the following? [`a`"),
    ("SELECT r.a, COUNT(*) AS n FROM r JOIN s ON r.b = s.bb GROUP BY r.a",
     "Did you mean one of the following? [`s`.`b`"),
])
def test_misspelled_columns_suggest_the_nearest(spark, vl, work, query, suggestion):
    with pytest.raises(AnalysisException) as err:
        spark.sql(f"CREATE INCREMENTAL VIEW msg_col AS {query}")
    assert suggestion in str(err.value) and "^^^" in str(err.value)


def test_names_taken_by_tables(spark, vl, work):
    with pytest.raises(AnalysisException) as err:
        spark.sql("CREATE INCREMENTAL VIEW r AS SELECT s.b, COUNT(*) AS n FROM s GROUP BY s.b")
    assert "'r' is a base table (registered for " in str(err.value)
    assert "already exists" not in str(err.value)
    spark.range(3).createOrReplaceTempView("msg_spark_view")
    try:
        with pytest.raises(AnalysisException, match="'msg_spark_view' is a table or view in "
                                                    "Spark's catalog"):
            spark.sql("CREATE INCREMENTAL VIEW msg_spark_view AS SELECT s.b FROM s")
    finally:
        spark.catalog.dropTempView("msg_spark_view")
    assert not {"r", "msg_spark_view"} & set(vl.view_names())


def test_file_paths_must_be_delta_and_missing_tables_have_a_sql_remedy(spark, vl, work, tmp_path):
    files = tmp_path / "plain"
    files.mkdir()
    pq.write_table(pa.table({"k": [1, 2]}), files / "part-0.parquet")
    with pytest.raises(AnalysisException) as err:
        spark.sql(f"CREATE INCREMENTAL VIEW msg_pq AS SELECT k FROM parquet.`{files}`")
    message = str(err.value)
    assert "base tables of an incremental view must be Delta tables" in message
    assert f"CONVERT TO DELTA parquet.`{files}`" in message and "not found" not in message
    with pytest.raises(AnalysisException) as err:
        spark.sql("CREATE INCREMENTAL VIEW msg_missing AS SELECT x.k FROM ss x")
    message = str(err.value)
    assert "Table 'ss' not found" in message and "delta.`/path/to/ss`" in message
    assert "Did you mean one of the following? [`s`" in message


def test_explain_shows_one_line_per_row(spark, vl, work, capsys):
    spark.sql("CREATE INCREMENTAL VIEW msg_explain AS SELECT r.a, COUNT(*) AS n FROM r GROUP BY r.a")
    try:
        explained = spark.sql("EXPLAIN INCREMENTAL VIEW msg_explain")
        rows = [r.plan for r in explained.collect()]
        assert rows[0] == "Incremental view msg_explain" and "\n" not in "".join(rows)
        assert repr(vl.explain("msg_explain")) == "\n".join(rows)
        explained.show(len(rows), truncate=False)
        shown = capsys.readouterr().out
        assert "|Incremental view msg_explain" in shown and "\\n" not in shown
        assert any(line.startswith("|  ON BATCH dr:") for line in shown.splitlines())
    finally:
        spark.sql("DROP INCREMENTAL VIEW msg_explain")
