"""Viewlet's DDL parser without Spark: Databricks' MATERIALIZED VIEW spellings and schedules,
names by Spark's rules (reserved words, backticks, non-ASCII), options, comments."""
from __future__ import annotations

import pytest

from viewlet.api import ddl
from viewlet.frontend import lexical
from viewlet.errors import ViewletParseError

Q = "SELECT k, COUNT(*) AS n FROM t GROUP BY k"


@pytest.mark.parametrize("text, kind, name, options", [
    (f"CREATE MATERIALIZED VIEW mv AS {Q}", "create", "mv", {}),
    (f"create materialized view mv schedule every 2 hours as {Q}", "create", "mv",
     {"refresh": 7200.0}),
    (f"CREATE MATERIALIZED VIEW mv SCHEDULE REFRESH EVERY 1 DAY AS {Q}", "create", "mv",
     {"refresh": 86400.0}),
    (f"CREATE MATERIALIZED VIEW mv WITH (depth = 1) SCHEDULE EVERY 5 MINUTES AS {Q}", "create",
     "mv", {"depth": 1, "refresh": 300.0}),
    (f"CREATE MATERIALIZED VIEW mv SCHEDULE EVERY 1 WEEK WITH (caches = true) AS {Q}", "create",
     "mv", {"caches": True, "refresh": 604800.0}),
    ("REFRESH MATERIALIZED VIEW mv", "refresh", "mv", {}),
    ("REFRESH MATERIALIZED VIEW mv FULL", "refresh", "mv", {"full": True}),
    ("DROP MATERIALIZED VIEW mv", "drop", "mv", {}),
    ("SHOW MATERIALIZED VIEWS", "show", None, {}),
    ("DESCRIBE MATERIALIZED VIEW mv HISTORY LIMIT 2", "history", "mv", {"limit": 2}),
    ("EXPLAIN MATERIALIZED VIEW mv", "explain", "mv", {}),
    ("ALTER MATERIALIZED VIEW mv ADD SCHEDULE EVERY 3 HOURS", "alter", "mv",
     {"schedule": "add", "refresh": 10800.0}),
    ("ALTER MATERIALIZED VIEW mv ALTER SCHEDULE REFRESH EVERY 30 MINUTES", "alter", "mv",
     {"schedule": "alter", "refresh": 1800.0}),
    ("ALTER MATERIALIZED VIEW mv DROP SCHEDULE", "alter", "mv", {"schedule": "drop", "refresh": None}),
    ("ALTER INCREMENTAL VIEW mv ADD SCHEDULE EVERY 1 HOUR", "alter", "mv",
     {"schedule": "add", "refresh": 3600.0}),
    ("ALTER INCREMENTAL VIEW mv SET REFRESH EVERY '2 days'", "alter", "mv", {"refresh": 172800.0}),
    (f"CREATE MATERIALIZED VIEW mv REFRESH POLICY AUTO AS {Q}", "create", "mv",
     {"refresh_policy": "AUTO"}),
    (f"CREATE MATERIALIZED VIEW mv SCHEDULE EVERY 1 HOUR REFRESH POLICY incremental strict AS {Q}",
     "create", "mv", {"refresh": 3600.0, "refresh_policy": "INCREMENTAL STRICT"}),
    (f"CREATE MATERIALIZED VIEW mv REFRESH POLICY INCREMENTAL WITH (engine = 'local') AS {Q}",
     "create", "mv", {"refresh_policy": "INCREMENTAL", "engine": "local"}),
    (f"CREATE MATERIALIZED VIEW mv REFRESH POLICY FULL AS {Q}", "create", "mv",
     {"refresh_policy": "FULL"}),
])
def test_databricks_spellings(text, kind, name, options):
    st = ddl.parse(text)
    assert (st.kind, st.name, st.options) == (kind, name, options)
    if kind == "create":
        assert st.query == Q


def test_create_or_refresh():
    st = ddl.parse(f"CREATE OR REFRESH MATERIALIZED VIEW mv AS {Q}")
    assert st.or_refresh and not st.or_replace and st.query == Q
    assert ddl.parse(f"CREATE OR REPLACE INCREMENTAL VIEW v AS {Q}").or_replace
    with pytest.raises(ViewletParseError, match="OR REFRESH and IF NOT EXISTS"):
        ddl.parse(f"CREATE OR REFRESH MATERIALIZED VIEW IF NOT EXISTS mv AS {Q}")


def test_explain_create_is_the_create_statement_explained():
    st = ddl.parse(f"EXPLAIN /* c */ CREATE OR REFRESH MATERIALIZED VIEW mv WITH (depth = 1) "
                   f"AS {Q};")
    assert (st.kind, st.name, st.options, st.query) == ("explain", "mv", {"depth": 1}, Q)
    text = f"explain create incremental view v as {Q}"
    st = ddl.parse(text)
    assert st.kind == "explain" and text[st.query_offset:] == Q    # error positions shift by it
    assert ddl.parse("EXPLAIN MATERIALIZED VIEW mv").query is None


