"""The demo end to end (`python -m viewlet demo`, in a subprocess with its own Spark), plus
the pieces that need no Spark: the CLI's Java check, the row comparison."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYTHON_DIR = ROOT / "python"
if str(PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(PYTHON_DIR))

from viewlet.tools import cli, demo


def _env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(PYTHON_DIR), env.get("PYTHONPATH")] if p)
    env.update(extra)
    return env


def _viewlet(*args, timeout=60, **env):
    return subprocess.run([sys.executable, "-m", "viewlet", *args], cwd=ROOT, env=_env(**env),
                          capture_output=True, text=True, timeout=timeout)


# -- without Spark ----------------------------------------------------------------------------
def test_view_definitions_load():
    names = demo.available_views()
    assert {"q1", "q3", "q6"} <= set(names)
    for name in names:
        text = (demo.sql_dir() / f"{name}.sql").read_text()
        assert text.lstrip().startswith("--"), f"{name}.sql lacks its header comment"
        query = demo.load_query(name)
        assert query.upper().startswith(("SELECT ", "WITH ")) and "--" not in query
        # ORDER BY only with LIMIT (top-N): alone it orders nothing a view keeps
        assert "ORDER BY" not in query.upper() or "LIMIT" in query.upper()


def test_compare_rows():
    rows = [("A", Decimal("1.50"), 3, 0.1 + 0.2), ("B", Decimal("2"), 1, 1.0)]
    same = [("B", Decimal("2.00"), 1, 1.0), ("A", Decimal("1.5"), 3, 0.3)]
    assert demo.compare_rows(rows, same) == []
    assert demo.compare_rows(rows, [rows[0]]) != []                          # missing row
    assert demo.compare_rows(rows, rows + [rows[1]]) != []                   # extra duplicate
    assert demo.compare_rows(rows, [rows[0], ("B", Decimal("2.01"), 1, 1.0)]) != []  # decimal
    assert demo.compare_rows(rows, [rows[0], ("B", Decimal("2"), 1, 1.0 + 1e-6)]) != []
    assert demo.compare_rows([(None, 1.0)], [(None, 1.0 * (1 + 1e-12))]) == []
    assert demo.compare_rows([(float("nan"),)], [(float("nan"),)]) == []


def test_unknown_view_is_a_clear_error(capsys):
    assert cli.main(["demo", "--views", "q1,nope"]) == cli.EXIT_ENVIRONMENT
    err = capsys.readouterr().err
    assert "nope.sql" in err and "Known views" in err


def test_missing_java_exits_2_with_advice(tmp_path):
    env = {"JAVA_HOME": str(tmp_path / "no-such-jdk")}
    r = _viewlet("demo", "--scale", "0.001", **env)
    assert r.returncode == 2, r.stderr
    assert "Java 17" in r.stderr and "JAVA_HOME" in r.stderr
    assert "Traceback" not in r.stderr


# -- the demo ---------------------------------------------------------------------------------
_ROW = re.compile(r"^\s*(\d+)\s+(q\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+|inf)"
                  r"\s+(\S+)\s*$")


def test_demo_end_to_end(tmp_path):
    if cli.java_problem():
        pytest.skip(cli.java_problem())
    r = _viewlet("demo", "--scale", "0.002", "--batches", "2", "--batch-size", "200",
                 "--views", "q1,q3", "--warehouse", str(tmp_path / "wh"), "--seed", "7",
                 timeout=1200)
    out = r.stdout
    assert r.returncode == 0, f"exit {r.returncode}\n{out}\n{r.stderr[-4000:]}"
    assert "initial contents check OK" in out
    assert "EXPLAIN INCREMENTAL VIEW" in out
    header = next(line for line in out.splitlines() if re.match(r"batch\s+view\s", line))
    for col in ("view", "base rows", "refresh s", "recompute s", "ratio", "check"):
        assert col in header
    rows = [m.groups() for m in map(_ROW.match, out.splitlines()) if m]
    assert [(b, v) for b, v, *_ in rows] == [("1", "q1"), ("1", "q3"), ("2", "q1"), ("2", "q3")]
    assert all(g[2] == "200" for g in rows)                  # base rows changed per batch
    assert all(g[-1] == "OK" for g in rows), out
    assert "All checks OK" in out and "CHECK FAILED" not in out
    assert re.search(r"q1\s+refresh [\d.]+s\s+recompute [\d.]+s\s+ratio", out)
    # the generated tables stay for the next run, marked with their scale
    assert (tmp_path / "wh" / "tpch" / "_viewlet_demo.json").is_file()
