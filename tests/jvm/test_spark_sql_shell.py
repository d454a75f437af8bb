"""The extension inside pyspark's own spark-sql shell, with attaching a Python driver off
(integration/shell runs the shell with the Python side attached)."""

import os
import subprocess
from pathlib import Path

import pyspark

from viewlet.jvm import EXTENSIONS_CLASS


def test_spark_sql_shell_smoke(viewlet_jar, tmp_path):
    spark_home = Path(pyspark.__file__).resolve().parent
    cmd = [
        str(spark_home / "bin" / "spark-sql"),
        "--jars", viewlet_jar,
        "--conf", f"spark.sql.extensions={EXTENSIONS_CLASS}",
        "--conf", "spark.sql.catalogImplementation=in-memory",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.viewlet.attach=false",
        "-S", "-e", "SELECT 41+1; SHOW INCREMENTAL VIEWS",
    ]
    env = dict(os.environ, SPARK_HOME=str(spark_home))
    res = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    out = res.stdout + res.stderr
    assert "42" in res.stdout.split()
    assert "Viewlet is configured on this Spark session but not enabled" in out
    assert "spark.viewlet.attach=false keeps it from starting its Python side" in out
