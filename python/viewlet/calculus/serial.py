"""The calculus IR as JSON values, and back: how a stored trigger program keeps its queries.

The text form (printer.py, parser.py) is for people and tests; it drops backquotes and reads
`dNAME` two ways, so durable state uses this form instead: every atom is a JSON object with
one tag, scalars are their Spark SQL text, numbers are strings (coefficients may be
fractions). `decode(encode(q)) == q` for every query the compiler builds; stored programs
check it when they are written (compiler/stored.py).

    query    {"group": [var...], "monomials": [monomial...]}
    monomial {"coef": "3" | "-1/2", "atoms": [atom...]}
    atom     {"rel": table, "columns": [...], "vars": [...]}       a base relation
             {"delta": table, "columns": [...], "vars": [...]}     a batch of its changes
             {"map": name, "vars": [...], "column": c}             a map's value column
             {"const": "n"} | {"value": sql} | {"cond": sql} | {"lift": var, "sql": sql}
             {"nested": var, "kind": k, "null_safe": b, "cached": b, "query": query}
             {"domain": query} | {"groups": query}
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, Dict

from .ir import (Const, Cond, DeltaRel, Domain, Groups, Lift, MapRef, Monomial, Nested, Query, Rel,
                 Value)
from .scalar import Scalar


class SerialError(ValueError):
    """A JSON value that is not an encoded calculus query."""


def encode(query: Query) -> Dict[str, Any]:
    return {"group": list(query.group),
            "monomials": [{"coef": str(m.coef), "atoms": [encode_atom(a) for a in m.atoms]}
                          for m in query.monomials]}


def decode(value: Dict[str, Any]) -> Query:
    try:
        return Query(tuple(value["group"]),
                     tuple(Monomial(_number(m["coef"]), tuple(decode_atom(a) for a in m["atoms"]))
                           for m in value["monomials"]))
    except (KeyError, TypeError, ValueError) as e:
        raise SerialError(f"not an encoded calculus query: {e}") from e


def encode_atom(atom) -> Dict[str, Any]:
    if isinstance(atom, Rel):
        return {"rel": atom.table, "columns": list(atom.columns), "vars": list(atom.vars)}
    if isinstance(atom, DeltaRel):
        return {"delta": atom.table, "columns": list(atom.columns), "vars": list(atom.vars)}
    if isinstance(atom, MapRef):
        return {"map": atom.name, "vars": list(atom.vars), "column": atom.column}
    if isinstance(atom, Const):
        return {"const": str(atom.value)}
    if isinstance(atom, Value):
        return {"value": atom.expr.key}
    if isinstance(atom, Cond):
        return {"cond": atom.pred.key}
    if isinstance(atom, Lift):
        return {"lift": atom.var, "sql": atom.expr.key}
    if isinstance(atom, Nested):
        return {"nested": atom.var, "kind": atom.kind, "null_safe": atom.null_safe,
                "cached": atom.cached, "query": encode(atom.query)}
    if isinstance(atom, Domain):
        return {"domain": encode(atom.query)}
    if isinstance(atom, Groups):
        return {"groups": encode(atom.query)}
    raise TypeError(f"not a calculus atom: {type(atom).__name__}")


def decode_atom(value: Dict[str, Any]):
    for tag, read in _READERS.items():
        if tag in value:
            return read(value)
    raise SerialError(f"unknown calculus atom {sorted(value)}")


def _number(text: str):
    n = Fraction(text)
    return int(n) if n.denominator == 1 else n


_READERS: Dict[str, Callable[[Dict[str, Any]], Any]] = {
    "rel": lambda v: Rel(v["rel"], tuple(v["columns"]), tuple(v["vars"])),
    "delta": lambda v: DeltaRel(v["delta"], tuple(v["columns"]), tuple(v["vars"])),
    "map": lambda v: MapRef(v["map"], tuple(v["vars"]), v["column"]),
    "const": lambda v: Const(_number(v["const"])),
    "value": lambda v: Value(Scalar.parse(v["value"])),
    "cond": lambda v: Cond(Scalar.parse(v["cond"])),
    "lift": lambda v: Lift(v["lift"], Scalar.parse(v["sql"])),
    "nested": lambda v: Nested(v["nested"], decode(v["query"]), bool(v["null_safe"]), v["kind"],
                               bool(v["cached"])),
    "domain": lambda v: Domain(decode(v["domain"])),
    "groups": lambda v: Groups(decode(v["groups"])),
}
