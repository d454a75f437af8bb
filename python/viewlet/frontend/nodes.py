"""Walks over sqlglot expressions that stop at subqueries (a subquery is its own scope)."""
from __future__ import annotations

from sqlglot import exp

SUBQUERY_NODES = (exp.Subquery, exp.Select, exp.Exists)


def has_subquery(node: exp.Expression) -> bool:
    return any(isinstance(n, SUBQUERY_NODES) for n in node.walk())


def outer_nodes(node: exp.Expression):
    """The nodes of an expression outside its subqueries."""
    if isinstance(node, SUBQUERY_NODES):
        return
    yield node
    for child in node.iter_expressions():
        yield from outer_nodes(child)


def outer_columns(node: exp.Expression):
    """Column references of an expression, not those inside its subqueries."""
    if isinstance(node, exp.Column):
        yield node
        return
    if isinstance(node, SUBQUERY_NODES):
        return
    for child in node.iter_expressions():
        yield from outer_columns(child)
