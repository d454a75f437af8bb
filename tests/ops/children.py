"""Watching child processes that tests interrupt: their logs, and polling until they reach
the point where the test acts (never a sleep as synchronisation: a condition, a deadline, and
a child that exits early is reported with its output)."""
from __future__ import annotations

import os
import time


def read(path) -> str:
    """A child's log so far ('' before it exists)."""
    if not os.path.exists(path):
        return ""
    with open(path, errors="replace") as f:
        return f.read()


def wait_until(condition, procs, logs, deadline: float, what: str) -> None:
    """Poll `condition` until it holds; fail when a child exits first or at `deadline`.
    `procs` and `logs` pair each child with its (stdout, stderr) paths."""
    while not condition():
        for proc, (out, err) in zip(procs, logs):
            if proc.poll() is not None:
                raise AssertionError(f"a child exited before {what}:\n{read(out)}\n"
                                     f"{read(err)[-4000:]}")
        assert time.monotonic() < deadline, f"never: {what}\n{read(logs[0][1])[-4000:]}"
        time.sleep(0.05)
