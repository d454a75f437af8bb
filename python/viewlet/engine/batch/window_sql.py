"""The window layer's SQL (frontend/windows.py): Spark SQL over the inner query's rows giving
the result rows of a view with window functions, built once per view; the local target runs
its translation for DuckDB (batch/local.py), which refuses a window it cannot reproduce
exactly.

A window call inside an expression of the window query is computed as a column of its own
first (a projection below the window query's columns), and the expression over it then,
so Spark and DuckDB evaluate it alike.
"""
from __future__ import annotations

from typing import Dict, List, Sequence

from sqlglot import exp

from ...frontend.spec import ViewSpec
from ...frontend.windows import CALL, WindowFunction, fill
from ...plan.local import types as T
from ...plan.lower import q
from ..state.layout import ResultLayout, UNIT

#: the alias of the projection computing the window calls that expressions read
_CALLS = "__viewlet_calls"
_TIE_FREE = ("array", "map", "struct")


def _unit_columns(inner: ResultLayout, unit: Sequence[int]) -> List[str]:
    """The inner rows' columns holding each unit key (an output column or a hidden key)."""
    key_of = {gi: name for name, gi in inner.keys}
    return [key_of[gi] for gi in unit]


def window_sql(spec: ViewSpec, inner: ResultLayout, layout: ResultLayout, types: Dict[str, str],
               table: str = "{d}") -> str:
    """Spark SQL over the inner rows (`table`) giving the result rows: the outer items (cast
    to Spark's types) and the unit columns."""
    layer = spec.window
    cols = inner.physical          # the inner rows' column of each inner output
    tie = [c for c in list(types) if not types[c].startswith(_TIE_FREE)]
    calls = [_function(f, cols, tie, types) for f in layer.functions]
    if layer.expressions:
        # every window call a column, so that an expression reads it as a value
        named = [q(c) for c in types] + [f"{c} AS {q(CALL + str(j))}" for j, c in enumerate(calls)]
        table = f"(SELECT {', '.join(named)} FROM {table}) AS {q(_CALLS)}"
        calls = [q(CALL + str(j)) for j in range(len(calls))]

    def column(name: str) -> exp.Expression:
        return exp.column(exp.to_identifier(name, quoted=True))

    items = []
    for kind, index, name in layer.columns:
        if kind == "inner":
            value = q(cols[index])
        elif kind == "window":
            value = calls[index]
        else:
            value = fill(layer.expressions[index], lambda i: column(cols[i]),
                         lambda j: column(CALL + str(j))).sql(dialect="spark")
        items.append(f"{value} AS {q(name)}")
    units = _unit_columns(inner, layout.unit)
    items += [f"{q(c)} AS {q(UNIT + str(j))}" for j, c in enumerate(units)]
    alias = q(layer.alias)
    outer = [f"CAST({i.sql(dialect='spark')} AS {c.type}) AS {q(c.physical)}"
             for i, c in zip(layer.items, layout.columns)]
    outer += [f"{alias}.{q(UNIT + str(j))} AS {q(UNIT + str(j))}" for j in range(len(units))]
    where = f" WHERE {layer.where.sql(dialect='spark')}" if layer.where is not None else ""
    return (f"SELECT {', '.join(outer)} FROM (SELECT {', '.join(items)} FROM {table}) AS {alias}"
            f"{where}")


def _function(f: WindowFunction, cols: List[str], tie: List[str], types: Dict[str, str]) -> str:
    args = ", ".join(q(cols[i]) for i in f.args)
    over = _over(f, cols, tie)
    if f.kind == "avg":
        # AVG as Spark evaluates it (its sum type divided by the count, then cast to the
        # result type): the same text the local target translates exactly
        t = T.parse(types[cols[f.args[0]]])
        n, total = f"COUNT({args}) OVER ({over})", f"SUM({args}) OVER ({over})"
        if t.is_decimal:
            quotient = f"CAST({total} AS {T.sum_type(t).spark_sql()}) / CAST({n} AS DECIMAL(20,0))"
        else:
            quotient = f"CAST({total} AS DOUBLE) / CAST({n} AS DOUBLE)"
        return f"CASE WHEN {n} = 0 THEN NULL ELSE CAST({quotient} AS {T.avg_type(t).spark_sql()}) END"
    call = {"row_number": "ROW_NUMBER()", "rank": "RANK()", "dense_rank": "DENSE_RANK()",
            "count_star": "COUNT(*)"}.get(f.kind) or f"{f.kind.upper()}({args})"
    return f"{call} OVER ({over})"


def _over(f: WindowFunction, cols: List[str], tie: List[str]) -> str:
    spec = []
    if f.partition:
        spec.append("PARTITION BY " + ", ".join(q(cols[i]) for i in f.partition))
    order = [f"{q(cols[i])} {'DESC' if d else 'ASC'} NULLS {'FIRST' if n else 'LAST'}"
             for i, d, n in f.order]
    if f.tie_broken:        # Spark leaves the order of tied rows open: every column breaks ties
        order += [f"{q(c)} ASC NULLS FIRST" for c in tie]
    if order:
        spec.append("ORDER BY " + ", ".join(order))
    if f.frame is not None:
        spec.append(f.frame.sql(dialect="spark"))
    return " ".join(spec)


def window_input_types(view) -> Dict[str, str]:
    """Spark's type of each column of the inner rows."""
    definition = view.definition
    return definition.inner.column_types(view.map_schema(definition.view_map).key_types)


def spark_window_sql(view) -> str:
    """The window SQL over `{d}`, for Spark; built once per view."""
    if view.derived.window_sql is None:
        definition = view.definition
        view.derived.window_sql = window_sql(view.compiled.spec, definition.inner,
                                             definition.result, window_input_types(view))
    return view.derived.window_sql
