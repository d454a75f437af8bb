"""`viewlet sql --print-command`: the spark-sql command line, without starting Spark."""
from __future__ import annotations

import shlex
import sys

from viewlet.tools import cli, shell
from viewlet.jvm import EXTENSIONS_CLASS


def printed(capsys, *args):
    assert cli.main(["sql", "--print-command", *args]) == cli.EXIT_OK
    return capsys.readouterr().out


def words(command: str):
    return shlex.split(command.replace("\\\n", " "))


def test_command_has_the_jar_hook_warehouse_and_python(capsys, tmp_path):
    out = words(printed(capsys, "--warehouse", str(tmp_path / "wh")))
    assert out[0].startswith("SPARK_HOME=") and out[1].endswith("/bin/spark-sql")
    confs = [out[i + 1] for i, w in enumerate(out) if w == "--conf"]
    assert f"spark.sql.extensions={EXTENSIONS_CLASS}" in confs
    assert f"spark.viewlet.warehouse={tmp_path / 'wh'}" in confs
    assert f"spark.viewlet.python={sys.executable}" in confs
    assert f"spark.sql.warehouse.dir={tmp_path / 'wh' / 'spark' / 'spark-warehouse'}" in confs
    assert out[out.index("--jars") + 1].endswith("viewlet-spark.jar")


def test_other_arguments_pass_through_after_the_defaults(capsys, tmp_path):
    out = words(printed(capsys, "--warehouse", str(tmp_path), "-e", "SELECT 1; -- x",
                        "--conf", "spark.log.level=WARN", "--", "-S", "--warehouse"))
    assert out[-6:] == ["-e", "SELECT 1; -- x", "--conf", "spark.log.level=WARN", "-S",
                        "--warehouse"]
    # spark-submit keeps the last value of a repeated --conf: the user's wins
    assert out.index("spark.log.level=ERROR") < out.index("spark.log.level=WARN")


def test_remote_warehouse_leaves_spark_state_alone(tmp_path):
    argv, env = shell.spark_sql_command("s3://bucket/wh", [], jar=str(tmp_path / "x.jar"))
    assert "--conf" in argv and "spark.viewlet.warehouse=s3://bucket/wh" in argv
    assert not any("derby" in a or "javax.jdo" in a for a in argv)
    assert env["SPARK_HOME"] and argv[0].endswith("spark-sql")


def test_format_command_round_trips_through_a_shell_parser():
    argv = ["/opt/spark sql/bin/spark-sql", "--conf", "a=b c", "-e", "SELECT 'x'; -- \"y\"", "-S"]
    text = shell.format_command(argv, {"SPARK_HOME": "/opt/spark sql"})
    assert words(text) == ["SPARK_HOME=/opt/spark sql", *argv]
