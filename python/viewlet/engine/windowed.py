"""Views with window functions (frontend/windows.py): the window layer over the inner rows.

The inner query (the window query without its window functions) is maintained like any view:
its state and maps. The result table holds the window layer's rows: the window functions,
the outer items and the outer WHERE evaluated over the inner query's rows. A batch
recomputes them for the *units* it touched: a unit is the set of inner rows sharing the
values of the state's group keys every window partitions by (the keys the PARTITION BY lists
of all window functions have in common), so each window partition lies within one unit. The
unit's rows are the state rows holding those key values (read by key, from memory when the
state is hot), plus the batch's delta; the result table keeps each row's unit as hidden
columns, and one MERGE replaces the touched units' rows. A window without PARTITION BY, or
partitioned by values that are no group key (an aggregate, an expression), has one unit:
the batch recomputes the window over every row of the state and rewrites the result table.

A window call inside an expression of the window query is computed as a column of its own
first (a projection below the window query's columns), and the expression over it then,
so Spark and DuckDB evaluate it alike.

The window SQL is built once per view, as Spark SQL over the inner rows; the local target
runs its translation for DuckDB (plan/local/translate.py), which refuses a window function it
cannot reproduce exactly (then the view's batches run on Spark).
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import pyarrow as pa

from ..plan.lower import q
from ..frontend.windows import CALL, WindowFunction, fill

UNIT = "__viewlet_u"
#: the alias of the projection computing the window calls that expressions read
_CALLS = "__viewlet_calls"
_TIE_FREE = ("array", "map", "struct")


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


def plain_layout(output_types: List[Tuple[str, str]]) -> Dict:
    """The result table of a view Spark recomputes (depth 0): the output columns only."""
    from .state.program import physical_names
    names = [n for n, _ in output_types]
    return {"columns": [{"name": n, "physical": p, "type": t}
                        for (n, t), p in zip(output_types, physical_names(names))],
            "keys": [], "hidden": [], "bag": True, "global": False, "unit": [], "unit_types": []}


def window_layout(spec, output_types: List[Tuple[str, str]], inner: Dict,
                  state_key_types: Sequence[str]) -> Dict:
    """The result table of a windowed view: the outer query's columns (Spark's names and
    types) and one hidden column per unit key."""
    columns = plain_layout(output_types)["columns"]
    unit = unit_keys(spec)
    keys = [[f"{UNIT}{j}", gi] for j, gi in enumerate(unit)]
    return {"columns": columns, "keys": keys, "hidden": [k for k, _ in keys], "bag": True,
            "global": False, "unit": unit, "unit_types": [state_key_types[gi] for gi in unit]}


def inner_columns(spec, inner: Dict) -> List[str]:
    """The inner rows' column holding each inner output (physical names)."""
    return [c["physical"] for c in inner["columns"]]


def _unit_columns(inner: Dict, unit: Sequence[int]) -> List[str]:
    """The inner rows' columns holding each unit key (an output column or a hidden key)."""
    key_of = {gi: name for name, gi in inner["keys"]}
    return [key_of[gi] for gi in unit]


def inner_types(inner: Dict, state_key_types: Sequence[str]) -> Dict[str, str]:
    types = {c["physical"]: c["type"] for c in inner["columns"]}
    for name, gi in inner["keys"]:
        types.setdefault(name, state_key_types[gi])
    return types


def window_sql(spec, inner: Dict, layout: Dict, types: Dict[str, str], table: str = "{d}") -> str:
    """Spark SQL over the inner rows (`table`) giving the result rows: the outer items (cast
    to Spark's types) and the unit columns."""
    from sqlglot import exp
    layer = spec.window
    cols = inner_columns(spec, inner)
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
    units = _unit_columns(inner, layout["unit"])
    items += [f"{q(c)} AS {q(UNIT + str(j))}" for j, c in enumerate(units)]
    alias = q(layer.alias)
    outer = [f"CAST({i.sql(dialect='spark')} AS {c['type']}) AS {q(c['physical'])}"
             for i, c in zip(layer.items, layout["columns"])]
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
        from ..plan.local import types as T
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


def touched_units(delta_state: pa.Table, state_keys: Sequence[str], unit: Sequence[int]) -> pa.Table:
    """The distinct unit key values of the groups a batch touched (state key columns)."""
    columns = [state_keys[gi] for gi in unit]
    return delta_state.group_by(columns, use_threads=False).aggregate([]).select(columns)


