"""Viewlet in Spark's real spark-sql shell: `viewlet sql` (and the raw command it prints)
with -e, -f and SQL on stdin; the first Viewlet statement attaches a Python driver.

Each shell launch costs 15-40 s, so one module-scoped warehouse and Delta table go through
three launches in order (create, refresh after appends, refresh after a delete); every check
compares the view's printed rows with the aggregate computed by pyarrow over the same Delta
data. A fourth launch checks the attach error for a Python without Viewlet; a fifth, going on
after failed statements, runs a script written for Databricks (MATERIALIZED VIEW, SCHEDULE,
FULL, viewlet_history), writes Delta tables with Spark SQL in a shell started without
--delta, and ends in a table Viewlet does not know.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import venv
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable, write_deltalake

ROOT = Path(__file__).resolve().parents[2]
LAUNCH_TIMEOUT = 600
# Spark settings for tests only: no web UI (port probing), a small driver.
# A heartbeat the local executor misses for 10 s (Spark's default interval) on a busy
# machine is logged as a WARN with a stack trace, which assert_clean would take for an error
# of a statement: the shells' executors beat every 60 s.
TEST_ARGS = ["-S", "--conf", "spark.ui.enabled=false", "--conf",
             "spark.executor.heartbeatInterval=60s", "--driver-memory", "1g"]


def view_sql(table: str) -> str:
    return (f"CREATE INCREMENTAL VIEW totals AS SELECT k, SUM(v) AS s, COUNT(*) AS n "
            f"FROM delta.`{table}` WHERE v > 0 GROUP BY k")


SELECT_ROWS = "SELECT 'row' AS tag, k, s, n FROM totals ORDER BY k"


def expected_rows(table: str):
    """The view's defining query evaluated by pyarrow over the table's current version."""
    data = DeltaTable(table).to_pyarrow_table()
    data = data.filter(pc.greater(data["v"], 0))
    agg = data.group_by("k").aggregate([("v", "sum"), ("v", "count")]).sort_by("k")
    return [(str(k), str(s), str(n)) for k, s, n in
            zip(agg["k"].to_pylist(), agg["v_sum"].to_pylist(), agg["v_count"].to_pylist())]


def printed_rows(stdout: str, tag: str = "row"):
    return [tuple(line.split("\t")[1:]) for line in stdout.splitlines()
            if line.startswith(tag + "\t")]


def shell_env(**extra) -> dict:
    """This checkout's package first on the path, for the launcher and the attached Python."""
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in [str(ROOT / "python"), os.environ.get("PYTHONPATH", "")] if p)
    return env


def viewlet_sql(args, cwd, stdin=None, env=None):
    return subprocess.run([sys.executable, "-m", "viewlet", "sql", *args], cwd=cwd,
                          env=env or shell_env(), input=stdin, capture_output=True, text=True,
                          timeout=LAUNCH_TIMEOUT)


def assert_clean(stderr: str):
    assert "Traceback (most recent call last)" not in stderr
    assert "\tat org.apache" not in stderr and "\tat io.viewlet" not in stderr


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    base = tmp_path_factory.mktemp("shell")
    table = str(base / "orders")
    write_deltalake(table, pa.table({"k": pa.array([1, 1, 2, 3], pa.int64()),
                                     "v": pa.array([10, 20, -5, 7], pa.int64())}),
                    configuration={"delta.enableChangeDataFeed": "true"})
    return {"cwd": base, "warehouse": str(base / "wh"), "table": table}


@pytest.fixture(scope="module")
def created(place):
    """Launch 1, `viewlet sql -e`: create, select, explain, then a bad statement."""
    expected = expected_rows(place["table"])
    statements = [view_sql(place["table"]), SELECT_ROWS, "EXPLAIN INCREMENTAL VIEW totals",
                  "CREATE INCREMENTAL VIEW broken AS SELECT k FROM delta.`/no/such/table`"]
    res = viewlet_sql(["--warehouse", place["warehouse"], *TEST_ARGS,
                       "-e", ";\n".join(statements)], cwd=place["cwd"])
    return res, expected


@pytest.fixture(scope="module")
def refreshed_from_file(place, created):
    """Launch 2: the raw spark-sql command `viewlet sql --print-command` prints, with -f,
    after rows were appended with delta-rs."""
    write_deltalake(place["table"], pa.table({"k": pa.array([2, 4, 1], pa.int64()),
                                              "v": pa.array([3, 40, -1], pa.int64())}),
                    mode="append")
    script = Path(place["cwd"]) / "refresh.sql"
    script.write_text(f"REFRESH INCREMENTAL VIEW totals;\n{SELECT_ROWS};\n")
    printed = viewlet_sql(["--warehouse", place["warehouse"], "--print-command", *TEST_ARGS,
                           "-f", str(script)], cwd=place["cwd"])
    assert printed.returncode == 0, printed.stderr
    command = printed.stdout
    res = subprocess.run(["bash", "-c", command], cwd=place["cwd"], env=shell_env(),
                         capture_output=True, text=True, timeout=LAUNCH_TIMEOUT)
    return res, command, expected_rows(place["table"])


