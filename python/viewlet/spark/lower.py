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

from ..calculus.ir import Cond, DeltaRel, Lift, MapRef, Monomial, Query, Rel, Value
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


@dataclass(frozen=True)
class MonomialSelect:
    """A monomial as SQL pieces: key expressions, the multiplicity and the FROM/WHERE clause.
    Monomials with the same keys and body differ only in their products, so several of them
    (statements writing different value columns of one map) can share one SELECT."""

    keys: tuple
    product: str
    body: str

    def sql(self, out_keys: Sequence[str], out_value: str) -> str:
        keys = [f"{k} AS {q(o)}" for k, o in zip(self.keys, out_keys)]
        return f"SELECT {', '.join(keys + [f'{self.product} AS {q(out_value)}'])} {self.body}"


def lower_monomial(mono: Monomial, group: Sequence[str], source: AtomSource, sb: SqlBuilder,
                   out_keys: Sequence[str], out_value: str) -> str:
    return monomial_select(mono, group, source, sb).sql(out_keys, out_value)


def monomial_select(mono: Monomial, group: Sequence[str], source: AtomSource,
                    sb: SqlBuilder) -> MonomialSelect:
    froms: List[str] = []
    where: List[str] = []
    mults: List[str] = []
    binding: Dict[str, str] = {}

    def bind(var: str, sql: str):
        if var in binding:
            where.append(f"{binding[var]} = {sql}")
        else:
            binding[var] = sql

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

    # Assignments bind variables from other variables; resolve them in dependency order.
    lifts = [a for a in mono.atoms if isinstance(a, Lift)]
    while lifts:
        ready = [l for l in lifts if all(v in binding for v in l.expr.vars)]
        if not ready:
            missing = sorted(set().union(*(l.expr.vars for l in lifts)) - set(binding))
            raise ViewletError(f"internal: unbound variables {missing} in an assignment")
        for l in ready:
            value = l.expr.to_sql(binding.__getitem__)
            if l.var in binding:
                where.append(f"({binding[l.var]}) <=> ({value})")
            else:
                binding[l.var] = f"({value})"
            lifts.remove(l)

    def render(scalar):
        missing = scalar.vars - set(binding)
        if missing:
            raise ViewletError(f"internal: unbound variables {sorted(missing)} in {scalar.key}")
        return scalar.to_sql(binding.__getitem__)

    for atom in mono.atoms:
        if isinstance(atom, Cond):
            where.append(f"({render(atom.pred)})")
        elif isinstance(atom, Value):
            mults.append(f"({render(atom.expr)})")
    if mono.coef != 1:
        mults.insert(0, _number(mono.coef))
    if not froms:
        froms.append("(SELECT 1) AS unit")
    product = " * ".join(mults) if mults else "1"
    body = f"FROM {', '.join(froms)}"
    if where:
        body += " WHERE " + " AND ".join(where)
    return MonomialSelect(tuple(binding[v] for v in group), product, body)


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
