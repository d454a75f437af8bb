"""Spark SQL's data types and its typing rules, for evaluating Spark SQL elsewhere exactly.

The local target runs a batch's Spark SQL in an embedded engine (DuckDB). Both compute exact
integer and decimal arithmetic, but they disagree on result types: Spark multiplies
decimal(38,4) by decimal(38,4) into decimal(38,6) (rounding half up), DuckDB into
decimal(38,8); Spark sums an int column into a bigint, DuckDB into a 128-bit integer. So
the translator (translate.py) types every expression by Spark's rules, below, and casts
each result to Spark's type: the values are then Spark's, digit for digit.

The rules are Spark 4's with its defaults (`spark.sql.decimalOperations.allowPrecisionLoss`
true): `DecimalPrecision` / `DecimalType.adjustPrecisionScale` for arithmetic, widening for
CASE, COALESCE and UNION, SUM and AVG result types.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pyarrow as pa

MAX_PRECISION = 38
MINIMUM_ADJUSTED_SCALE = 6

#: integral types, narrowest first, with the decimal precision that holds each
INTEGRAL = {"tinyint": 3, "smallint": 5, "int": 10, "bigint": 20}
_ORDER = ["tinyint", "smallint", "int", "bigint"]
_ALIASES = {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint",
            "real": "float", "bool": "boolean", "varchar": "string", "text": "string",
            "timestamp_ltz": "timestamp", "void": "null"}


class NotLocal(Exception):
    """The construct has no exact equivalent in the local engine: the batch runs on Spark."""


@dataclass(frozen=True)
class SparkType:
    name: str                  # a Spark simple type name: int, decimal, string, date, ...
    precision: int = 0
    scale: int = 0

    @property
    def is_integral(self) -> bool:
        return self.name in INTEGRAL

    @property
    def is_decimal(self) -> bool:
        return self.name == "decimal"

    @property
    def is_fractional(self) -> bool:
        return self.name in ("float", "double")

    @property
    def is_numeric(self) -> bool:
        return self.is_integral or self.is_decimal or self.is_fractional

    @property
    def is_null(self) -> bool:
        return self.name == "null"

    def as_decimal(self) -> "SparkType":
        """The decimal type Spark widens an integral (or decimal) type to."""
        if self.is_decimal:
            return self
        if self.is_integral:
            return decimal(INTEGRAL[self.name], 0)
        raise NotLocal(f"{self.spark_sql()} is not exact as a decimal")

    def spark_sql(self) -> str:
        return f"decimal({self.precision},{self.scale})" if self.is_decimal else self.name

    def arrow(self) -> pa.DataType:
        """The Arrow type of this Spark type's values (as Spark exchanges them)."""
        if self.is_decimal:
            return pa.decimal128(self.precision, self.scale)
        try:
            return _ARROW[self.name]
        except KeyError:
            raise NotLocal(f"Spark type {self.spark_sql()} has no local equivalent") from None

    def duck_sql(self) -> str:
        """The DuckDB type holding exactly this Spark type's values."""
        if self.is_decimal:
            return f"DECIMAL({self.precision},{self.scale})"
        try:
            return _DUCK[self.name]
        except KeyError:
            raise NotLocal(f"Spark type {self.spark_sql()} has no local equivalent") from None


_DUCK = {"boolean": "BOOLEAN", "tinyint": "TINYINT", "smallint": "SMALLINT", "int": "INTEGER",
         "bigint": "BIGINT", "float": "FLOAT", "double": "DOUBLE", "string": "VARCHAR",
         "date": "DATE", "binary": "BLOB", "null": "INTEGER",
         # timestamps pass through (compared, grouped, MIN / MAX), never computed on
         "timestamp": "TIMESTAMPTZ", "timestamp_ntz": "TIMESTAMP"}

_ARROW = {"boolean": pa.bool_(), "tinyint": pa.int8(), "smallint": pa.int16(), "int": pa.int32(),
          "bigint": pa.int64(), "float": pa.float32(), "double": pa.float64(),
          "string": pa.string(), "date": pa.date32(), "binary": pa.binary(),
          "timestamp": pa.timestamp("us", tz="UTC"), "timestamp_ntz": pa.timestamp("us")}

BOOLEAN = SparkType("boolean")
INT = SparkType("int")
BIGINT = SparkType("bigint")
DOUBLE = SparkType("double")
STRING = SparkType("string")
DATE = SparkType("date")
NULL = SparkType("null")


def decimal(precision: int, scale: int) -> SparkType:
    return SparkType("decimal", precision, scale)


def bounded(precision: int, scale: int) -> SparkType:
    return decimal(min(precision, MAX_PRECISION), min(scale, MAX_PRECISION))


def adjusted(precision: int, scale: int) -> SparkType:
    """DecimalType.adjustPrecisionScale: past 38 digits keep the integral digits and give up
    scale, but never below 6 digits of it (values are then rounded half up)."""
    if precision <= MAX_PRECISION:
        return decimal(precision, scale)
    if scale < 0:
        return decimal(MAX_PRECISION, scale)
    int_digits = precision - scale
    min_scale = min(scale, MINIMUM_ADJUSTED_SCALE)
    return decimal(MAX_PRECISION, max(MAX_PRECISION - int_digits, min_scale))


