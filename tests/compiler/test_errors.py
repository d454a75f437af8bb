"""Refusals of the SQL front end: unsupported constructs raise UnsupportedSQL naming the
construct (and its position); name errors raise ViewletError naming the column."""
import pytest

from compiler_helpers import spec_of
from viewlet.errors import UnsupportedSQL, ViewletError, ViewletParseError


@pytest.mark.parametrize("sql, construct", [
    ("SELECT r.a FROM r ORDER BY r.b LIMIT 3", "ORDER BY r.b, which is not an output column"),
    ("SELECT r.a, COUNT(*) FROM r GROUP BY r.a ORDER BY 3 LIMIT 1", "ORDER BY position 3"),
    ("SELECT r.a, COUNT(*) FROM r GROUP BY r.a ORDER BY SUM(r.b) LIMIT 1", "not an output column"),
    ("SELECT r.a FROM r LIMIT r.b", "LIMIT"),
    ("SELECT r.a FROM r OFFSET 2", "OFFSET without LIMIT"),
    ("SELECT x.a FROM (SELECT r.a FROM r ORDER BY r.a LIMIT 2) x", "ORDER BY"),
    ("SELECT r.a FROM r WHERE r.b IN (SELECT s.b FROM s LIMIT 1)", "LIMIT"),
    ("SELECT r.a FROM r WHERE r.a IN (SELECT s.b, s.c FROM s)", "several columns"),
    ("SELECT r.a FROM r WHERE r.a = (SELECT DISTINCT s.b FROM s)", "SELECT DISTINCT in a scalar"),
    ("SELECT r.a FROM r WHERE r.a = (SELECT s.b, s.c FROM s)", "several columns"),
    ("SELECT r.a FROM r WHERE r.a = ANY (SELECT s.b, s.c FROM s)", "ANY / SOME with a subquery not"),
    ("SELECT r.a FROM r WHERE r.a = (SELECT s.b FROM s GROUP BY s.b)", "GROUP BY / HAVING"),
    ("SELECT r.a FROM r WHERE NOT r.a IN (SELECT s.b FROM s GROUP BY s.b)", "grouped subquery"),
    ("SELECT x.a FROM (SELECT a, COUNT(*) AS n FROM r GROUP BY a HAVING b > 1) x", "HAVING"),
    ("SELECT r.a FROM r LEFT JOIN (s JOIN t ON s.c = t.c) ON r.b = s.b", "parenthesized join"),
    ("SELECT r.a FROM r LEFT JOIN s ON r.b = s.b AND EXISTS (SELECT 1 FROM t)",
     "subquery in the ON condition of a LEFT JOIN"),
    ("SELECT r.a FROM r FULL JOIN s ON r.b = s.b AND COUNT(*) > 1", "aggregate in ON"),
    ("SELECT r.a, COUNT(*), (SELECT COUNT(*) FROM s WHERE s.b = r.a) FROM r GROUP BY r.a",
     "correlated scalar subquery in the SELECT list of an aggregate"),
    ("SELECT r.a, COUNT(*) FROM r GROUP BY r.a HAVING COUNT(*) > (SELECT COUNT(*) FROM s "
     "WHERE s.b = r.b)", "correlated on column b, which is not a GROUP BY key"),
    ("SELECT COUNT(*), (SELECT COUNT(*) FROM s WHERE s.b = r.a) FROM r GROUP BY 2",
     "not a GROUP BY key"),
    ("SELECT r.a FROM r SEMI JOIN s ON r.b = s.b", "SEMI JOIN"),
    ("SELECT r.a FROM r ANTI JOIN s ON r.b = s.b", "ANTI JOIN"),
    ("SELECT r.a, LAG(r.b) OVER (PARTITION BY r.a ORDER BY r.b) FROM r", "window function LAG"),
    ("SELECT r.a, transform(array(r.b), x -> x + RANK() OVER (ORDER BY r.b)) FROM r",
     "window function inside a lambda function"),
    ("SELECT r.a, RANK() OVER w FROM r WINDOW w AS (ORDER BY r.b)", "named window"),
    ("SELECT r.a, COUNT(DISTINCT r.b) OVER (PARTITION BY r.a) FROM r", "DISTINCT"),
    ("SELECT DISTINCT r.a, RANK() OVER (ORDER BY r.b) FROM r", "DISTINCT with window functions"),
    ("SELECT x.a, COUNT(*) FROM (SELECT r.a, RANK() OVER (ORDER BY r.b) AS k FROM r) x "
     "GROUP BY x.a", "GROUP BY over a subquery with window functions"),
    ("SELECT x.a FROM (SELECT r.a, RANK() OVER (ORDER BY r.b) AS k FROM r) x JOIN s ON x.a = s.b",
     "a join over a subquery with window functions"),
    ("SELECT r.a, RANK() OVER (ORDER BY r.b) AS k FROM r ORDER BY k LIMIT 3",
     "ORDER BY ... LIMIT with window functions"),
    ("SELECT r.a FROM r WHERE r.b IN (SELECT s.b FROM (SELECT s.b, RANK() OVER (ORDER BY s.c) "
     "AS k FROM s) s)", "window function"),
    ("SELECT r.a FROM r WHERE rand() > 0.5", "rand()"),
    ("SELECT r.a, randn() FROM r", "randn()"),
    ("SELECT r.a, uuid() FROM r", "uuid()"),
    ("SELECT current_date(), r.a FROM r", "current_date()"),
    ("SELECT a FROM r INTERSECT SELECT b FROM s ORDER BY 1", "ORDER BY on a INTERSECT"),
    ("SELECT a FROM r EXCEPT ALL SELECT b, c FROM s", "EXCEPT branches with different numbers"),
    ("SELECT a FROM r UNION ALL (SELECT b FROM s LIMIT 3)", "LIMIT/OFFSET in a subquery"),
    ("SELECT a FROM r UNION ALL SELECT b, c FROM s", "different numbers of columns"),
    ("SELECT x.a FROM (SELECT a FROM r UNION SELECT b FROM s ORDER BY 1) x", "ORDER BY"),
    ("SELECT r.a, COUNT(*), grouping(r.a) FROM r GROUP BY r.a", "GROUPING() without"),
    ("SELECT r.a FROM r GROUP BY ROLLUP(r.a, (SELECT 1))", "subquery in GROUP BY with GROUPING"),
    ("SELECT STDDEV(r.a) FROM r", "STDDEV"),
    ("SELECT r.a FROM r WHERE size((SELECT collect_list(s.c) FROM s)) > 1", "COLLECT_LIST in a"),
    ("SELECT r.a, listagg(r.b) WITHIN GROUP (ORDER BY r.a) FROM r GROUP BY r.a",
     "ORDER BY an expression other than its argument"),
    ("SELECT r.a, listagg(r.b, r.a) FROM r GROUP BY r.a", "separator that is not a string"),
    ("SELECT COUNT(*) FROM r GROUP BY SUM(r.a)", "aggregate in GROUP BY"),
    ("SELECT * FROM VALUES (1), (2)", "VALUES"),
    ("SELECT r.a FROM r TABLESAMPLE (10 PERCENT)", "TABLESAMPLE"),
    ("SELECT r.a, x.v FROM r LATERAL VIEW explode(array(r.b)) x AS v", "LATERAL"),
    ("SELECT r.a, x.c FROM r RIGHT JOIN LATERAL (SELECT s.c FROM s WHERE s.b = r.b) x ON TRUE",
     "RIGHT JOIN LATERAL"),
    ("SELECT r.a, x.c FROM r, LATERAL (SELECT DISTINCT s.c FROM s WHERE s.b = r.b) x",
     "SELECT DISTINCT in a LATERAL"),
    ("SELECT r.a, x.n FROM r, LATERAL (SELECT s.c, COUNT(*) AS n FROM s WHERE s.b < r.a "
     "GROUP BY s.c) x", "correlated on column a by a comparison other than ="),
    ("SELECT r.a FROM r, r", "duplicate table alias"),
    ("SELECT COUNT(DISTINCT r.a, r.b) FROM r", "COUNT(DISTINCT ...) with 2 arguments"),
    ("SELECT r.a FROM r WHERE r.b = (SELECT COUNT(DISTINCT s.b, s.c) FROM s)", "2 arguments"),
    ("SELECT STDDEV(DISTINCT r.a) FROM r", "STDDEV(DISTINCT ...)"),
    ("WITH RECURSIVE x AS (SELECT a FROM r) SELECT a FROM x", "WITH RECURSIVE"),
    ("WITH x AS (SELECT a FROM r), x AS (SELECT b FROM s) SELECT * FROM x", "defined twice"),
    ("WITH x AS (SELECT a FROM r ORDER BY a) SELECT a FROM x", "ORDER BY"),
])
def test_unsupported_sql_names_the_construct(sql, construct):
    with pytest.raises(UnsupportedSQL) as err:
        spec_of(sql)
    assert construct.lower() in err.value.construct.lower(), err.value.message
    assert err.value.message.startswith("Unsupported in an incremental view: ")
    assert construct.lower() in err.value.message.lower()


