"""The calculus's text form read back: the text `printer.show` / `show_monomial` print.

`parse(show(q)) == q` for the queries the compiler builds, so that delta rules, normalization
and NULL logic can be tested with calculus text in and calculus text out.

Grammar (blanks between tokens are free; SQL is a Spark SQL fragment read up to its closing
bracket, quotes and nested brackets respected):

    query    := 'Sum' '[' names ']' '(' ('0' | monomial ('+' monomial)*) ')'
    monomial := number | [number '*'] atom ('*' atom)*
    expr     := term ('+' term)*                    an Add when there are several terms
    term     := factor ('*' factor)*                a Mul when there are several factors
    factor   := number | 'Sum' '[' names ']' '(' expr ')' | '(' expr ')' | atom
    atom     := NAME '(' [COLUMN ':' NAME (',' COLUMN ':' NAME)*] ')'   relation; dNAME: batch
              | NAME ['.' COLUMN] '[' names ']'                        map (a value column)
              | ('Dom' | 'Groups') '[' names ']' '(' query ')'         domain, groups
              | NAME                                                   value of a variable
              | '{' SQL '}'                                            value of a scalar
              | '(' NAME ':=' flag* [KIND '[' NAME ']'] query ')'      nested aggregate
              | '(' NAME ':=' SQL ')'                                  assignment
              | '(' SQL ')'                                            condition
    flag     := 'null_safe' | 'cached'
    KIND     := 'MIN' | 'MAX' | 'COUNT_DISTINCT' | 'SUM_DISTINCT'
    number   := ['-'] DIGITS ['/' DIGITS]
    names    := [NAME (',' NAME)*]

Two readings need a rule, since the printer gives both the same text:
  * `dNAME(...)` is the batch of NAME. Pass `tables` (the base relations' names) when a base
    relation's own name starts with `d`: a name in `tables` is that relation.
  * In an expression (not in a query, whose monomials have no sums inside), `(...)` is a
    parenthesized sum when its text reads as a calculus sum of two or more terms, otherwise a
    condition. Printed conditions keep their backquotes there (`show` of an expression does not
    strip them) and contain SQL operators, which calculus terms do not.
Scalar variables are quoted identifiers (as the front end builds them); the printer strips
the quotes, so every column the SQL names is read back as a quoted variable.
"""
from __future__ import annotations

import re
from fractions import Fraction
from typing import FrozenSet, Iterable, Optional, Tuple

import sqlglot
from sqlglot import exp

from ..errors import ViewletError
from .ir import (MAP_VALUE, MULTISET_KINDS, SUM, Add, Const, Cond, DeltaRel, Domain, Expr, Groups, Lift,
                 MapRef, Monomial, Mul, Nested, Query, Rel, Sum, Value)
from .scalar import Scalar


class CalculusSyntaxError(ViewletError):
    """Calculus text that does not parse; `position` is the offset of the offending text."""

    kind = "parse"


def parse(text: str, tables: Optional[Iterable[str]] = None) -> Query:
    """The query `Sum[g](monomial + ...)` (what `show` prints for a Query)."""
    return _read(text, tables, lambda p: p.query())


parse_query = parse


def parse_expr(text: str, tables: Optional[Iterable[str]] = None) -> Expr:
    """An expression of Sum / Add / Mul over atoms (what `show` prints for an Expr)."""
    return _read(text, tables, lambda p: p.expr())


def parse_monomial(text: str, tables: Optional[Iterable[str]] = None) -> Monomial:
    """A monomial `coef * atom * ...` (what `show_monomial` prints)."""
    return _read(text, tables, lambda p: p.monomial())


def _read(text, tables, rule):
    parser = _Parser(text, frozenset(tables) if tables is not None else None)
    result = rule(parser)
    parser.end()
    return result


_NAME = re.compile(r"[A-Za-z_][\w$]*")
_COLUMN = re.compile(r"[^\s:,()\[\]{}]+")
_NUMBER = re.compile(r"-?\d+(?:/\d+)?")
_FLAGS = ("null_safe", "cached")
_CLOSERS = {"(": ")", "[": "]", "{": "}"}


