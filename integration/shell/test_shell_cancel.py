"""Ctrl-C in `viewlet sql` cancels a running REFRESH: the interactive shell (statements on
its standard input), held after its batch's first map write (VIEWLET_PAUSE, which the
attached Python inherits), gets a real SIGINT on its process group, as a terminal sends it.
The statement fails with the cancellation message, the shell carries on with the next
statements, and the next REFRESH completes the half-written batch exactly once."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from tests.ops.children import read, wait_until
from integration.shell.test_spark_sql_shell import (
    LAUNCH_TIMEOUT, SELECT_ROWS, TEST_ARGS, assert_clean, expected_rows, printed_rows,
    shell_env, view_sql)


def append(table, keys, values):
    write_deltalake(table, pa.table({"k": pa.array(keys, pa.int64()),
                                     "v": pa.array(values, pa.int64())}), mode="append")


def test_ctrl_c_cancels_a_refresh_in_the_shell(tmp_path):
    table = str(tmp_path / "orders")
    write_deltalake(table, pa.table({"k": pa.array([1, 1, 2], pa.int64()),
                                     "v": pa.array([10, 20, 5], pa.int64())}),
                    configuration={"delta.enableChangeDataFeed": "true"})
    pause = tmp_path / "pause"
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    env = shell_env(VIEWLET_PAUSE=f"batch.map_merged={pause}")
    with open(out, "w") as o, open(err, "w") as e:
        shell = subprocess.Popen(
            [sys.executable, "-m", "viewlet", "sql", "--warehouse", str(tmp_path / "wh"),
             *TEST_ARGS], cwd=tmp_path, env=env, stdin=subprocess.PIPE, stdout=o, stderr=e,
            text=True, start_new_session=True)      # its own process group, like a terminal's

    def send(sql: str):
        shell.stdin.write(sql + "\n")
        shell.stdin.flush()

    deadline = time.monotonic() + LAUNCH_TIMEOUT
    try:
        send(f"{view_sql(table)};\nSELECT 'created';")
        logs = [(out, err)]
        wait_until(lambda: "created" in read(out).split(), [shell], logs, deadline, "CREATE")
        append(table, [2, 3], [6, 7])
        pause.touch()
        send("REFRESH INCREMENTAL VIEW totals;")
        wait_until(lambda: Path(f"{pause}.reached").exists(), [shell], logs, deadline,
                   "the batch's first map write")
        os.killpg(shell.pid, signal.SIGINT)           # Ctrl-C in the shell's terminal
        wait_until(lambda: "was cancelled" in read(err), [shell], logs, deadline,
                   "the cancellation")
        pause.unlink()
        send("DESCRIBE INCREMENTAL VIEW totals HISTORY;")
        send("REFRESH INCREMENTAL VIEW totals;")
        send(f"{SELECT_ROWS};")
        shell.stdin.close()
        shell.wait(timeout=LAUNCH_TIMEOUT)
    finally:
        if shell.poll() is None:
            os.killpg(shell.pid, signal.SIGKILL)
    stdout, stderr = read(out), read(err)
    assert shell.returncode == 0, stdout + stderr[-4000:]
    assert ("REFRESH INCREMENTAL VIEW totals was cancelled (Ctrl-C in the shell). Nothing was "
            "half-applied: batch 1 is planned and not committed") in stderr, stderr[-4000:]
    lines = [line.split("\t") for line in stdout.splitlines()]
    history = [line[:2] for line in lines if line[0] in ("0", "1")]
    assert ["1", "planned, not committed (the next REFRESH re-runs it)"] in history, stdout
    assert any(line[0] == "totals" and line[-1] == "recovered batch 1" for line in lines), stdout
    assert printed_rows(stdout) == expected_rows(table)
    assert ("3", "7", "1") in printed_rows(stdout)        # the cancelled batch's rows are in
    assert_clean(stderr)