def rows_in_units(rows: pa.Table, columns: Sequence[str], units: pa.Table,
                  unit_columns: Sequence[str]) -> pa.Table:
    """The rows of `rows` whose `columns` hold one of the units' values (NULL equal NULL)."""
    wanted = set(_tuples(units, unit_columns))
    if not rows.num_rows:
        return rows
    return rows.filter(pa.array([t in wanted for t in _tuples(rows, columns)], pa.bool_()))


def _tuples(table: pa.Table, columns: Sequence[str]) -> List[tuple]:
    import math
    data = [table.column(c).to_pylist() for c in columns]
    return [tuple("\x00nan" if isinstance(v, float) and math.isnan(v) else v for v in values)
            for values in zip(*data)]


def local_window_sql(view) -> str:
    """The window SQL for DuckDB (NotLocal when it has no exact translation); built once."""
    from ..plan.local import types as T
    from ..plan.batch import LEAF_PREFIX
    from .result_local import duckdb_sql_once
    from .targets import ansi

    def text():
        return window_sql(view.compiled.spec, view.spec["inner"], view.spec["result"],
                          window_input_types(view), q(LEAF_PREFIX + "rows"))

    def tables():
        return {LEAF_PREFIX + "rows": [(c, T.parse(t)) for c, t in window_input_types(view).items()]}

    return duckdb_sql_once(view, ("window_sql_local", ansi(view)), text, tables)


def window_input_types(view) -> Dict[str, str]:
    state = view.map_schema(view.spec["view_map"])
    return inner_types(view.spec["inner"], state.key_types)


def spark_window_sql(view) -> str:
    key = "window_sql"
    cache = view.compiled.cache
    if key not in cache:
        cache[key] = window_sql(view.compiled.spec, view.spec["inner"], view.spec["result"],
                                window_input_types(view))
    return cache[key]


def local_window_rows(view, rows: pa.Table, out_schema: pa.Schema) -> pa.Table:
    from ..plan.batch import LEAF_PREFIX
    result = view.ctx.local_engine.query(local_window_sql(view), {LEAF_PREFIX + "rows": rows})
    return result.select(out_schema.names).cast(out_schema)


def deletes(units: pa.Table, unit_columns: Sequence[str], layout: Dict, schema: pa.Schema,
            op: str) -> pa.Table:
    """A 'del' row per touched unit: its unit columns set, the rest NULL."""
    cols = {}
    names = [k for k, _ in layout["keys"]]
    for f in schema:
        if f.name in names:
            cols[f.name] = units.column(unit_columns[names.index(f.name)]).cast(f.type)
        else:
            cols[f.name] = pa.nulls(units.num_rows, f.type)
    out = pa.table(cols, schema=schema)
    return out.append_column(op, pa.array(["del"] * out.num_rows, pa.string()))


def describe(spec, depth) -> List[str]:
    """EXPLAIN's lines on how the window functions are maintained."""
    layer = spec.window
    lines = ["", "Window functions (recomputed per partition over the view state's rows):"]
    for f in layer.functions:
        tie = " (rows tied on its ORDER BY are ordered by every inner column, ascending, NULLs " \
              "first)" if f.tie_broken else ""
        lines.append(f"  {f.node.sql(dialect='spark')}{tie}")
    for kind, index, name in layer.columns:
        if kind == "expr":      # as written: inputs and calls put back
            import sqlglot
            text = fill(layer.expressions[index],
                        lambda i: sqlglot.parse_one(layer.hidden[i - layer.visible], read="spark"),
                        lambda j: layer.functions[j].node.copy()).sql(dialect="spark")
            lines.append(f"  {text}: computed over the window values")
    if depth == 0:
        return lines + ["  every batch recomputes the query, window functions included"]
    unit = unit_keys(spec)
    if unit:
        names = [_key_text(spec, gi) for gi in unit]
        lines.append(f"  a batch recomputes the windows only over the rows of the partitions it "
                     f"touches: the rows of the view state with the touched values of "
                     f"{', '.join(names)} (read by key), and replaces their rows in the result")
    else:
        lines.append("  no PARTITION BY on group keys: a batch that changes the view state "
                     "recomputes the windows over every row of the view state and rewrites the "
                     "result table")
    if layer.where is not None:
        lines.append(f"  then the filter {layer.where.sql(dialect='spark')}")
    return lines


def _key_text(spec, gi: int) -> str:
    """A state group key as the query writes it (an output's name or a window's input)."""
    layer, var = spec.window, spec.group[gi]
    for i, out in enumerate(spec.outputs):
        if out.expr.is_var() and next(iter(out.expr.vars)) == var:
            return out.name if i < layer.visible else layer.hidden[i - layer.visible]
    return var
