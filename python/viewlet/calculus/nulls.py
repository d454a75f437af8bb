"""Partial evaluation over NULL literals (SQL three-valued logic, decided statically).

An outer join pads the rows of one side with NULLs: its padding monomials assign NULL to the
null-supplying side's variables (`Lift(x := CAST(NULL AS t))`), and normalization substitutes
that constant into the monomial's conditions and values. Most conditions then can never be
true (`NULL = y`: null rejection), and the monomial vanishes; a value that is surely NULL
contributes nothing to a sum. This module decides those cases; anything it cannot decide is
left to Spark.
"""
from __future__ import annotations

from decimal import Decimal, InvalidOperation

from sqlglot import exp

T, F, N = "T", "F", "N"                  # true, false, NULL
ANY = frozenset({T, F, N})

_NULL_PROPAGATING = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv, exp.Neg,
                     exp.DPipe, exp.BitwiseAnd, exp.BitwiseOr, exp.BitwiseXor)
_COMPARISONS = {exp.EQ: lambda a, b: a == b, exp.NEQ: lambda a, b: a != b,
                exp.GT: lambda a, b: a > b, exp.GTE: lambda a, b: a >= b,
                exp.LT: lambda a, b: a < b, exp.LTE: lambda a, b: a <= b}


def is_null(node: exp.Expression) -> bool:
    """The expression is NULL whatever its variables are."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Null):
        return True
    if isinstance(node, exp.Cast):                      # CAST / TRY_CAST of NULL
        return is_null(node.this)
    if isinstance(node, _NULL_PROPAGATING):
        return any(is_null(c) for c in node.iter_expressions())
    return False


def truth_values(node: exp.Expression) -> frozenset:
    """The values a predicate can take: a subset of {T, F, N}."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Boolean):
        return frozenset({T if node.this else F})
    if is_null(node):
        return frozenset({N})
    if type(node) in _COMPARISONS:
        if is_null(node.left) or is_null(node.right):
            return frozenset({N})
        a, b = _number(node.left), _number(node.right)
        if a is not None and b is not None:
            return frozenset({T if _COMPARISONS[type(node)](a, b) else F})
        return ANY
    if isinstance(node, (exp.Like, exp.ILike, exp.RegexpLike)):
        return frozenset({N}) if is_null(node.this) or is_null(node.expression) else ANY
    if isinstance(node, (exp.In, exp.Between)):
        return frozenset({N}) if is_null(node.this) else ANY
    if isinstance(node, exp.NullSafeEQ):
        left, right = is_null(node.left), is_null(node.right)
        if left and right:
            return frozenset({T})
        if (left and _literal(node.right)) or (right and _literal(node.left)):
            return frozenset({F})
        return frozenset({T, F})
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        if is_null(node.this):
            return frozenset({T})
        return frozenset({F}) if _literal(node.this) else frozenset({T, F})
    if isinstance(node, exp.Not):
        return frozenset({T: F, F: T, N: N}[v] for v in truth_values(node.this))
    if isinstance(node, (exp.And, exp.Or)):
        op = _and if isinstance(node, exp.And) else _or
        left, right = truth_values(node.left), truth_values(node.right)
        return frozenset(op(a, b) for a in left for b in right)
    return ANY


def never_true(node: exp.Expression) -> bool:
    return T not in truth_values(node)


def always_true(node: exp.Expression) -> bool:
    return truth_values(node) == frozenset({T})


def _and(a, b):
    if F in (a, b):
        return F
    return N if N in (a, b) else T


def _or(a, b):
    if T in (a, b):
        return T
    return N if N in (a, b) else F


def _literal(node) -> bool:
    while isinstance(node, exp.Paren):
        node = node.this
    return isinstance(node, (exp.Literal, exp.Boolean))


def _number(node):
    while isinstance(node, exp.Paren):
        node = node.this
    neg = False
    if isinstance(node, exp.Neg):
        neg, node = True, node.this
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            value = Decimal(node.this)
        except InvalidOperation:
            return None
        return -value if neg else value
    return None
