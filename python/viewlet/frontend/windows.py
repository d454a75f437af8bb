"""Window functions (`f(...) OVER (PARTITION BY ... ORDER BY ... [frame])`) of a view's query.

A view with window functions has the shape

    SELECT <items over x's columns> FROM (
        SELECT <items>, f(...) OVER (...) AS w, ... FROM ... [WHERE / GROUP BY / HAVING]
    ) x [WHERE <condition over x's columns, e.g. w <= 3>]

(a window function in the view's own SELECT list is that with `SELECT *` outside). The
window query `x` without its window functions is the *inner* query: translated as any view,
with one hidden output column per expression a window function reads (its arguments, its
PARTITION BY and ORDER BY expressions). The window layer (engine/maintain/window.py) evaluates the
window functions, the outer items and the outer condition over the inner query's rows: per
batch only over the rows of the partitions the batch touched, when the partitions are keyed
by the inner query's group keys; over all rows otherwise (no PARTITION BY).

A window call inside an expression of the window query (`x - AVG(x) OVER (...)`) is a
hidden window column of the layer, and the expression a column computed over it: its parts
without window calls that read columns, aggregates or subqueries are hidden inner columns
(typed by Spark as they stand), its literals stay in place (Spark types a literal operand
by its value), so the layer evaluates the expression as Spark does.

Ties: ROW_NUMBER and ROWS frames depend on the order of rows tied on the window's ORDER BY,
which Spark leaves open; Viewlet orders ties by every inner column (ascending, NULLs first).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from sqlglot import exp

#: window functions maintained, by sqlglot node; ROW_NUMBER and ROWS frames get tie-breaks
_FUNCTIONS = {exp.RowNumber: "row_number", exp.Rank: "rank", exp.DenseRank: "dense_rank",
              exp.Sum: "sum", exp.Count: "count", exp.Avg: "avg", exp.Min: "min", exp.Max: "max"}
SUPPORTED = "ROW_NUMBER, RANK, DENSE_RANK, SUM, COUNT, AVG, MIN, MAX"
HIDDEN = "__viewlet_w"
DERIVED = "__window"
#: placeholders in an expression over window calls (WindowLayer.expressions): the hidden
#: inner column i, the window function j
INPUT, CALL = "__viewlet_wx", "__viewlet_wf"
#: nodes a part of an expression may consist of to stay in place (constants Spark types by
#: their value); any other part without window calls becomes a hidden inner column
_IN_PLACE = (exp.Literal, exp.Null, exp.Boolean, exp.DataType, exp.DataTypeParam,
             exp.Identifier, exp.Var, exp.Neg, exp.Paren, exp.Interval)


@dataclass
class WindowFunction:
    kind: str
    node: exp.Window                    # as written (EXPLAIN)
    args: List[int]                     # inner output index of each argument
    partition: List[int]
    order: List[Tuple[int, bool, bool]]  # (inner output index, descending, nulls first)
    frame: Optional[exp.WindowSpec]

    @property
    def tie_broken(self) -> bool:
        """Whether its value depends on the order of rows tied on its ORDER BY."""
        return self.kind == "row_number" or (
            self.frame is not None and str(self.frame.args.get("kind") or "").upper() == "ROWS")


@dataclass
class WindowLayer:
    """What the view computes over the inner query's rows (see the module docstring)."""
    alias: str                                   # the window query's alias in the outer query
    columns: List[Tuple[str, int, str]]          # the window query's columns: ("inner", output
                                                 # index, name), ("window", function, name) or
                                                 # ("expr", expression, name)
    functions: List[WindowFunction]
    items: List[exp.Expression]                  # the outer SELECT items
    where: Optional[exp.Expression]
    inner_sql: str                               # the inner query (Spark types its columns)
    visible: int = 0                             # inner outputs before the hidden ones
    hidden: List[str] = field(default_factory=list)   # the hidden outputs' expressions
    #: the window query's expressions over window calls, with INPUT{i} (inner output i) and
    #: CALL{j} (function j) as column placeholders
    expressions: List[exp.Expression] = field(default_factory=list)


@dataclass
class _Pending:
    """What split_windows learnt before the inner query is translated."""
    alias: str
    plan: List[Tuple[str, object, str]]          # W's items: ("plain", item), ("window", j),
                                                 # ("expr", template over hidden indices)
    functions: List[Tuple[exp.Window, str, List[int], List[int], List[Tuple[int, bool, bool]]]]
    hidden: List[exp.Expression]
    items: List[exp.Expression]
    where: Optional[exp.Expression]
    inner_sql: str = ""
    extra: Dict = field(default_factory=dict)


def has_window(node: exp.Expression) -> bool:
    return any(isinstance(n, exp.Window) for n in _outside_subqueries(node))


def _outside_subqueries(node):
    yield node
    for child in node.iter_expressions():
        if isinstance(child, (exp.Select, exp.Subquery, exp.Exists)):
            continue
        yield from _outside_subqueries(child)


