"""The spark-sql command line that runs Spark's SQL shell with Viewlet (``viewlet sql``).

The shell is pyspark's own ``bin/spark-sql`` with Viewlet's jar and parser hook added; its
first Viewlet statement attaches a Python driver (``viewlet.api.attach``) running this Python.
Spark's own local state (the Derby metastore, its log and spark-warehouse) goes under the
Viewlet warehouse instead of the current directory.
"""
from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from ..engine.state.warehouse import join, normalize_location
from ..api.session import DEFAULT_WAREHOUSE, EXTENSION, WAREHOUSE_CONF

PYTHON_CONF = "spark.viewlet.python"
DEFAULT_LOG_LEVEL = "ERROR"


class ShellUnavailable(Exception):
    """This installation cannot run spark-sql; the message says why and what to do."""


def spark_home() -> Path:
    """The pip-installed pyspark directory: Spark's home, with bin/spark-sql and jars/."""
    try:
        import pyspark
    except ImportError:
        raise ShellUnavailable("pyspark is not installed in this Python "
                               f"({sys.executable}): pip install viewlet") from None
    home = Path(pyspark.__file__).resolve().parent
    if not (home / "bin" / "spark-sql").is_file():
        raise ShellUnavailable(f"this pyspark has no bin/spark-sql ({home}); reinstall pyspark "
                               "from PyPI (pip install --force-reinstall pyspark).")
    if not list((home / "jars").glob("spark-hive-thriftserver_*.jar")):
        raise ShellUnavailable(f"this pyspark has no spark-hive-thriftserver jar in {home}/jars, "
                               "which spark-sql needs; install pyspark from PyPI.")
    return home


def spark_sql_command(warehouse: str | None, args: Sequence[str], jar: str,
                      python: str = sys.executable,
                      home: Path | None = None,
                      delta_spark: bool = False) -> Tuple[List[str], Dict[str, str]]:
    """(argv, environment additions) of the spark-sql run; `args` go to spark-sql last, so
    their --conf settings win over these defaults, except spark.sql.extensions, which keeps
    Viewlet's after the user's. `delta_spark`: add Delta Lake's extension, catalog and jar."""
    home = home or spark_home()
    # column names above every result (SHOW, DESCRIBE, HISTORY are tables of several
    # columns); --conf spark.sql.cli.print.header=false turns them off
    confs, args = viewlet_settings(warehouse, args, python, delta_spark,
                                   extra=[("spark.sql.cli.print.header", "true")])
    argv = [str(home / "bin" / "spark-sql"), "--jars", jar]
    for key, value in confs:
        argv += ["--conf", f"{key}={value}"]
    return argv + args, {"SPARK_HOME": str(home)}


def viewlet_settings(warehouse: str | None, args: Sequence[str], python: str = sys.executable,
                     delta_spark: bool = False, log_level: str | None = DEFAULT_LOG_LEVEL,
                     extra: Sequence[Tuple[str, str]] = ()
                     ) -> Tuple[List[Tuple[str, str]], List[str]]:
    """The --conf settings of a JVM-only Spark driver with Viewlet (spark-sql, a Spark Connect
    server), and `args` less a --conf spark.sql.extensions merged into them (the user's
    extensions, delta-spark's say, then Viewlet's). Spark's local state goes under a local
    warehouse."""
    location = normalize_location(warehouse or DEFAULT_WAREHOUSE)
    confs = [("spark.sql.extensions", EXTENSION), (WAREHOUSE_CONF, location),
             (PYTHON_CONF, python)]
    if log_level:
        confs.append(("spark.log.level", log_level))
    confs += list(extra)
    if _is_local(location):
        state = join(location, "spark")
        confs += [
            ("spark.sql.warehouse.dir", join(state, "spark-warehouse")),
            ("spark.hadoop.javax.jdo.option.ConnectionURL",
             f"jdbc:derby:;databaseName={join(state, 'metastore_db')};create=true"),
            # derby.log goes to derby.system.home (default: the current directory)
            ("spark.driver.extraJavaOptions", f"-Dderby.system.home={_java_option(state)}"),
        ]
    args = list(args)
    extensions = passed_conf(args, "spark.sql.extensions")
    if extensions is not None:    # the user's extensions (delta-spark's, say) and Viewlet's
        confs[0] = ("spark.sql.extensions", ",".join([e for e in extensions.split(",") if e
                                                      and e != EXTENSION] + [EXTENSION]))
    if delta_spark:
        from ..api import delta_spark as delta
        added = delta.settings(dict(confs))
        confs = [(k, added.get(k, v)) for k, v in confs] + \
            [(k, v) for k, v in added.items() if k not in dict(confs)]
    return confs, args


def passed_conf(args: List[str], key: str) -> Optional[str]:
    """The value of `--conf key=value` among args, removed from them (the last one wins)."""
    found = None
    i = 0
    while i < len(args):
        if args[i] == "--conf" and i + 1 < len(args) and args[i + 1].startswith(key + "="):
            found = args[i + 1].split("=", 1)[1]
            del args[i:i + 2]
        elif args[i].startswith(f"--conf={key}="):
            found = args[i].split("=", 2)[2]
            del args[i]
        else:
            i += 1
    return found


def format_command(argv: Sequence[str], env: Dict[str, str]) -> str:
    """A POSIX shell command line equivalent to running argv with env added."""
    head = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    parts, i = [f"{head} {shlex.quote(argv[0])}".strip()], 1
    while i < len(argv):  # one option (with its value) per line
        if argv[i] in ("--jars", "--conf", "-e", "-f", "--class", "--name") and i + 1 < len(argv):
            parts.append(f"{argv[i]} {shlex.quote(argv[i + 1])}")
            i += 2
        else:
            parts.append(shlex.quote(argv[i]))
            i += 1
    return " \\\n  ".join(parts)


def prepare_state_dir(warehouse: str | None) -> None:
    """Create the directory derby.log is written to (Derby does not create it)."""
    location = normalize_location(warehouse or DEFAULT_WAREHOUSE)
    if _is_local(location):
        os.makedirs(join(location, "spark"), exist_ok=True)


def _is_local(location: str) -> bool:
    return os.path.isabs(location)  # normalize_location leaves URIs (s3://, file://) as given


def _java_option(path: str) -> str:
    # Spark splits extraJavaOptions like a shell: quote a path with spaces.
    return f'"{path}"' if any(c.isspace() for c in path) else path
