"""Every code block of the docs runs as written: the fenced python, sql and bash blocks of
README.md and docs/*.md, in order, page by page (each page on its own, so pages can change
independently), each page in a scratch directory of its own as the current directory.

- python blocks run in one namespace per page, in this process: `SparkSession.builder
  ...getOrCreate()` returns the test run's session, on which the page's `viewlet.enable` and
  settings take effect until the page ends (then the session is put back as it was).
- sql blocks run statement by statement through the page's `spark` (a `spark-sql>`
  transcript without its prompts): the same parser hook the shell uses.
- bash blocks run with bash -e in the scratch directory, which also holds `.venv` (this
  Python's environment) and `sql/` (the checkout's) as in a checkout, with this checkout's
  package first on PYTHONPATH; `viewlet sql` there starts a real spark-sql shell (Spark's
  web UI off and a 1 GB driver through SPARK_CONF_DIR, to keep it light).

Markers in the Markdown (tests/docs/codeblocks.py): `<!-- docs-test: not run: REASON -->`
before a block that cannot run here by nature (a fresh-machine setup, an interactive shell);
each is reported as a skipped test naming the block and the reason. Pages marked
`<!-- docs-test: after the quick start -->` say in their text that they continue the quick
start; they run after PRELUDE: its session (`spark`, `vl`) and TPC-H at scale 0.01 as
Delta tables in data/, registered under their names.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

import pytest

from tests.docs.codeblocks import read_page, sql_statements
from tests.session_state import viewlet_restored

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md"] + sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))
TPCH_SCALE = 0.01
BASH_TIMEOUT = 900
SPARK_DEFAULTS = "spark.ui.enabled false\nspark.driver.memory 1g\n"
PRELUDE = """\
import viewlet
vl = viewlet.enable(spark, warehouse="viewlet-warehouse")
for name in viewlet.workloads.tpch.ALL:
    viewlet.register_table(spark, name, f"data/{name}")
"""


def _pages():
    return [read_page(ROOT / name, name) for name in PAGES]


def test_markers_are_well_formed():
    bad = [m for page in _pages() for m in page.bad_markers]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("where, reason", [
    pytest.param(b.where, b.not_run, id=b.where)
    for page in _pages() for b in page.code if b.not_run])
def test_blocks_marked_not_run(where, reason):
    """Reported, never silent: each block the test does not run, and why."""
    pytest.skip(f"{where} is marked not to run: {reason}")


@pytest.fixture(scope="module")
def tpch_data(tmp_path_factory):
    import viewlet
    out = tmp_path_factory.mktemp("docs-tpch") / "data"
    viewlet.workloads.tpch.generate(TPCH_SCALE, str(out))
    return out


@pytest.mark.parametrize("name", [p.name for p in _pages()
                                  if any(not b.not_run for b in p.code)])
def test_page_code_blocks_run(name, spark, tmp_path, monkeypatch, tpch_data):
    page = read_page(ROOT / name, name)
    scratch = tmp_path / "page"
    scratch.mkdir()
    (scratch / ".venv").symlink_to(Path(sys.prefix))
    (scratch / "sql").symlink_to(ROOT / "sql")
    monkeypatch.chdir(scratch)
    namespace = {"__name__": "__main__"}
    with viewlet_restored(spark):
        if page.after_quickstart:
            shutil.copytree(tpch_data, scratch / "data")
            namespace["spark"] = spark
            _run_python(PRELUDE, namespace, f"{name} (prelude)")
        for block in page.code:
            if block.not_run:
                continue
            started = time.perf_counter()
            if block.lang == "python":
                _run_python(block.text, namespace, block.where)
            elif block.lang == "sql":
                _run_sql(block, namespace)
            else:
                _run_bash(block, scratch)
            print(f"{block.where} ({block.lang}): {time.perf_counter() - started:.1f} s")


def _run_python(text, namespace, where):
    try:
        exec(compile(text, where, "exec"), namespace)
    except BaseException:
        pytest.fail(f"the python block at {where} failed:\n{text}\n\n{traceback.format_exc()}",
                    pytrace=False)


def _run_sql(block, namespace):
    spark = namespace.get("spark")
    assert spark is not None, (
        f"the sql block at {block.where} has no session: the page's python blocks must make "
        "`spark`, or the page must say it continues the quick start "
        "(<!-- docs-test: after the quick start -->)")
    for statement in sql_statements(block.text):
        try:
            spark.sql(statement).collect()
        except Exception as e:  # noqa: BLE001 - reported with the statement
            pytest.fail(f"the sql block at {block.where} failed on:\n{statement}\n\n"
                        f"{str(e).split('JVM stacktrace:')[0]}", pytrace=False)


def _run_bash(block, scratch):
    conf = scratch / ".spark-conf"
    conf.mkdir(exist_ok=True)
    (conf / "spark-defaults.conf").write_text(SPARK_DEFAULTS)
    env = dict(os.environ, SPARK_CONF_DIR=str(conf),
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
               PYTHONPATH=os.pathsep.join(
                   p for p in [str(ROOT / "python"), os.environ.get("PYTHONPATH", "")] if p))
    res = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.text], cwd=scratch,
                         env=env, capture_output=True, text=True, timeout=BASH_TIMEOUT,
                         stdin=subprocess.DEVNULL)
    if res.returncode != 0:
        pytest.fail(f"the bash block at {block.where} exited {res.returncode}:\n{block.text}\n\n"
                    f"stdout:\n{res.stdout[-3000:]}\nstderr:\n{res.stderr[-3000:]}", pytrace=False)
