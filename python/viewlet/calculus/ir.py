"""The calculus (AGCA of the DBToaster papers) over generalized multiset relations.

A query maps tuples of variable bindings to multiplicities. Multiplication is a natural join
(multiplicities multiply), addition is bag union (multiplicities add), `Sum[g]` projects onto
group variables summing multiplicities. Aggregate values live in the multiplicity.

Atoms:
  Rel(t, cols, vars)      base relation t, its columns bound to variables
  DeltaRel(t, cols, vars) the batch of changes to t (signed multiplicities)
  MapRef(m, vars, c)      a materialized map, its value column c as the multiplicity
  Const(c)                the constant c
  Value(e)                the value of the scalar e over bound variables
  Cond(p)                 1 when the predicate p holds, else 0 (NULL is not true)
  Lift(x, e)              the assignment x := e (binds x; multiplicity 1)
  Nested(x, Q, kind)      the assignment x := Q of a nested aggregate: Q is a query whose
                          group variables are its inputs (correlation variables, bound by the
                          enclosing monomial); x is Q's value for them, 0 when Q is empty.
                          Kinds other than `sum` read Q as a multiset: Q's last group variable
                          is a value, Q's multiplicity the number of rows with it, and x is the
                          least / greatest value with a positive count (MIN / MAX, NULL when
                          there is none), the number of such values (COUNT(DISTINCT)) or their
                          sum (SUM(DISTINCT), NULL when there is none)
  Domain(Q)               1 for each binding of Q's group variables where Q has rows: the
                          keys a batch touches (Hot Dog domain extraction); only in deltas
Composites: Sum(group, body), Add(terms), Mul(factors).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Tuple, Union

from .scalar import Scalar

Number = Union[int, Fraction]


@dataclass(frozen=True)
class Rel:
    table: str
    columns: Tuple[str, ...]
    vars: Tuple[str, ...]

    def free_vars(self):
        return frozenset(self.vars)


@dataclass(frozen=True)
class DeltaRel:
    table: str
    columns: Tuple[str, ...]
    vars: Tuple[str, ...]

    def free_vars(self):
        return frozenset(self.vars)


#: the value column of a map with one value (maps fused by their join share a key, one
#: value column per query: compiler/hoivm.py)
MAP_VALUE = "__v"


@dataclass(frozen=True)
class MapRef:
    name: str
    vars: Tuple[str, ...]
    column: str = MAP_VALUE

    def free_vars(self):
        return frozenset(self.vars)

    @property
    def ref(self):
        """What the atom reads: the map, or (map, column) for a map's other columns."""
        return self.name if self.column == MAP_VALUE else (self.name, self.column)


@dataclass(frozen=True)
class Const:
    value: Number

    def free_vars(self):
        return frozenset()


@dataclass(frozen=True)
class Value:
    expr: Scalar

    def free_vars(self):
        return self.expr.vars


@dataclass(frozen=True)
class Cond:
    pred: Scalar

    def free_vars(self):
        return self.pred.vars


@dataclass(frozen=True)
class Lift:
    var: str
    expr: Scalar

    def free_vars(self):
        return frozenset({self.var}) | self.expr.vars


SUM = "sum"
MIN, MAX, COUNT_DISTINCT, SUM_DISTINCT = "min", "max", "count_distinct", "sum_distinct"
MULTISET_KINDS = (MIN, MAX, COUNT_DISTINCT, SUM_DISTINCT)
# a nested aggregate's value over no rows (for inputs no row matches)
EMPTY_VALUE = {SUM: 0, COUNT_DISTINCT: 0, MIN: None, MAX: None, SUM_DISTINCT: None}