class _Parser:
    def __init__(self, text: str, tables: Optional[FrozenSet[str]]):
        self.text, self.pos, self.tables = text, 0, tables

    # -- tokens --------------------------------------------------------------------------------

    def fail(self, expected: str, pos: Optional[int] = None):
        pos = self.pos if pos is None else pos
        found = self.text[pos:pos + 20]
        line = self.text.count("\n", 0, pos) + 1
        col = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        found = f"found {found!r}" if found else "found the end of the text"
        raise CalculusSyntaxError(
            f"calculus text, position {pos} (line {line}, column {col}): expected {expected}, {found}",
            pos)

    def skip(self):
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self, literal: str) -> bool:
        self.skip()
        return self.text.startswith(literal, self.pos)

    def accept(self, literal: str) -> bool:
        if self.peek(literal):
            self.pos += len(literal)
            return True
        return False

    def expect(self, literal: str, what: Optional[str] = None):
        if not self.accept(literal):
            self.fail(what or repr(literal))

    def match(self, pattern: re.Pattern, what: str) -> str:
        self.skip()
        m = pattern.match(self.text, self.pos)
        if not m:
            self.fail(what)
        self.pos = m.end()
        return m.group()

    def peek_name(self) -> Optional[str]:
        self.skip()
        m = _NAME.match(self.text, self.pos)
        return m.group() if m else None

    def keyword_ahead(self, word: str, then: str) -> bool:
        """`word` followed by `then` (e.g. `Sum[`), not a longer name."""
        return self.peek_name() == word and self.text.startswith(then, self.pos + len(word))

    def number(self):
        text = self.match(_NUMBER, "a number")
        value = Fraction(text)
        return int(value) if value.denominator == 1 else value

    def number_ahead(self) -> bool:
        self.skip()
        return bool(_NUMBER.match(self.text, self.pos))

    def end(self):
        self.skip()
        if self.pos != len(self.text):
            self.fail("the end of the text")

    def names(self, closer: str) -> Tuple[str, ...]:
        out = []
        if not self.peek(closer):
            out.append(self.match(_NAME, "a variable"))
            while self.accept(","):
                out.append(self.match(_NAME, "a variable"))
        self.expect(closer, f"',' or {closer!r}")
        return tuple(out)

    def sql(self, closer: str) -> Tuple[str, int]:
        """The SQL text up to `closer` at bracket depth 0 (consumed), and where it starts."""
        start = i = self.pos
        stack = []
        text = self.text
        while i < len(text):
            ch = text[i]
            if ch in "'\"`":
                i = self._quoted_end(i)
                continue
            if ch in _CLOSERS:
                stack.append(_CLOSERS[ch])
            elif stack and ch == stack[-1]:
                stack.pop()
            elif not stack and ch == closer:
                self.pos = i + 1
                return text[start:i], start
            elif ch in ")]}":
                self.fail(f"{closer!r} closing the SQL", i)
            i += 1
        self.fail(f"{closer!r} closing the SQL", len(text))

    def _quoted_end(self, i: int) -> int:
        quote, text = self.text[i], self.text
        j = i + 1
        while j < len(text):
            if text[j] == "\\" and quote != "`":
                j += 2
                continue
            if text[j] == quote:
                if text.startswith(quote * 2, j):     # a doubled quote stands for itself
                    j += 2
                    continue
                return j + 1
            j += 1
        self.fail(f"the closing {quote}", i)

    def scalar(self, sql: str, start: int) -> Scalar:
        try:
            tree = sqlglot.parse_one(sql, read="spark")
        except sqlglot.errors.ParseError as e:
            self.fail(f"a Spark SQL expression ({str(e).splitlines()[0]})", start)
        if tree is None:
            self.fail("a Spark SQL expression", start)

        def quote(node):
            if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
                return exp.column(node.name, quoted=True)
            return node
        return Scalar(tree.transform(quote))

    # -- grammar -------------------------------------------------------------------------------

    def query(self) -> Query:
        if not self.keyword_ahead("Sum", "["):
            self.fail("'Sum[' opening a query")
        self.pos += len("Sum[")
        group = self.names("]")
        self.expect("(")
        monomials = []
        if self.accept("0"):
            self.expect(")", "')' after the empty query 0")
            return Query(group, ())
        monomials.append(self.monomial())
        while self.accept("+"):
            monomials.append(self.monomial())
        self.expect(")", "'+' or ')' closing the query")
        return Query(group, tuple(monomials))

    def monomial(self) -> Monomial:
        coef = 1
        if self.number_ahead():
            coef = self.number()
            if not self.accept("*"):
                return Monomial(coef, ())
        atoms = [self.atom(in_expr=False)]
        while self.accept("*"):
            atoms.append(self.atom(in_expr=False))
        return Monomial(coef, tuple(atoms))

    def expr(self) -> Expr:
        terms = [self.term()]
        while self.accept("+"):
            terms.append(self.term())
        return terms[0] if len(terms) == 1 else Add(tuple(terms))

    def term(self) -> Expr:
        factors = [self.factor()]
        while self.accept("*"):
            factors.append(self.factor())
        return factors[0] if len(factors) == 1 else Mul(tuple(factors))

    def factor(self) -> Expr:
        if self.number_ahead():
            return Const(self.number())
        if self.keyword_ahead("Sum", "["):
            self.pos += len("Sum[")
            group = self.names("]")
            self.expect("(")
            body = self.expr()
            self.expect(")", "'+', '*' or ')' closing the sum")
            return Sum(group, body)
        return self.atom(in_expr=True)

    def atom(self, in_expr: bool):
        if self.accept("{"):
            return Value(self.scalar(*self.sql("}")))
        if self.accept("("):
            return self.parenthesized(in_expr)
        for word, kind in (("Dom", Domain), ("Groups", Groups)):
            if self.keyword_ahead(word, "["):
                return self.query_atom(word, kind)
        start = self.pos
        name = self.match(_NAME, "an atom (relation, map, variable, '{', '(')")
        if self.accept("("):
            return self.relation(name, start)
        column = MAP_VALUE
        if self.accept("."):
            column = self.match(_COLUMN, "a map's value column")
            if not self.peek("["):
                self.fail("'[' after a map's value column")
        if self.accept("["):
            return MapRef(name, self.names("]"), column)
        return Value(Scalar.var(name))

    def query_atom(self, word, kind):
        start = self.pos
        self.pos += len(word) + 1
        group = self.names("]")
        self.expect("(")
        query = self.query()
        self.expect(")")
        if query.group != group:
            self.fail(f"the same variables in {word}[...] as in its query's Sum[...]", start)
        return kind(query)

    def relation(self, name: str, start: int):
        columns, variables = [], []
        if not self.peek(")"):
            while True:
                columns.append(self.match(_COLUMN, "a column name"))
                self.expect(":", "':' between a column and its variable")
                variables.append(self.match(_NAME, "a variable"))
                if not self.accept(","):
                    break
        self.expect(")", "',' or ')' closing the relation")
        batch = name.startswith("d") and len(name) > 1 and (self.tables is None or name not in self.tables)
        if batch and self.tables is not None and name[1:] not in self.tables:
            self.fail(f"a relation of {sorted(self.tables)} or a batch of one", start)
        table = name[1:] if batch else name
        return (DeltaRel if batch else Rel)(table, tuple(columns), tuple(variables))

    def parenthesized(self, in_expr: bool):
        """After '(': an assignment, a nested aggregate, a condition or (in an expression) a
        parenthesized sum."""
        start = self.pos
        var = self.peek_name()
        if var is not None:
            self.pos += len(var)
            if self.accept(":="):
                return self.assignment(var)
            self.pos = start
        sql, sql_start = self.sql(")")
        if in_expr:
            group = _sum_of_terms(sql, self.tables)
            if group is not None:
                return group
        return Cond(self.scalar(sql, sql_start))

    def assignment(self, var: str):
        start, flags = self.pos, {}
        for flag in _FLAGS:
            if self.peek_name() == flag:
                self.pos += len(flag)
                flags[flag] = True
        if flags and not self.keyword_ahead("Sum", "[") \
                and not any(self.keyword_ahead(k.upper(), "[") for k in MULTISET_KINDS):
            self.pos, flags = start, {}         # a variable named like a flag: an assignment
        kind = next((k for k in MULTISET_KINDS if self.keyword_ahead(k.upper(), "[")), SUM)
        if kind != SUM:
            self.pos += len(kind) + 1
            value_var = self.match(_NAME, "the multiset's value variable")
            self.expect("]")
        if flags or kind != SUM or self.keyword_ahead("Sum", "["):
            self.skip()
            start = self.pos
            query = self.query()
            self.expect(")", "')' closing the nested aggregate")
            if kind != SUM and (not query.group or query.group[-1] != value_var):
                self.fail(f"a query whose last group variable is {value_var}", start)
            return Nested(var, query, kind=kind, **flags)
        return Lift(var, self.scalar(*self.sql(")")))


def _sum_of_terms(text: str, tables) -> Optional[Add]:
    """`text` read as a calculus sum of two or more terms, or None."""
    try:
        expr = _read(text, tables, lambda p: p.expr())
    except CalculusSyntaxError:
        return None
    return expr if isinstance(expr, Add) and len(expr.terms) > 1 else None
