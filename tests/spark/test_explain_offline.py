"""`viewlet explain FILE.sql --warehouse W` prints what EXPLAIN INCREMENTAL VIEW prints once
the view exists: the offline compile sees the same tables and makes the same program."""
from __future__ import annotations

from viewlet.tools import cli
from tests.spark.oracle import explain_parts
from tests.spark.workload import registered_workload

QUERY = ("SELECT r.a, SUM(r.c * s.f) AS total, COUNT(*) AS n FROM r JOIN s ON r.b = s.b "
         "WHERE s.e > 0 GROUP BY r.a")


def test_offline_explain_equals_explain_statement(spark, vl, tmp_path, capsys):
    registered_workload(spark, str(tmp_path), seed=7, rows=10)
    definition = tmp_path / "ex_v.sql"
    definition.write_text(f"CREATE INCREMENTAL VIEW ex_v AS\n{QUERY};\n")
    assert cli.main(["explain", str(definition), "--warehouse", vl.warehouse]) == cli.EXIT_OK
    offline = capsys.readouterr().out.rstrip("\n")
    spark.sql(definition.read_text())
    try:
        online = explain_parts(spark, "ex_v")[0]
        assert offline == online
    finally:
        spark.sql("DROP INCREMENTAL VIEW ex_v")
