"""Comparing calculus results with expectations written as calculus text, up to the order of
terms and factors (sums and products commute; the normal form's atom order is a sort key, not
part of what a rule promises) and, inside nested aggregates and domains, up to the names of
private variables (normalization renames them apart with fresh numbers)."""
from collections import Counter

from viewlet.calculus.canonical import canonicalize
from viewlet.calculus.ir import Add, Domain, Groups, Monomial, Mul, Nested, Query, Sum
from viewlet.calculus.parser import parse, parse_expr
from viewlet.calculus.printer import show


def unordered(node):
    """A hashable form of a query, monomial, atom or expression in which the order of terms
    and factors (also inside nested aggregates and domains) does not matter."""
    if isinstance(node, Query):
        return ("Query", node.group, _bag(_monomial(m) for m in node.monomials))
    if isinstance(node, Monomial):
        return _monomial(node)
    if isinstance(node, Nested):
        return ("Nested", node.var, node.kind, node.null_safe, node.cached, _up_to_private_names(node.query))
    if isinstance(node, (Domain, Groups)):
        return (type(node).__name__, _up_to_private_names(node.query))
    if isinstance(node, Sum):
        return ("Sum", node.group, unordered(node.body))
    if isinstance(node, (Add, Mul)):
        return (type(node).__name__, _bag(unordered(p) for p in _flat(node)))
    return node


def _up_to_private_names(query):
    # canonical text names variables by position; its keys map them back to the group's names
    return query.group, canonicalize(query)


def _monomial(m):
    return ("Monomial", m.coef, _bag(unordered(a) for a in m.atoms))


def _flat(node):
    """Terms of nested sums / factors of nested products: the printer writes them flat."""
    parts = node.terms if isinstance(node, Add) else node.factors
    for p in parts:
        if type(p) is type(node):
            yield from _flat(p)
        else:
            yield p


def _bag(items):
    return frozenset(Counter(items).items())


def assert_query(actual: Query, expected_text: str):
    expected = parse(expected_text)
    assert unordered(actual) == unordered(expected), f"\n got:      {show(actual)}\n expected: {expected_text}"


def assert_expr(actual, expected_text: str):
    expected = parse_expr(expected_text)
    assert unordered(actual) == unordered(expected), f"\n got:      {show(actual)}\n expected: {expected_text}"
