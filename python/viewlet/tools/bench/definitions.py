"""The views a benchmark runs: where their SQL comes from and which workload feeds them.

A file holds a SELECT, or a CREATE INCREMENTAL VIEW statement whose WITH (...) options (e.g.
``caches = true``) the benchmark's views get. A view is named either by a file
(``path/to/q3.sql``) or by a name looked up as
``<name>.sql`` in the example directories: ``$VIEWLET_SQL_DIR``, the checkout's ``sql/``
(``sql/tpch``, ``sql/orderbook``, ...) or the copy an installed package ships
(``viewlet/examples``). The workload (TPC-H or order book) follows from the tables the
query reads.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence

from ...errors import ViewletError
from ..locations import CHECKOUT_DIR, EXAMPLES_DIR

TPCH = "tpch"
ORDERBOOK = "orderbook"
#: the views issue 5 names, in report order
ISSUE_VIEWS = ("q1", "q3", "q6", "q10", "q17a", "q18a", "q22a", "vwap")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class ViewDefinition:
    name: str          # the benchmark's name for the view (file stem, lower case)
    path: str          # the .sql file
    query: str         # the SELECT, comments removed, on one line
    workload: str      # TPCH or ORDERBOOK
    tables: tuple      # base tables the query reads
    caches: bool = False   # WITH (caches = true) in the file's CREATE statement


def search_dirs() -> List[Path]:
    """Directories searched for ``<name>.sql``, each with its subdirectories."""
    out = []
    env = os.environ.get("VIEWLET_SQL_DIR")
    if env:
        out.append(Path(env))
    for d in (CHECKOUT_DIR / "sql", EXAMPLES_DIR):
        if d.is_dir():
            out.append(d)
    return out


def _find(name: str) -> Optional[Path]:
    for d in search_dirs():
        for candidate in [d / f"{name}.sql"] + sorted(d.glob(f"*/{name}.sql")):
            if candidate.is_file():
                return candidate
    return None


def available(names: Sequence[str] = ISSUE_VIEWS) -> List[str]:
    """The names among ``names`` that have a definition file."""
    return [n for n in names if _find(n) is not None]


def resolve(specs: Sequence[str]) -> List[ViewDefinition]:
    """Definitions for view names or .sql paths; a clear error for any that is missing."""
    out, seen = [], set()
    for spec in specs:
        spec = spec.strip()
        if not spec:
            continue
        if spec.endswith(".sql") or os.sep in spec:
            path = Path(spec)
            if not path.is_file():
                raise ViewletError(f"View definition file {spec} does not exist.")
        else:
            path = _find(spec.lower())
            if path is None:
                where = ", ".join(str(d) for d in search_dirs()) or "no sql/ directory found"
                raise ViewletError(f"No view definition {spec}.sql (searched {where} and their "
                                   "subdirectories). Pass a path to a .sql file, or set "
                                   "VIEWLET_SQL_DIR.")
        name = path.stem.lower()
        if not _NAME.match(name):
            raise ViewletError(f"View file {path}: its name {path.stem!r} must be letters, digits "
                               "and underscores, starting with a letter.")
        if name in seen:
            raise ViewletError(f"View {name} is listed twice.")
        seen.add(name)
        out.append(_definition(name, path))
    if not out:
        raise ViewletError("No views given.")
    return out


def _definition(name: str, path: Path) -> ViewDefinition:
    from ...api import ddl
    from ...frontend import lexical

    text = " ".join(lexical.strip_comments(path.read_text()).split()).rstrip(";").strip()
    options = {}
    if text.split(" ", 1)[0].upper() == "CREATE":
        st = ddl.parse(text)
        text, options = st.query, st.options
        if set(options) - {"caches"}:
            raise ViewletError(f"{path}: the benchmark chooses depths itself; of the view "
                               "options only caches may be given.")
    if not text:
        raise ViewletError(f"{path} holds no query.")
    tables = _tables(text, path)
    return ViewDefinition(name, str(path), text, _workload(tables, path), tables,
                          bool(options.get("caches", False)))


def _tables(query: str, path: Path) -> tuple:
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(query, read="spark")
    except sqlglot.errors.ParseError as e:
        raise ViewletError(f"{path}: cannot parse the query: {e}") from None
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    names = {t.name.lower() for t in tree.find_all(exp.Table)} - ctes
    return tuple(sorted(names))


def _workload(tables: tuple, path: Path) -> str:
    from ...workloads import orderbook, tpch

    if tables and set(tables) <= set(tpch.ALL):
        return TPCH
    if tables and set(tables) <= set(orderbook.SIDES):
        return ORDERBOOK
    raise ViewletError(f"{path} reads {', '.join(tables) or 'no tables'}: a benchmark view reads "
                       f"only TPC-H tables ({', '.join(tpch.ALL)}) or only the order book "
                       f"({', '.join(orderbook.SIDES)}).")
