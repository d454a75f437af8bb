"""Shared helpers for the compiler tests: a fake catalog, translate + compile, printing."""
from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

from viewlet.calculus import show
from viewlet.calculus.ir import MapRef, Rel
from viewlet.compiler.canonical import canonicalize
from viewlet.compiler.hoivm import compile_view
from viewlet.errors import TableNotFound
from viewlet.sql.frontend import translate
from viewlet.sql.tables import ColumnInfo, TableInfo

# name -> [(column, type, nullable)]
TABLES: Dict[str, Sequence[Tuple[str, str, bool]]] = {
    "r": [("a", "int", True), ("b", "int", True)],
    "s": [("b", "int", True), ("c", "int", True)],
    "t": [("c", "int", True), ("d", "int", True)],
    # DBToaster journal Ex. 2
    "orders": [("ordk", "int", False), ("custk", "int", False), ("xch", "decimal(10,2)", False)],
    "lineitem": [("ordk", "int", False), ("ptk", "int", False), ("price", "decimal(10,2)", False)],
}

# The DBToaster draft's TPC-H Q3-like example (attribute names as printed there)
Q3_TABLES: Dict[str, Sequence[Tuple[str, str, bool]]] = {
    "customer": [("custkey", "int", False), ("name", "string", False),
                 ("nationkey", "int", False), ("acctbal", "decimal(10,2)", False)],
    "orders": [("custkey", "int", False), ("ordkey", "int", False), ("sprior", "int", False)],
    "lineitem": [("ordkey", "int", False), ("extprice", "decimal(10,2)", False)],
}


class FakeResolver:
    def __init__(self, tables=None):
        self.tables = dict(TABLES if tables is None else tables)

    def resolve(self, parts):
        name = parts[-1].lower()
        if name not in self.tables:
            raise TableNotFound(f"Table '{'.'.join(parts)}' not found.")
        cols = tuple(ColumnInfo(c, t, n) for c, t, n in self.tables[name])
        return TableInfo(f"/tables/{name}", name, cols)


def spec_of(sql: str, tables=None):
    return translate(sql, FakeResolver(tables))


def compile_sql(sql: str, depth: Optional[int] = None, tables=None):
    spec = translate(sql, FakeResolver(tables))
    return spec, compile_view(spec.group, spec.columns, depth)


def dump(program) -> str:
    """A readable program listing (for assertion messages)."""
    lines = []
    for m in program.maps.values():
        for c, q in m.values.items():
            lines.append(f"MAP {m.name}{list(m.keys)}.{c} := {show(q)}")
    for rel, stmts in program.triggers.items():
        lines.append(f"ON {rel}")
        for s in stmts:
            op = ":=" if s.strategy == "reevaluate" else "+="
            lines.append(f"  {s.target}.{s.column} {op} {show(s.rhs)}")
    return "\n".join(lines)


def aux_maps(program):
    """The maps other than the view state."""
    return {n: m for n, m in program.maps.items() if n != program.view_map}


def canonical_defs(program) -> Dict[str, str]:
    """{canonical text of the definition: map name} for the auxiliary maps."""
    out = {}
    for name, m in aux_maps(program).items():
        (q,) = m.values.values()
        out[canonicalize(q)[0]] = name
    return out


def reads(stmt, kind=MapRef):
    return [a for m in stmt.rhs.monomials for a in m.atoms if isinstance(a, kind)]


def reads_base(program) -> bool:
    return any(reads(s, Rel) for stmts in program.triggers.values() for s in stmts)
