"""A view's compiled form: front end + compiler output, plus the physical schema of every
map and of the result table, which Spark's analyzer decides once, at CREATE."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from ..calculus.normalize import fresh_names
from ..compiler.hoivm import compile_view
from ..compiler.program import Program
from ..frontend.spec import COUNT_COLUMN, ViewSpec
from ..frontend.translator import translate
from ..frontend.tables import ColumnInfo, TableInfo, TableResolver

HIDDEN_PREFIX = "__viewlet_"
_DELTA_BAD = re.compile(r"[ ,;{}()\n\t=]")


@dataclass
class CompiledView:
    spec: ViewSpec
    program: Program
    depth: Optional[int]
    #: maps over one join share one map (compiler.hoivm's fusion); recorded in the catalog
    fused: bool = True
    #: an IN (subquery) conjunct is its match count (frontend/translator.py); recorded in the catalog
    in_filters: bool = True
    #: what the runtime derives from the program once per process (batch plans, result SQL)
    cache: Dict = field(default_factory=dict, repr=False, compare=False)


def compile_definition(sql: str, resolver: TableResolver, depth: Optional[int],
                       caches: bool = False, fused: bool = True,
                       in_filters: bool = True) -> CompiledView:
    """`fused`: maps over one join are one map; `in_filters`: an IN (subquery) conjunct is a
    match count. Both False for views created before the rule, whose catalog entries lack
    the flag: they keep the maps they were created with."""
    with fresh_names():
        spec = translate(sql, resolver, in_filters)
        program = compile_view(spec.group, spec.columns, depth,
                               {n: m.query for n, m in spec.multisets.items()}, caches=caches,
                               fuse=fused, support=COUNT_COLUMN)
    return CompiledView(spec, program, depth, fused, in_filters)


class RecordingResolver(TableResolver):
    """Wraps the live resolver and remembers what each table reference resolved to."""

    def __init__(self, live: TableResolver):
        self.live = live
        self.refs: Dict[str, TableInfo] = {}

    def resolve(self, parts: Sequence[str]) -> TableInfo:
        info = self.live.resolve(parts)
        self.refs[parts_key(parts)] = info
        return info

    def record(self) -> Dict[str, Dict]:
        return {k: dict({"id": t.id, "display": t.display,
                         "columns": [[c.name, c.type, c.nullable] for c in t.columns]},
                        **({"view": t.view} if t.view else {}))
                for k, t in self.refs.items()}


class StoredTables(TableResolver):
    """Resolves a view's tables as recorded at CREATE, so every session compiles the same
    program (schema drift is detected separately, not absorbed)."""

    def __init__(self, refs: Dict[str, Dict]):
        self.refs = refs

    def resolve(self, parts: Sequence[str]) -> TableInfo:
        t = self.refs[parts_key(parts)]
        return TableInfo(t["id"], t["display"], tuple(ColumnInfo(*c) for c in t["columns"]),
                         t.get("view"))


def parts_key(parts: Sequence[str]) -> str:
    return "\x1f".join(parts)


def physical_names(names: Sequence[str]) -> List[str]:
    """Delta column names (no column mapping) may not contain ' ,;{}()\\n\\t='; keep them
    readable and unique."""
    out: List[str] = []
    seen = set()
    for n in names:
        base = _DELTA_BAD.sub("_", n).strip("_") or "col"
        cand, i = base, 1
        while cand.lower() in seen:
            i += 1
            cand = f"{base}_{i}"
        seen.add(cand.lower())
        out.append(cand)
    return out


def normalize_value_type(t: str) -> str:
    """Map values accumulate sums: widen so adding batches never overflows or loses scale."""
    m = re.match(r"decimal\((\d+),\s*(\d+)\)", t)
    if m:
        return f"decimal(38,{m.group(2)})"
    if t in ("tinyint", "smallint", "int", "bigint"):
        return "bigint"
    if t in ("float", "double"):
        return "double"
    return t


def result_layout(spec: ViewSpec, output_types: List[Tuple[str, str]]) -> Dict:
    """Columns of the result table and which of them identify a state group."""
    names = [n for n, _ in output_types]
    physical = physical_names(names)
    columns = [{"name": n, "physical": p, "type": t}
               for (n, t), p in zip(output_types, physical)]
    keys: List[List] = []
    hidden: List[str] = []
    for gi, var in enumerate(spec.group):
        match = next((i for i, o in enumerate(spec.outputs)
                      if o.expr.is_var() and next(iter(o.expr.vars)) == var), None)
        if match is not None:
            keys.append([physical[match], gi])
        else:
            name = f"{HIDDEN_PREFIX}k{gi}"
            hidden.append(name)
            keys.append([name, gi])
    return {"columns": columns, "keys": keys, "hidden": hidden,
            "bag": not spec.is_aggregate and not spec.distinct,
            "global": spec.is_aggregate and not spec.group}


__all__ = ["CompiledView", "compile_definition", "StoredTables",
           "RecordingResolver", "physical_names", "normalize_value_type", "result_layout", "COUNT_COLUMN",
           "HIDDEN_PREFIX"]
