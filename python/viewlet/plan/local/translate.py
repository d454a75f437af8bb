"""Spark SQL trees (sqlglot) rewritten for DuckDB with Spark's results, or refused.

The local target evaluates the same plan Spark would, so every value must be the one Spark
computes. The rewrite types each expression by Spark's rules (types.py), keeps what both
engines compute identically, pins result types with casts (decimal arithmetic, sums,
literals), emulates what differs (decimal division rounded half up, casts to integers
truncating, division by zero under ANSI mode, Spark's NULL ordering), and raises NotLocal
naming the construct for everything else: such a batch runs on Spark, and EXPLAIN says why.

Only the constructs the batch plans and result queries use, and the scalar functions whose
semantics were checked against Spark, are accepted; the list is short on purpose.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from sqlglot import exp

from . import types as T
from .types import NotLocal, SparkType

Columns = List[Tuple[str, SparkType]]          # a relation's columns, in order


def _ident(name: str) -> exp.Identifier:
    return exp.to_identifier(name, quoted=True)


_TYPES: Dict[str, exp.DataType] = {}


def _cast(node: exp.Expression, to: SparkType) -> exp.Expression:
    text = to.duck_sql()
    if text not in _TYPES:              # parsing a type costs more than the rest of a cast
        _TYPES[text] = exp.DataType.build(text, dialect="duckdb")
    return exp.Cast(this=node, to=_TYPES[text].copy())


def _paren(node: exp.Expression) -> exp.Expression:
    return exp.Paren(this=node)


def _lit(value) -> exp.Expression:
    return exp.Literal.number(value) if not isinstance(value, str) else exp.Literal.string(value)


class _Scope:
    """The relations a SELECT reads: alias -> columns (lower-case names)."""

    def __init__(self):
        self.relations: List[Tuple[str, Dict[str, SparkType], Columns]] = []

    def add(self, alias: str, columns: Columns):
        self.relations.append((alias.lower(), {n.lower(): t for n, t in columns}, columns))

    def column(self, name: str, table: Optional[str]) -> SparkType:
        low = name.lower()
        if table:
            for alias, cols, _ in self.relations:
                if alias == table.lower():
                    if low in cols:
                        return cols[low]
                    raise NotLocal(f"internal: no column {table}.{name}")
            raise NotLocal(f"internal: no relation {table}")
        found = [cols[low] for _, cols, _ in self.relations if low in cols]
        if len(found) != 1:
            raise NotLocal(f"internal: column {name} is {'ambiguous' if found else 'unknown'}")
        return found[0]

    def all_columns(self) -> Columns:
        return [c for _, _, cols in self.relations for c in cols]

    def columns_of(self, table: str) -> Columns:
        """The columns `table.*` lists."""
        for alias, _, cols in self.relations:
            if alias == table.lower():
                return cols
        raise NotLocal(f"internal: no relation {table}")


class Translator:
    """`tables`: the columns of every table name the queries may read (the plan's leaves);
    `ansi`: spark.sql.ansi.enabled (division by zero raises instead of giving NULL)."""

    def __init__(self, tables: Dict[str, Columns], ansi: bool = True):
        self.tables = {k.lower(): v for k, v in tables.items()}
        self.ansi = ansi

    # -- queries ---------------------------------------------------------------------------
    def query(self, node: exp.Expression, ctes: Optional[Dict[str, Columns]] = None
              ) -> Tuple[exp.Expression, Columns]:
        ctes = dict(ctes or {})
        with_ = node.args.get("with_")
        if with_ is not None:
            for cte in with_.expressions:
                inner, cols = self.query(cte.this, ctes)
                cte.set("this", inner)
                ctes[cte.alias_or_name.lower()] = cols
        if isinstance(node, exp.Subquery):
            inner, cols = self.query(node.this, ctes)
            node.set("this", inner)
            return node, cols
        if isinstance(node, exp.Union):
            if node.args.get("distinct") or type(node) is not exp.Union:
                raise NotLocal(f"{type(node).__name__.upper()} (other than UNION ALL)")
            _only(node, {"this", "expression", "distinct", "with_"}, "UNION")
            left, lcols = self.query(node.this, ctes)
            right, rcols = self.query(node.expression, ctes)
            if len(lcols) != len(rcols):
                raise NotLocal("internal: UNION sides differ in width")
            widened = [(name, T.wider(a, b)) for (name, a), (_, b) in zip(lcols, rcols)]
            node.set("this", self._cast_outputs(left, lcols, widened))
            node.set("expression", self._cast_outputs(right, rcols, widened))
            return node, widened
        if isinstance(node, exp.Select):
            return self._select(node, ctes)
        raise NotLocal(f"query form {type(node).__name__}")

    def _cast_outputs(self, node: exp.Expression, have: Columns, want: Columns) -> exp.Expression:
        """A query whose output columns are cast to `want`'s types where they differ."""
        if all(a == b for (_, a), (_, b) in zip(have, want)):
            return node
        inner = node.this if isinstance(node, exp.Subquery) and not node.alias else node
        if isinstance(inner, exp.Select) and not any(isinstance(e, exp.Star) for e in inner.expressions):
            items = []
            for item, (name, t), (_, w) in zip(inner.expressions, have, want):
                if t == w:
                    items.append(item)
                    continue
                value = item.this if isinstance(item, exp.Alias) else item
                items.append(exp.alias_(_cast(value, w), name, quoted=True))
            inner.set("expressions", items)
            return node
        if isinstance(inner, exp.Union):
            inner.set("this", self._cast_outputs(inner.this, have, want))
            inner.set("expression", self._cast_outputs(inner.expression, have, want))
            return node
        raise NotLocal("internal: cannot cast the outputs of a UNION side")

    def _relation(self, item: exp.Expression, ctes) -> Tuple[str, Columns, exp.Expression]:
        if isinstance(item, exp.Table):
            _only(item, {"this", "alias"}, f"table {item.sql()}")
            name = item.name.lower()
            cols = ctes.get(name) if name in ctes else self.tables.get(name)
            if cols is None:
                raise NotLocal(f"internal: unknown table {item.name}")
            return item.alias_or_name, cols, item
        if isinstance(item, exp.Subquery):
            inner, cols = self.query(item.this, ctes)
            item.set("this", inner)
            if not item.alias:
                raise NotLocal("internal: subquery without alias")
            return item.alias, cols, item
        raise NotLocal(f"FROM item {type(item).__name__}")

    def _select(self, node: exp.Select, ctes) -> Tuple[exp.Expression, Columns]:
        scope = _Scope()
        from_ = node.args.get("from_")
        if from_ is not None:
            alias, cols, item = self._relation(from_.this, ctes)
            from_.set("this", item)
            scope.add(alias, cols)
        joins = node.args.get("joins") or []
        for join in joins:
            if join.args.get("kind") not in (None, "", "CROSS", "INNER") or \
                    join.args.get("side") not in (None, "", "LEFT"):
                raise NotLocal(f"join {join.args.get('side') or ''} {join.args.get('kind') or ''}")
            alias, cols, item = self._relation(join.this, ctes)
            join.set("this", item)
            scope.add(alias, cols)
        for join in joins:
            if join.args.get("using"):
                raise NotLocal("JOIN ... USING in a plan")
            on = join.args.get("on")
            if on is not None:
                join.set("on", self._bool(on, scope))
        where = node.args.get("where")
        if where is not None:
            where.set("this", self._bool(where.this, scope))
        out: Columns = []
        items = []
        for item in node.expressions:
            if isinstance(item, exp.Star):
                items.append(item)
                out += scope.all_columns()
                continue
            if isinstance(item, exp.Column) and isinstance(item.this, exp.Star):
                items.append(exp.Column(this=exp.Star(), table=_ident(item.table)))
                out += scope.columns_of(item.table)
                continue
            value = item.this if isinstance(item, exp.Alias) else item
            translated, t = self.expr(value, scope)
            name = item.alias if isinstance(item, exp.Alias) else \
                (value.name if isinstance(value, exp.Column) else f"_c{len(out)}")
            items.append(exp.alias_(translated, name, quoted=True))
            out.append((name, t))
        node.set("expressions", items)
        group = node.args.get("group")
        if group is not None:
            group.set("expressions", [self.expr(g, scope)[0] for g in group.expressions])
        having = node.args.get("having")
        if having is not None:
            having.set("this", self._bool(having.this, scope))
        _only(node, {"expressions", "from_", "joins", "where", "group", "having", "distinct",
                     "with_"}, "SELECT")
        if node.args.get("distinct") is not None:
            _only(node.args["distinct"], set(), "SELECT DISTINCT")
        if group is not None:
            _only(group, {"expressions"}, "GROUP BY")
        for join in joins:
            _only(join, {"this", "on", "side", "kind"}, "JOIN")
        return node, out

    # -- expressions -----------------------------------------------------------------------
    def _bool(self, node, scope) -> exp.Expression:
        out, t = self.expr(node, scope)
        if t not in (T.BOOLEAN, T.NULL):
            raise NotLocal(f"condition of type {t.spark_sql()}")
        return out

    def expr(self, node: exp.Expression, scope: _Scope) -> Tuple[exp.Expression, SparkType]:
        method = getattr(self, f"_e_{type(node).__name__}", None)
        if method is None:
            raise NotLocal(f"{_describe(node)}")
        _check_args(node)
        return method(node, scope)

    def _e_Paren(self, node, scope):
        inner, t = self.expr(node.this, scope)
        return _paren(inner), t

    def _e_Column(self, node, scope):
        if isinstance(node.this, exp.Star):
            raise NotLocal("qualified *")
        t = scope.column(node.name, node.table or None)
        out = exp.Column(this=_ident(node.name), table=_ident(node.table) if node.table else None)
        return out, t

    def _e_Literal(self, node, scope):
        if node.is_string:
            return exp.Literal.string(node.this), T.STRING
        t = T.literal_number(node.this)
        if t.is_decimal:
            return _cast(exp.Literal.string(node.this), t), t
        if t == T.DOUBLE:
            return _cast(exp.Literal.string(node.this), t), t
        return exp.Literal.number(node.this), t

    def _e_Null(self, node, scope):
        return exp.Null(), T.NULL

    def _e_Boolean(self, node, scope):
        return exp.Boolean(this=node.this), T.BOOLEAN

    def _e_Neg(self, node, scope):
        inner, t = self.expr(node.this, scope)
        if not (t.is_numeric or t.is_null):
            raise NotLocal(f"negation of {t.spark_sql()}")
        return exp.Neg(this=_paren(inner)), t

    # arithmetic ---------------------------------------------------------------------------
    def _arith(self, node, scope, op: str):
        left, lt = self.expr(node.this, scope)
        right, rt = self.expr(node.expression, scope)
        # Spark types an integer literal next to a decimal by its digits (3 is decimal(1,0),
        # not int's decimal(10,0)): DecimalPrecision with literalPickMinimumPrecision
        if rt.is_decimal and lt.is_integral:
            lt = _literal_decimal(node.this) or lt
        if lt.is_decimal and rt.is_integral:
            rt = _literal_decimal(node.expression) or rt
        out = T.arithmetic(op, lt, rt)
        if op == "/" and out.is_decimal:
            return self._decimal_divide(left, lt, right, rt, out), out
        if op == "/":
            left, right = _cast(left, T.DOUBLE), _cast(right, T.DOUBLE)
            return self._guard_zero(right, exp.Div(this=_paren(left), expression=_paren(right),
                                                   typed=False, safe=False), out), out
        if op == "%" and (out.is_decimal or out.is_integral):
            right_node = _paren(right)
            value = exp.Mod(this=_paren(left), expression=right_node)
            return self._guard_zero(right, _cast(value, out) if out.is_decimal else value, out), out
        cls = {"+": exp.Add, "-": exp.Sub, "*": exp.Mul, "%": exp.Mod}[op]
        value = cls(this=_paren(left), expression=_paren(right))
        if out.is_decimal:
            # DuckDB keeps the exact result at a scale of its own: Spark's type rounds it
            return _cast(value, out), out
        if out == T.DOUBLE and (lt != T.DOUBLE or rt != T.DOUBLE):
            value = cls(this=_cast(left, T.DOUBLE), expression=_cast(right, T.DOUBLE))
        return value, out

    def _e_Add(self, node, scope):
        if isinstance(node.this, exp.Interval):       # INTERVAL '3' MONTH + d
            return self._date_shift(node.expression, node.this, scope, 1)
        if isinstance(node.expression, exp.Interval):
            return self._date_shift(node.this, node.expression, scope, 1)
        return self._arith(node, scope, "+")

    def _e_Sub(self, node, scope):
        if isinstance(node.expression, exp.Interval):
            return self._date_shift(node.this, node.expression, scope, -1)
        return self._arith(node, scope, "-")

    def _date_shift(self, date, interval: exp.Interval, scope, sign: int):
        """A date plus or minus a literal interval of years, months or days: a DATE in Spark
        (months added as ADD_MONTHS does, the day clamped to the month's last)."""
        value, t = self.expr(date, scope)
        if t not in (T.DATE, T.NULL):
            raise NotLocal(f"interval arithmetic on {t.spark_sql()}")
        unit, count = _interval_literal(interval)
        return _shifted_date(value, unit, exp.Literal.number(sign * count)), T.DATE

    def _e_Mul(self, node, scope):
        return self._arith(node, scope, "*")

    def _e_Div(self, node, scope):
        return self._arith(node, scope, "/")

    def _e_Mod(self, node, scope):
        return self._arith(node, scope, "%")

    def _guard_zero(self, divisor, value, out: SparkType):
        """x / 0: Spark raises DIVIDE_BY_ZERO under ANSI mode and gives NULL otherwise;
        DuckDB gives infinity or NULL. The error makes the batch run on Spark, which raises
        its own error."""
        zero = exp.EQ(this=_paren(divisor.copy()), expression=exp.Literal.number(0))
        if self.ansi:
            err = exp.Anonymous(this="error", expressions=[exp.Literal.string(
                "DIVIDE_BY_ZERO: division by zero (Spark raises this error under ANSI mode)")])
            fallback = _cast(err, out)
        else:
            fallback = _cast(exp.Null(), out)
        return exp.Case(ifs=[exp.If(this=zero, true=fallback)], default=value)

    def _decimal_divide(self, left, lt, right, rt, out: SparkType):
        """a / b for decimals, exact: the quotient of the unscaled values rounded half up at
        Spark's result scale, in 128-bit integers (an overflow raises, and Spark runs the
        batch)."""
        da, db = lt.as_decimal(), rt.as_decimal()
        shift = out.scale - da.scale + db.scale
        if shift < 0 or out.scale > 30:
            raise NotLocal(f"decimal division into {out.spark_sql()}")
        hugeint = exp.DataType(this=exp.DataType.Type.INT128)

        def unscaled(node, t):
            scaled = exp.Mul(this=_cast(node, T.decimal(38, t.scale)),
                             expression=exp.Literal.number(10 ** t.scale))
            return exp.Cast(this=scaled, to=hugeint.copy())

        n = exp.Mul(this=_paren(unscaled(left, da)),
                    expression=exp.Cast(this=exp.Literal.number(10 ** shift), to=hugeint.copy()))
        d = unscaled(right, db)
        # |n| // |d|, plus one when the remainder is at least half of |d|, with the sign of n/d
        an, ad = exp.Abs(this=n), exp.Abs(this=d)
        q = exp.IntDiv(this=an.copy(), expression=ad.copy())
        rem = exp.Sub(this=an.copy(), expression=exp.Mul(this=_paren(q.copy()), expression=ad.copy()))
        up = exp.Case(ifs=[exp.If(this=exp.GTE(this=exp.Mul(this=exp.Literal.number(2), expression=_paren(rem)),
                                               expression=ad.copy()),
                                  true=exp.Literal.number(1))], default=exp.Literal.number(0))
        magnitude = exp.Add(this=_paren(q), expression=up)
        sign = exp.Mul(this=exp.Anonymous(this="sign", expressions=[n.copy()]),
                       expression=exp.Anonymous(this="sign", expressions=[d.copy()]))
        unscaled_result = exp.Mul(this=_paren(sign), expression=_paren(magnitude))
        unit = _cast(exp.Literal.string("0." + "0" * (out.scale - 1) + "1" if out.scale else "1"),
                     T.decimal(max(out.scale, 1), out.scale))
        value = _cast(exp.Mul(this=_cast(unscaled_result, T.decimal(38, 0)), expression=unit), out)
        return self._guard_zero(d.copy(), value, out)

    # comparisons and logic ------------------------------------------------------------------
    def _compare(self, node, scope, cls):
        left, lt = self.expr(node.this, scope)
        right, rt = self.expr(node.expression, scope)
        _comparable(lt, rt, node)
        return cls(this=_paren(left), expression=_paren(right)), T.BOOLEAN

    def _e_EQ(self, node, scope):
        return self._compare(node, scope, exp.EQ)

    def _e_NEQ(self, node, scope):
        return self._compare(node, scope, exp.NEQ)

    def _e_GT(self, node, scope):
        return self._compare(node, scope, exp.GT)

    def _e_GTE(self, node, scope):
        return self._compare(node, scope, exp.GTE)

    def _e_LT(self, node, scope):
        return self._compare(node, scope, exp.LT)

    def _e_LTE(self, node, scope):
        return self._compare(node, scope, exp.LTE)

    def _e_NullSafeEQ(self, node, scope):
        return self._compare(node, scope, exp.NullSafeEQ)

    def _e_NullSafeNEQ(self, node, scope):
        return self._compare(node, scope, exp.NullSafeNEQ)

    def _logic(self, node, scope, cls):
        return cls(this=_paren(self._bool(node.this, scope)),
                   expression=_paren(self._bool(node.expression, scope))), T.BOOLEAN

    def _e_And(self, node, scope):
        return self._logic(node, scope, exp.And)

    def _e_Or(self, node, scope):
        return self._logic(node, scope, exp.Or)

    def _e_Not(self, node, scope):
        return exp.Not(this=_paren(self._bool(node.this, scope))), T.BOOLEAN

    def _e_Is(self, node, scope):
        inner, _ = self.expr(node.this, scope)
        if not isinstance(node.expression, exp.Null):
            raise NotLocal(f"IS {node.expression.sql('spark')}")
        out = exp.Is(this=_paren(inner), expression=exp.Null())
        return (exp.Not(this=_paren(out)) if node.args.get("negate") else out), T.BOOLEAN

    def _e_In(self, node, scope):
        if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
            raise NotLocal("IN (subquery)")
        inner, t = self.expr(node.this, scope)
        values = []
        for v in node.expressions:
            value, vt = self.expr(v, scope)
            _comparable(t, vt, node)
            values.append(value)
        return exp.In(this=_paren(inner), expressions=values), T.BOOLEAN

    def _e_Between(self, node, scope):
        value, t = self.expr(node.this, scope)
        low, lt = self.expr(node.args["low"], scope)
        high, ht = self.expr(node.args["high"], scope)
        _comparable(t, lt, node)
        _comparable(t, ht, node)
        return _paren(exp.And(this=exp.GTE(this=_paren(value), expression=_paren(low)),
                              expression=exp.LTE(this=_paren(value.copy()), expression=_paren(high)))), T.BOOLEAN

    def _e_Like(self, node, scope):
        value, t = self.expr(node.this, scope)
        pattern = node.expression
        if t not in (T.STRING, T.NULL) or not (isinstance(pattern, exp.Literal) and pattern.is_string):
            raise NotLocal("LIKE with a pattern that is not a string literal")
        # Spark's LIKE escapes with a backslash; DuckDB's has no escape character unless given
        like = exp.Like(this=_paren(value), expression=exp.Literal.string(pattern.this))
        out = exp.Escape(this=like, expression=exp.Literal.string("\\"))
        return (exp.Not(this=_paren(out)) if node.args.get("negate") else out), T.BOOLEAN

    # conditionals -----------------------------------------------------------------------------
    def _branches(self, values: Sequence[Tuple[exp.Expression, SparkType]]):
        out = T.NULL
        for _, t in values:
            out = T.wider(out, t)
        return [v if t == out else _cast(v, out) for v, t in values], out

    def _e_Anonymous(self, node, scope):
        """raise_error('...') (a scalar subquery's check for more than one row): DuckDB's
        error() in its place, so the batch fails where Spark's would, and runs again on
        Spark, which raises its own error."""
        args = node.expressions
        if node.name.lower() != "raise_error" or len(args) != 1 \
                or not (isinstance(args[0], exp.Literal) and args[0].is_string):
            raise NotLocal(_describe(node))
        return exp.Anonymous(this="error", expressions=[exp.Literal.string(args[0].this)]), T.NULL

    def _e_Case(self, node, scope):
        if node.this is not None:
            raise NotLocal("CASE x WHEN ...")
        conds, values = [], []
        for branch in node.args.get("ifs") or []:
            conds.append(self._bool(branch.this, scope))
            values.append(self.expr(branch.args["true"], scope))
        default = node.args.get("default")
        if default is not None:
            values.append(self.expr(default, scope))
        cast, out = self._branches(values)
        ifs = [exp.If(this=c, true=v) for c, v in zip(conds, cast)]
        return exp.Case(ifs=ifs, default=cast[len(conds)] if default is not None else None), out

    def _e_If(self, node, scope):
        cond = self._bool(node.this, scope)
        values = [self.expr(node.args["true"], scope)]
        if node.args.get("false") is not None:
            values.append(self.expr(node.args["false"], scope))
        cast, out = self._branches(values)
        return exp.Case(ifs=[exp.If(this=cond, true=cast[0])],
                        default=cast[1] if len(cast) > 1 else None), out

    def _e_Coalesce(self, node, scope):
        values = [self.expr(a, scope) for a in [node.this] + list(node.expressions)]
        cast, out = self._branches(values)
        return exp.Coalesce(this=cast[0], expressions=cast[1:]), out

    def _extreme(self, node, scope, cls):
        # both engines' LEAST / GREATEST skip NULL arguments (NULL only when all are NULL)
        if not node.args.get("ignore_nulls"):
            raise NotLocal(f"{cls.__name__.upper()} that respects NULLs")
        values = [self.expr(a, scope) for a in [node.this] + list(node.expressions)]
        for _, t in values:
            if not (t.is_integral or t.is_decimal or t.is_null):
                raise NotLocal(f"{cls.__name__.upper()} of {t.spark_sql()}")
        cast, out = self._branches(values)
        # ignore_nulls: sqlglot writes DuckDB's own LEAST (without it, a NULL-propagating CASE)
        return cls(this=cast[0], expressions=cast[1:], ignore_nulls=True), out

    def _e_Least(self, node, scope):
        return self._extreme(node, scope, exp.Least)

    def _e_Greatest(self, node, scope):
        return self._extreme(node, scope, exp.Greatest)

    def _e_Nullif(self, node, scope):
        value, t = self.expr(node.this, scope)
        other, ot = self.expr(node.expression, scope)
        _comparable(t, ot, node)
        return exp.Case(ifs=[exp.If(this=exp.EQ(this=_paren(value), expression=_paren(other)),
                                    true=_cast(exp.Null(), t))], default=value.copy()), t

    # casts ----------------------------------------------------------------------------------
    def _e_Cast(self, node, scope):
        to = T.parse(node.to.sql(dialect="spark"))
        inner = node.this
        if isinstance(inner, exp.Literal) and inner.is_string and to == T.DATE:
            return _cast(exp.Literal.string(inner.this), to), to     # DATE '1995-03-15'
        value, t = self.expr(inner, scope)
        return _convert(value, t, to), to

    _e_TryCast = _e_Cast

    # functions ------------------------------------------------------------------------------
    def _date_arg(self, node, scope):
        return self._date_value(node.this, scope, type(node).__name__.upper())

    def _date_value(self, arg, scope, what: str):
        """A date argument (sqlglot wraps Spark's date arguments in TsOrDsToDate); dates
        only: on timestamps the result depends on time zones."""
        if isinstance(arg, exp.TsOrDsToDate) and not arg.args.get("format"):
            arg = arg.this
        value, t = self.expr(arg, scope)
        if t not in (T.DATE, T.NULL):
            raise NotLocal(f"{what} of {t.spark_sql()}")
        return value

    def _date_part(self, node, scope, part):
        return exp.Anonymous(this=part, expressions=[self._date_arg(node, scope)]), T.INT

    def _e_Year(self, node, scope):
        return self._date_part(node, scope, "year")

    def _e_Month(self, node, scope):
        return self._date_part(node, scope, "month")

    def _e_Day(self, node, scope):
        return self._date_part(node, scope, "day")

    _e_DayOfMonth = _e_Day

    def _e_Quarter(self, node, scope):
        return self._date_part(node, scope, "quarter")

    def _e_Extract(self, node, scope):
        part = node.this.name.upper() if isinstance(node.this, (exp.Var, exp.Identifier)) else ""
        if part not in ("YEAR", "MONTH", "DAY", "QUARTER"):
            raise NotLocal(f"EXTRACT({part or node.this.sql()})")
        value, t = self.expr(node.expression, scope)
        if t not in (T.DATE, T.NULL):
            raise NotLocal(f"EXTRACT from {t.spark_sql()} (time zones)")
        return exp.Anonymous(this=part.lower(), expressions=[value]), T.INT

    def _e_Round(self, node, scope):
        """ROUND(x, n) of an integer or a decimal, half away from zero in both engines, typed
        as Spark types it (a decimal keeps its integral digits plus one, at scale
        min(n, scale)); doubles are refused (Spark rounds their decimal text)."""
        decimals = node.args.get("decimals")
        places = 0 if decimals is None else _integer_literal(decimals)
        if places is None:
            raise NotLocal("ROUND to a number of places that is not an integer literal")
        value, t = self.expr(node.this, scope)
        if t.is_integral:
            if places >= 0:
                return value, t
            exact = exp.Anonymous(this="round", expressions=[
                _cast(value, T.decimal(38, 0)), exp.Literal.number(places)])
            return _cast(exact, t), t
        if not t.is_decimal:
            raise NotLocal(f"ROUND of {t.spark_sql()}")
        scale = max(0, min(places, t.scale))
        out = T.decimal(min(38, t.precision - t.scale + 1 + scale), scale)
        if places >= t.scale:
            return _cast(value, out), out
        rounded = exp.Anonymous(this="round", expressions=[value, exp.Literal.number(places)])
        return _cast(rounded, out), out

    def _e_AddMonths(self, node, scope):
        """ADD_MONTHS(date, n): months added, the day clamped to the month's last."""
        value = self._date_value(node.this, scope, "ADD_MONTHS")
        months, t = self.expr(node.expression, scope)
        if t.name not in ("tinyint", "smallint", "int", "null"):
            raise NotLocal(f"ADD_MONTHS by {t.spark_sql()}")
        return _shifted_date(value, "MONTH", _cast(months, T.INT)), T.DATE

    def _e_TsOrDsAdd(self, node, scope):
        unit = node.args.get("unit")
        if unit is not None and unit.name.upper() not in ("DAY", ""):
            raise NotLocal(f"date arithmetic in {unit.name}")
        days, dt = self.expr(node.expression, scope)
        if not (dt.is_integral or dt.is_null):
            raise NotLocal("DATE_ADD with a day count that is not an integer")
        return exp.Add(this=_paren(self._date_arg(node, scope)), expression=_cast(days, T.INT)), T.DATE

    def _e_DateDiff(self, node, scope):
        unit = node.args.get("unit")
        if unit is not None and unit.name.upper() not in ("DAY", ""):
            raise NotLocal("DATEDIFF in units other than days")
        end = self._date_value(node.this, scope, "DATEDIFF")
        start = self._date_value(node.expression, scope, "DATEDIFF")
        return _cast(exp.Sub(this=_paren(end), expression=_paren(start)), T.INT), T.INT

    def _e_Substring(self, node, scope):
        value, t = self.expr(node.this, scope)
        start, length = node.args.get("start"), node.args.get("length")
        if t not in (T.STRING, T.NULL) or not _positive_literal(start) or \
                (length is not None and not _positive_literal(length, zero=True)):
            raise NotLocal("SUBSTRING other than of a string at literal positive positions")
        args = [value, exp.Literal.number(start.this)]
        if length is not None:
            args.append(exp.Literal.number(length.this))
        return exp.Substring(this=args[0], start=args[1], length=args[2] if length is not None else None), T.STRING

    def _e_Length(self, node, scope):
        value, t = self.expr(node.this, scope)
        if t not in (T.STRING, T.NULL):
            raise NotLocal(f"LENGTH of {t.spark_sql()}")
        return _cast(exp.Length(this=value), T.INT), T.INT

    def _e_Concat(self, node, scope):
        parts = []
        for a in node.expressions:
            value, t = self.expr(a, scope)
            if t not in (T.STRING, T.NULL):
                raise NotLocal(f"CONCAT of {t.spark_sql()}")
            parts.append(value)
        out = parts[0]
        for p in parts[1:]:       # || is NULL if any part is, as Spark's concat
            out = exp.DPipe(this=out, expression=p, safe=False)
        return _paren(out), T.STRING

    def _e_DPipe(self, node, scope):
        return self._e_Concat(exp.Concat(expressions=[node.this, node.expression]), scope)

    def _e_Abs(self, node, scope):
        value, t = self.expr(node.this, scope)
        if not t.is_numeric:
            raise NotLocal(f"ABS of {t.spark_sql()}")
        return _cast(exp.Abs(this=value), t), t

    # aggregates -----------------------------------------------------------------------------
    def _agg_arg(self, node, scope):
        arg = node.this
        if isinstance(arg, exp.Distinct):
            raise NotLocal("DISTINCT aggregate in a plan query")
        return self.expr(arg, scope)

    def _e_Sum(self, node, scope):
        value, t = self._agg_arg(node, scope)
        out = T.sum_type(t)
        return _cast(exp.Sum(this=value), out), out

    def _e_Count(self, node, scope):
        arg = node.this
        if arg is None or isinstance(arg, exp.Star):
            return exp.Count(this=exp.Star()), T.BIGINT
        if isinstance(arg, exp.Distinct):
            values = [self.expr(a, scope)[0] for a in arg.expressions]
            return exp.Count(this=exp.Distinct(expressions=values)), T.BIGINT
        value, _ = self.expr(arg, scope)
        return exp.Count(this=value), T.BIGINT

    def _e_Min(self, node, scope):
        value, t = self._agg_arg(node, scope)
        return exp.Min(this=value), t

    def _e_Max(self, node, scope):
        value, t = self._agg_arg(node, scope)
        return exp.Max(this=value), t

    def _e_Window(self, node, scope):
        func = node.this
        if isinstance(func, (exp.RowNumber, exp.Rank, exp.DenseRank)):
            _check_args(func)
            call, out, cast = type(func)(), T.INT, True     # DuckDB: BIGINT; Spark: int
        elif isinstance(func, exp.Sum):
            value, t = self._agg_arg(func, scope)
            call, out, cast = exp.Sum(this=value), T.sum_type(t), True
        elif isinstance(func, exp.Count):
            _check_args(func)
            call, t = self._e_Count(func, scope)
            out, cast = T.BIGINT, False
        elif isinstance(func, (exp.Min, exp.Max)):
            value, t = self._agg_arg(func, scope)
            if not (t.is_numeric or t in (T.STRING, T.DATE, T.BOOLEAN) or t.is_null):
                raise NotLocal(f"window {type(func).__name__.upper()} of {t.spark_sql()}")
            call, out, cast = type(func)(this=value), t, False
        else:
            raise NotLocal(f"window function {type(func).__name__}")
        window = self._window_over(node, scope, call)
        return (_cast(window, out) if cast else window), out

    def _window_over(self, node, scope, call):
        """`call` OVER the node's window, NULL ordering and frame as Spark means them."""
        partition = [self.expr(p, scope)[0] for p in node.args.get("partition_by") or []]
        order = node.args.get("order")
        ordered = []
        for o in (order.expressions if order is not None else []):
            key, _ = self.expr(o.this, scope)
            desc = bool(o.args.get("desc"))
            nulls_first = o.args.get("nulls_first")
            if nulls_first is None:
                nulls_first = not desc              # Spark: NULLs are the smallest values
            ordered.append(exp.Ordered(this=key, desc=desc, nulls_first=nulls_first))
        spec = node.args.get("spec")
        if spec is not None:
            _frame(spec)
        return exp.Window(this=call, partition_by=partition or None,
                          order=exp.Order(expressions=ordered) if ordered else None,
                          spec=spec.copy() if spec is not None else None)


def _frame(spec: exp.WindowSpec) -> None:
    """Frames both engines bound alike: ROWS with literal offsets, RANGE between UNBOUNDED
    and CURRENT ROW (a RANGE offset compares values: types and rounding could differ)."""
    _only(spec, {"kind", "start", "start_side", "end", "end_side"}, "window frame")
    kind = str(spec.args.get("kind") or "").upper()
    for bound in (spec.args.get("start"), spec.args.get("end")):
        text = bound.upper() if isinstance(bound, str) else None
        if text in ("UNBOUNDED", "CURRENT ROW") or bound is None:
            continue
        if kind == "ROWS" and isinstance(bound, exp.Literal) and not bound.is_string \
                and bound.this.isdigit():
            continue
        raise NotLocal(f"window frame {spec.sql(dialect='spark')}")
    if kind not in ("ROWS", "RANGE"):
        raise NotLocal(f"window frame {spec.sql(dialect='spark')}")


#: arguments a node may carry that the rewrite reads (or that do not change what Spark
#: computes: sqlglot's flags for dialect quirks the rewrite decides itself, such as `safe`
#: division, handled by the ANSI setting); a node with any other argument set is refused, so
#: that no modifier is ever dropped silently
_NEUTRAL = {"this", "expression", "expressions", "safe", "typed", "big_int", "over", "is_nvl",
            "is_null", "coalesce"}
_ARGS = {
    exp.Like: {"negate"}, exp.Is: {"negate"}, exp.Case: {"ifs", "default"},
    exp.If: {"true", "false"}, exp.Between: {"low", "high"}, exp.Column: {"table"},
    exp.Least: {"ignore_nulls"}, exp.Greatest: {"ignore_nulls"},
    exp.Literal: {"is_string"}, exp.Cast: {"to"}, exp.TryCast: {"to"},
    exp.Substring: {"start", "length"}, exp.TsOrDsAdd: {"unit"}, exp.DateDiff: {"unit"},
    exp.Round: {"decimals"},
    exp.Window: {"partition_by", "order", "spec"},
}


def _only(node: exp.Expression, allowed, what: str) -> None:
    extra = [k for k, v in node.args.items() if k not in allowed and v not in (None, False, [])]
    if extra:
        raise NotLocal(f"{what} with {', '.join(sorted(extra))}")


def _check_args(node: exp.Expression) -> None:
    allowed = _NEUTRAL | _ARGS.get(type(node), set())
    extra = [k for k, v in node.args.items() if k not in allowed and v not in (None, False, [])]
    if extra:
        raise NotLocal(f"{_describe(node)} with {', '.join(sorted(extra))}")


def _literal_decimal(node: exp.Expression) -> Optional[SparkType]:
    """decimal(digits, 0) for an integer literal (possibly negated or parenthesized)."""
    while isinstance(node, (exp.Paren, exp.Neg)):
        node = node.this
    if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
        return T.decimal(max(1, len(node.this.lstrip("0")) or 1), 0)
    return None


def _shifted_date(value: exp.Expression, unit: str, count: exp.Expression) -> exp.Expression:
    """`value` (a DATE) plus `count` months or days. DuckDB's date + interval is a
    TIMESTAMP with the day Spark's DATE has (months clamped to a month's last day, as
    ADD_MONTHS does): cast back."""
    amount = exp.Anonymous(this={"MONTH": "to_months", "DAY": "to_days"}[unit],
                           expressions=[count])
    return _cast(exp.Add(this=_paren(value), expression=amount), T.DATE)


_INTERVAL_UNITS = {"YEAR": ("MONTH", 12), "YEARS": ("MONTH", 12), "MONTH": ("MONTH", 1),
                   "MONTHS": ("MONTH", 1), "DAY": ("DAY", 1), "DAYS": ("DAY", 1)}


def _interval_literal(interval: exp.Interval) -> Tuple[str, int]:
    """('MONTH' or 'DAY', a whole count) for INTERVAL 'n' YEAR / MONTH / DAY and
    INTERVAL 'y-m' YEAR TO MONTH; NotLocal for any other interval (hours and less make
    Spark's result a TIMESTAMP)."""
    what = interval.sql(dialect="spark")
    text, unit = interval.this, interval.args.get("unit")
    if not isinstance(text, exp.Literal) or unit is None:
        raise NotLocal(what)
    try:
        if isinstance(unit, exp.IntervalSpan):
            if (unit.this.name.upper(), unit.expression.name.upper()) != ("YEAR", "MONTH"):
                raise NotLocal(what)
            negative = text.this.strip().startswith("-")
            years, months = text.this.strip().lstrip("+-").split("-")
            count = int(years) * 12 + int(months)
            return "MONTH", -count if negative else count
        base, factor = _INTERVAL_UNITS[unit.name.upper()]
        return base, int(text.this) * factor
    except (KeyError, ValueError):
        raise NotLocal(what) from None


def _integer_literal(node: exp.Expression) -> Optional[int]:
    """The value of an integer literal (possibly negated or parenthesized), else None."""
    sign = 1
    while isinstance(node, (exp.Neg, exp.Paren)):
        sign = -sign if isinstance(node, exp.Neg) else sign
        node = node.this
    if isinstance(node, exp.Literal) and not node.is_string and node.this.lstrip("-").isdigit():
        return sign * int(node.this)
    return None


def _positive_literal(node, zero: bool = False) -> bool:
    if not isinstance(node, exp.Literal) or node.is_string:
        return False
    try:
        value = int(node.this)
    except ValueError:
        return False
    return value > 0 or (zero and value == 0)


def _comparable(a: SparkType, b: SparkType, node) -> None:
    if a.is_null or b.is_null or a == b:
        return
    if a.is_numeric and b.is_numeric:
        return
    raise NotLocal(f"comparison of {a.spark_sql()} with {b.spark_sql()} ({node.sql('spark')[:60]})")


def _convert(value: exp.Expression, frm: SparkType, to: SparkType) -> exp.Expression:
    """CAST(value AS to) with Spark's result, or NotLocal."""
    if frm == to or frm.is_null:
        return _cast(value, to)
    if to.is_integral and (frm.is_decimal or frm.is_fractional):
        # Spark truncates toward zero; DuckDB rounds
        return _cast(exp.Anonymous(this="trunc", expressions=[value]), to)
    if (frm.is_integral or frm.is_decimal) and (to.is_integral or to.is_decimal or to.is_fractional):
        return _cast(value, to)
    if frm.is_fractional and to.is_fractional:
        return _cast(value, to)
    raise NotLocal(f"CAST from {frm.spark_sql()} to {to.spark_sql()}")


def _describe(node: exp.Expression) -> str:
    name = type(node).__name__
    if isinstance(node, exp.Anonymous):
        return f"function {node.name.upper()}"
    if isinstance(node, exp.Func):
        return f"function {node.sql_name()}"
    return name
