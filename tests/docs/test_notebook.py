"""Executes docs/notebooks/viewlet-tour.ipynb from scratch in a fresh kernel.

The kernel is the interpreter running the tests (a kernel spec written to a temporary
JUPYTER_PATH, so a user's own "python3" kernel cannot take its place) with this checkout's
``python/`` first on PYTHONPATH. With VIEWLET_NOTEBOOK_OUT=<file> the executed notebook is
written there (how the committed copy with outputs is refreshed)."""
from __future__ import annotations

import copy
import json
import os
import re
import sys

import nbformat
from nbconvert.preprocessors import ExecutePreprocessor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOK = os.path.join(ROOT, "docs", "notebooks", "viewlet-tour.ipynb")
KERNEL = "viewlet-docs-test"
CHECK = re.compile(r"(\w+) after (CREATE|batch \d+): equal to spark\.sql\(query\): (\w+)")


def _kernel_spec(directory) -> None:
    spec_dir = directory / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    python_path = os.pathsep.join(p for p in (os.path.join(ROOT, "python"),
                                              os.environ.get("PYTHONPATH")) if p)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Viewlet docs test", "language": "python",
        "env": {"PYTHONPATH": python_path}}))


def _write_for_docs(nb, path: str) -> None:
    """The executed notebook without Spark's start-up log (stderr), timings metadata or the
    test's kernel name."""
    out = copy.deepcopy(nb)
    for cell in out.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if not (
                o.get("output_type") == "stream" and o.get("name") == "stderr")]
            cell.metadata.pop("execution", None)
    out.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                  "language": "python"}
    nbformat.write(out, path)


def _stream_text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream" and o.get("name") == "stdout")


def test_tour_notebook_runs_and_every_view_equals_spark(tmp_path, monkeypatch):
    _kernel_spec(tmp_path / "jupyter")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    # Connection files and IPython profile in the test's own directories: nothing from (or
    # into) the user's home.
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:                       # run fresh: no outputs carried in
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    # Raises CellExecutionError (with the cell and its traceback) if any cell fails.
    ExecutePreprocessor(timeout=600, kernel_name=KERNEL).preprocess(
        nb, {"metadata": {"path": os.path.dirname(NOTEBOOK)}})

    if os.environ.get("VIEWLET_NOTEBOOK_OUT"):  # keep the executed notebook (docs refresh)
        _write_for_docs(nb, os.environ["VIEWLET_NOTEBOOK_OUT"])

    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.get("output_type") == "error"]
    assert errors == []
    checks = [m.groups() for c in nb.cells if "check" in c.metadata.get("tags", [])
              for m in CHECK.finditer(_stream_text(c))]
    views = {"q1", "q3", "q6"}
    stages = {"CREATE", "batch 1", "batch 2", "batch 3"}
    assert {(v, s) for v, s, _ in checks} == {(v, s) for v in views for s in stages}
    assert [c for c in checks if c[2] != "True"] == []

    # The renderings the docs page shows: EXPLAIN and DESCRIBE as HTML, the plot as a PNG.
    kinds = [set(o.get("data", {})) for c in nb.cells if c.cell_type == "code"
             for o in c.outputs]
    assert sum("text/html" in k and "text/markdown" in k for k in kinds) >= 2
    assert any("image/png" in k for k in kinds)