def parse(text: str) -> SparkType:
    """A Spark DDL type string (`decimal(15,2)`, `bigint`, `timestamp`, ...)."""
    t = text.strip().lower()
    if t.startswith("decimal") or t.startswith("numeric") or t.startswith("dec("):
        inner = t[t.find("(") + 1:t.rfind(")")] if "(" in t else "10,0"
        parts = [p.strip() for p in inner.split(",")]
        return decimal(int(parts[0]), int(parts[1]) if len(parts) > 1 else 0)
    t = _ALIASES.get(t, t)
    return SparkType(t)


def from_arrow(t: pa.DataType) -> SparkType:
    """The Spark type of an Arrow column as Spark reads it."""
    if pa.types.is_boolean(t):
        return BOOLEAN
    for arrow, name in ((pa.int8(), "tinyint"), (pa.int16(), "smallint"), (pa.int32(), "int"),
                        (pa.int64(), "bigint"), (pa.float32(), "float"), (pa.float64(), "double"),
                        (pa.date32(), "date")):
        if t == arrow:
            return SparkType(name)
    if pa.types.is_decimal(t):
        return decimal(t.precision, t.scale)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return STRING
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return SparkType("binary")
    if pa.types.is_timestamp(t):
        return SparkType("timestamp" if t.tz else "timestamp_ntz")
    return SparkType(str(t))


# -- result types of Spark's operators --------------------------------------------------
def wider(a: SparkType, b: SparkType) -> SparkType:
    """The common type of two branches (CASE, COALESCE, UNION), as Spark widens them."""
    if a == b:
        return a
    if a.is_null:
        return b
    if b.is_null:
        return a
    if a.is_integral and b.is_integral:
        return a if _ORDER.index(a.name) >= _ORDER.index(b.name) else b
    if a.is_numeric and b.is_numeric:
        if a.is_fractional or b.is_fractional:
            return DOUBLE
        da, db = a.as_decimal(), b.as_decimal()
        scale = max(da.scale, db.scale)
        int_digits = max(da.precision - da.scale, db.precision - db.scale)
        return bounded(int_digits + scale, scale)
    raise NotLocal(f"no exact common type for {a.spark_sql()} and {b.spark_sql()}")


def arithmetic(op: str, a: SparkType, b: SparkType) -> SparkType:
    """The result type of a +, -, *, / or % b."""
    if a.is_null or b.is_null:
        a, b = (b if a.is_null else a), (a if b.is_null else b)
        if a.is_null:
            return DOUBLE if op == "/" else INT
    if not (a.is_numeric and b.is_numeric):
        raise NotLocal(f"{a.spark_sql()} {op} {b.spark_sql()} is not numeric arithmetic")
    if a.is_fractional or b.is_fractional:
        return DOUBLE
    if op == "/" and a.is_integral and b.is_integral:
        return DOUBLE
    if a.is_integral and b.is_integral:
        return wider(a, b)
    da, db = a.as_decimal(), b.as_decimal()
    p1, s1, p2, s2 = da.precision, da.scale, db.precision, db.scale
    if op in ("+", "-"):
        scale = max(s1, s2)
        return adjusted(max(p1 - s1, p2 - s2) + scale + 1, scale)
    if op == "*":
        return adjusted(p1 + p2 + 1, s1 + s2)
    if op == "/":
        scale = max(MINIMUM_ADJUSTED_SCALE, s1 + p2 + 1)
        return adjusted(p1 - s1 + s2 + scale, scale)
    if op == "%":
        return adjusted(min(p1 - s1, p2 - s2) + max(s1, s2), max(s1, s2))
    raise NotLocal(f"operator {op}")


def sum_type(t: SparkType) -> SparkType:
    if t.is_integral or t.is_null:
        return BIGINT
    if t.is_decimal:
        return bounded(t.precision + 10, t.scale)
    if t.is_fractional:
        return DOUBLE
    raise NotLocal(f"SUM of {t.spark_sql()}")


def avg_type(t: SparkType) -> SparkType:
    if t.is_decimal:
        return bounded(t.precision + 4, t.scale + 4)
    if t.is_numeric or t.is_null:
        return DOUBLE
    raise NotLocal(f"AVG of {t.spark_sql()}")


def literal_number(text: str) -> SparkType:
    """A numeric literal's type: an integer literal is int (bigint past int's range, decimal
    past bigint's); one with a point is decimal(digits, digits after the point); with an
    exponent, double."""
    t = text.strip()
    if any(c in t for c in "eE"):
        return DOUBLE
    if "." not in t:
        value = int(t)
        if -2 ** 31 <= value < 2 ** 31:
            return INT
        if -2 ** 63 <= value < 2 ** 63:
            return BIGINT
        return decimal(len(t.lstrip("-")), 0)
    whole, frac = t.lstrip("-").split(".", 1)
    digits = (whole.lstrip("0") + frac) or "0"
    scale = len(frac)
    precision = max(len(digits.lstrip("0")) if whole.lstrip("0") else len(frac), scale, 1)
    return decimal(precision, scale)


def optional(t: Optional[SparkType]) -> SparkType:
    return t if t is not None else NULL
