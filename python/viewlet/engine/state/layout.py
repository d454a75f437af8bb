"""The result table's layout: its columns (SQL names, Delta-safe physical names, Spark's
types), which of them identify a state group (`keys`, some of them `hidden`), and for a view
with window functions the units a batch recomputes. The catalog entry keeps it as `result`
(and, for a view with window functions, the inner query's as `inner`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Sequence, Tuple

from ...frontend.spec import ViewSpec

HIDDEN_PREFIX = "__viewlet_"
#: the hidden result columns holding a windowed view's unit keys (`__viewlet_u0`, ...)
UNIT = "__viewlet_u"
_DELTA_BAD = re.compile(r"[ ,;{}()\n\t=]")


@dataclass(frozen=True)
class Column:
    name: str            # the output's name in SQL
    physical: str        # its Delta column
    type: str            # Spark's type


@dataclass(frozen=True)
class ResultLayout:
    columns: Tuple[Column, ...]
    #: (result column, index of the state group key it holds), for each group key
    keys: Tuple[Tuple[str, int], ...]
    #: key columns that are no output (GROUP BY keys missing from SELECT, window units)
    hidden: Tuple[str, ...]
    bag: bool            # a view without aggregates: a state row is `count` result rows
    is_global: bool      # a global aggregate: one row even over no input
    #: a view with window functions: the group keys every window partitions by, their types
    unit: Optional[Tuple[int, ...]] = None
    unit_types: Optional[Tuple[str, ...]] = None

    @property
    def physical(self) -> List[str]:
        return [c.physical for c in self.columns]

    @property
    def key_names(self) -> List[str]:
        return [name for name, _ in self.keys]

    def key_of(self) -> Dict[str, int]:
        """Result column -> the state group key it holds."""
        return dict(self.keys)

    def column_types(self, state_key_types: Sequence[str]) -> Dict[str, str]:
        """Spark's type of every column of the table (a hidden key: its state key's)."""
        types = {c.physical: c.type for c in self.columns}
        for name, gi in self.keys:
            types.setdefault(name, state_key_types[gi])
        return types

    def without_keys(self) -> "ResultLayout":
        """A depth-0 view's: its rows are replaced whole, no column identifies a group."""
        return replace(self, keys=(), hidden=())

    def to_json(self) -> Dict:
        out = {"columns": [{"name": c.name, "physical": c.physical, "type": c.type}
                           for c in self.columns],
               "keys": [[name, gi] for name, gi in self.keys], "hidden": list(self.hidden),
               "bag": self.bag, "global": self.is_global}
        if self.unit is not None:
            out.update(unit=list(self.unit), unit_types=list(self.unit_types or ()))
        return out

    @classmethod
    def from_json(cls, data: Dict) -> "ResultLayout":
        return cls(tuple(Column(c["name"], c["physical"], c["type"]) for c in data["columns"]),
                   tuple((name, gi) for name, gi in data["keys"]), tuple(data["hidden"]),
                   data["bag"], data["global"],
                   tuple(data["unit"]) if "unit" in data else None,
                   tuple(data["unit_types"]) if "unit_types" in data else None)


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


def _columns(output_types: List[Tuple[str, str]]) -> Tuple[Column, ...]:
    physical = physical_names([n for n, _ in output_types])
    return tuple(Column(n, p, t) for (n, t), p in zip(output_types, physical))


def result_layout(spec: ViewSpec, output_types: List[Tuple[str, str]]) -> ResultLayout:
    """Columns of the result table and which of them identify a state group."""
    columns = _columns(output_types)
    keys: List[Tuple[str, int]] = []
    hidden: List[str] = []
    for gi, var in enumerate(spec.group):
        match = next((i for i, o in enumerate(spec.outputs)
                      if o.expr.is_var() and next(iter(o.expr.vars)) == var), None)
        if match is not None:
            keys.append((columns[match].physical, gi))
        else:
            name = f"{HIDDEN_PREFIX}k{gi}"
            hidden.append(name)
            keys.append((name, gi))
    return ResultLayout(columns, tuple(keys), tuple(hidden),
                        bag=not spec.is_aggregate and not spec.distinct,
                        is_global=spec.is_aggregate and not spec.group)


def plain_layout(output_types: List[Tuple[str, str]]) -> ResultLayout:
    """The result table of a windowed view Spark recomputes (depth 0): the output columns
    only."""
    return ResultLayout(_columns(output_types), (), (), bag=True, is_global=False, unit=(),
                        unit_types=())


def unit_keys(spec: ViewSpec) -> List[int]:
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


def window_layout(spec: ViewSpec, output_types: List[Tuple[str, str]],
                  state_key_types: Sequence[str]) -> ResultLayout:
    """The result table of a windowed view: the outer query's columns (Spark's names and
    types) and one hidden column per unit key."""
    unit = unit_keys(spec)
    keys = tuple((f"{UNIT}{j}", gi) for j, gi in enumerate(unit))
    return ResultLayout(_columns(output_types), keys, tuple(k for k, _ in keys), bag=True,
                        is_global=False, unit=tuple(unit),
                        unit_types=tuple(state_key_types[gi] for gi in unit))
