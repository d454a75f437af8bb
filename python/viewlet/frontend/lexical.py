"""Spark SQL's words and comments, lexically: reserved words, quoting a name, comments blanked.

Comments are found by the Spark dialect's tokenizer (sqlglot): what lies outside every token
is whitespace or a comment. So `--` inside a string literal or a quoted name stays, and nested
bracketed comments (`/* a /* b */ c */`, which Spark accepts) are blanked whole.
"""
from __future__ import annotations

import re

from sqlglot.dialects.spark import Spark
from sqlglot.errors import TokenError

# Spark's reserved keywords (the ANSI list of sql_keywords()): a view or table name written
# without backticks may not be one of them, as in Spark with ANSI reserved keywords enforced.
SPARK_RESERVED = frozenset("""
ALL AND ANY AS AUTHORIZATION BOTH CALL CASE CAST CHECK COLLATE COLLATION COLUMN CONSTRAINT CREATE
CROSS CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP CURRENT_USER DISTINCT ELSE END ESCAPE EXCEPT
EXECUTE FALSE FETCH FILTER FOR FOREIGN FROM FULL GRANT GROUP HAVING IN INNER INTERSECT INTO IS JOIN
LATERAL LEADING LEFT NATURAL NOT NULL OFFSET ON ONLY OR ORDER OUTER OVERLAPS PRIMARY RECURSIVE
REFERENCES RIGHT SELECT SESSION_USER SOME SQL TABLE THEN TIME TO TRAILING UNION UNIQUE UNKNOWN USER
USING WHEN WHERE WITH WITHIN
""".split())
#: a name Spark reads unquoted (before the reserved-word check)
PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")



class _WordTokenizer(Spark.Tokenizer):
    """Spark's tokenizer with every token at its own position: no multi-word keywords (whose
    token sqlglot places at the last word) and no commands (whose rest sqlglot reads as one
    string)."""
    KEYWORDS = {k: v for k, v in Spark.Tokenizer.KEYWORDS.items() if " " not in k}
    COMMANDS: set = set()


def quote_identifier(name: str) -> str:
    """The name as SQL text: unquoted when Spark reads it back unchanged, else `quoted`."""
    if PLAIN_NAME.match(name) and name.upper() not in SPARK_RESERVED:
        return name
    return "`" + name.replace("`", "``") + "`"


def strip_comments(text: str) -> str:
    """The text with its comments blanked (newlines kept), so every position is unchanged.

    Text the tokenizer cannot read (an unterminated string or comment) is returned as it is:
    the parser that reads it next reports the problem with its position."""
    try:
        tokens = _WordTokenizer().tokenize(text)
    except TokenError:
        return text
    out = ["\n" if c == "\n" else " " for c in text]
    for tok in tokens:
        out[tok.start:tok.end + 1] = text[tok.start:tok.end + 1]
    return "".join(out)
