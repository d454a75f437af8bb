"""Subqueries in WHERE: each becomes nested aggregates (calculus `Nested` atoms) of the
enclosing query ([J] §9.1: "each subquery becomes a count aggregate assigned to a fresh
variable, plus a constraint over that variable").

  scalar  (SELECT f(SUM/COUNT/AVG ...) FROM ... WHERE ...)   one nested sum and count per
          aggregate; SUM and AVG are NULL when the subquery has no non-NULL input, as in SQL;
          MIN / MAX / COUNT, SUM, AVG (DISTINCT x): a nested aggregate of a kind over the
          multiset of x's values (frontend/multisets.py), NULL (COUNT: 0) without non-NULL input
  EXISTS  (SELECT ... WHERE ...)                              count > 0
  x IN (SELECT e ...)      counts of matching rows, of all rows and of NULL rows give SQL's
                           three-valued IN, so NOT IN is exact with NULLs on either side
  x IN (SELECT g ... GROUP BY g HAVING h)   (only where the IN must be true: not under NOT/OR)
                           the rows with g = x form the group; h over their aggregates

The enclosing query's variables a subquery mentions are its inputs (correlation
variables): equalities with them unify, other comparisons stay conditions (inequality
correlation, handled by the compiler as input variables).
"""
from __future__ import annotations

from typing import List, Optional

from sqlglot import exp

from ..calculus.ir import (COUNT_DISTINCT, MAX, ONE, SUM, SUM_DISTINCT, Cond, Lift, Nested, Value,
                           product)
from ..calculus.normalize import normalize
from ..calculus.scalar import Scalar
from .checks import position_of, reject_unsupported
from .joins import bound_vars
from .collects import COLLECT_NODES
from .multisets import AVG_DISTINCT, multiset_aggregate, multiset_body
from .setops import select_over


#: in the error a scalar subquery without an aggregate raises for several rows (Spark's
#: error class for it; engine/ops/advance.py drops such a failed batch)
TOO_MANY_ROWS = "SCALAR_SUBQUERY_TOO_MANY_ROWS"


