"""AGCA-style calculus: IR, delta rules, normal form and simplification."""
from .delta import delta
from .ir import (Add, Cond, Const, DeltaRel, Lift, MapRef, Monomial, Mul, Query, Rel, Sum, Value)
from .normalize import expand, normalize, simplify
from .printer import show
from .scalar import Scalar

__all__ = ["Add", "Cond", "Const", "DeltaRel", "Lift", "MapRef", "Monomial", "Mul", "Query", "Rel",
           "Sum", "Value", "Scalar", "delta", "expand", "normalize", "simplify", "show"]
