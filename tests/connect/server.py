"""A real Spark Connect server with Viewlet for the tests: `viewlet connect-server` on a free
loopback port, this checkout's package first on the path (the launcher and the Python the
server attaches), and pyspark's Connect client sessions to it."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 300          # a JVM start on a busy 2-core machine: 20-60 s seen
STOP_TIMEOUT = 60
WAIT = 300                   # for a statement to reach a point, or to end


def connect_client_or_skip():
    """pyspark's Connect client session class; the test is skipped without its packages."""
    try:
        from pyspark.sql.connect.session import SparkSession as RemoteSparkSession
    except ImportError as e:
        pytest.skip(f"pyspark's Spark Connect client needs packages this Python lacks ({e}): "
                    "pip install 'pyspark[connect]'")
    return RemoteSparkSession


def server_or_skip():
    """Skips where this pyspark ships no Connect server (the reason names the remedy)."""
    from viewlet.tools import connect
    try:
        connect.spark_home()
    except connect.ConnectUnavailable as e:
        pytest.skip(str(e))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(**extra) -> dict:
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in [str(ROOT / "python"), os.environ.get("PYTHONPATH", "")] if p)
    return env


class Server:
    """`viewlet connect-server` running in a process group of its own."""

    def __init__(self, base: Path, warehouse: str, env_extra=None, args=()):
        self.port = free_port()
        self.log = base / "server.log"
        engine = os.environ.get("VIEWLET_TEST_ENGINE", "local")
        argv = [sys.executable, "-m", "viewlet", "connect-server", "--warehouse", warehouse,
                "--port", str(self.port), "--driver-memory", "1g",
                "--conf", "spark.ui.enabled=false",
                "--conf", "spark.sql.shuffle.partitions=2",
                "--conf", f"spark.viewlet.engine={engine}", *args]
        with open(self.log, "w") as out:
            self.process = subprocess.Popen(argv, cwd=base, env=server_env(**(env_extra or {})),
                                            stdin=subprocess.DEVNULL, stdout=out,
                                            stderr=subprocess.STDOUT, start_new_session=True)
        self.url = self._wait_for_url()

    def _wait_for_url(self) -> str:
        """The URL the launcher prints once the server accepts clients."""
        deadline = time.monotonic() + START_TIMEOUT
        marker = "Spark Connect server with Viewlet at "
        while time.monotonic() < deadline:
            for line in self.log.read_text().splitlines():
                if marker in line:
                    return line.split(marker, 1)[1].strip()
            if self.process.poll() is not None:
                break
            time.sleep(0.2)
        self.stop()
        raise AssertionError(f"the Connect server did not start within {START_TIMEOUT} s "
                             f"(exit {self.process.poll()}):\n{self.tail()}")

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.log.read_text().splitlines()[-lines:])

    def stop(self) -> None:
        """SIGTERM to the launcher (it stops the server, whose exit ends the attached
        Python); the whole group is killed if that takes longer than STOP_TIMEOUT."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)   # the group this test started
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait(STOP_TIMEOUT)

    def client(self):
        """A new Connect session (its own session id) to this server."""
        return connect_client_or_skip().builder.remote(self.url).create()


def wait_for(condition, what: str, timeout: float = WAIT):
    """Returns once condition() holds; fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.1)


def paused_server(tmp_path_factory, name: str):
    """A server whose batches stop after the first map is merged while `server.pause` exists
    (faults.point batch.map_merged; `server.base / "pause.reached"` says one got there).
    A generator, for a module fixture: yields the server, stops it after."""
    connect_client_or_skip()
    server_or_skip()
    base = tmp_path_factory.mktemp(name)
    pause = base / "pause"
    s = Server(base, str(base / "wh"), env_extra={"VIEWLET_PAUSE": f"batch.map_merged={pause}"})
    s.base, s.pause = base, pause
    yield s
    s.stop()


def totals_with_a_pending_batch(server, spark):
    """View `totals` (SUM and COUNT by k) over a new table of `server.base`, then one commit it
    has not consumed; (its query, Spark's rows of batch 0)."""
    import pyarrow as pa
    from deltalake import write_deltalake
    orders = str(server.base / "orders")
    write_deltalake(orders, pa.table({"k": pa.array([1, 1, 2], pa.int64()),
                                      "v": pa.array([10, 20, 5], pa.int64())}),
                    configuration={"delta.enableChangeDataFeed": "true"})
    query = f"SELECT k, SUM(v) AS s, COUNT(*) AS n FROM delta.`{orders}` GROUP BY k"
    spark.sql(f"CREATE INCREMENTAL VIEW totals AS {query}").collect()
    before = spark.createDataFrame(spark.sql(query).collect())
    write_deltalake(orders, pa.table({"k": pa.array([2, 3], pa.int64()),
                                      "v": pa.array([7, 30], pa.int64())}), mode="append")
    return query, before
