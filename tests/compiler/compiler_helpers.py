"""Shared helpers for the compiler tests: a fake catalog, translate + compile, printing."""
from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

from viewlet.calculus import show
from viewlet.calculus.ir import MapRef, Rel
from viewlet.calculus.canonical import canonicalize
from viewlet.compiler.hoivm import compile_view
from viewlet.errors import TableNotFound
from viewlet.frontend.spec import COUNT_COLUMN
from viewlet.frontend.translator import translate
from viewlet.frontend.tables import ColumnInfo, TableInfo

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


def compile_sql(sql: str, depth: Optional[int] = None, tables=None, caches: bool = False,
                fuse: bool = True):
    """`fuse=False`: the program as the papers draw it, a map per definition (the default
    keeps definitions over one join as columns of one map)."""
    spec = translate(sql, FakeResolver(tables))
    return spec, compile_view(spec.group, spec.columns, depth,
                              {n: m.query for n, m in spec.multisets.items()}, caches=caches,
                              fuse=fuse, support=COUNT_COLUMN)


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
    """{canonical text of the definition: map name} for the auxiliary maps' columns."""
    out = {}
    for name, m in aux_maps(program).items():
        for q in m.values.values():
            out[canonicalize(q)[0]] = name
    return out


def reads(stmt, kind=MapRef):
    return [a for m in stmt.rhs.monomials for a in m.atoms if isinstance(a, kind)]


def reads_base(program) -> bool:
    return any(reads(s, Rel) for stmts in program.triggers.values() for s in stmts)


# -- structure of compiled programs, independent of generated names ----------------------------

def rel(table, **cols):
    """A relation atom with the front end's column order (sorted by name)."""
    from viewlet.calculus.ir import Rel as _Rel
    names = tuple(sorted(cols, key=str.lower))
    return _Rel(table, names, tuple(cols[c] for c in names))


def query(keys, *atoms):
    """Sum[keys](product of atoms), normalized like the compiler's map definitions; a string
    atom is a variable used as a value factor."""
    from viewlet.calculus.ir import Mul, Value
    from viewlet.calculus.normalize import normalize
    from viewlet.calculus.scalar import Scalar
    atoms = [Value(Scalar.var(a)) if isinstance(a, str) else a for a in atoms]
    return normalize(Mul(tuple(atoms)) if len(atoms) > 1 else atoms[0], group=tuple(keys))


def identify_maps(program, expected):
    """{map name: (role, key names)} for the expected {role: definition query}: the program
    must hold a map equal to each definition up to variable names (canonical form).
    Key names are the definition's variables, in the order of the map's keys."""
    found = canonical_defs(program)
    out = {}
    for role, q in expected.items():
        text, keys = canonicalize(q)
        assert text in found, f"no map for {role} = {show(q)} ({text}) in\n{dump(program)}"
        out[found[text]] = (role, keys)
    return out


def statement_signatures(program, roles, view_role="view", view_keys=None):
    """{relation: sorted statement signatures}. A signature names the target by role, with
    each target key labelled by the batch column that binds it (in the first monomial) or
    `out` (a loop over the maps read), and shows each monomial's atoms with every variable
    labelled by the batch column binding it (`table.col`) or else by the target key it stands
    for (`out:name`); map arguments are listed by key name."""
    from viewlet.calculus.ir import Cond, DeltaRel, Lift, MapRef, Rel, Value
    roles = dict(roles)
    roles[program.view_map] = (view_role, tuple(view_keys or program.maps[program.view_map].keys))
    out = {}
    for relation, stmts in program.triggers.items():
        sigs = []
        for s in stmts:
            role, key_names = roles[s.target]
            monos = []
            for m in s.rhs.monomials:
                label = {}
                for a in m.atoms:
                    if isinstance(a, DeltaRel):
                        for c, v in zip(a.columns, a.vars):
                            label.setdefault(v, f"{a.table}.{c}")
                for v, name in zip(s.rhs.group, key_names):
                    label.setdefault(v, f"out:{name}")
                parts = []
                for a in m.atoms:
                    if isinstance(a, DeltaRel):
                        parts.append(f"Δ{a.table}")
                    elif isinstance(a, Rel):
                        parts.append(f"{a.table}({', '.join(label.get(v, '_') for v in a.vars)})")
                    elif isinstance(a, MapRef):
                        mrole, mkeys = roles[a.name]
                        args = ", ".join(sorted(f"{k}={label.get(v, '_')}" for k, v in zip(mkeys, a.vars)))
                        parts.append(f"{mrole}[{args}]")
                    elif isinstance(a, (Value, Cond)):
                        expr = a.expr if isinstance(a, Value) else a.pred
                        kind = "val" if isinstance(a, Value) else "cond"
                        parts.append(f"{kind}({expr.rename({v: label.get(v, v) for v in expr.vars}).key})"
                                     .replace("`", ""))
                    elif isinstance(a, Lift):
                        parts.append(f"({label.get(a.var, a.var)} := {a.expr.key})")
                text = " * ".join(sorted(parts)) or "1"
                monos.append(text if m.coef == 1 else f"{m.coef} * {text}")
            op = ":=" if s.strategy == "reevaluate" else "+="
            first = s.rhs.monomials[0] if s.rhs.monomials else None
            tlabel = {}
            if first is not None:
                for a in first.atoms:
                    if isinstance(a, DeltaRel):
                        for c, v in zip(a.columns, a.vars):
                            tlabel.setdefault(v, f"{a.table}.{c}")
            tkeys = ", ".join(sorted(f"{k}={tlabel.get(v, 'out')}" for k, v in zip(key_names, s.rhs.group)))
            target = f"{role}[{tkeys}].{s.column}" if tkeys else f"{role}.{s.column}"
            sigs.append(f"{target} {op} {' + '.join(sorted(monos))}")
        out[relation] = sorted(sigs)
    return out