def test_unsupported_sql_gives_the_position():
    sql = "SELECT r.a\nFROM r\nORDER BY r.b LIMIT 3"
    with pytest.raises(UnsupportedSQL) as err:
        spec_of(sql)
    # somewhere inside the ORDER BY clause (sqlglot keeps positions on identifiers only)
    assert sql.index("ORDER BY") <= err.value.position < len(sql)
    assert "at line 3, column " in err.value.message


@pytest.mark.parametrize("sql, names", [
    ("SELECT r.zz FROM r", ["zz", "r"]),
    ("SELECT r.a FROM r WHERE r.nope > 1", ["nope"]),
    ("SELECT zz FROM r, s", ["zz"]),
    ("SELECT q.a FROM r", ["q"]),
    ("SELECT r.a, COUNT(*) FROM r GROUP BY r.a HAVING SUM(r.missing) > 1", ["missing"]),
])
def test_unknown_column(sql, names):
    with pytest.raises(ViewletError) as err:
        spec_of(sql)
    assert not isinstance(err.value, UnsupportedSQL)
    for n in names:
        assert f"'{n}'" in err.value.message


@pytest.mark.parametrize("sql, column", [
    ("SELECT b FROM r, s", "b"),
    ("SELECT r.a FROM r, s WHERE b > 1", "b"),
    ("SELECT COUNT(*) FROM r r1, r r2 GROUP BY a", "a"),
])
def test_ambiguous_column(sql, column):
    with pytest.raises(ViewletError, match=f"'{column}' is ambiguous") as err:
        spec_of(sql)
    assert not isinstance(err.value, UnsupportedSQL)


