"""Scalar expressions inside the calculus: Spark SQL expressions over calculus variables.

A scalar keeps a sqlglot AST whose column references name calculus variables. Spark, not
Viewlet, evaluates scalars, so their semantics (types, NULLs, ANSI errors) are Spark's own.
"""
from __future__ import annotations

from typing import Callable, Dict, Iterable, Mapping

import sqlglot
from sqlglot import exp


class Scalar:
    """An immutable Spark SQL expression whose free columns are calculus variables."""

    __slots__ = ("_ast", "_key", "_vars")

    def __init__(self, ast: exp.Expression):
        self._ast = ast
        self._key = ast.sql(dialect="spark")
        self._vars = frozenset(c.name for c in ast.find_all(exp.Column))

    @staticmethod
    def parse(sql: str) -> "Scalar":
        return Scalar(sqlglot.parse_one(sql, read="spark"))

    @staticmethod
    def var(name: str) -> "Scalar":
        return Scalar(exp.column(name, quoted=True))

    @staticmethod
    def literal(value) -> "Scalar":
        return Scalar(exp.convert(value))

    @property
    def ast(self) -> exp.Expression:
        return self._ast.copy()

    @property
    def vars(self) -> frozenset:
        return self._vars

    def var_order(self) -> tuple:
        """The variables in the order the expression's tree lists them (each once): an order
        that follows the expression's structure, not the variables' names."""
        return tuple(dict.fromkeys(c.name for c in self._ast.find_all(exp.Column)))

    @property
    def key(self) -> str:
        return self._key

    def is_var(self) -> bool:
        return isinstance(self._ast, exp.Column)

    def tests_not_null(self) -> bool:
        """NOT e IS NULL (what a SUM's count of non-NULL values multiplies by)."""
        node = self._ast
        return isinstance(node, exp.Not) and isinstance(node.this, exp.Is) \
            and isinstance(node.this.expression, exp.Null)

    def rename(self, mapping: Mapping[str, str]) -> "Scalar":
        if not (self._vars & set(mapping)):
            return self

        def swap(node):
            if isinstance(node, exp.Column) and node.name in mapping:
                return exp.column(mapping[node.name], quoted=True)
            return node

        return Scalar(self._ast.copy().transform(swap))

    def substitute(self, values: Mapping[str, "Scalar"]) -> "Scalar":
        """Replace variables by whole expressions (used to inline assignments)."""
        if not (self._vars & set(values)):
            return self

        def swap(node):
            if isinstance(node, exp.Column) and node.name in values:
                return exp.Paren(this=values[node.name].ast)
            return node

        return Scalar(self._ast.copy().transform(swap))

    def to_sql(self, column_sql: Callable[[str], str]) -> str:
        """Render as Spark SQL, with `column_sql(var)` giving the SQL for each variable.
        Memoized: lowering renders the same scalar over the same columns once per monomial,
        and parsing and generating SQL is most of what lowering a wide join costs."""
        bound = tuple((v, column_sql(v)) for v in sorted(self._vars))
        key = (self._key, bound)
        text = _RENDERED.get(key)
        if text is None:
            fragments = dict(bound)

            def swap(node):
                if isinstance(node, exp.Column):
                    return exp.Paren(this=_parsed(fragments[node.name]))
                return node

            text = self._ast.copy().transform(swap).sql(dialect="spark")
            if len(_RENDERED) > _MEMO_SIZE:
                _RENDERED.clear()
            _RENDERED[key] = text
        return text

    def __eq__(self, other):
        return isinstance(other, Scalar) and other._key == self._key

    def __hash__(self):
        return hash(self._key)

    def __repr__(self):
        return self._key


_MEMO_SIZE = 100_000
_RENDERED: Dict[tuple, str] = {}
_PARSED: Dict[str, exp.Expression] = {}


def _parsed(sql: str) -> exp.Expression:
    """A Spark SQL fragment parsed once (a copy each time: trees are mutable)."""
    tree = _PARSED.get(sql)
    if tree is None:
        if len(_PARSED) > _MEMO_SIZE:
            _PARSED.clear()
        tree = _PARSED[sql] = sqlglot.parse_one(sql, read="spark")
    return tree.copy()


def conjuncts(node: exp.Expression) -> Iterable[exp.Expression]:
    """Split a predicate on top-level ANDs."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        yield from conjuncts(node.left)
        yield from conjuncts(node.right)
    else:
        yield node
