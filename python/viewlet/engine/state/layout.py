"""The result table's layout: its columns (SQL names, Delta-safe physical names, Spark's
types), which of them identify a state group (`keys`, some `hidden`), and for a view with
window functions the units a batch recomputes; the catalog entry keeps it as `result` (and the
inner query's as `inner`).
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence, Tuple

from ...frontend.spec import ViewSpec
from .program import CompiledView


HIDDEN_PREFIX = "__viewlet_"


_DELTA_BAD = re.compile(r"[ ,;{}()\n\t=]")


#: the hidden result columns holding a windowed view's unit keys (`__viewlet_u0`, ...)
UNIT = "__viewlet_u"


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


#: the hidden result columns holding a windowed view's unit keys (`__viewlet_u0`, ...)
UNIT = "__viewlet_u"


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


#: the hidden result columns holding a windowed view's unit keys (`__viewlet_u0`, ...)
UNIT = "__viewlet_u"


def unit_keys(spec) -> List[int]:
    """Indices of the state's group keys that every window function partitions by."""
    def group_index(i: int) -> Optional[int]:
        out = spec.outputs[i].expr
        var = next(iter(out.vars)) if out.is_var() else None
        return spec.group.index(var) if var in spec.group else None
    common = None
    for f in spec.window.functions:
        keys = {group_index(i) for i in f.partition} - {None}
        common = keys if common is None else common & keys
    return sorted(common or ())


#: the hidden result columns holding a windowed view's unit keys (`__viewlet_u0`, ...)
UNIT = "__viewlet_u"


def plain_layout(output_types: List[Tuple[str, str]]) -> Dict:
    """The result table of a view Spark recomputes (depth 0): the output columns only."""
    names = [n for n, _ in output_types]
    return {"columns": [{"name": n, "physical": p, "type": t}
                        for (n, t), p in zip(output_types, physical_names(names))],
            "keys": [], "hidden": [], "bag": True, "global": False, "unit": [], "unit_types": []}


#: the hidden result columns holding a windowed view's unit keys (`__viewlet_u0`, ...)
UNIT = "__viewlet_u"


def window_layout(spec, output_types: List[Tuple[str, str]], inner: Dict,
                  state_key_types: Sequence[str]) -> Dict:
    """The result table of a windowed view: the outer query's columns (Spark's names and
    types) and one hidden column per unit key."""
    columns = plain_layout(output_types)["columns"]
    unit = unit_keys(spec)
    keys = [[f"{UNIT}{j}", gi] for j, gi in enumerate(unit)]
    return {"columns": columns, "keys": keys, "hidden": [k for k, _ in keys], "bag": True,
            "global": False, "unit": unit, "unit_types": [state_key_types[gi] for gi in unit]}


#: the hidden result columns holding a windowed view's unit keys (`__viewlet_u0`, ...)
UNIT = "__viewlet_u"


def inner_types(inner: Dict, state_key_types: Sequence[str]) -> Dict[str, str]:
    types = {c["physical"]: c["type"] for c in inner["columns"]}
    for name, gi in inner["keys"]:
        types.setdefault(name, state_key_types[gi])
    return types


#: the hidden result columns holding a windowed view's unit keys (`__viewlet_u0`, ...)
UNIT = "__viewlet_u"


def inner_layout(spec: Dict) -> Dict:
    """The layout of the state's rows (the inner query's for a view with window functions,
    whose result table holds the window layer's rows)."""
    return spec.get("inner") or spec["result"]


#: the hidden result columns holding a windowed view's unit keys (`__viewlet_u0`, ...)
UNIT = "__viewlet_u"


def result_types(layout: Dict, maps_json: Dict, compiled: CompiledView) -> Dict[str, str]:
    """Spark type of each result-table column (hidden keys: their state key's)."""
    types = {c["physical"]: c["type"] for c in layout["columns"]}
    key_types = maps_json[compiled.program.view_map]["key_types"]
    types.update({name: key_types[gi] for name, gi in layout["keys"] if name in layout["hidden"]})
    return types
