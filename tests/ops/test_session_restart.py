"""A second Spark session in the same Python process (a notebook restarting its session):
configure_spark after spark.stop() gives a working session even when the process's JVM was
started without Viewlet's jar, and statements follow the new session. Runs
tests/ops/restart_child.py as a real process (the test run's own session must not stop)."""
from __future__ import annotations

import os
import subprocess
import sys

CHILD = os.path.join(os.path.dirname(__file__), "restart_child.py")


def test_sessions_restarted_in_one_process(tmp_path):
    out = subprocess.run([sys.executable, CHILD, str(tmp_path)], capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr[-4000:]
    lines = out.stdout.splitlines()
    refused = next(line for line in lines if line.startswith("REFUSED"))
    assert "call spark.stop() first" in refused, refused
    assert "SECOND refreshed" in lines
    assert "CHECKED second session" in lines
    assert "SHOW totals" in lines                # no parse error, no enable() call needed
    assert "THIRD refreshed" in lines
    assert "CHECKED third session" in lines
    assert "JavaPackage" not in out.stderr and "PARSE_SYNTAX_ERROR" not in out.stderr