class SubqueryTranslator:
    def __init__(self, scope, inputs=None, null_safe: bool = False):
        self.scope = scope            # the translator of the enclosing query
        self.atoms: List = []
        self.inputs = inputs          # fixed inputs (the groups of a FROM subquery)
        self.null_safe = null_safe

    # -- entry -----------------------------------------------------------------------------
    def predicate(self, pred: exp.Expression) -> List:
        rewritten = self._walk(pred, positive=True)
        return self.atoms + [Cond(Scalar(rewritten))]

    def value(self, node: exp.Expression) -> exp.Expression:
        """A subquery (scalar, EXISTS, IN) used as a value, e.g. in SELECT. There Spark 4.0
        evaluates `x [NOT] IN (subquery)` two-valued: where SQL says NULL (no match, but x
        or some row NULL) it gives FALSE, for IN and NOT IN alike (NOT NOT cancels first)."""
        self.two_valued = True
        return self._walk(node, positive=False)

    two_valued = False

    def condition(self, node: exp.Expression) -> exp.Expression:
        """A subquery in a condition (e.g. in HAVING): SQL's three-valued logic."""
        return self._walk(node, positive=False)

    def _walk(self, node: exp.Expression, positive: bool) -> exp.Expression:
        """The predicate over variables, subqueries replaced by expressions over fresh
        variables bound by nested aggregates. `positive`: only ANDs above (an IN that must
        be true)."""
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
            return exp.column(self.scope.column_var(node), quoted=True)
        if self.two_valued and isinstance(node, exp.Not):
            negated, inner = _negations(node)
            if isinstance(inner, exp.In) and inner.args.get("query") is not None:
                value = self._in(inner, False)
                value = exp.Not(this=value) if negated else value
                return exp.Coalesce(this=value, expressions=[exp.false()])
        if self.two_valued and isinstance(node, exp.In) and node.args.get("query") is not None:
            return exp.Coalesce(this=self._in(node, False), expressions=[exp.false()])
        if isinstance(node, exp.Exists):
            return self._exists(select_over(node.this, self.scope.fail))
        if isinstance(node, exp.In) and node.args.get("query") is not None:
            return self._in(node, positive)
        if isinstance(node, exp.Subquery):
            return self._scalar(node.this)
        if isinstance(node, exp.Select):
            return self._scalar(node)
        keep = positive and isinstance(node, (exp.And, exp.Paren))
        new = node.copy()
        for k, v in node.args.items():
            if isinstance(v, exp.Expression):
                new.set(k, self._walk(v, keep))
            elif isinstance(v, list):
                new.set(k, [self._walk(x, keep) if isinstance(x, exp.Expression) else x for x in v])
        return new

    # -- the subquery's own scope --------------------------------------------------------------
    def _inner(self, select: exp.Expression):
        if not isinstance(select, exp.Select):
            self.scope.fail(f"a {select.key.upper()} as a subquery", select)
        reject_unsupported(select, self.scope.sql)
        child = self.scope.nested_scope(self.scope)
        conds = child.read_from(select, ("an aggregate in a subquery's WHERE", ""))
        # Every column the subquery mentions becomes a variable of its table's atom first.
        having = select.args.get("having")
        group = select.args.get("group")
        child.bind_columns(conds + list(select.expressions)
                           + ([having.this] if having is not None else [])
                           + (list(group.expressions) if group is not None else []))
        return child, conds

    def _nested(self, child, base: List, extra: List, prefix: str, kind: str = SUM,
                value: Optional[str] = None) -> str:
        """A fresh variable bound to Sum[inputs](base * extra), or, for a multiset kind, to that
        aggregate of Sum[inputs, value](base * extra)."""
        atoms = base + extra
        body = product(atoms) if atoms else ONE
        private = set()
        for a in atoms:
            private |= bound_vars(a)            # also inside an outer join's sum of terms
        private -= child.outer_vars()
        free = set().union(*(a.free_vars() for a in atoms))
        inputs = tuple(sorted(free - private)) if self.inputs is None else tuple(self.inputs)
        query = normalize(body, group=inputs + ((value,) if value is not None else ()))
        var = self.scope.fresh(prefix)
        self.atoms.append(Nested(var, query, self.null_safe, kind))
        return var

    # -- forms ----------------------------------------------------------------------------
    def _exists(self, select) -> exp.Expression:
        if select.args.get("group") is not None or select.args.get("having") is not None:
            self.scope.fail("GROUP BY / HAVING in an EXISTS subquery", select)
        child, conds = self._inner(select)
        n = self._nested(child, child.base_atoms(conds), [], "ex")
        return exp.GT(this=_var(n), expression=exp.Literal.number(0))

    def _in(self, node: exp.In, positive: bool) -> exp.Expression:
        select = node.args["query"]
        select = select_over(select.this if isinstance(select, exp.Subquery) else select,
                             self.scope.fail)
        if len(select.expressions) != 1:
            self.scope.fail("IN with a subquery returning several columns", node)
        probe = self._walk(node.this, False)
        x = self._bind(probe)
        child, conds = self._inner(select)
        item = select.expressions[0]
        item = item.this if isinstance(item, exp.Alias) else item
        if select.args.get("group") is not None or select.args.get("having") is not None:
            return self._in_grouped(node, select, child, conds, item, x, positive)
        if any(isinstance(n, exp.AggFunc) for n in item.walk()):
            self.scope.fail("IN with an aggregate subquery", node, "Compare with = (SELECT ...).")
        base = child.base_atoms(conds)
        e = child.to_scalar(item)
        matches = self._nested(child, base, [Cond(Scalar(exp.EQ(this=e.ast, expression=_var(x))))],
                               "in")
        if positive and self.scope.in_filters:
            # a WHERE conjunct keeps TRUE rows only, and IN is TRUE exactly when a row
            # matches: no global counts (they changed with any batch of the subquery's
            # tables and made every outer row's condition re-evaluate; TPC-H Q20)
            return exp.GT(this=_var(matches), expression=exp.Literal.number(0))
        total = self._nested(child, base, [], "inall")
        nulls = self._nested(child, base, [Cond(Scalar(exp.Is(this=e.ast, expression=exp.Null())))],
                             "innull")
        return exp.Paren(this=_sql(
            f"CASE WHEN `{matches}` > 0 THEN TRUE WHEN `{total}` = 0 THEN FALSE "
            f"WHEN `{x}` IS NULL OR `{nulls}` > 0 THEN NULL ELSE FALSE END"))

    def _in_grouped(self, node, select, child, conds, item, x, positive):
        group = select.args.get("group")
        keys = group.expressions if group is not None else []
        if not positive:
            self.scope.fail("NOT IN / IN under OR with a grouped subquery", node,
                            "Only `x IN (SELECT g ... GROUP BY g HAVING ...)` in a conjunction "
                            "is supported.")
        if len(keys) != 1 or keys[0].sql() != item.sql():
            self.scope.fail("IN with a grouped subquery not selecting its one GROUP BY key", node)
        base = child.base_atoms(conds)
        e = child.to_scalar(item)
        base = base + [Cond(Scalar(exp.EQ(this=e.ast, expression=_var(x))))]
        n = self._nested(child, base, [], "ing")
        having = select.args.get("having")
        if having is None:
            return exp.GT(this=_var(n), expression=exp.Literal.number(0))
        h = self.aggregates(child, base, having.this)
        return exp.Paren(this=exp.And(this=exp.GT(this=_var(n), expression=exp.Literal.number(0)),
                                      expression=exp.Paren(this=h)))

    def _scalar(self, select) -> exp.Expression:
        select = select_over(select, self.scope.fail)
        if select.args.get("group") is not None or select.args.get("having") is not None:
            self.scope.fail("GROUP BY / HAVING in a scalar subquery", select,
                            "A scalar subquery must return one row: aggregate without GROUP BY.")
        if len(select.expressions) != 1:
            self.scope.fail("a scalar subquery returning several columns", select)
        item = select.expressions[0]
        item = item.this if isinstance(item, exp.Alias) else item
        child, conds = self._inner(select)
        base = child.base_atoms(conds)
        if not any(isinstance(n, exp.AggFunc) for n in item.walk()):
            return self._single_row(select, child, base, item)
        return exp.Paren(this=self.aggregates(child, base, item))

    def _single_row(self, select, child, base, item) -> exp.Expression:
        """A scalar subquery without an aggregate: its one row's value (NULL without rows);
        more than one row is an error, as in Spark (SCALAR_SUBQUERY_TOO_MANY_ROWS), raised
        where Spark needs the value, so the batch fails before anything is written. The value
        is the MAX of the multiset of its non-NULL values (of a one-row subquery: the row's
        value, NULL when it is NULL); the count of rows tells one row from several."""
        if select.args.get("distinct") is not None:
            self.scope.fail("SELECT DISTINCT in a scalar subquery without an aggregate", select,
                            "Use MIN(...) or MAX(...) of the expression: one value either way.")
        if isinstance(item, exp.Star) or any(isinstance(n, (exp.Subquery, exp.Select, exp.Exists))
                                             for n in item.walk()):
            self.scope.fail("this scalar subquery without an aggregate", select,
                            "Select one expression over the subquery's columns.")
        rows = self._nested(child, base, [], "cnt")
        value = self.scope.fresh("mv")
        one = self._nested(child, multiset_body(child, base, item, value), [], "one", MAX, value)
        where = position_of(select)
        at = f" at {_line_col(self.scope.sql, where)} of the query" if where is not None else ""
        message = (f"Viewlet: the scalar subquery{at} returned more than one row "
                   f"({TOO_MANY_ROWS}); the view is unchanged. Make it return one row, e.g. with "
                   "an aggregate.").replace("'", "")
        return exp.Paren(this=_sql(f"CASE WHEN `{rows}` > 1 THEN raise_error('{message}') "
                                   f"ELSE `{one}` END"))

    def aggregates(self, child, base, node: exp.Expression) -> exp.Expression:
        """An expression over aggregates of the subquery's rows, as nested aggregates."""
        if isinstance(node, exp.AggFunc):
            return self._aggregate(child, base, node)
        if isinstance(node, exp.Column):
            child.fail("a column outside an aggregate in a subquery's result", node)
        if isinstance(node, (exp.Subquery, exp.Select, exp.Exists)):
            child.fail("a subquery inside a subquery's result", node)
        new = node.copy()
        for k, v in node.args.items():
            if isinstance(v, exp.Expression):
                new.set(k, self.aggregates(child, base, v))
            elif isinstance(v, list):
                new.set(k, [self.aggregates(child, base, x) if isinstance(x, exp.Expression) else x
                            for x in v])
        return new

    def _aggregate(self, child, base, node) -> exp.Expression:
        if isinstance(node, COLLECT_NODES):
            child.fail(f"the aggregate {node.sql(dialect='spark').split('(')[0].upper()} in a "
                       "subquery", node, "Collections are built for the view's own groups only: "
                       "aggregate them in the view (a view over another view can join them).")
        kept = multiset_aggregate(node, child.fail)
        if kept is not None:
            return self._multiset_aggregate(child, base, node, *kept)
        if node.find(exp.Distinct):
            child.fail(f"{node.key.upper()}(DISTINCT ...) in a subquery", node)
        arg = node.this
        star = arg is None or isinstance(arg, exp.Star) or (isinstance(arg, exp.Literal)
                                                             and arg.this is not None)
        if isinstance(node, exp.Count):
            if star:
                return _var(self._nested(child, base, [], "cnt"))
            return _var(self._nested(child, base, [_not_null(child, arg)], "cnt"))
        if not isinstance(node, (exp.Sum, exp.Avg)):
            child.fail(f"the aggregate {node.key.upper()} in a subquery", node,
                       "Supported in subqueries: SUM, COUNT, AVG, MIN, MAX, and "
                       "COUNT / SUM / AVG (DISTINCT ...).")
        if star and isinstance(node, exp.Sum):
            # SUM(constant) is the row count times the constant (one nested aggregate)
            count = self._nested(child, base, [], "cnt")
            return exp.Paren(this=_sql(f"CASE WHEN `{count}` = 0 THEN NULL ELSE "
                                       f"`{count}` * ({arg.sql(dialect='spark')}) END"))
        total = self._nested(child, base, [Value(child.to_scalar(arg))], "sum")
        count = self._nested(child, base, [] if star or not child.is_nullable(arg)
                             else [_not_null(child, arg)], "cnt")
        if isinstance(node, exp.Sum):
            text = f"CASE WHEN `{count}` = 0 THEN NULL ELSE `{total}` END"
        else:
            avg = f"`{total}` / `{count}`"
            typ = _avg_type(child, arg)
            text = f"CASE WHEN `{count}` = 0 THEN NULL ELSE " + (
                f"CAST({avg} AS {typ}) END" if typ else f"{avg} END")
        return exp.Paren(this=_sql(text))

    def _multiset_aggregate(self, child, base, node, kind, arg) -> exp.Expression:
        """MIN / MAX / DISTINCT aggregates: nested aggregates over the multiset of arg's
        non-NULL values (one query for both parts of AVG(DISTINCT))."""
        value = self.scope.fresh("mv")
        body = multiset_body(child, base, arg, value)
        if kind != AVG_DISTINCT:
            return _var(self._nested(child, body, [], kind.split("_")[0], kind, value))
        total = self._nested(child, body, [], "sum", SUM_DISTINCT, value)
        count = self._nested(child, body, [], "cnt", COUNT_DISTINCT, value)
        avg = f"`{total}` / `{count}`"
        typ = _avg_type(child, arg)
        return exp.Paren(this=_sql(f"CASE WHEN `{count}` = 0 THEN NULL ELSE "
                                   + (f"CAST({avg} AS {typ}) END" if typ else f"{avg} END")))

    def _bind(self, expr: exp.Expression) -> str:
        """A variable for an outer expression (a fresh assignment unless it is one)."""
        if isinstance(expr, exp.Column):
            return expr.name
        var = self.scope.fresh("x")
        self.atoms.append(Lift(var, Scalar(expr)))
        return var


