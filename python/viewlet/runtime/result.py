"""From view state to the view's rows: the output expressions Spark evaluates over the
state's group keys and aggregate components, with Spark's own result types."""
from __future__ import annotations

from typing import Dict, List

from ..spark.lower import q
from ..sql.frontend import AggregateSpec, ViewSpec


def aggregate_sql(agg: AggregateSpec, types: Dict[str, Dict[str, str]]) -> str:
    """One aggregate's SQL value from state columns, as Spark would have computed it."""
    t = types[agg.placeholder]
    cnt = q(agg.count_column)
    if agg.kind in ("count", "count_star"):
        return f"CAST({cnt} AS BIGINT)"
    total = q(agg.sum_column)
    if agg.kind == "sum":
        return f"CASE WHEN {cnt} = 0 THEN NULL ELSE CAST({total} AS {t['type']}) END"
    # AVG: Spark divides the sum (its sum type) by the count, rounding to the result type.
    if t["type"].startswith("decimal"):
        quotient = f"CAST({total} AS {t['sum_type']}) / CAST({cnt} AS DECIMAL(20,0))"
    else:
        quotient = f"CAST({total} AS DOUBLE) / CAST({cnt} AS DOUBLE)"
    return f"CASE WHEN {cnt} = 0 THEN NULL ELSE CAST({quotient} AS {t['type']}) END"


def _state_values(spec: ViewSpec, agg_types: Dict, state_keys: List[str]) -> Dict[str, str]:
    """SQL over a state row for each variable an output expression may read: group keys,
    aggregates, and subqueries (from their nested aggregates' state columns, cast to the type
    Spark gives the subquery)."""
    var_sql = {var: q(k) for var, k in zip(spec.group, state_keys)}
    for agg in spec.aggregates:
        var_sql[agg.placeholder] = f"({aggregate_sql(agg, agg_types)})"
    for var, column in spec.value_columns.items():
        var_sql[var] = q(column)
    for sub in spec.subqueries:
        value = sub.expr.to_sql(var_sql.__getitem__)
        t = agg_types.get(sub.placeholder, {}).get("type")
        var_sql[sub.placeholder] = f"CAST(({value}) AS {t})" if t else f"({value})"
    return var_sql


def output_select(spec: ViewSpec, layout: Dict, agg_types: Dict, state_keys: List[str]) -> List[str]:
    """SELECT items turning a state row (keys k0.., value columns) into a result row."""
    var_sql = _state_values(spec, agg_types, state_keys)
    items = []
    for out, col in zip(spec.outputs, layout["columns"]):
        items.append(f"CAST({out.expr.to_sql(var_sql.__getitem__)} AS {col['type']}) AS {q(col['physical'])}")
    for name, gi in layout["keys"]:
        if name in layout["hidden"]:
            items.append(f"{q(state_keys[gi])} AS {q(name)}")
    return items


def having_sql(spec: ViewSpec, agg_types: Dict, state_keys: List[str]) -> str:
    if spec.having is None:
        return "TRUE"
    var_sql = _state_values(spec, agg_types, state_keys)
    return f"COALESCE(({spec.having.to_sql(var_sql.__getitem__)}), FALSE)"


def result_rows_sql(spec: ViewSpec, layout: Dict, agg_types: Dict, state_keys: List[str],
                    count_column: str) -> str:
    """SQL over `{s}` (state rows) giving the result rows, with bag copies for views
    without aggregates and the always-present row of a global aggregate."""
    items = ", ".join(output_select(spec, layout, agg_types, state_keys))
    cnt = q(count_column)
    if layout["bag"]:
        return (f"SELECT {items} FROM (SELECT * FROM {{s}} WHERE {cnt} > 0) "
                f"LATERAL VIEW explode(sequence(1, {cnt})) c AS __copy")
    cond = "TRUE" if layout["global"] else f"{cnt} > 0"
    return f"SELECT {items} FROM {{s}} WHERE {cond} AND {having_sql(spec, agg_types, state_keys)}"
