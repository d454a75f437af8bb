"""Lowering calculus queries to Spark SQL.

Each monomial becomes one SELECT: its relation, batch and map atoms are FROM items (Spark
DataFrames passed as parameters), shared variables become join equalities, conditions go to
WHERE, and the multiplicity is the product of the atoms' multiplicities, the coefficient and
the value terms, summed per group. Monomials are combined with UNION ALL and summed again.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Sequence

from pyspark.sql import DataFrame

from ..calculus.ir import Cond, DeltaRel, Domain, Groups, Lift, MapRef, Monomial, Nested, Query, Rel, Value
from ..errors import ViewletError

MULT = "__m"


def q(name: str) -> str:
    """A Spark SQL identifier, backquoted."""
    return "`" + name.replace("`", "``") + "`"


@dataclass
class SqlBuilder:
    """Collects DataFrame parameters for `spark.sql(text, **params)`."""

    params: Dict[str, DataFrame] = field(default_factory=dict)

    def frame(self, df: DataFrame) -> str:
        for name, existing in self.params.items():
            if existing is df:
                return "{" + name + "}"
        name = f"f{len(self.params)}"
        self.params[name] = df
        return "{" + name + "}"


class AtomSource:
    """Where a trigger statement's atoms read from (depends on the batch position)."""

    def delta(self, relation: str) -> DataFrame: ...        # base columns + __m
    def relation(self, relation: str) -> DataFrame: ...     # base columns
    def map(self, name: str) -> DataFrame: ...              # k0..kn + value column(s)
    def map_value(self, name: str) -> str: ...


def lower_monomial(mono: Monomial, group: Sequence[str], source: AtomSource, sb: SqlBuilder,
                   out_keys: Sequence[str], out_value: str, pre=None) -> str:
    """One monomial as a SELECT of out_keys + out_value. `pre` = (FROM item, {var: SQL})
    binds input variables of a nested query from its enclosing query's distinct bindings."""
    froms: List[str] = []
    where: List[str] = []
    mults: List[str] = []
    binding: Dict[str, str] = {}

    def bind(var: str, sql: str):
        if var in binding:
            where.append(f"{binding[var]} = {sql}")
        else:
            binding[var] = sql

    if pre is not None:
        froms.append(pre[0])
        binding.update(pre[1])
    for i, atom in enumerate(mono.atoms):
        alias = f"a{i}"
        if isinstance(atom, DeltaRel):
            froms.append(f"{sb.frame(source.delta(atom.table))} AS {alias}")
            for col, var in zip(atom.columns, atom.vars):
                bind(var, f"{alias}.{q(col)}")
            mults.append(f"{alias}.{q(MULT)}")
        elif isinstance(atom, Rel):
            froms.append(f"{sb.frame(source.relation(atom.table))} AS {alias}")
            for col, var in zip(atom.columns, atom.vars):
                bind(var, f"{alias}.{q(col)}")
        elif isinstance(atom, MapRef):
            froms.append(f"{sb.frame(source.map(atom.name))} AS {alias}")
            for j, var in enumerate(atom.vars):
                bind(var, f"{alias}.{q(f'k{j}')}")
            mults.append(f"{alias}.{q(source.map_value(atom.name))}")
        elif isinstance(atom, Groups):
            keys = [f"d{j}" for j in range(len(atom.vars))]
            inner = lower_query(atom.query, source, sb, keys, "__g", aggregate=True)
            froms.append(f"(SELECT {', '.join(q(k) for k in keys) or '1 AS unit'} FROM ({inner}) AS gg "
                         f"WHERE {q('__g')} <> 0) AS {alias}")
            for k, var in zip(keys, atom.vars):
                if var in binding:             # GROUP BY groups: NULL is a key
                    where.append(f"{binding[var]} <=> {alias}.{q(k)}")
                else:
                    binding[var] = f"{alias}.{q(k)}"
        elif isinstance(atom, Domain):
            keys = [f"d{j}" for j in range(len(atom.vars))]
            inner = lower_query(atom.query, source, sb, keys, "__d", aggregate=False)
            froms.append(f"(SELECT DISTINCT {', '.join(q(k) for k in keys)} FROM ({inner}) AS dd)"
                         f" AS {alias}")
            for k, var in zip(keys, atom.vars):
                if var in binding:             # a superset of the touched keys: NULL too
                    where.append(f"{binding[var]} <=> {alias}.{q(k)}")
                else:
                    binding[var] = f"{alias}.{q(k)}"

    pending = [a for a in mono.atoms if isinstance(a, (Lift, Nested, Cond, Value))]
    stage = 0
    while True:
        # Assignments bind variables from other variables; resolve them in dependency order.
        progress = True
        while progress:
            progress = False
            for l in [a for a in pending if isinstance(a, Lift)]:
                if all(v in binding for v in l.expr.vars):
                    value = l.expr.to_sql(binding.__getitem__)
                    if l.var in binding:
                        where.append(f"({binding[l.var]}) <=> ({value})")
                    else:
                        binding[l.var] = f"({value})"
                    pending.remove(l)
                    progress = True
        for atom in [a for a in pending if isinstance(a, (Cond, Value)) and a.free_vars() <= set(binding)]:
            if isinstance(atom, Cond):
                where.append(f"({atom.pred.to_sql(binding.__getitem__)})")
            else:
                mults.append(f"({atom.expr.to_sql(binding.__getitem__)})")
            pending.remove(atom)
        nested = [a for a in pending if isinstance(a, Nested) and set(a.inputs) <= set(binding)]
        if not nested:
            break
        # Nested aggregates: wrap what is bound so far as a subquery, compute each nested
        # query once per distinct input binding, and LEFT JOIN the values back.
        stage += 1
        cols = {v: f"c{j}" for j, v in enumerate(sorted(binding))}
        inner = _select(froms, where, [f"{binding[v]} AS {q(c)}" for v, c in cols.items()]
                        + [f"{_product(mults, 1)} AS {q(MULT)}"])
        base = f"s{stage}"
        text = f"({inner}) AS {base}"
        for n, atom in enumerate(nested):
            nalias = f"n{stage}_{n}"
            eq = "=" if _range_restricted(atom) and not atom.null_safe else "<=>"
            text += f" LEFT JOIN ({_nested_sql(atom, inner, cols, source, sb)}) AS {nalias} ON " + (
                " AND ".join(f"{base}.{q(cols[g])} {eq} {nalias}.{q(cols[g])}" for g in atom.inputs)
                or "TRUE")
        froms, where, mults = [text], [], [f"{base}.{q(MULT)}"]
        new_binding = {v: f"{base}.{q(c)}" for v, c in cols.items()}
        for n, atom in enumerate(nested):
            value = f"COALESCE(n{stage}_{n}.{q(NESTED)}, 0)"
            if atom.var in new_binding:
                where.append(f"{new_binding[atom.var]} <=> {value}")
            else:
                new_binding[atom.var] = value
            pending.remove(atom)
        binding = new_binding
    if pending:
        missing = sorted(set().union(*(a.free_vars() for a in pending)) - set(binding))
        raise ViewletError(f"internal: unbound variables {missing} in {pending}")
    if mono.coef != 1:
        mults.insert(0, _number(mono.coef))
    if not froms:
        froms.append("(SELECT 1) AS unit")
    keys = [f"{binding[v]} AS {q(k)}" for v, k in zip(group, out_keys)]
    return _select(froms, where, keys + [f"{_product(mults, 1)} AS {q(out_value)}"])