def _negations(node: exp.Expression):
    """(odd number of NOTs?, the expression under the chain of NOTs and parentheses)."""
    negated = False
    while isinstance(node, (exp.Not, exp.Paren)):
        if isinstance(node, exp.Not):
            negated = not negated
        node = node.this
    return negated, node


def _line_col(sql: str, offset: int) -> str:
    before = sql[:offset]
    return f"line {before.count(chr(10)) + 1}, column {offset - (before.rfind(chr(10)) + 1) + 1}"


def _var(name: str) -> exp.Expression:
    return exp.column(name, quoted=True)


def _sql(text: str) -> exp.Expression:
    import sqlglot
    return sqlglot.parse_one(text, read="spark")


def _not_null(child, arg) -> Cond:
    return Cond(child.to_scalar(exp.Not(this=exp.Is(this=arg.copy(), expression=exp.Null()))))


def _avg_type(child, arg) -> Optional[str]:
    """Spark's AVG result type for a plain column (decimal(p+4, s+4), double otherwise)."""
    if not isinstance(arg, exp.Column):
        return None
    var = child.column_var(arg)
    rel, col = child.var_columns[var]
    info = next((t.column(col) for t in child.tables.values() if t.column(col) is not None
                 and rel in child.tables and child.tables[rel] is t), None)
    if info is None:
        return None
    t = info.type.lower().replace(" ", "")
    if t.startswith("decimal"):
        p, s = (int(x) for x in t[len("decimal("):-1].split(","))
        return f"DECIMAL({min(38, p + 4)}, {min(38, s + 4)})"
    return "DOUBLE"


__all__ = ["SubqueryTranslator", "position_of"]