@pytest.mark.parametrize("sql, column", [
    ("SELECT r.a, COUNT(*) FROM r", "r.a"),
    ("SELECT r.a, r.b, COUNT(*) FROM r GROUP BY r.a", "r.b"),
    ("SELECT r.a, COUNT(*) FROM r GROUP BY r.a HAVING r.b > 1", "r.b"),
])
def test_column_not_grouped(sql, column):
    with pytest.raises(ViewletError, match=f"'{column}' must be in GROUP BY"):
        spec_of(sql)


def test_parse_error_and_group_position():
    with pytest.raises(ViewletParseError, match="Syntax error"):
        spec_of("SELEC r.a FROM r")
    with pytest.raises(ViewletError, match="GROUP BY position 5"):
        spec_of("SELECT r.a, COUNT(*) FROM r GROUP BY 5")


def test_accepted_forms_still_compile():
    """Unqualified unique columns, USING, CROSS JOIN, JOIN without ON, GROUP BY alias/position,
    optimizer hints."""
    for sql in ["SELECT a, COUNT(*) FROM r GROUP BY a",
                "SELECT /*+ REPARTITION(2) */ year(DATE '2024-01-01' + r.a) AS y, r.b, MAX(r.a) "
                "FROM r GROUP BY year(DATE '2024-01-01' + r.a), r.b",
                "SELECT r.a, COUNT(*) FROM r JOIN s USING (b) GROUP BY 1",
                "SELECT r.a + 1 AS k, COUNT(*) FROM r CROSS JOIN s GROUP BY k",
                "SELECT r.a, s.c FROM r JOIN s"]:
        spec_of(sql)


# -- front-end bugs: constructs accepted and silently mistranslated ----------------------------

def test_natural_join_is_rejected_or_joins_on_common_columns():
    try:
        spec = spec_of("SELECT COUNT(*) FROM r NATURAL JOIN s")
    except UnsupportedSQL:
        return
    # if accepted, r and s must share the variable of their common column b
    (q,) = spec.columns.values()
    (mono,) = q.monomials
    rels = {a.table: dict(zip(a.columns, a.vars)) for a in mono.atoms if hasattr(a, "columns")}
    assert rels["r"].get("b") is not None and rels["r"].get("b") == rels["s"].get("b"), q


def test_aggregate_filter_clause_is_rejected_or_applied():
    from tests.reference.evaluate import evaluate
    try:
        spec = spec_of("SELECT r.a, SUM(r.b) FILTER (WHERE r.a > 1) FROM r GROUP BY r.a")
    except UnsupportedSQL:
        return
    rows = [({"a": 1, "b": 10}, 1), ({"a": 2, "b": 20}, 1)]
    assert evaluate(spec.columns["s0"], relations={"r": rows}) == {(2,): 20}


def test_aggregate_in_where_is_rejected():
    with pytest.raises(ViewletError):
        spec_of("SELECT r.a FROM r WHERE SUM(r.b) > 1")


def test_nested_aggregate_is_rejected():
    with pytest.raises(ViewletError):
        spec_of("SELECT SUM(COUNT(*)) FROM r")


@pytest.mark.parametrize("sql", ["-- c\nSELECT r.a, COUNT(*) FROM r GROUP BY r.a",
                                 "/* c */ SELECT r.a FROM r"])
def test_leading_comment_keeps_from_sql(sql):
    assert spec_of(sql).from_sql.startswith("FROM r")


def test_refusal_inside_a_with_clause_points_into_it():
    sql = "WITH x AS (SELECT rand() AS a FROM r)\nSELECT a FROM x"
    with pytest.raises(UnsupportedSQL) as err:
        spec_of(sql)
    assert sql.index("rand") <= err.value.position < sql.index(")")
    assert "at line 1, column " in err.value.message