@pytest.fixture(scope="module")
def refreshed_from_stdin(place, refreshed_from_file):
    """Launch 3, `viewlet sql` reading statements from stdin, after a delete with delta-rs.
    The first statement reads the view: a name Spark does not know attaches Python too."""
    before = expected_rows(place["table"])
    DeltaTable(place["table"]).delete("v = 20")
    stdin = (f"SELECT 'before' AS tag, k, s, n FROM totals ORDER BY k;\n"
             f"REFRESH INCREMENTAL VIEW totals;\n{SELECT_ROWS};\n"
             "DESCRIBE INCREMENTAL VIEW totals HISTORY;\n")
    # Viewlet's JVM side logs through Spark's log4j: turned up to INFO for its package only.
    log4j = Path(place["cwd"]) / "log4j2.properties"
    log4j.write_text("rootLogger.level = warn\nrootLogger.appenderRef.stderr.ref = console\n"
                     "appender.console.type = Console\nappender.console.name = console\n"
                     "appender.console.target = SYSTEM_ERR\n"
                     "appender.console.layout.type = PatternLayout\n"
                     "appender.console.layout.pattern = %p %c: %m%n\n"
                     "logger.viewlet.name = io.viewlet\nlogger.viewlet.level = info\n")
    # Through log4j's environment variable: --driver-java-options would replace the launcher's
    # spark.driver.extraJavaOptions (where Spark's Derby state is sent).
    res = viewlet_sql(["--warehouse", place["warehouse"], *TEST_ARGS], cwd=place["cwd"],
                      stdin=stdin, env=shell_env(LOG4J_CONFIGURATION_FILE=str(log4j)))
    return res, before, expected_rows(place["table"])


def test_create_and_select_with_e(created):
    res, expected = created
    assert printed_rows(res.stdout) == expected, res.stderr
    assert len(expected) == 2  # k=1 and k=3 (k=2 has no positive v yet)


def test_explain_prints_the_trigger_program(created):
    res, _ = created
    assert "Incremental view totals" in res.stdout
    assert "Triggers" in res.stdout and "ON BATCH" in res.stdout
    assert "MERGE" in res.stdout


def test_bad_statement_is_a_clean_error_and_nonzero_exit(created):
    res, _ = created
    assert res.returncode != 0
    assert "No Delta table at /no/such/table" in res.stderr
    assert_clean(res.stderr)


def test_spark_state_goes_under_the_warehouse(place, created):
    res, _ = created
    cwd = Path(place["cwd"])
    assert not (cwd / "metastore_db").exists() and not (cwd / "derby.log").exists(), res.stderr
    assert (Path(place["warehouse"]) / "spark" / "metastore_db").is_dir()


def test_printed_command_runs_without_the_launcher(place, refreshed_from_file):
    res, command, expected = refreshed_from_file
    assert "viewlet" not in command.split()[1]  # spark-sql itself, not the launcher
    assert "spark.sql.extensions=io.viewlet.spark.ViewletExtensions" in command
    assert f"spark.viewlet.warehouse={place['warehouse']}" in command
    assert res.returncode == 0, res.stderr
    assert printed_rows(res.stdout) == expected
    assert ("4", "40", "1") in expected  # the appended group is there


def test_statements_on_stdin(refreshed_from_stdin):
    res, before, expected = refreshed_from_stdin
    assert res.returncode == 0, res.stderr
    assert printed_rows(res.stdout, "before") == before
    assert printed_rows(res.stdout) == expected
    assert expected != before  # the delete changed group k=1
    assert_clean(res.stderr)


def test_history_and_log4j_logging_in_the_shell(refreshed_from_stdin):
    res, _, _ = refreshed_from_stdin
    history = [line.split("\t") for line in res.stdout.splitlines()
               if re.match(r"^\d+\t(committed|created)\t", line)]
    assert [h[:2] for h in history] == [["2", "committed"], ["1", "committed"], ["0", "created"]]
    assert all(int(h[6]) > 0 for h in history[:2])       # each batch read some changes
    assert ("INFO io.viewlet.spark.ViewletCommand: Viewlet statement finished in"
            in res.stderr), res.stderr[-3000:]
    assert "REFRESH INCREMENTAL VIEW totals" in res.stderr


def test_attach_error_names_python_without_viewlet(place, tmp_path):
    bare = tmp_path / "bare-venv"
    venv.EnvBuilder(with_pip=False).create(bare)
    python = bare / "bin" / "python"
    env = dict(shell_env())
    launcher_path = env.pop("PYTHONPATH")  # the launcher needs it; the bare Python must not
    printed = viewlet_sql(["--warehouse", str(tmp_path / "wh"), "--print-command", *TEST_ARGS,
                           "--conf", f"spark.viewlet.python={python}",
                           "--conf", "spark.sql.catalogImplementation=in-memory",
                           "-e", "SHOW INCREMENTAL VIEWS"], cwd=tmp_path,
                          env=dict(env, PYTHONPATH=launcher_path))
    assert printed.returncode == 0, printed.stderr
    res = subprocess.run(["bash", "-c", printed.stdout], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=LAUNCH_TIMEOUT)
    assert res.returncode != 0
    assert f"'{python} -m viewlet.api.attach' (spark.viewlet.python) exited" in res.stderr
    assert "Viewlet is not installed in that Python" in res.stderr
    assert "Set spark.viewlet.python to a Python where Viewlet is installed" in res.stderr
    assert_clean(res.stderr)


