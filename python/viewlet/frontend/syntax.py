"""Syntax errors in a view's query, pointing at the offending token as Spark does.

The front end parses queries with sqlglot; when that fails, Spark's own parser (when a
session is at hand) says where and what, in Spark's words; when Spark parses the query
(sqlglot reads less than Spark in places) sqlglot's error is reported. Either way the error
carries the offset of the token in the query, which the JVM side renders under the
statement with a caret (ViewletParseException).
"""
from __future__ import annotations

import re
from typing import Optional

import sqlglot
from sqlglot.errors import ParseError, TokenError

from ..errors import ViewletParseError

_SPARK_POSITION = re.compile(r"\(line (\d+), pos (\d+)\)")
_SPARK_CLASS = re.compile(r"^\s*\[[A-Z_.]+\]\s*")
_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+\.?\s*$")


def offset_of(text: str, line: int, column: int) -> int:
    """Offset of a 1-based line and 0-based column in `text`."""
    start = 0
    for _ in range(line - 1):
        nl = text.find("\n", start)
        if nl < 0:
            break
        start = nl + 1
    return min(len(text), start + column)


def sqlglot_error(sql: str, e: Exception) -> ViewletParseError:
    """A sqlglot parse or tokenizer error as Viewlet's, positioned at the highlighted token."""
    if isinstance(e, ParseError) and e.errors:
        err = e.errors[0]
        highlight = err.get("highlight") or ""
        position = None
        if err.get("line") is not None and err.get("col") is not None:
            # sqlglot's col is where the highlighted token ends (1-based)
            position = offset_of(sql, err["line"], max(0, err["col"] - len(highlight)))
        near = f" at or near '{highlight}'" if highlight else ""
        return ViewletParseError(f"Syntax error in the view's query{near}: "
                                 f"{err.get('description', e)}.", position)
    return ViewletParseError(f"Syntax error in the view's query: {e}.")


def spark_error(spark, sql: str) -> Optional[ViewletParseError]:
    """Spark's own syntax error for `sql` (None when Spark parses it)."""
    try:
        spark._jsparkSession.sessionState().sqlParser().parsePlan(sql)
        return None
    except Exception as e:  # noqa: BLE001 - Py4J or PySpark's ParseException
        text = str(getattr(e, "_desc", None) or e)
        if "PARSE_SYNTAX_ERROR" not in text and "ParseException" not in text \
                and "INVALID_IDENTIFIER" not in text and "Syntax error" not in text:
            return None
        first = _SPARK_CLASS.sub("", text.strip().splitlines()[0]).split(" (line ")[0]
        first = _SQLSTATE.sub("", first).rstrip(". ")
        m = _SPARK_POSITION.search(text)
        position = offset_of(sql, int(m.group(1)), int(m.group(2))) if m else None
        return ViewletParseError(f"{first} (in the view's query).", position)


def check(sql: str, spark=None) -> None:
    """Raise a ViewletParseError (offset within `sql`) if the query does not parse."""
    try:
        sqlglot.parse_one(sql, read="spark")
        return
    except (ParseError, TokenError) as e:
        ours = sqlglot_error(sql, e)
    if spark is not None:
        theirs = spark_error(spark, sql)
        if theirs is not None:
            raise theirs from None
    raise ours from None
