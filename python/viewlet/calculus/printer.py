"""Readable AGCA-style text for expressions, monomials and queries (used by EXPLAIN)."""
from __future__ import annotations

from .ir import (MAP_VALUE, SUM, Add, Const, Cond, DeltaRel, Domain, Groups, Lift, MapRef, Monomial, Mul, Nested, Query, Rel,
                 Sum, Value)


def show(node, flags: bool = True) -> str:
    """The node as text; `flags=False` leaves out nested aggregates' null_safe / cached flags
    (the text canonical forms order atoms by, unchanged since before flags were printed)."""
    if isinstance(node, Rel):
        return f"{node.table}({_bindings(node)})"
    if isinstance(node, DeltaRel):
        return f"d{node.table}({_bindings(node)})"
    if isinstance(node, MapRef):
        column = "" if node.column == MAP_VALUE else f".{node.column}"
        return f"{node.name}{column}[{', '.join(node.vars)}]"
    if isinstance(node, Const):
        return str(node.value)
    if isinstance(node, Value):
        return f"{{{node.expr.key}}}" if not node.expr.is_var() else node.expr.key.strip("`")
    if isinstance(node, Cond):
        return f"({node.pred.key})"
    if isinstance(node, Lift):
        return f"({node.var} := {node.expr.key})"
    if isinstance(node, Nested):
        # flags printed when set: (x := null_safe Sum[g](...)) and (x := Sum[g](...)) differ
        marks = "".join(f"{name} " for name, on in (("null_safe", node.null_safe),
                                                    ("cached", node.cached)) if on and flags)
        if node.kind == SUM:
            return f"({node.var} := {marks}{show(node.query, flags)})"
        # the multiset's value variable named: (x := MIN[v] Sum[inputs, v](...))
        return f"({node.var} := {marks}{node.kind.upper()}[{node.value_var}] {show(node.query, flags)})"
    if isinstance(node, Groups):
        return f"Groups[{', '.join(node.query.group)}]({show(node.query, flags)})"
    if isinstance(node, Domain):
        return f"Dom[{', '.join(node.query.group)}]({show(node.query, flags)})"
    if isinstance(node, Sum):
        return f"Sum[{', '.join(node.group)}]({show(node.body, flags)})"
    if isinstance(node, Add):
        return " + ".join(show(t, flags) for t in node.terms) or "0"
    if isinstance(node, Mul):
        return " * ".join(_paren(f, flags) for f in node.factors)
    if isinstance(node, Monomial):
        return show_monomial(node, flags=flags)
    if isinstance(node, Query):
        body = " + ".join(show_monomial(m, flags=flags) for m in node.monomials) or "0"
        return f"Sum[{', '.join(node.group)}]({body})"
    raise TypeError(type(node).__name__)


def _bindings(atom) -> str:
    # Column names matter: r(a: x) and r(b: x) are different queries (self-joins).
    return ", ".join(f"{c}: {v}" for c, v in zip(atom.columns, atom.vars))


def show_monomial(m: Monomial, signed: bool = False, flags: bool = True) -> str:
    parts = [show(a, flags) for a in m.atoms]
    if m.coef != 1 or not parts:
        parts.insert(0, str(m.coef))
    return " * ".join(parts).replace("`", "")


def _paren(node, flags: bool) -> str:
    text = show(node, flags)
    return f"({text})" if isinstance(node, Add) else text
