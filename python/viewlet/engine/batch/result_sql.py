"""From view state to the view's rows: the output expressions Spark evaluates over the
state's group keys and aggregate components, with Spark's own result types.

MIN / MAX / DISTINCT aggregates are read from the view's multisets: each multiset's rows
(`{ms0}`, ... next to the state rows `{s}`) are aggregated per group and joined to the
state rows, one column per (multiset, kind) the outputs read."""
from __future__ import annotations

from typing import Callable, Dict, List, Sequence, Tuple

from pyspark.sql.types import StructType

from ...calculus.ir import COUNT_DISTINCT, SUM_DISTINCT
from ...compiler.program import VALUE
from ...frontend.collects import collect_sql
from ...frontend.multisets import AVG_DISTINCT
from ...frontend.spec import AggregateSpec, COUNT_COLUMN, ViewSpec
from ...plan.lower import multiset_aggregate_sql, q
from ..state.definition import AggType
from ..state.layout import ResultLayout
from ..state.view import LoadedView


def aggregate_sql(agg: AggregateSpec, types: Dict[str, AggType]) -> str:
    """One aggregate's SQL value from state columns, as Spark would have computed it."""
    t = types[agg.placeholder]
    if agg.collect is not None:            # collect_list / collect_set / string_agg
        column = multiset_column(agg.multiset, agg.collect.collection)
        return f"CAST({collect_sql(agg.collect, column)} AS {t.type})"
    if agg.kind == AVG_DISTINCT:           # SUM(DISTINCT) / COUNT(DISTINCT), as AVG below
        cnt = multiset_column(agg.multiset, COUNT_DISTINCT, True)
        total = multiset_column(agg.multiset, SUM_DISTINCT)
    elif agg.multiset is not None:         # MIN, MAX, COUNT / SUM(DISTINCT): from the multiset
        return f"CAST({multiset_column(agg.multiset, agg.kind, True)} AS {t.type})"
    else:
        cnt = q(agg.count_column)
        if agg.kind in ("count", "count_star"):
            return f"CAST({cnt} AS BIGINT)"
        total = q(agg.sum_column)
        if agg.kind == "sum":
            return f"CASE WHEN {cnt} = 0 THEN NULL ELSE CAST({total} AS {t.type}) END"
    # AVG: Spark divides the sum (its sum type) by the count, rounding to the result type.
    if t.type.startswith("decimal"):
        quotient = f"CAST({total} AS {t.sum_type}) / CAST({cnt} AS DECIMAL(20,0))"
    else:
        quotient = f"CAST({total} AS DOUBLE) / CAST({cnt} AS DOUBLE)"
    return f"CASE WHEN {cnt} = 0 THEN NULL ELSE CAST({quotient} AS {t.type}) END"


def _state_values(spec: ViewSpec, agg_types: Dict[str, AggType],
                  state_keys: List[str]) -> Dict[str, str]:
    """SQL over a state row for each variable an output expression may read: group keys,
    aggregates, and subqueries (from their nested aggregates' state columns, cast to the type
    Spark gives the subquery)."""
    var_sql = {var: q(k) for var, k in zip(spec.group, state_keys)}
    for agg in spec.aggregates:
        var_sql[agg.placeholder] = f"({aggregate_sql(agg, agg_types)})"
    for var, column in spec.value_columns.items():
        var_sql[var] = q(column)
    for var, (multiset, kind) in spec.value_multisets.items():
        var_sql[var] = multiset_column(multiset, kind, True)
    for sub in spec.subqueries:
        value = sub.expr.to_sql(var_sql.__getitem__)
        t = agg_types[sub.placeholder].type if sub.placeholder in agg_types else None
        var_sql[sub.placeholder] = f"CAST(({value}) AS {t})" if t else f"({value})"
    return var_sql


def output_select(spec: ViewSpec, layout: ResultLayout, agg_types: Dict[str, AggType],
                  state_keys: List[str]) -> List[str]:
    """SELECT items turning a state row (keys k0.., value columns) into a result row."""
    var_sql = _state_values(spec, agg_types, state_keys)
    items = []
    for out, col in zip(spec.outputs, layout.columns):
        items.append(f"CAST({out.expr.to_sql(var_sql.__getitem__)} AS {col.type}) AS {q(col.physical)}")
    for name, gi in layout.keys:
        if name in layout.hidden:
            items.append(f"{q(state_keys[gi])} AS {q(name)}")
    return items


def having_sql(spec: ViewSpec, agg_types: Dict[str, AggType], state_keys: List[str]) -> str:
    if spec.having is None:
        return "TRUE"
    var_sql = _state_values(spec, agg_types, state_keys)
    return f"COALESCE(({spec.having.to_sql(var_sql.__getitem__)}), FALSE)"


#: with `copies=False`, the column giving how many copies of a bag view's row there are
COPIES = "__viewlet_copies"


def spark_param(name: str) -> str:
    return "{" + name + "}"