def split_windows(tree: exp.Expression, fail) -> Tuple[exp.Expression, Optional[_Pending]]:
    """The inner query (the window query without its window functions, reading their inputs
    as hidden columns) and what to build the window layer from (None without windows)."""
    if not isinstance(tree, exp.Select):
        return tree, None
    if any(has_window(e) for e in tree.expressions):
        if tree.args.get("distinct") is not None:
            fail("SELECT DISTINCT with window functions", tree.args["distinct"],
                 "Compute the window in a subquery in FROM and apply DISTINCT outside it.")
        tree = exp.select(exp.Star()).from_(exp.Subquery(
            this=tree.copy(), alias=exp.TableAlias(this=exp.to_identifier(DERIVED))))
    from_ = tree.args.get("from_") or tree.args.get("from")
    source = from_.this if from_ is not None else None
    if not (isinstance(source, exp.Subquery) and isinstance(source.this, exp.Select)
            and any(has_window(e) for e in source.this.expressions)):
        return tree, None
    _check_outer(tree, fail)
    window = source.this
    _check_window_query(window, fail)
    plan, functions, hidden = [], [], []
    texts: Dict[str, int] = {}
    plain = [e for e in window.expressions if not has_window(e)]

    def hidden_index(node: exp.Expression) -> int:
        text = node.sql(dialect="spark")
        if text not in texts:
            texts[text] = len(hidden)
            hidden.append(node.copy())
        return texts[text]

    def function(node: exp.Window) -> int:
        kind, args = _function(node, fail)
        partition = [hidden_index(p) for p in node.args.get("partition_by") or []]
        order = []
        for o in (node.args["order"].expressions if node.args.get("order") else []):
            desc = bool(o.args.get("desc"))
            nulls_first = o.args.get("nulls_first")
            order.append((hidden_index(o.this), desc,
                          (not desc) if nulls_first is None else bool(nulls_first)))
        functions.append((node, kind, [hidden_index(a) for a in args], partition, order))
        return len(functions) - 1

    def placeholder(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Window):
            return exp.column(f"{CALL}{function(node)}")
        if has_window(node):
            if isinstance(node, exp.Lambda):    # its variables are no inner columns
                fail("a window function inside a lambda function", node,
                     "Compute the window function as a column of a subquery in FROM.")
            return node
        if all(isinstance(n, _IN_PLACE) for n in node.walk()):
            return node
        return exp.column(f"{INPUT}{hidden_index(node)}")

    expressions = 0
    for item in window.expressions:
        if not has_window(item):
            plan.append(("plain", item, item.alias_or_name))
            continue
        node = item.this if isinstance(item, exp.Alias) else item
        if isinstance(node, exp.Window):
            j = function(node)
            name = item.alias if isinstance(item, exp.Alias) else f"{HIDDEN}{j}"
            plan.append(("window", j, name))
            continue
        # a window call inside an expression: the expression over placeholders (pre-order,
        # so a part without window calls becomes one hidden column as a whole)
        template = node.copy().transform(placeholder)
        name = item.alias if isinstance(item, exp.Alias) else f"{HIDDEN}e{expressions}"
        expressions += 1
        plan.append(("expr", template, name))
    if sum(1 for e in plain if _is_star(e)) > 1 and functions:
        fail("several * in a query with window functions", window,
             "List the columns, or keep one *.")
    inner = window.copy()
    inner.set("expressions", [e.copy() for e in plain] +
              [exp.alias_(h.copy(), f"{HIDDEN}h{i}", quoted=True) for i, h in enumerate(hidden)])
    where = tree.args.get("where")
    pending = _Pending(source.alias_or_name or DERIVED, plan, functions, hidden,
                       [e.copy() for e in tree.expressions],
                       where.this.copy() if where is not None else None,
                       inner.sql(dialect="spark"))
    return inner, pending


def _is_star(e: exp.Expression) -> bool:
    return isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))


def _function(node: exp.Window, fail) -> Tuple[str, List[exp.Expression]]:
    func = node.this
    if isinstance(func, (exp.IgnoreNulls, exp.RespectNulls)):
        fail(f"{func.key.upper()} in a window function", func, f"Supported: {SUPPORTED}.")
    kind = _FUNCTIONS.get(type(func))
    if kind is None:
        name = func.sql_name() if isinstance(func, exp.Func) and not isinstance(
            func, exp.Anonymous) else getattr(func, "name", func.key)
        fail(f"the window function {str(name).upper()}", func, f"Supported: {SUPPORTED}.")
    if node.args.get("alias") is not None:
        fail("a named window (WINDOW w AS ...)", node, "Write the window's specification in OVER.")
    if func.find(exp.Distinct):
        fail(f"{kind.upper()}(DISTINCT ...) OVER", func, "Aggregate DISTINCT values in a subquery.")
    if kind in ("row_number", "rank", "dense_rank"):
        return kind, []
    arg = func.this
    if kind == "count" and (arg is None or isinstance(arg, exp.Star)
                            or (isinstance(arg, exp.Literal) and arg.this is not None)):
        return "count_star", []
    return kind, [arg]


