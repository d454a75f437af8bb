"""A small pure-Python reference evaluator of the calculus, and a simulator of trigger programs.

Test oracle only (no Spark, no performance goals). `evaluate(query, env)` computes a query in
normal form as a dict from group-variable tuples to multiplicities (zeros left out), where the
environment supplies:

  relations  {table: [(row, multiplicity), ...]}   base relations; a row maps column -> value
  deltas     {table: [(row, signed multiplicity), ...]}   the batch, for DeltaRel atoms
  maps       {map name: {key tuple: value}}        materialized maps, for MapRef atoms

Semantics (the same as the Spark lowering in `viewlet.plan.lower`):
  * relation, batch and map atoms bind their variables from columns / keys. A variable that
    is already bound must be equal with SQL `=`: NULL (None) never matches (group and domain
    atoms match NULL keys NULL-safely: GROUP BY groups have NULL keys). Duplicate rows
    and multiplicities add up; a relation atom naming a subset of the columns is the
    projection (multiplicities summed).
  * Lift(x, e) binds x := e, or, when x is bound, tests x <=> e (NULL-safe). As in the
    lowering, an assignment to a variable that some relation/batch/map atom binds is applied
    after that atom, as a NULL-safe test.
  * Cond(p) keeps a binding when p is true (NULL is not true).
  * Value(e) multiplies by e; a NULL value contributes 0 (SUM ignores NULLs).
Scalars are interpreted from their sqlglot AST with SQL three-valued logic (columns, literals,
DATE 'yyyy-mm-dd', arithmetic, date +/- INTERVAL n DAY/MONTH/YEAR, comparisons, AND/OR/NOT,
IS [NOT] NULL, [NOT] LIKE, IN (list), BETWEEN, CASE, IF, COALESCE; anything else raises
NotImplementedError); decimals are computed exactly
(as fractions); division by zero is NULL.

`run_program(program, relations, batches)` simulates Viewlet's batch semantics (see
`ProgramSimulator`) and returns the final maps as {map name: {column: {key tuple: value}}}.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from fractions import Fraction
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from sqlglot import exp

from viewlet.calculus.ir import (COUNT_DISTINCT, EMPTY_VALUE, MAP_VALUE, MIN, SUM, SUM_DISTINCT,
                                 Const, Cond, DeltaRel, Domain, Groups, Lift, MapRef, Monomial,
                                 Nested, Query, Rel, Value)
from viewlet.calculus.scalar import Scalar

Row = Mapping[str, Any]
Table = Sequence[Tuple[Row, Any]]


# ---------------------------------------------------------------------------------------------
# numbers
# ---------------------------------------------------------------------------------------------

def _exact(x):
    """Numbers as int or Fraction (Decimal and float converted exactly); others unchanged."""
    if isinstance(x, bool):
        return x
    if isinstance(x, Decimal):
        f = Fraction(x)
        return f.numerator if f.denominator == 1 else f
    if isinstance(x, float):
        f = Fraction(x)
        return f.numerator if f.denominator == 1 else f
    if isinstance(x, Fraction) and x.denominator == 1:
        return x.numerator
    return x


def _tidy(x):
    return x.numerator if isinstance(x, Fraction) and x.denominator == 1 else x


def _is_number(x) -> bool:
    return isinstance(x, (int, Fraction, Decimal, float)) and not isinstance(x, bool)


def _num(x, what: str):
    if not _is_number(x):
        raise TypeError(f"reference evaluator: {what} needs numbers, got {x!r}")
    return _exact(x)


# ---------------------------------------------------------------------------------------------
# scalars
# ---------------------------------------------------------------------------------------------

Fn = Callable[[Mapping[str, Any]], Any]
_compiled: Dict[str, Fn] = {}


def scalar_fn(scalar: Scalar) -> Fn:
    """A Python function of a variable binding computing the scalar (cached by SQL text)."""
    fn = _compiled.get(scalar.key)
    if fn is None:
        fn = _compile(scalar.ast)
        _compiled[scalar.key] = fn
    return fn


def eval_scalar(scalar: Scalar, binding: Mapping[str, Any]):
    return scalar_fn(scalar)(binding)


def _arith(op: str) -> Callable[[Any, Any], Any]:
    def add(a, b):
        return a + b

    def sub(a, b):
        return a - b

    def mul(a, b):
        return a * b

    def div(a, b):
        return None if b == 0 else Fraction(a) / Fraction(b)

    def mod(a, b):
        if b == 0:
            return None
        r = abs(a) % abs(b)          # Spark/Java: the result takes the dividend's sign
        return -r if a < 0 else r

    f = {"+": add, "-": sub, "*": mul, "/": div, "%": mod}[op]

    def apply(a, b):
        if a is None or b is None:
            return None
        return _tidy(f(_num(a, op), _num(b, op)))

    return apply


_CMP = {
    exp.EQ: lambda a, b: a == b,
    exp.NEQ: lambda a, b: a != b,
    exp.GT: lambda a, b: a > b,
    exp.GTE: lambda a, b: a >= b,
    exp.LT: lambda a, b: a < b,
    exp.LTE: lambda a, b: a <= b,
}
_DECIMAL_TYPES = {exp.DataType.Type.DECIMAL}
_EXACT_TYPES = {exp.DataType.Type.DOUBLE, exp.DataType.Type.FLOAT}
_INTEGRAL_TYPES = {exp.DataType.Type.TINYINT, exp.DataType.Type.SMALLINT, exp.DataType.Type.INT,
                   exp.DataType.Type.BIGINT}
_ARITH = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%"}


def _cmp_values(a, b, op):
    if a is None or b is None:
        return None
    if _is_number(a) and _is_number(b):
        return op(_exact(a), _exact(b))
    if type(a) is not type(b):
        raise TypeError(f"reference evaluator: cannot compare {a!r} with {b!r}")
    return op(a, b)


def _and(vals):
    if any(v is False for v in vals):
        return False
    if any(v is None for v in vals):
        return None
    return True


def _or(vals):
    if any(v is True for v in vals):
        return True
    if any(v is None for v in vals):
        return None
    return False


def _truth(v, what):
    if v is None or isinstance(v, bool):
        return v
    raise TypeError(f"reference evaluator: {what} needs a boolean, got {v!r}")


def _literal(node: exp.Literal):
    if node.is_string:
        return node.this
    return _exact(Decimal(node.this))


def _compile(node: exp.Expression) -> Fn:
    if isinstance(node, exp.Paren):
        return _compile(node.this)
    if isinstance(node, exp.Column):
        name = node.name

        def column(b):
            try:
                return b[name]
            except KeyError:
                raise KeyError(f"reference evaluator: unbound variable {name!r}") from None
        return column
    if isinstance(node, exp.Literal):
        value = _literal(node)
        return lambda b: value
    if isinstance(node, exp.Null):
        return lambda b: None
    if isinstance(node, exp.Boolean):
        value = bool(node.this)
        return lambda b: value
    if isinstance(node, exp.Neg):
        inner = _compile(node.this)

        def neg(b):
            v = inner(b)
            return None if v is None else -_num(v, "-")
        return neg
    if isinstance(node, (exp.Add, exp.Sub)) and isinstance(node.expression, exp.Interval):
        return _date_plus_interval(node)
    if type(node) in _ARITH:
        op = _arith(_ARITH[type(node)])
        left, right = _compile(node.this), _compile(node.expression)
        return lambda b: op(left(b), right(b))
    if type(node) in _CMP:
        op = _CMP[type(node)]
        left, right = _compile(node.this), _compile(node.expression)
        return lambda b: _cmp_values(left(b), right(b), op)
    if isinstance(node, exp.NullSafeEQ):
        left, right = _compile(node.this), _compile(node.expression)

        def nseq(b):
            x, y = left(b), right(b)
            if x is None or y is None:
                return x is None and y is None
            return _cmp_values(x, y, lambda p, q: p == q)
        return nseq
    if isinstance(node, exp.And):
        left, right = _compile(node.this), _compile(node.expression)
        return lambda b: _and([_truth(left(b), "AND"), _truth(right(b), "AND")])
    if isinstance(node, exp.Or):
        left, right = _compile(node.this), _compile(node.expression)
        return lambda b: _or([_truth(left(b), "OR"), _truth(right(b), "OR")])
    if isinstance(node, exp.Not):
        inner = _compile(node.this)

        def not_(b):
            v = _truth(inner(b), "NOT")
            return None if v is None else not v
        return not_
    if isinstance(node, exp.Is):
        if not isinstance(node.expression, exp.Null):
            raise NotImplementedError(f"reference evaluator: IS {node.expression.sql()}")
        inner = _compile(node.this)
        return lambda b: inner(b) is None
    if isinstance(node, exp.In):
        if node.args.get("query") is not None or node.args.get("unnest") is not None:
            raise NotImplementedError("reference evaluator: IN (subquery)")
        inner = _compile(node.this)
        options = [_compile(e) for e in node.expressions]

        def in_(b):
            v = inner(b)
            if v is None:
                return None
            return _or([_cmp_values(v, o(b), lambda p, q: p == q) for o in options])
        return in_
    if isinstance(node, exp.Between):
        inner, low, high = _compile(node.this), _compile(node.args["low"]), _compile(node.args["high"])

        def between(b):
            v = inner(b)
            return _and([_cmp_values(v, low(b), lambda p, q: p >= q),
                         _cmp_values(v, high(b), lambda p, q: p <= q)])
        return between
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Null):
        return lambda b: None                         # CAST(NULL AS t): an outer join's padding
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string \
            and node.to.this == exp.DataType.Type.DATE:
        value = date.fromisoformat(node.this.this)      # DATE '1998-09-02'
        return lambda b: value
    if isinstance(node, exp.Cast) and node.to.this in _DECIMAL_TYPES:
        inner = _compile(node.this)
        params = [int(p.this.this) for p in node.to.expressions] if node.to.expressions else [10, 0]
        scale = params[1] if len(params) > 1 else 0

        def to_decimal(b):
            v = inner(b)
            if v is None:
                return None
            f = Fraction(_num(v, "CAST"))
            scaled = abs(f) * 10 ** scale
            q = int(scaled + Fraction(1, 2))          # HALF_UP, as Spark rounds decimals
            return _tidy(Fraction(q if f >= 0 else -q, 10 ** scale))
        return to_decimal
    if isinstance(node, exp.Cast) and node.to.this in _EXACT_TYPES:
        return _compile(node.this)                    # doubles kept exact: tests compare exactly
    if isinstance(node, exp.Cast) and node.to.this in _INTEGRAL_TYPES:
        inner = _compile(node.this)

        def to_integral(b):                           # truncating, as Spark casts to integers
            v = inner(b)
            return None if v is None else int(_num(v, "CAST"))
        return to_integral
    if isinstance(node, exp.Like):
        inner, pattern = _compile(node.this), _compile(node.expression)
        negate = bool(node.args.get("negate"))         # sqlglot's `x NOT LIKE p`

        def like(b):
            v, p = inner(b), pattern(b)
            if v is None or p is None:
                return None
            import re
            rx = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in p)
            return (re.fullmatch(rx, v, re.S) is not None) != negate
        return like
    if isinstance(node, exp.TsOrDsToDate) and not node.args.get("format"):
        return _compile(node.this)
    if isinstance(node, exp.Year):
        inner = _compile(node.this)
        return lambda b: None if inner(b) is None else inner(b).year
    if isinstance(node, exp.Substring):
        inner = _compile(node.this)
        start = _compile(node.args["start"])
        length = _compile(node.args["length"]) if node.args.get("length") is not None else None

        def substring(b):
            v, s = inner(b), start(b)
            n = length(b) if length is not None else None
            if v is None or s is None or (length is not None and n is None):
                return None
            s = int(s)
            begin = s - 1 if s > 0 else (len(v) + s if s < 0 else 0)
            return v[max(begin, 0):] if n is None else v[max(begin, 0):max(begin, 0) + int(n)]
        return substring
    if isinstance(node, exp.Case):
        if node.this is not None:
            subject = _compile(node.this)
            arms = [(_compile(i.this), _compile(i.args["true"])) for i in node.args.get("ifs") or []]

            def test(b, when):
                return _cmp_values(subject(b), when(b), lambda p, q: p == q) is True
        else:
            subject = None
            arms = [(_compile(i.this), _compile(i.args["true"])) for i in node.args.get("ifs") or []]

            def test(b, when):
                return _truth(when(b), "CASE WHEN") is True
        default = _compile(node.args["default"]) if node.args.get("default") is not None \
            else (lambda b: None)

        def case(b):
            for when, then in arms:
                if test(b, when):
                    return then(b)
            return default(b)
        return case
    if isinstance(node, exp.If):
        cond_, then = _compile(node.this), _compile(node.args["true"])
        other = _compile(node.args["false"]) if node.args.get("false") is not None \
            else (lambda b: None)
        return lambda b: then(b) if _truth(cond_(b), "IF") is True else other(b)
    if isinstance(node, exp.Coalesce):
        parts = [_compile(node.this)] + [_compile(e) for e in node.expressions]

        def coalesce(b):
            for part in parts:
                value = part(b)
                if value is not None:
                    return value
            return None
        return coalesce
    if isinstance(node, exp.Anonymous) and node.name.lower() == "raise_error":
        message = node.expressions[0].this if node.expressions else ""

        def raise_error(b):
            raise RaisedError(message)
        return raise_error
    if isinstance(node, (exp.Least, exp.Greatest)):
        parts = [_compile(node.this)] + [_compile(e) for e in node.expressions]
        pick = min if isinstance(node, exp.Least) else max

        def extreme(b):                           # Spark's LEAST / GREATEST skip NULLs
            values = [v for v in (part(b) for part in parts) if v is not None]
            return pick(values) if values else None
        return extreme
    raise NotImplementedError(f"reference evaluator: scalar {type(node).__name__} "
                              f"({node.sql(dialect='spark')})")


def _date_plus_interval(node) -> Fn:
    """date +/- INTERVAL 'n' DAY | MONTH | YEAR, as Spark computes it (months clamp the day
    to the month's last day)."""
    import calendar
    from datetime import timedelta
    interval = node.expression
    unit = (interval.unit.name if interval.unit is not None else "").upper().rstrip("S")
    if unit not in ("DAY", "MONTH", "YEAR"):
        raise NotImplementedError(f"reference evaluator: INTERVAL {unit}")
    base, amount = _compile(node.this), _compile(interval.this)
    sign = -1 if isinstance(node, exp.Sub) else 1

    def shift(b):
        d, n = base(b), amount(b)
        if d is None or n is None:
            return None
        n = sign * int(Fraction(str(n)))
        if unit == "DAY":
            return d + timedelta(days=n)
        months = d.year * 12 + d.month - 1 + (12 * n if unit == "YEAR" else n)
        year, month = divmod(months, 12)
        return date(year, month + 1, min(d.day, calendar.monthrange(year, month + 1)[1]))
    return shift


# ---------------------------------------------------------------------------------------------
# environments
# ---------------------------------------------------------------------------------------------

@dataclass
class Env:
    relations: Mapping[str, Table] = field(default_factory=dict)
    deltas: Mapping[str, Table] = field(default_factory=dict)
    maps: Mapping[str, Mapping[tuple, Any]] = field(default_factory=dict)


def _as_env(env) -> Env:
    if env is None:
        return Env()
    if isinstance(env, Env):
        return env
    if isinstance(env, Mapping):
        unknown = set(env) - {"relations", "deltas", "maps"}
        if unknown:
            raise ValueError(f"env keys must be relations/deltas/maps, got {sorted(unknown)}")
        return Env(env.get("relations") or {}, env.get("deltas") or {}, env.get("maps") or {})
    raise TypeError(f"env must be an Env or a mapping, not {type(env).__name__}")


def _column(row: Row, col: str):
    if col in row:
        return row[col]
    low = col.lower()
    for k, v in row.items():
        if k.lower() == low:
            return v
    raise KeyError(f"reference evaluator: row {dict(row)!r} has no column {col!r}")


class _Tables:
    """Pre-aggregated projections of relations/batches/maps, with hash indexes on demand."""

    def __init__(self, env: Env):
        self.env = env
        self._proj: Dict[tuple, Dict[tuple, Any]] = {}
        self._index: Dict[tuple, Dict[tuple, List[Tuple[tuple, Any]]]] = {}
        self._by_atom: Dict[Any, Dict[tuple, Any]] = {}

    def grouped(self, query) -> Dict[tuple, Any]:
        """The query evaluated per group (cached)."""
        key = ("grouped", query)
        if key not in self._by_atom:
            self._by_atom[key] = _evaluate(query, self)
        return self._by_atom[key]

    def multisets(self, query) -> Dict[tuple, Dict[Any, Any]]:
        """A multiset query evaluated per input key: {inputs: {value: count}} (cached)."""
        key = ("multisets", query)
        if key not in self._by_atom:
            out: Dict[tuple, Dict[Any, Any]] = {}
            for k, count in self.grouped(query).items():
                out.setdefault(k[:-1], {})[k[-1]] = count
            self._by_atom[key] = out
        return self._by_atom[key]

    def entries(self, atom) -> Dict[tuple, Any]:
        """{value tuple for the atom's variables: multiplicity or map value}, zeros dropped."""
        found = self._by_atom.get(atom)
        if found is None:
            found = self._by_atom[atom] = self._entries(atom)
        return found

    def _entries(self, atom) -> Dict[tuple, Any]:
        if isinstance(atom, Groups):
            return {k: 1 for k in _evaluate(atom.query, self)}
        if isinstance(atom, Domain):
            # every key some row of the query reaches (not only keys whose sum is non-zero):
            # a domain is the set of inputs a batch touches
            keys = {}
            for mono in atom.query.monomials:
                for key, mult in _eval_monomial(mono, tuple(atom.query.group), self):
                    if mult != 0:
                        keys[key] = 1
            return keys
        if isinstance(atom, MapRef):
            key = ("map", atom.ref)
            if key not in self._proj:
                if atom.ref not in self.env.maps:
                    raise KeyError(f"reference evaluator: no map {atom.ref!r} in the environment")
                out = {}
                for k, v in self.env.maps[atom.ref].items():
                    k = tuple(k) if isinstance(k, (tuple, list)) else (k,)
                    if len(k) != len(atom.vars):
                        raise ValueError(f"map {atom.name} key {k!r} does not match {atom.vars}")
                    v = _exact(v)
                    if v != 0:
                        out[k] = out.get(k, 0) + v
                self._proj[key] = out
            return self._proj[key]
        kind = "delta" if isinstance(atom, DeltaRel) else "rel"
        key = (kind, atom.table, atom.columns)
        if key not in self._proj:
            source = self.env.deltas if kind == "delta" else self.env.relations
            if atom.table not in source:
                what = "batch" if kind == "delta" else "relation"
                raise KeyError(f"reference evaluator: no {what} for table {atom.table!r}")
            out: Dict[tuple, Any] = {}
            for row, mult in source[atom.table]:
                values = tuple(_column(row, c) for c in atom.columns)
                out[values] = out.get(values, 0) + _exact(mult)
            self._proj[key] = {k: v for k, v in out.items() if v != 0}
        return self._proj[key]

    def lookup(self, atom, positions: Tuple[int, ...], values: tuple):
        entries = self.entries(atom)
        if not positions:
            return entries.items()
        ident = (("map", atom.ref) if isinstance(atom, MapRef) else ("dom", atom) if isinstance(atom, (Domain, Groups)) else
                 ("delta" if isinstance(atom, DeltaRel) else "rel", atom.table, atom.columns), positions)
        index = self._index.get(ident)
        if index is None:
            index = {}
            for k, v in entries.items():
                index.setdefault(tuple(k[p] for p in positions), []).append((k, v))
            self._index[ident] = index
        return index.get(values, ())


# ---------------------------------------------------------------------------------------------
# evaluation
# ---------------------------------------------------------------------------------------------

_RELATIONAL = (Rel, DeltaRel, MapRef, Domain, Groups)


def evaluate(query: Query, env=None, **parts) -> Dict[tuple, Any]:
    """{group value tuple: multiplicity} of the query over the environment (zeros dropped).

    `env` is an Env, a dict with keys relations/deltas/maps, or given as keyword arguments.
    """
    if parts:
        if env is not None:
            raise TypeError("give env or keyword parts, not both")
        env = parts
    return _evaluate(query, _Tables(_as_env(env)))


def _evaluate(query: Query, tables: "_Tables") -> Dict[tuple, Any]:
    out: Dict[tuple, Any] = {}
    for mono in query.monomials:
        for key, mult in _eval_monomial(mono, tuple(query.group), tables):
            out[key] = out.get(key, 0) + mult
    return {k: _tidy(v) for k, v in out.items() if v != 0}


def _nested_value(atom: Nested, binding, tables: "_Tables"):
    """x := Q for the inputs bound in `binding` (0 when Q has no rows for them; a multiset
    kind's value over its values with a positive count)."""
    key = tuple(binding[g] for g in atom.inputs)
    if atom.kind == SUM:
        if atom.null_safe:                 # a GROUP BY group: NULL keys match
            return tables.grouped(atom.query).get(key, 0)
        init = {g: binding[g] for g in atom.inputs}
        total = 0
        for mono in atom.query.monomials:
            for _, mult in _eval_monomial(mono, tuple(atom.query.group), tables, init):
                total = total + mult
        return _tidy(total)
    if atom.null_safe:
        counts = tables.multisets(atom.query).get(key, {})
    else:
        init = {g: binding[g] for g in atom.inputs}
        counts = {}
        for mono in atom.query.monomials:
            for k, mult in _eval_monomial(mono, tuple(atom.query.group), tables, init):
                counts[k[-1]] = counts.get(k[-1], 0) + mult
    return multiset_value(atom.kind, counts)


class RaisedError(Exception):
    """raise_error(message) evaluated (as Spark raises it)."""


def multiset_value(kind: str, counts: Mapping[Any, Any]):
    """MIN / MAX / COUNT(DISTINCT) / SUM(DISTINCT) of a multiset given as {value: count}: over
    the non-NULL values with a positive count (NULL, or 0 for COUNT, when there is none)."""
    present = [v for v, c in counts.items() if c != 0]
    if None in present or any(counts[v] < 0 for v in present):
        raise ValueError(f"reference evaluator: a multiset holds NULL or a negative count: "
                         f"{dict(counts)}")
    if kind == COUNT_DISTINCT:
        return len(present)
    if not present:
        return EMPTY_VALUE[kind]
    if kind == SUM_DISTINCT:
        return _tidy(sum(_num(v, "SUM(DISTINCT)") for v in present))
    values = [_exact(v) for v in present]
    best = values[0]
    for v in values[1:]:
        if _cmp_values(v, best, (lambda p, q: p < q) if kind == MIN else (lambda p, q: p > q)):
            best = v
    return _tidy(best)


def _eval_monomial(mono: Monomial, group: Tuple[str, ...], tables: _Tables, init=None):
    coef = _exact(mono.coef)
    relational = [a for a in mono.atoms if isinstance(a, _RELATIONAL)]
    others = []
    for a in mono.atoms:
        if isinstance(a, Const):
            coef = coef * _exact(a.value)
        elif isinstance(a, (Lift, Cond, Value, Nested)):
            others.append(a)
        elif not isinstance(a, _RELATIONAL):
            raise TypeError(f"reference evaluator: unexpected atom {a!r}")
    if coef == 0:
        return

    results: List[Tuple[tuple, Any]] = []

    def filters(binding, pending, remaining):
        """Apply every non-relational atom that is ready; returns (mult, pending) or None."""
        mult = 1
        pending = list(pending)
        rel_vars = set().union(*(a.vars for a in remaining)) if remaining else set()
        progress = True
        while progress:
            progress = False
            for atom in list(pending):
                if isinstance(atom, (Lift, Nested)):
                    inputs = atom.expr.vars if isinstance(atom, Lift) else set(atom.inputs)
                    if not inputs <= binding.keys():
                        continue
                    if atom.var not in binding and atom.var in rel_vars:
                        continue    # a relation/map binds it: test after that atom
                    value = _exact(eval_scalar(atom.expr, binding)) if isinstance(atom, Lift) \
                        else _nested_value(atom, binding, tables)
                    if atom.var in binding:
                        bound = binding[atom.var]
                        same = (bound is None and value is None) or (
                            bound is not None and value is not None
                            and _cmp_values(bound, value, lambda p, q: p == q))
                        if not same:
                            return None
                    else:
                        binding[atom.var] = value
                elif not atom.free_vars() <= binding.keys():
                    continue
                elif isinstance(atom, Cond):
                    if _truth(eval_scalar(atom.pred, binding), "a condition") is not True:
                        return None
                else:  # Value
                    value = eval_scalar(atom.expr, binding)
                    if value is None:
                        return None
                    mult = mult * _num(value, "a value term")
                pending.remove(atom)
                progress = True
        return mult, pending

    def step(binding, mult, remaining, pending):
        applied = filters(binding, pending, remaining)
        if applied is None:
            return
        fmult, pending = applied
        if fmult == 0:
            return
        mult = mult * fmult
        if not remaining:
            if pending:
                unbound = sorted(set().union(*(a.free_vars() for a in pending)) - binding.keys())
                raise ValueError(f"reference evaluator: unbound variables {unbound} in "
                                 f"{pending!r} (monomial {mono!r})")
            missing = [v for v in group if v not in binding]
            if missing:
                raise ValueError(f"reference evaluator: group variables {missing} are not bound "
                                 f"by monomial {mono!r}")
            results.append((tuple(binding[v] for v in group), mult))
            return
        # Next relational atom: the one with the most bound variables (then the smallest).
        best, best_key = 0, None
        for i, cand in enumerate(remaining):
            key = (sum(1 for v in cand.vars if v in binding), -len(tables.entries(cand)))
            if best_key is None or key > best_key:
                best, best_key = i, key
        atom = remaining[best]
        rest = remaining[:best] + remaining[best + 1:]
        positions = tuple(i for i, v in enumerate(atom.vars) if v in binding)
        bound_values = tuple(binding[atom.vars[i]] for i in positions)
        # GROUP BY groups: NULL is a key; a domain (a superset of the touched keys) holds
        # NULL keys too and matches them (the lowering binds the domain first and joins the
        # groups with <=>)
        null_safe = isinstance(atom, (Groups, Domain))
        if any(v is None for v in bound_values) and not null_safe:
            return                        # SQL `=`: NULL never matches
        for values, m in tables.lookup(atom, positions, bound_values):
            new = dict(binding)
            ok = True
            for var, val in zip(atom.vars, values):
                if var in new:
                    if null_safe and new[var] is None and val is None:
                        continue
                    # bound earlier or by this atom (a repeated variable): SQL `=`
                    if new[var] is None or val is None or not _cmp_values(new[var], val,
                                                                          lambda p, q: p == q):
                        ok = False
                        break
                else:
                    new[var] = val
            if ok:
                step(new, mult * m, rest, pending)

    step(dict(init or {}), coef, relational, others)
    yield from results


# ---------------------------------------------------------------------------------------------
# trigger programs
# ---------------------------------------------------------------------------------------------

def _reorder(result: Dict[tuple, Any], have: Sequence[str], want: Sequence[str]) -> Dict[tuple, Any]:
    """A column's rows keyed in map key order. A column fused into a map over the same join
    names its own variables, in the map's key order."""
    if tuple(have) == tuple(want) or (len(have) == len(want) and set(have) != set(want)):
        return result
    if sorted(have) != sorted(want):
        raise ValueError(f"query group {tuple(have)} does not match map keys {tuple(want)}")
    idx = [list(have).index(v) for v in want]
    return {tuple(k[i] for i in idx): v for k, v in result.items()}


class ProgramSimulator:
    """Viewlet's batch semantics over in-memory relations and maps.

    * Maps start as their definitions evaluated over the initial relations.
    * A batch ({table: [(row, signed multiplicity)]}) is processed relation by relation in
      `program.relations()` order. Each statement of a relation's trigger reads the maps as of
      before that trigger (the trigger's updates are applied after all its statements ran) and
      base relations (Rel atoms) with the changes of the relations processed before applied;
      the relation's own change is applied after its trigger.
    * Incremental statements add their result into `target.column`; `reevaluate`
      statements (depth 0) replace the column with the query evaluated over the relations
      including this relation's change. Zero entries are removed.
    `maps` is {map name: {column: {key tuple: value}}}.
    """

    def __init__(self, program, relations: Optional[Mapping[str, Table]] = None):
        self.program = program
        self.relations: Dict[str, List[Tuple[Row, Any]]] = {
            t: list(rows) for t, rows in (relations or {}).items()}
        for t in program.relations():
            self.relations.setdefault(t, [])
        tables = _Tables(Env(relations=self.relations))
        self.maps: Dict[str, Dict[str, Dict[tuple, Any]]] = {}
        for name, mdef in program.maps.items():
            self.maps[name] = {col: _reorder(_evaluate(q, tables), q.group, mdef.keys)
                               for col, q in mdef.values.items()}
        self.batches = 0

    def map_values(self) -> Dict[str, Dict[tuple, Any]]:
        """{MapRef.ref: {key: value}}: what MapRef atoms read (a map's value column by the
        map's name, its other columns by (name, column))."""
        return {(n if c == MAP_VALUE else (n, c)): values
                for n, cols in self.maps.items() for c, values in cols.items()}

    def apply(self, batch: Mapping[str, Table]):
        order = list(self.program.relations())
        order += sorted(t for t in batch if t not in order)
        for rel in order:
            changes = list(batch.get(rel) or ())
            if not changes:
                continue
            stmts = self.program.statements_for(rel)
            tables = _Tables(Env(relations=self.relations, deltas={rel: changes},
                                 maps=self.map_values()))
            post = None
            adds: List[Tuple[str, str, Dict[tuple, Any]]] = []
            sets: List[Tuple[str, str, Dict[tuple, Any]]] = []
            for s in stmts:
                mdef = self.program.maps[s.target]
                if s.column not in mdef.values:
                    raise ValueError(f"statement targets unknown column {s.target}.{s.column}")
                if s.strategy == "reevaluate":
                    if post is None:
                        after = dict(self.relations)
                        after[rel] = self.relations.get(rel, []) + changes
                        post = _Tables(Env(relations=after))
                    res = _evaluate(s.rhs, post)
                    sets.append((s.target, s.column, _reorder(res, s.rhs.group, mdef.keys)))
                elif s.strategy == "incremental":
                    res = _evaluate(s.rhs, tables)
                    adds.append((s.target, s.column, _reorder(res, s.rhs.group, mdef.keys)))
                else:
                    raise ValueError(f"unknown statement strategy {s.strategy!r}")
            for target, col, res in sets:
                self.maps[target][col] = dict(res)
            for target, col, res in adds:
                column = self.maps[target][col]
                for k, v in res.items():
                    nv = _tidy(column.get(k, 0) + v)
                    if nv == 0:
                        column.pop(k, None)
                    else:
                        column[k] = nv
            self.relations[rel] = self.relations.get(rel, []) + changes
        self.batches += 1
        return self.maps

    def expected(self, name: Optional[str] = None, _tables=None) -> Dict[str, Dict[tuple, Any]]:
        """Each column of a map (default: the view state) re-evaluated from its definition
        over the current relations."""
        mdef = self.program.maps[name or self.program.view_map]
        tables = _tables or _Tables(Env(relations=self.relations))
        return {col: _reorder(_evaluate(q, tables), q.group, mdef.keys)
                for col, q in mdef.values.items()}

    def expected_all(self) -> Dict[str, Dict[str, Dict[tuple, Any]]]:
        """`expected` for every map: what `maps` must equal."""
        tables = _Tables(Env(relations=self.relations))
        return {name: self.expected(name, tables) for name in self.program.maps}


def run_program(program, relations: Mapping[str, Table], batches: Iterable[Mapping[str, Table]],
                after_batch: Optional[Callable[[ProgramSimulator], None]] = None):
    """Run the batches through the program; returns the final maps
    ({map name: {column: {key tuple: value}}}). `after_batch(sim)` runs after each batch."""
    sim = ProgramSimulator(program, relations)
    for batch in batches:
        sim.apply(batch)
        if after_batch is not None:
            after_batch(sim)
    return sim.maps