@pytest.mark.parametrize("mode", ["EXTENDED", "formatted", "CODEGEN", "COST", "LOGICAL"])
def test_explain_modes_of_create_are_refused_with_the_remedy(mode):
    with pytest.raises(ViewletParseError, match=f"EXPLAIN {mode.upper()} is Spark's.*write "
                                                r"EXPLAIN CREATE \.\.\. without it") as err:
        ddl.parse(f"EXPLAIN {mode} CREATE MATERIALIZED VIEW mv AS {Q}")
    assert err.value.position == len("EXPLAIN ")


@pytest.mark.parametrize("text, message", [
    (f"CREATE MATERIALIZED VIEW mv SCHEDULE CRON '0 0 * * *' AS {Q}", "SCHEDULE CRON is not supported"),
    (f"CREATE MATERIALIZED VIEW mv SCHEDULE EVERY 0 HOURS AS {Q}", "positive whole number"),
    (f"CREATE MATERIALIZED VIEW mv SCHEDULE EVERY 2 FORTNIGHTS AS {Q}", "Expected a unit"),
    (f"CREATE MATERIALIZED VIEW mv SCHEDULE EVERY 2 HOURS WITH (refresh = '1 minute') AS {Q}",
     "one refresh schedule"),
    (f"CREATE MATERIALIZED VIEW mv COMMENT 'x' AS {Q}", "clauses before AS are WITH"),
    ("ALTER MATERIALIZED VIEW mv SCHEDULE EVERY 1 HOUR", "Expected SET REFRESH, ADD SCHEDULE"),
    ("CREATE TEMPORARY VIEW v AS SELECT 1", "Expected INCREMENTAL or MATERIALIZED"),
    (f"CREATE MATERIALIZED VIEW mv REFRESH POLICY SOMETIMES AS {Q}",
     "Expected a refresh policy .AUTO, INCREMENTAL, INCREMENTAL STRICT, FULL."),
    (f"CREATE MATERIALIZED VIEW mv REFRESH EVERY 1 HOUR AS {Q}", "Expected POLICY"),
])
def test_schedule_and_clause_errors(text, message):
    with pytest.raises(ViewletParseError, match=message):
        ddl.parse(text)


@pytest.mark.parametrize("written, name", [
    ("`select`", "select"), ("`SELECT`", "SELECT"), ("sales_2024", "sales_2024"),
    ("`café`", "café"), ("`日本の売上`", "日本の売上"), ("`a``b`", "a`b"), ("`with space`", "with space"),
    ("incremental", "incremental"), ("view", "view"), ("set", "set"), ("_x", "_x"),
])
def test_names_follow_spark(written, name):
    for text in (f"DROP INCREMENTAL VIEW {written}", f"CREATE INCREMENTAL VIEW {written} AS {Q}",
                 f"REFRESH MATERIALIZED VIEW {written} FULL"):
        assert ddl.parse(text).name == name
    assert ddl.parse(f"DROP INCREMENTAL VIEW {lexical.quote_identifier(name)}").name == name


@pytest.mark.parametrize("written, message", [
    ("select", "'select' is a reserved word of Spark SQL: to use it as a name, quote it as `select`"),
    ("FROM", "reserved word"), ("table", "reserved word"), ("as", "reserved word"),
    ("café", "The unquoted identifier café is invalid and must be back quoted as: `café`"),
    ("``", "empty quoted name"), ("`open", "Unclosed backtick"), ("1abc", "Expected a view name"),
])
def test_names_spark_refuses(written, message):
    with pytest.raises(ViewletParseError, match=message) as err:
        ddl.parse(f"CREATE INCREMENTAL VIEW {written} AS {Q}")
    assert err.value.position == len("CREATE INCREMENTAL VIEW ")


def test_quote_identifier_round_trips():
    for name in ("v", "select", "café", "a`b", "with space", "Sales"):
        quoted = lexical.quote_identifier(name)
        assert ddl.parse(f"EXPLAIN INCREMENTAL VIEW {quoted}").name == name
    assert lexical.quote_identifier("v") == "v" and lexical.quote_identifier("select") == "`select`"


def test_change_data_feed_option():
    st = ddl.parse(f"CREATE INCREMENTAL VIEW v WITH (enable_change_data_feed = true) AS {Q}")
    assert st.options == {"enable_change_data_feed": True}
    with pytest.raises(ViewletParseError, match="enable_change_data_feed must be true or false"):
        ddl.parse(f"CREATE INCREMENTAL VIEW v WITH (enable_change_data_feed = maybe) AS {Q}")


def test_comments_are_blanked_outside_strings_and_names():
    text = "/* lead */ CREATE INCREMENTAL VIEW `a--b` AS SELECT '--not a comment' AS x -- tail"
    blank = lexical.strip_comments(text)
    assert len(blank) == len(text) and "lead" not in blank and "tail" not in blank
    assert "'--not a comment'" in blank and "`a--b`" in blank
    assert ddl.parse(text).name == "a--b"


def test_comments_nest_and_escaped_quotes_stay_inside_strings():
    # Spark's bracketed comments nest; a backslash-escaped quote does not end a string.
    text = "SELECT 'it\\'s -- here' AS s /* a /* b */ c */ FROM t WHERE s LIKE '%--%' -- end\nAND 1 = 1"
    blank = lexical.strip_comments(text)
    assert len(blank) == len(text) and blank.count("\n") == 1
    assert " c */" not in blank and "end" not in blank
    assert "'it\\'s -- here'" in blank and "'%--%'" in blank and blank.endswith("AND 1 = 1")