NESTED = "__n"


def _select(froms, where, items) -> str:
    sql = f"SELECT {', '.join(items)} FROM {', '.join(froms) if froms else '(SELECT 1) AS unit'}"
    if where:
        sql += " WHERE " + " AND ".join(where)
    return sql


def _product(mults, default) -> str:
    return " * ".join(mults) if mults else str(default)


def _range_restricted(atom: Nested) -> bool:
    for m in atom.query.monomials:
        bound = set()
        for a in m.atoms:
            if isinstance(a, (Rel, DeltaRel, MapRef, Domain, Groups)):
                bound |= set(a.vars)
        if not set(atom.inputs) <= bound:
            return False
    return True


def _nested_sql(atom: Nested, enclosing: str, cols, source, sb) -> str:
    """The nested query's value per distinct binding of its inputs in the enclosing rows."""
    inputs = list(atom.inputs)
    keys = [cols[g] for g in inputs]
    if not atom.query.monomials:
        return (f"SELECT DISTINCT {', '.join(q(k) for k in keys) + ', ' if keys else ''}"
                f"CAST(0 AS BIGINT) AS {q(NESTED)} FROM ({enclosing}) AS e")
    if _range_restricted(atom):
        # Every monomial binds the inputs itself: aggregate per input, no enclosing rows
        # needed (the LEFT JOIN back uses SQL `=`, so NULL inputs get 0, as correlation does).
        parts = [lower_monomial(m, inputs, source, sb, keys, NESTED) for m in atom.query.monomials]
        union = " UNION ALL ".join(f"({p})" for p in parts)
        key_list = ", ".join(q(k) for k in keys)
        return (f"SELECT {key_list + ', ' if keys else ''}SUM({q(NESTED)}) AS {q(NESTED)} "
                f"FROM ({union}) AS u" + (f" GROUP BY {key_list}" if keys else ""))
    pre = None
    if inputs:
        domain = f"(SELECT DISTINCT {', '.join(q(k) for k in keys)} FROM ({enclosing}) AS e) AS inp"
        pre = (domain, {g: f"inp.{q(cols[g])}" for g in inputs})
    parts = [lower_monomial(m, inputs, source, sb, keys, NESTED, pre) for m in atom.query.monomials]
    union = " UNION ALL ".join(f"({p})" for p in parts)
    key_list = ", ".join(q(k) for k in keys)
    return (f"SELECT {key_list + ', ' if keys else ''}SUM({q(NESTED)}) AS {q(NESTED)} "
            f"FROM ({union}) AS u" + (f" GROUP BY {key_list}" if keys else ""))


def lower_query(query: Query, source: AtomSource, sb: SqlBuilder, out_keys: Sequence[str],
                out_value: str, aggregate: bool = True) -> str:
    """SQL for the query's rows: out_keys + out_value. Aggregated, one row per key; or not:
    rows whose values add up per key (NULL values count as 0), left for a later, single
    aggregation (every extra GROUP BY is a shuffle)."""
    parts = [lower_monomial(m, query.group, source, sb, out_keys, out_value) for m in query.monomials]
    union = " UNION ALL ".join(f"({p})" for p in parts)
    if not aggregate:
        return union if len(parts) == 1 else f"SELECT * FROM ({union}) AS u"
    keys = ", ".join(q(k) for k in out_keys)
    select_keys = f"{keys}, " if keys else ""
    group = f" GROUP BY {keys}" if keys else ""
    return (f"SELECT {select_keys}COALESCE(SUM({q(out_value)}), 0) AS {q(out_value)} "
            f"FROM ({union}) AS u{group}")


def _number(c) -> str:
    from fractions import Fraction
    if isinstance(c, Fraction) and c.denominator != 1:
        return f"(CAST({c.numerator} AS DOUBLE) / {c.denominator})"
    return f"CAST({int(c)} AS BIGINT)"