@pytest.fixture(scope="module")
def databricks_statements(place, refreshed_from_stdin):
    """Launch 5 (of 5), `viewlet sql -f` started without --delta, going on after a failed
    statement (hive.cli.errors.ignore): a script written for Databricks (MATERIALIZED VIEW,
    SCHEDULE, FULL), the history table function, EXPLAIN; then a read of the Delta table by
    path and statements that need delta-spark, a query after them, and last a table Viewlet
    does not know (the run's exit status is the last statement's)."""
    table = place["table"]
    script = Path(place["cwd"]) / "databricks.sql"
    script.write_text(
        f"CREATE MATERIALIZED VIEW mv_counts SCHEDULE EVERY 1 HOUR AS\n"
        f"  SELECT k, COUNT(*) AS n FROM delta.`{table}` GROUP BY k;\n"
        "ALTER MATERIALIZED VIEW mv_counts DROP SCHEDULE;\n"
        "REFRESH MATERIALIZED VIEW mv_counts FULL;\n"
        "SELECT 'hist' AS tag, batch, status, message FROM viewlet_history('mv_counts');\n"
        "SELECT 'mvrow' AS tag, k, n FROM mv_counts ORDER BY k;\n"
        "EXPLAIN MATERIALIZED VIEW mv_counts;\n"
        "DROP MATERIALIZED VIEW mv_counts;\n"
        f"SELECT 'count' AS tag, COUNT(*) FROM delta.`{table}`;\n"
        "CREATE TABLE sales (k BIGINT) USING delta;\n"
        f"INSERT INTO delta.`{table}` VALUES (9, 9);\n"
        f"VACUUM delta.`{table}`;\n"
        "SELECT 'after' AS tag, 1;\n"
        "CREATE MATERIALIZED VIEW mv_missing AS SELECT k FROM no_such_table;\n")
    before = DeltaTable(table)
    data = before.to_pyarrow_table()
    counts = data.group_by("k").aggregate([("k", "count")]).sort_by("k")
    expected = [(str(k), str(n)) for k, n in zip(counts["k"].to_pylist(),
                                                 counts["k_count"].to_pylist())]
    res = viewlet_sql(["--warehouse", place["warehouse"], *TEST_ARGS,
                       "--hiveconf", "hive.cli.errors.ignore=true", "-f", str(script)],
                      cwd=place["cwd"])
    return res, expected, before.version(), data.num_rows


def test_databricks_statements_in_the_shell(databricks_statements):
    res, expected, _, _ = databricks_statements
    assert printed_rows(res.stdout, "mvrow") == expected, res.stderr[-3000:]
    assert printed_rows(res.stdout, "hist") == [("1", "rebuilt", "REFRESH ... FULL"),
                                                ("0", "created", "NULL")]
    lines = res.stdout.splitlines()
    assert "Incremental view mv_counts" in lines          # EXPLAIN: one line per row
    assert any(line.startswith("  ON BATCH d") for line in lines)


def test_missing_table_error_offers_sql(databricks_statements):
    res, _, _, _ = databricks_statements
    assert res.returncode != 0                            # the last statement failed
    assert "Table 'no_such_table' not found" in res.stderr
    assert "in SQL, write the table's path as delta.`/path/to/no_such_table`" in res.stderr
    assert_clean(res.stderr)


def test_delta_writes_without_delta_name_the_remedy(place, databricks_statements):
    res, _, version, rows = databricks_statements
    assert printed_rows(res.stdout, "count") == [(str(rows),)], res.stderr[-3000:]
    assert printed_rows(res.stdout, "after") == [("1",)]
    needs = ("needs Delta Lake's Spark extension (delta-spark), which this Spark session does "
             "not have. In the spark-sql shell, start it with 'viewlet sql --delta'; in PySpark, "
             "build the session with viewlet.configure_spark(builder, ..., delta_spark=True)")
    for what in ["CREATE TABLE sales ... USING delta",
                 f"INSERT INTO delta.`{place['table']}` (a Delta table)",
                 "VACUUM (Delta Lake's SQL)"]:
        assert f"{what} {needs}" in res.stderr, res.stderr[-3000:]
    assert "DATA_SOURCE_NOT_FOUND" not in res.stderr
    assert "TABLE_OR_VIEW_NOT_FOUND" not in res.stderr
    assert_clean(res.stderr)
    assert DeltaTable(place["table"]).version() == version     # nothing was written
