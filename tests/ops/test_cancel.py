"""Ctrl-C cancels a REFRESH: a real SIGINT delivered to a real PySpark process while its batch
runs a Spark job (tests/ops/cancel_child.py) and while it stands between two writes. The
REFRESH raises KeyboardInterrupt, no Spark job of it keeps running, nothing is half-applied:
the next REFRESH completes the batch exactly once and the view equals Spark's recompute.
(The spark-sql shell's Ctrl-C: integration/shell/test_shell_cancel.py.)"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.ops.children import read, wait_until

CHILD = os.path.join(os.path.dirname(__file__), "cancel_child.py")
TIMEOUT = 600


def wait_for_file(path, proc, logs, deadline):
    """Until the child writes the file it writes where the test interrupts it."""
    wait_until(lambda: os.path.exists(path), [proc], [logs], deadline, path)


def test_ctrl_c_cancels_a_refresh(tmp_path):
    state = str(tmp_path)
    logs = (str(tmp_path / "stdout"), str(tmp_path / "stderr"))
    with open(logs[0], "w") as out, open(logs[1], "w") as err:
        proc = subprocess.Popen([sys.executable, CHILD, state], stdout=out, stderr=err)
    deadline = time.monotonic() + TIMEOUT
    try:
        wait_for_file(os.path.join(state, "udf.reached"), proc, logs, deadline)
        proc.send_signal(signal.SIGINT)        # the batch's Spark job is blocked in the UDF
        wait_for_file(os.path.join(state, "pause.reached"), proc, logs, deadline)
        proc.send_signal(signal.SIGINT)        # the batch stands after its first map write
        proc.wait(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
    out, stderr = read(logs[0]), read(logs[1])
    assert proc.returncode == 0, out + stderr[-4000:]
    lines = out.splitlines()
    for view in ("held", "paused"):
        interrupted = next(line for line in lines if line.startswith(f"INTERRUPTED {view} "))
        assert "was cancelled (Ctrl-C)" in interrupted, interrupted
        assert "batch 1 is planned and not committed" in interrupted, interrupted
        assert f"ACTIVE JOBS {view} 0" in lines
        assert f"HISTORY {view} 1 planned, not committed (the next REFRESH re-runs it)" in lines
        assert f"REFRESH {view} recovered batch 1" in lines
        assert f"ROWS {view} 0:committed 1:planned 1:committed" in lines
        assert f"CHECKED {view}" in lines
    assert "DONE" in lines
    # no broken Py4J exchange: PySpark's reentrant-call errors, a retried sql() call
    assert "reentrant call" not in stderr and "Py4JError" not in stderr, stderr[-4000:]
    assert "[viewlet] cancelling REFRESH INCREMENTAL VIEW held" in stderr


def test_ctrl_c_cancels_a_python_api_refresh(spark, vl, tmp_path, monkeypatch):
    """vl.refresh() on the main thread, held after its first map write: a real SIGINT to
    this process raises KeyboardInterrupt, and the next refresh completes the batch and
    reports what it applied (as the history does), alone or with a batch of newer commits."""
    import pyarrow as pa
    from deltalake import write_deltalake

    from tests.spark.oracle import assert_view_matches
    from viewlet.errors import StatementInterrupted

    table = str(tmp_path / "orders")

    def append(rows):
        write_deltalake(table, pa.table({"k": pa.array([r[0] for r in rows], pa.int64()),
                                         "v": pa.array([r[1] for r in rows], pa.int64())}),
                        mode="append", configuration={"delta.enableChangeDataFeed": "true"})

    def interrupted_refresh():
        from viewlet.engine.runtime import faults
        monkeypatch.setattr(faults, "_paused", {})     # held at the first map write again
        pause = tmp_path / "pause"
        pause.touch()
        monkeypatch.setenv("VIEWLET_PAUSE", f"batch.map_merged={pause}")

        def interrupt():
            while not os.path.exists(f"{pause}.reached"):
                time.sleep(0.05)
            os.kill(os.getpid(), signal.SIGINT)

        thread = threading.Thread(target=interrupt, daemon=True)
        thread.start()
        with pytest.raises(StatementInterrupted, match=r"refresh\('cancel_api'\) was cancelled"):
            vl.refresh("cancel_api")
        thread.join()
        pause.unlink()
        os.unlink(f"{pause}.reached")
        monkeypatch.delenv("VIEWLET_PAUSE")

    def history(batch):
        return spark.sql("SELECT changes, rows_changed, seconds FROM viewlet_history('cancel_api') "
                         f"WHERE batch = {batch}").first()

    append([(1, 10), (2, 5)])
    query = f"SELECT k, SUM(v) AS s, COUNT(*) AS n FROM delta.`{table}` GROUP BY k"
    vl.create_view("cancel_api", query)
    try:
        append([(1, 1), (3, 4)])
        interrupted_refresh()
        recovered = vl.refresh("cancel_api")
        assert recovered["status"] == "recovered batch 1"
        # two change rows, groups 1 and 3 rewritten: the same as the history's batch 1
        assert (recovered["batch"], recovered["changes"], recovered["rows_changed"]) == (1, 2, 2)
        one = history(1)
        assert (one.changes, one.rows_changed) == (2, 2)
        assert one.seconds is not None and 0 < one.seconds <= recovered["seconds"]
        assert_view_matches(spark, "cancel_api", query, engine=False)

        append([(2, 7)])
        interrupted_refresh()
        append([(4, 1), (5, 2)])               # newer commits: a batch after the re-run one
        both = vl.refresh("cancel_api")
        assert both["status"] == "refreshed after recovering batch 2"
        two, three = history(2), history(3)
        assert (two.changes, two.rows_changed, three.changes, three.rows_changed) == (1, 1, 2, 2)
        assert (both["batch"], both["changes"], both["rows_changed"]) == (3, 3, 3)
        assert two.seconds is not None and three.seconds is not None
        assert_view_matches(spark, "cancel_api", query, engine=False)
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS cancel_api")
