"""The front end's output: a view's query as the calculus, and how its result is read.

A ViewSpec is all that the layers above (plan/, engine/) learn from a view's SELECT: the view
state (group variables and one calculus query per state column), the aggregates and output
columns computed from that state, and the optional parts of the query maintained around it
(subqueries in SELECT / HAVING, MIN / MAX / DISTINCT multisets, ORDER BY ... LIMIT, windows).
frontend/translator.py builds it; nothing in it refers back to the translator.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from ..calculus.ir import Query
from ..calculus.scalar import Scalar
from .collects import Collect
from .multisets import Multiset
from .ordering import TopN
from .select_subqueries import SubqueryValue
from .tables import TableInfo
from .windows import WindowLayer

# The state column counting each group's rows (every view state has it).
COUNT_COLUMN = "__count"


@dataclass
class AggregateSpec:
    """One aggregate call of the SELECT list or HAVING.

    kind, sql, placeholder: what it computes (sum | count | count_star | avg, or a multiset
    kind: min | max | count_distinct | sum_distinct | avg_distinct, or a collect kind), the
    call as Spark SQL over base columns (for type probes), and the name standing for it in
    the output expressions.
    sum_column, count_column: the state columns it is derived from: the sum and the number
    of its non-NULL inputs (None where the kind reads a multiset instead).
    multiset, collect: multiset kinds read the ViewSpec.multisets entry named here;
    collect_list / collect_set / string_agg also carry how they collect (collects.py).
    """
    kind: str
    sql: str
    placeholder: str
    sum_column: Optional[str]
    count_column: Optional[str]
    multiset: Optional[str] = None
    collect: Optional[Collect] = None


@dataclass
class OutputColumn:
    """A column of the view's result: its name, and its value over the group variables and
    the aggregates' placeholders."""
    name: str
    expr: Scalar


@dataclass
class ViewSpec:
    """A view's query as the calculus.

    sql, from_sql: the query's text, and its FROM ... WHERE ... GROUP BY part (Spark types
    the aggregates and subqueries with probes over it).
    tables, var_columns: the base tables by their relation name in the calculus, and the
    (relation, column) each column variable stands for.
    group, columns: the view state: its key variables, and per value column the calculus
    query maintaining it (COUNT_COLUMN counts the group's rows).
    aggregates, outputs, having, is_aggregate, distinct: how the result is read from the
    state: the aggregates, the output columns, the HAVING condition over them, whether the
    query aggregates, and (without aggregates) whether it keeps one row per distinct output
    row instead of the counted copies.
    subqueries, value_columns, subquery_probe: subqueries in SELECT / HAVING
    (frontend/select_subqueries.py): placeholders in the outputs, the state column of each
    nested aggregate they read, and a query Spark types them with.
    multisets, value_multisets: MIN / MAX / DISTINCT aggregates, each a multiset keyed by
    (group..., value) by map name; and the nested MIN / MAX / DISTINCT aggregates of SELECT /
    HAVING subqueries: variable -> (multiset, kind), the variable's value for a group being
    that aggregate of its multiset.
    top_n: ORDER BY ... LIMIT of the query (frontend/ordering.py): the result keeps those
    rows only.
    window: window functions (frontend/windows.py): the state is the inner query's, the
    result the window layer's over its rows.
    """
    sql: str
    tables: Dict[str, TableInfo]
    group: Tuple[str, ...]
    columns: Dict[str, Query]
    aggregates: List[AggregateSpec]
    outputs: List[OutputColumn]
    having: Optional[Scalar]
    is_aggregate: bool
    from_sql: str
    var_columns: Dict[str, Tuple[str, str]] = field(default_factory=dict)
    distinct: bool = False
    subqueries: List[SubqueryValue] = field(default_factory=list)
    value_columns: Dict[str, str] = field(default_factory=dict)
    subquery_probe: Optional[str] = None
    multisets: Dict[str, Multiset] = field(default_factory=dict)
    value_multisets: Dict[str, Tuple[str, str]] = field(default_factory=dict)
    top_n: Optional[TopN] = None
    window: Optional[WindowLayer] = None
