import os
import shutil
import sys

import pytest

_PY = os.path.join(os.path.dirname(__file__), "..", "..", "python")
try:  # an installed/editable viewlet wins; fall back to the source tree
    import viewlet.workloads  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.abspath(_PY))


@pytest.fixture(scope="session")
def tpch_tiny(tmp_path_factory):
    """TPC-H SF 0.01 as Delta tables, generated once per session (read-only)."""
    from viewlet.workloads import tpch

    out = tmp_path_factory.mktemp("tpch001")
    return tpch.generate(0.01, str(out))


@pytest.fixture
def tpch_copy(tpch_tiny, tmp_path):
    """A private, writable copy of the SF 0.01 tables."""
    out = {}
    for t, p in tpch_tiny.items():
        dest = tmp_path / "tpch" / t
        shutil.copytree(p, dest)
        out[t] = str(dest)
    return out
