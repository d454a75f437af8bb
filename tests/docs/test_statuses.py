"""Every status a Viewlet statement or the history can show is documented in the SQL
reference (issue 21: a status the reference did not list was returned)."""
from __future__ import annotations

from pathlib import Path

from viewlet.engine.state.history import STATUSES

REFERENCE = (Path(__file__).resolve().parents[2] / "docs" / "sql-reference.md").read_text()
STATEMENT_STATUSES = ["created", "exists", "refreshed", "up to date", "recovered batch n",
                      "refreshed after recovering batch n",
                      "rebuilt", "rebuilt (and d1, d2, which read it)", "replaced", "dropped",
                      "not found", "refreshing in this session", "manual"]


def test_every_status_is_documented():
    missing = [s for s in STATEMENT_STATUSES + list(STATUSES) if f"`{s}`" not in REFERENCE]
    assert not missing, f"statuses not in docs/sql-reference.md: {missing}"


def test_the_statuses_are_the_codes():
    """The statement statuses listed above are the strings the code returns."""
    root = Path(__file__).resolve().parents[2] / "python" / "viewlet"
    code = "".join(p.read_text() for p in root.rglob("*.py"))
    for status in ["refreshed", "up to date", "recovered batch", "refreshed after recovering",
                   "rebuilt", "replaced",
                   "dropped", "not found", "refreshing in this session", "exists"]:
        assert f'"{status}' in code or f"'{status}" in code, status
