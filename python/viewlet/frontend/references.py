"""The tables a query reads, without translating it: for a view recomputed in full (REFRESH
POLICY FULL or AUTO over a query that cannot be maintained incrementally), which Spark
evaluates as written and whose base tables Viewlet still versions, watches for drift and
binds to exact snapshots.

Every table reference of the query (in FROM and JOIN, in subqueries anywhere, in CTE
bodies), except the names of the query's own CTEs, resolved once each, named as the
translator names relations (frontend/translator.py `add_table`), so both readings of one
query give its tables the same names.
"""
from __future__ import annotations

from typing import Dict

import sqlglot
from sqlglot import exp

from .sources import safe_name
from .tables import ResolvedOnce, TableInfo, TableResolver


def table_references(sql: str, resolver: TableResolver) -> Dict[str, TableInfo]:
    """{relation name: table} of every table `sql` reads (TableNotFound for one that is
    not there)."""
    tree = sqlglot.parse_one(sql, read="spark")
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    once = ResolvedOnce(resolver)
    names: Dict[str, str] = {}
    tables: Dict[str, TableInfo] = {}
    for table in tree.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            continue                    # a table function (range(10), ...): no table
        parts = [p.name for p in table.parts]
        if len(parts) == 1 and parts[0].lower() in ctes or not parts or not parts[-1]:
            continue
        info = once.resolve(parts)
        if info.id in names:
            continue
        base = safe_name(info.display.rstrip("/").split("/")[-1].split(".")[-1]) or "t"
        name = base
        while name in tables:
            name = f"{base}_{len(tables)}"
        names[info.id] = name
        tables[name] = info
    return tables