def result_rows_sql(spec: ViewSpec, layout: ResultLayout, agg_types: Dict[str, AggType],
                    state_keys: List[str],
                    count_column: str, multiset_keys: Dict[str, List[str]],
                    table: Callable[[str], str] = spark_param, copies: bool = True) -> str:
    """SQL over `{s}` (state rows) and the multisets' rows (`multiset_params`) giving the
    result rows, with bag copies for views without aggregates and the always-present row of
    a global aggregate. `multiset_keys`: each multiset map's key columns (group, value).
    `table(name)`: how the query names its inputs (`{s}`: spark.sql parameters); with
    `copies=False` a bag view's row comes once, with its number of copies in COPIES."""
    items = ", ".join(output_select(spec, layout, agg_types, state_keys))
    cnt = q(count_column)
    state = _state_with_multisets(spec, state_keys, multiset_keys, table)
    if layout.bag and not copies:
        return f"SELECT {items}, {cnt} AS {q(COPIES)} FROM {state} WHERE {cnt} > 0"
    if layout.bag:
        return (f"SELECT {items} FROM (SELECT * FROM {state} WHERE {cnt} > 0) "
                f"LATERAL VIEW explode(sequence(1, {cnt})) c AS __copy")
    cond = "TRUE" if layout.is_global else f"{cnt} > 0"
    return f"SELECT {items} FROM {state} WHERE {cond} AND {having_sql(spec, agg_types, state_keys)}"


def multiset_column(multiset: str, kind: str, outer: bool = False) -> str:
    """The column holding a group's `kind` aggregate of `multiset`; `outer`: as read by the
    outputs (a group without values has no joined row: its count of values is 0)."""
    column = q(f"__viewlet_{multiset}_{kind}")
    return f"COALESCE({column}, 0)" if outer and kind == COUNT_DISTINCT else column


def multiset_kinds(spec: ViewSpec) -> Dict[str, List[str]]:
    """{multiset: the kinds of aggregate the outputs read of it}."""
    out: Dict[str, List[str]] = {}
    pairs: List[Tuple[str, str]] = list(spec.value_multisets.values())
    for agg in spec.aggregates:
        if agg.collect is not None:
            pairs.append((agg.multiset, agg.collect.collection))
        elif agg.kind == AVG_DISTINCT:
            pairs += [(agg.multiset, SUM_DISTINCT), (agg.multiset, COUNT_DISTINCT)]
        elif agg.multiset is not None:
            pairs.append((agg.multiset, agg.kind))
    for multiset, kind in pairs:
        if kind not in out.setdefault(multiset, []):
            out[multiset].append(kind)
    return out


def multiset_params(spec: ViewSpec) -> Dict[str, str]:
    """{multiset: the spark.sql parameter its rows are bound to}."""
    return {m: f"ms{i}" for i, m in enumerate(sorted(multiset_kinds(spec)))}


def _state_with_multisets(spec: ViewSpec, state_keys: Sequence[str],
                          multiset_keys: Dict[str, List[str]], table: Callable[[str], str]) -> str:
    """`{s}`, or the state rows with each multiset's aggregates joined by group."""
    kinds = multiset_kinds(spec)
    if not kinds:
        return f"{table('s')} AS st"
    params = multiset_params(spec)
    columns, joins = ["st.*"], []
    for i, (multiset, wanted) in enumerate(sorted(kinds.items())):
        keys = multiset_keys[multiset]
        group, value = keys[:len(state_keys)], keys[len(state_keys)]
        outs = [(kind, f"__viewlet_{multiset}_{kind}") for kind in wanted]
        rows = multiset_aggregate_sql(outs, f"SELECT * FROM {table(params[multiset])}", group,
                                      value, VALUE)
        columns += [f"j{i}.{q(out)}" for _, out in outs]
        on = " AND ".join(f"st.{q(s)} <=> j{i}.{q(g)}" for s, g in zip(state_keys, group))
        joins.append(f"LEFT JOIN ({rows}) AS j{i} ON {on or 'TRUE'}")
    return f"(SELECT {', '.join(columns)} FROM {table('s')} AS st {' '.join(joins)}) AS sm"


def result_sql(view: LoadedView) -> Tuple[str, List[str]]:
    """SQL over `{s}` (the touched groups' new state) giving their result rows, and the
    result table's columns; built once per view."""
    if view.derived.result_sql is None:
        definition = view.definition
        layout = definition.state_layout
        rows_sql = result_rows_sql(view.compiled.spec, layout, definition.agg_types,
                                   view.map_schema(definition.view_map).keys, COUNT_COLUMN,
                                   {m: view.map_schema(m).keys
                                    for m in multiset_params(view.compiled.spec)})
        columns = layout.physical + [name for name, _ in layout.keys if name in layout.hidden]
        view.derived.result_sql = (rows_sql, columns)
    return view.derived.result_sql


def result_schema(view: LoadedView, columns) -> StructType:
    """The state rows' columns (`columns`, from result_sql) with their Spark types (the
    result table's, but for a view with window functions: its inner query's)."""
    definition = view.definition
    types = definition.state_layout.column_types(view.map_schema(definition.view_map).key_types)
    return StructType.fromDDL(", ".join(f"{q(c)} {types[c]}" for c in columns))
