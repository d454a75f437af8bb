"""viewlet.configure_spark on a local Spark Connect builder (`remote("local[2]")`): pyspark
starts the server in the client's process with Viewlet's settings, the server attaches its
own Python for Viewlet's statements, and the client runs them like any other. In a child
process: a process holds one JVM, and pyspark refuses a local server next to a session."""
from __future__ import annotations

import fcntl
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from .server import connect_client_or_skip, server_env, server_or_skip

TIMEOUT = 600


def test_local_remote_session(tmp_path):
    connect_client_or_skip()
    server_or_skip()
    child = Path(__file__).with_name("local_child.py")
    # pyspark's local server binds one fixed port: one such test at a time on this machine
    # (CI runs both ends of the Spark range side by side)
    with open(Path(tempfile.gettempdir()) / "viewlet-connect-local.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        res = subprocess.run([sys.executable, str(child), str(tmp_path)], cwd=tmp_path,
                             env=server_env(), capture_output=True, text=True, timeout=TIMEOUT)
    lines = [line for line in res.stdout.splitlines() if line.startswith("RESULT ")]
    assert res.returncode == 0 and lines, res.stdout[-3000:] + res.stderr[-5000:]
    out = json.loads(lines[0][len("RESULT "):])
    assert out["connect"].startswith("pyspark.sql.connect")
    assert out["settings"] == {"spark.viewlet.warehouse": str(tmp_path / "wh"),
                               "spark.viewlet.attach": "true",
                               "spark.sql.extensions": "io.viewlet.spark.ViewletExtensions"}
    assert out["handle"] == "ConnectViewlet" and out["context_is_handle"]
    assert out["create"] == "created"
    assert out["refresh"]["status"] == "refreshed" and out["refresh"]["changes"] == 3
    assert out["view"] == out["spark"]
    assert out["spark"] == [[1, 10, 1], [2, 6, 2], [3, 4, 1]]
