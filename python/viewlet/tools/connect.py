"""``viewlet connect-server``: a Spark Connect server with Viewlet in it.

The server is Spark's own (org.apache.spark.sql.connect.service.SparkConnectServer, what
``sbin/start-connect-server.sh`` runs), started in the foreground by pyspark's
``bin/spark-submit`` with Viewlet's jar, parser hook, warehouse and Python added. Its first
Viewlet statement attaches a Python driver (``viewlet.api.attach``) running this Python, as in
``viewlet sql``; every client's statements then run there.
"""
from __future__ import annotations

import socket
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from . import shell

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
PORT_CONF = "spark.connect.grpc.binding.port"
ADDRESS_CONF = "spark.connect.grpc.binding.address"
DEFAULT_PORT = 15002              # Spark's own default
DEFAULT_HOST = "127.0.0.1"        # loopback: Spark's default (every interface) is opt-in here
ATTACH_CONF = "spark.viewlet.attach"
SUPPORTED = ">=4.0.1,<4.4"        # the pyspark range Viewlet supports (setup.py)
# a server's warnings belong in its log; at INFO (spark-submit's default) they flood it
SERVER_LOG_LEVEL = "WARN"
STACKTRACE_CONF = "spark.sql.connect.serverStacktrace.enabled"


class ConnectUnavailable(Exception):
    """This installation cannot run a Spark Connect server; the message says why and what to do."""


def spark_home() -> Path:
    """The pip-installed pyspark directory, checked to hold Spark Connect's server classes."""
    try:
        import pyspark
    except ImportError:
        raise ConnectUnavailable("pyspark is not installed in this Python "
                                 f"({sys.executable}): pip install viewlet") from None
    return checked_home(Path(pyspark.__file__).resolve().parent, pyspark.__version__)


def checked_home(home: Path, version: str) -> Path:
    """`home`, a pyspark directory, if it can run a Connect server."""
    remedy = ("A Connect server needs the full pyspark from PyPI: pip install "
              f"'pyspark[connect]{SUPPORTED}' (the pyspark-client package is a client only).")
    if not (home / "bin" / "spark-submit").is_file():
        raise ConnectUnavailable(f"this pyspark {version} has no bin/spark-submit in {home}. "
                                 + remedy)
    if not list((home / "jars").glob("spark-connect_*.jar")):
        raise ConnectUnavailable(f"this pyspark {version} has no Spark Connect server classes "
                                 f"(no spark-connect_*.jar in {home}/jars). " + remedy)
    return home


def connect_server_command(warehouse: Optional[str], port: int, host: str, args: Sequence[str],
                           jar: str, python: str = sys.executable, home: Optional[Path] = None,
                           delta_spark: bool = False
                           ) -> Tuple[List[str], Dict[str, str], str]:
    """(argv, environment additions, the sc:// URL clients use) of the server run. `args` go
    to spark-submit last: their --conf settings win, a binding port or address given there
    included (the URL follows them)."""
    home = home or spark_home()
    args = list(args)
    port = int(shell.passed_conf(args, PORT_CONF) or port)
    host = shell.passed_conf(args, ADDRESS_CONF) or host
    confs, args = shell.viewlet_settings(warehouse, args, python, delta_spark,
                                         log_level=SERVER_LOG_LEVEL)
    confs += [
        (ADDRESS_CONF, host),
        (PORT_CONF, str(port)),
        # a server never has a Python driver of its own: always attach Viewlet's
        (ATTACH_CONF, "true"),
        # errors as classic PySpark shows them: Viewlet's message, no Java stack appended
        (STACKTRACE_CONF, "false"),
    ]
    argv = [str(home / "bin" / "spark-submit"), "--class", SERVER_CLASS,
            "--name", "Spark Connect server with Viewlet", "--jars", jar]
    for key, value in confs:
        argv += ["--conf", f"{key}={value}"]
    return argv + args, {"SPARK_HOME": str(home)}, client_url(host, port)


def client_url(host: str, port: int) -> str:
    if host in ("0.0.0.0", "::", ""):     # every interface: this machine's clients use loopback
        host = "localhost"
    return f"sc://{host}:{port}"


def wait_until_listening(host: str, port: int, alive, deadline: Optional[float] = None,
                         interval: float = 0.2) -> bool:
    """Whether (host, port) accepts TCP connections before `alive()` turns false or the
    deadline (time.monotonic()) passes. Spark Connect opens its port last, once the session
    is ready."""
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    while alive() and (deadline is None or time.monotonic() < deadline):
        try:
            with socket.create_connection((host, port), timeout=interval):
                return True
        except OSError:
            time.sleep(interval)
    return False
