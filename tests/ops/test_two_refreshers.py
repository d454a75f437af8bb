"""Two processes refreshing one view: the second waits for the batch the first is computing
instead of computing it again, and a lease left by a killed refresher does not block: the
next refresher re-runs that batch at once (tests/ops/refresher_child.py)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pyarrow as pa
from deltalake import write_deltalake

from viewlet.engine.state.lease import HOST, Holder

from tests.ops.children import read, wait_until

CHILD = os.path.join(os.path.dirname(__file__), "refresher_child.py")
TIMEOUT = 600


def test_second_refresher_waits_and_a_killed_one_does_not_block(tmp_path):
    state = str(tmp_path)
    write_deltalake(os.path.join(state, "orders"),
                    pa.table({"k": pa.array([1, 1, 2], pa.int64()),
                              "v": pa.array([10, 5, 7], pa.int64())}),
                    configuration={"delta.enableChangeDataFeed": "true"})
    for hold in ("hold1", "hold2"):
        open(os.path.join(state, hold), "w").close()
    logs = [(os.path.join(state, f"{r}.out"), os.path.join(state, f"{r}.err")) for r in "ab"]
    procs = []
    for role, (out, err) in zip("ab", logs):
        with open(out, "w") as o, open(err, "w") as e:
            procs.append(subprocess.Popen([sys.executable, CHILD, state, role], stdout=o,
                                          stderr=e))
    a, b = procs
    deadline = time.monotonic() + TIMEOUT
    try:
        # b waits for a's batch 1 (a is held after computing it, its lease live)
        wait_until(lambda: "waiting for a concurrent refresh of batch 1" in read(logs[1][1]),
                   procs, logs, deadline, "b waits for a's batch")
        os.remove(os.path.join(state, "hold1"))
        # a is held in batch 2; killed, its lease stays behind
        wait_until(lambda: os.path.exists(os.path.join(state, "hold2.reached")), procs, logs,
                   deadline, "a holds batch 2")
        a.send_signal(signal.SIGKILL)
        a.wait(timeout=TIMEOUT)
        open(os.path.join(state, "go"), "w").close()
        b.wait(timeout=TIMEOUT)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    out_a, out_b, err_b = read(logs[0][0]), read(logs[1][0]), read(logs[1][1])
    assert b.returncode == 0, out_b + err_b[-4000:]
    assert "A1 1 refreshed" in out_a.splitlines(), out_a
    assert "A NOT KILLED" not in out_a
    lines = out_b.splitlines()
    assert f"HISTORY 1 running: process {a.pid} on {HOST} is computing it (other refreshes " \
           "wait for it)" in lines, out_b
    assert f"waiting for a concurrent refresh of batch 1 (process {a.pid} on {HOST})" in err_b
    assert "B1 1 waited for a concurrent refresh" in lines, out_b
    assert "B2 2 recovered batch 2" in lines, out_b          # no wait on a dead refresher
    assert "ROWS 0:committed 1:planned 1:committed 2:planned 2:committed" in lines, out_b
    assert "CHECKED" in lines


def test_lease_liveness():
    """What a waiter makes of a lease it reads (engine/state/lease.py)."""
    now = time.time()

    def holder(host, pid, age):
        return Holder(batch=3, token="t", host=host, pid=pid, at=now - age, seconds=60.0)

    assert holder("elsewhere", 1, 5).live(now)              # another host: by its heartbeat
    assert not holder("elsewhere", 1, 61).live(now)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert not holder(HOST, dead.pid, 1).live(now)          # this host: its process is gone
    assert holder(HOST, os.getppid(), 1).live(now)
    assert not holder(HOST, os.getpid(), 1).live(now)       # this process no longer holds it
