"""Column names resolved with sqlglot's scopes (frontend/names.py), as Spark resolves them:
what gets qualified, what is left to the translator, and that the user's text is kept for
output names and messages. Spark-oracle checks of the resolutions are in
tests/spark/test_sql_constructs.py (a name in a join's ON)."""
from __future__ import annotations

import pytest
import sqlglot

from viewlet.errors import TableNotFound, ViewletError
from viewlet.frontend.names import as_written, qualify_columns

from compiler_helpers import spec_of

COLUMNS = {"r": ["a", "b"], "s": ["b", "c"], "u": ["a", "e"], "café": ["n"]}


def qualified(sql: str) -> str:
    tree = sqlglot.parse_one(sql, read="spark")
    return qualify_columns(tree, lambda table: COLUMNS[table.name.lower()]).sql(dialect="spark")


@pytest.mark.parametrize("sql, expected", [
    # the one FROM item that has the column, keeping the case of its alias as written
    ("SELECT a, c FROM r AS X, s", "SELECT `X`.a, `s`.c FROM r AS X CROSS JOIN s"),
    ("SELECT A FROM R", "SELECT `R`.A FROM R"),
    # quoted: Spark reads a name such as café only in backquotes
    ("SELECT n FROM `café`", "SELECT `café`.n FROM `café`"),
    # a correlated reference: the enclosing query's table; the nearest scope first
    ("SELECT a FROM r WHERE EXISTS (SELECT 1 FROM s WHERE c = a AND b = 1)",
     "SELECT `r`.a FROM r WHERE EXISTS(SELECT 1 FROM s WHERE `s`.c = `r`.a AND `s`.b = 1)"),
    # in a join's ON, among the items joined so far when all of them would be ambiguous
    ("SELECT r.b FROM r JOIN s ON a = s.c JOIN u ON u.e = s.b",
     "SELECT r.b FROM r JOIN s ON `r`.a = s.c JOIN u ON u.e = s.b"),
    # a FROM subquery's own columns, seen through its alias
    ("SELECT x FROM (SELECT a AS x FROM r) AS d WHERE x > 0",
     "SELECT `d`.x FROM (SELECT `r`.a AS x FROM r) AS d WHERE `d`.x > 0"),
    # LATERAL reads the items before it
    ("SELECT l.y FROM r, LATERAL (SELECT c AS y FROM s WHERE s.b = a) AS l",
     "SELECT l.y FROM r CROSS JOIN LATERAL (SELECT `s`.c AS y FROM s WHERE s.b = `r`.a) AS l"),
])
def test_qualified_as_spark_resolves(sql, expected):
    assert qualified(sql) == expected


@pytest.mark.parametrize("sql, name", [
    ("SELECT b FROM r JOIN s USING (b)", "b"),                # USING: one value of both sides
    ("SELECT a + 1 AS k, COUNT(*) FROM r GROUP BY k", "k"),   # an output alias
    ("SELECT b FROM r, s", "b"),                              # ambiguous
    ("SELECT zz FROM r", "zz"),                               # unknown
    # a FROM subquery does not see the FROM items beside it
    ("SELECT 1 FROM r, (SELECT c FROM s WHERE c = a) AS d", "a"),
])
def test_left_to_the_translator(sql, name):
    after = sqlglot.parse_one(qualified(sql), read="spark")
    named = [c for c in after.find_all(sqlglot.exp.Column) if c.name == name]
    assert named and not any(c.table for c in named)


def test_output_names_and_messages_are_the_text_as_written():
    spec = spec_of("SELECT a + 1, SUM(b * 2) FROM r GROUP BY a + 1")
    assert [o.name for o in spec.outputs] == ["a + 1", "SUM(b * 2)"]
    tree = sqlglot.parse_one("SELECT a + 1 FROM r", read="spark")
    item = qualify_columns(tree, lambda table: COLUMNS["r"]).expressions[0]
    assert item.sql(dialect="spark") == "`r`.a + 1" and as_written(item) == "a + 1"
    with pytest.raises(ViewletError, match=r"Column 'b' must be in GROUP BY"):
        spec_of("SELECT a, b FROM r GROUP BY a")


def test_ambiguous_and_unknown_names_are_reported_by_the_translator():
    with pytest.raises(ViewletError, match=r"Column 'b' is ambiguous: it exists in r, s"):
        spec_of("SELECT b FROM r, s")
    with pytest.raises(ViewletError, match=r"Column 'aa' does not exist.*Did you mean"):
        spec_of("SELECT aa FROM r")


def test_a_missing_table_is_reported_as_before():
    tree = sqlglot.parse_one("SELECT a FROM r, nope", read="spark")
    assert qualify_columns(tree, lambda table: COLUMNS[table.name]).sql() == \
        "SELECT a FROM r CROSS JOIN nope"
    with pytest.raises(TableNotFound, match="nope"):
        spec_of("SELECT a FROM r, nope")


def test_a_name_in_a_join_on_compiles_to_the_joined_table():
    spec = spec_of("SELECT r.b FROM r JOIN s ON a = s.c JOIN r AS r2 ON r2.b = s.b")
    text = str(spec.columns)
    assert "r_a" in text and "r2_a" not in text