def _check_outer(tree: exp.Select, fail):
    for key, what in (("joins", "a join"), ("group", "GROUP BY"), ("having", "HAVING"),
                      ("distinct", "DISTINCT")):
        if tree.args.get(key):
            node = tree.args[key]
            fail(f"{what} over a subquery with window functions",
                 node[0] if isinstance(node, list) else node,
                 "Keep the query over the window subquery to a projection and a WHERE; make "
                 "the window query an incremental view and aggregate or join it in a view "
                 "over that view.")
    parts = list(tree.expressions) + ([tree.args["where"].this] if tree.args.get("where") else [])
    for part in parts:
        for n in part.walk():
            if isinstance(n, (exp.Select, exp.Subquery, exp.Exists)):
                fail("a subquery over a subquery with window functions", n,
                     "Make the window query an incremental view and read it from another view.")
            if isinstance(n, exp.AggFunc):
                fail("an aggregate over a subquery with window functions", n,
                     "Make the window query an incremental view and aggregate it in a view "
                     "over that view.")
            if isinstance(n, exp.Window):
                fail("window functions over a subquery with window functions", n,
                     "Compute all window functions in one query.")


def _check_window_query(window: exp.Select, fail):
    if window.args.get("distinct") is not None:
        fail("SELECT DISTINCT with window functions", window.args["distinct"],
             "Compute the window in a subquery in FROM and apply DISTINCT outside it.")
    if window.args.get("windows"):
        fail("a named window (WINDOW w AS ...)", window.args["windows"][0],
             "Write the window's specification in OVER.")
    for key in ("where", "having", "group"):
        part = window.args.get(key)
        if part is not None and has_window(part):
            fail(f"a window function in {key.upper()}", part)


def resolve(pending: Optional[_Pending], outputs: Sequence, fail) -> Optional[WindowLayer]:
    """The window layer once the inner query's outputs are known (its last ones are the
    hidden window inputs)."""
    if pending is None:
        return None
    visible = len(outputs) - len(pending.hidden)
    plain = sum(1 for kind, *_ in pending.plan if kind == "plain")
    star_width = visible - (plain - 1)
    columns: List[Tuple[str, int, str]] = []
    expressions: List[exp.Expression] = []
    position = 0
    for kind, item, name in pending.plan:
        if kind == "window":
            columns.append(("window", item, name))
            continue
        if kind == "expr":
            columns.append(("expr", len(expressions), name))
            expressions.append(fill(item, lambda i: exp.column(f"{INPUT}{visible + i}"),
                                    lambda j: exp.column(f"{CALL}{j}")))
            continue
        width = star_width if _is_star(item) else 1
        for i in range(position, position + width):
            columns.append(("inner", i, outputs[i].name))
        position += width
    functions = [WindowFunction(kind, node, [visible + a for a in args],
                                [visible + p for p in partition],
                                [(visible + i, d, n) for i, d, n in order], node.args.get("spec"))
                 for node, kind, args, partition, order in pending.functions]
    names = {name.lower() for _, _, name in columns}
    items: List[exp.Expression] = []
    for item in pending.items:
        if _is_star(item):
            qual = item.table if isinstance(item, exp.Column) else ""
            if qual and qual.lower() != pending.alias.lower():
                fail(f"unknown table {qual}", item)
            items += [exp.column(name, table=pending.alias, quoted=True) for _, _, name in columns]
            continue
        _check_columns(item, names, pending.alias, fail)
        items.append(item)
    if pending.where is not None:
        _check_columns(pending.where, names, pending.alias, fail)
    return WindowLayer(pending.alias, columns, functions, items, pending.where, pending.inner_sql,
                       visible, [h.sql(dialect="spark") for h in pending.hidden], expressions)


def fill(template: exp.Expression, inner, call) -> exp.Expression:
    """`template` with its placeholders replaced: INPUT{i} by inner(i), CALL{j} by call(j)."""
    def replace(node):
        if isinstance(node, exp.Column) and not node.table:
            for prefix, make in ((INPUT, inner), (CALL, call)):
                rest = node.name[len(prefix):]
                if node.name.startswith(prefix) and rest.isdigit():
                    return make(int(rest))
        return node
    return template.copy().transform(replace)


def _check_columns(node: exp.Expression, names, alias: str, fail):
    for col in node.find_all(exp.Column):
        if col.table and col.table.lower() != alias.lower():
            fail(f"column {col.sql(dialect='spark')}", col,
                 f"The query over the window subquery reads its columns only ({alias}).")
        if col.name.lower() not in names:
            from ..errors import ViewletError
            from .checks import position_of
            raise ViewletError(f"Column '{col.sql(dialect='spark')}' does not exist in the "
                               f"window subquery '{alias}'. Columns: {', '.join(sorted(names))}.",
                               position_of(col))


def output_names(layer: WindowLayer) -> List[str]:
    """The outer query's output names as written (Spark's come from its analysis)."""
    return [i.alias_or_name if isinstance(i, (exp.Alias, exp.Column)) else i.sql(dialect="spark")
            for i in layer.items]