@dataclass(frozen=True)
class Nested:
    var: str
    query: "Query"
    null_safe: bool = False            # inputs match NULL keys too (GROUP BY groups)
    kind: str = SUM                    # SUM or one of MULTISET_KINDS
    cached: bool = False               # its query is kept as a view cache (compiler/caches.py)

    def __post_init__(self):
        if self.kind not in EMPTY_VALUE:
            raise ValueError(f"unknown nested aggregate kind {self.kind!r}")
        if self.kind != SUM and not self.query.group:
            raise ValueError(f"a {self.kind} nested aggregate needs a value variable")

    def free_vars(self):
        return frozenset({self.var}) | frozenset(self.inputs)

    @property
    def inputs(self) -> Tuple[str, ...]:
        """The correlation variables (a multiset's value variable is private to Q)."""
        return self.query.group if self.kind == SUM else self.query.group[:-1]

    @property
    def value_var(self):
        """A multiset's value variable (Q's last group variable); None for a sum."""
        return None if self.kind == SUM else self.query.group[-1]

    def with_query(self, query: "Query") -> "Nested":
        return replace(self, query=query)


@dataclass(frozen=True)
class Domain:
    query: "Query"

    @property
    def vars(self) -> Tuple[str, ...]:
        return self.query.group

    def free_vars(self):
        return frozenset(self.query.group)


@dataclass(frozen=True)
class Groups:
    """1 for each binding of Q's group variables where Q is non-zero: the rows (groups) of
    an aggregating subquery in FROM, NULL keys included."""
    query: "Query"

    @property
    def vars(self) -> Tuple[str, ...]:
        return self.query.group

    def free_vars(self):
        return frozenset(self.query.group)


@dataclass(frozen=True)
class Sum:
    group: Tuple[str, ...]
    body: "Expr"

    def free_vars(self):
        return frozenset(self.group)


@dataclass(frozen=True)
class Add:
    terms: Tuple["Expr", ...]

    def free_vars(self):
        return frozenset().union(*(t.free_vars() for t in self.terms))


@dataclass(frozen=True)
class Mul:
    factors: Tuple["Expr", ...]

    def free_vars(self):
        return frozenset().union(*(f.free_vars() for f in self.factors))


Atom = Union[Rel, DeltaRel, MapRef, Value, Cond, Lift, Nested, Domain, Groups]
Expr = Union[Atom, Const, Sum, Add, Mul]
ZERO = Const(0)
ONE = Const(1)


def product(factors) -> "Expr":
    """The product of a non-empty list of factors (the factor itself when there is one)."""
    factors = tuple(factors)
    return factors[0] if len(factors) == 1 else Mul(factors)


def relation_atoms(atoms):
    return [a for a in atoms if isinstance(a, Rel)]


def delta_atoms(atoms):
    return [a for a in atoms if isinstance(a, DeltaRel)]


@dataclass(frozen=True)
class Monomial:
    """coef * product of atoms: one term of a query in polynomial normal form."""

    coef: Number
    atoms: Tuple[Atom, ...] = field(default=())

    def free_vars(self):
        return frozenset().union(*(a.free_vars() for a in self.atoms)) if self.atoms else frozenset()

    def relations(self):
        out = {a.table for a in self.atoms if isinstance(a, (Rel, DeltaRel))}
        for a in self.atoms:
            if isinstance(a, (Nested, Domain, Groups)):
                out |= a.query.relations()
        return out

    def degree(self) -> int:
        return sum(1 for a in self.atoms if isinstance(a, Rel))

    def to_expr(self) -> Expr:
        factors = ([] if self.coef == 1 else [Const(self.coef)]) + list(self.atoms)
        if not factors:
            return ONE
        return factors[0] if len(factors) == 1 else Mul(tuple(factors))


@dataclass(frozen=True)
class Query:
    """Sum[group](sum of monomials): the normal form the compiler works on."""

    group: Tuple[str, ...]
    monomials: Tuple[Monomial, ...]

    def relations(self):
        out = set()
        for m in self.monomials:
            out |= m.relations()
        return out

    def degree(self) -> int:
        return max((m.degree() for m in self.monomials), default=0)

    def is_zero(self) -> bool:
        return not self.monomials

    def to_expr(self) -> Expr:
        body = Add(tuple(m.to_expr() for m in self.monomials)) if len(self.monomials) != 1 \
            else self.monomials[0].to_expr()
        return Sum(self.group, body if self.monomials else ZERO)


def walk_atoms(query: Query):
    """Every atom of the query, including those inside nested aggregates and domains."""
    for m in query.monomials:
        for a in m.atoms:
            yield a
            if isinstance(a, (Nested, Domain, Groups)):
                yield from walk_atoms(a.query)
