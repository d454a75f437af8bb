"""Progress of a real PySpark run (tests/ops/progress_child.py) as a user sees it: through a
pseudo-terminal, one line per step rewritten in place with rows read and seconds; through a
pipe, plain lines; either way no Spark console progress bar while Viewlet's display shows,
though the same run's plain Spark job draws one."""
from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios

CHILD = os.path.join(os.path.dirname(__file__), "progress_child.py")
TIMEOUT = 600
STEPS = ["checking the base tables' change data feed", "resolving column types",
         "loading map view_state (1/2)", "loading the result table (2/2)"]
ROWS = re.compile(r" · [\d.]+ s · total [\d.]+ s, ([\d,]+) rows read")


def run_through_pty(state):
    master, slave = pty.openpty()
    # a terminal 200 columns wide: step lines are shortened to the width, not wrapped
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen([sys.executable, CHILD, state], stdout=subprocess.PIPE,
                            stderr=slave, stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    chunks = []
    while True:                      # read the terminal until the child closes it
        ready, _, _ = select.select([master], [], [], 1.0)
        if master in ready:
            try:
                data = os.read(master, 65536)
            except OSError:          # EIO: the child's side is closed
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    os.close(master)
    out = proc.stdout.read().decode()
    proc.wait(timeout=TIMEOUT)
    return proc.returncode, out, b"".join(chunks).decode(errors="replace")


def regions(stderr):
    """The output of the plain Spark job before Viewlet's statements, theirs, and that of the
    plain Spark job after them."""
    return tuple(stderr.split(f"MARK {what}")[1] for what in ("spark", "viewlet", "again"))


def test_progress_on_a_terminal_and_in_a_log(tmp_path):
    """Both runs at once (each is mostly a JVM starting and UDFs sleeping)."""
    (tmp_path / "tty").mkdir()
    (tmp_path / "log").mkdir()
    piped = subprocess.Popen([sys.executable, CHILD, str(tmp_path / "log")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        code, out, stderr = run_through_pty(str(tmp_path / "tty"))
        log_out, log_err = piped.communicate(timeout=TIMEOUT)
    finally:
        if piped.poll() is None:
            piped.kill()
    check_terminal(code, out, stderr)
    check_log(piped.returncode, log_out, log_err)


def check_terminal(code, out, stderr):
    assert code == 0, out + stderr[-4000:]
    assert "REFRESH refreshed" in out
    before, viewlet, after = regions(stderr)
    assert "[Stage " in before                      # Spark's bar draws on this terminal,
    assert "[Stage " not in viewlet                 # not while Viewlet's display shows,
    assert "[Stage " in after                       # and again after
    lines = [line for line in viewlet.split("\r\n") if "[viewlet]" in line]
    finals = [line.split("\r\x1b[K")[-1] for line in lines]
    creates = [f for f in finals if f.startswith("[viewlet] create totals: ")]
    assert [f.split(": ", 1)[1].split(" · ")[0] for f in creates] == STEPS, finals
    for line in lines:                              # drawn when the step began, redrawn after
        assert line.count("\r\x1b[K") >= 2, repr(line)
        assert all(len(draw) < 200 for draw in line.split("\r\x1b[K")), repr(line)
    loading = next(f for f in creates if "loading map" in f)
    assert int(ROWS.search(loading).group(1).replace(",", "")) >= 24, loading
    assert loading.endswith("(base tables: 24 rows)"), loading
    assert any(f.startswith("[viewlet] refresh totals batch 1: computing the deltas")
               for f in finals), finals


def check_log(code, out, stderr):
    assert code == 0, out + stderr[-4000:]
    assert "REFRESH refreshed" in out
    before, viewlet, after = regions(stderr)
    assert "[Stage " in before and "[Stage " in after
    assert "[Stage " not in viewlet
    assert "\r" not in viewlet and "\x1b" not in viewlet     # plain lines only
    lines = [line for line in viewlet.splitlines() if line.startswith("[viewlet] ")
             and not line.endswith(" · still running")]      # a step over 30 s: liveness
    creates = [line for line in lines if line.startswith("[viewlet] create totals: ")]
    assert [c.split(": ", 1)[1].split(" · ")[0] for c in creates] == STEPS, lines
    loading = creates[2]
    assert int(ROWS.search(loading).group(1).replace(",", "")) >= 24, loading
    assert any(line.startswith("[viewlet] refresh totals batch 1: merging the result table")
               for line in lines), lines
