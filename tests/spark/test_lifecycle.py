"""DDL behaviour, errors that leave nothing behind, exactly-once batches and recovery."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from pyspark.errors import AnalysisException, ParseException

from viewlet import ViewletError
from viewlet.api.context import Viewlet
from viewlet.engine.maintain import apply
from viewlet.engine.ops import create
from viewlet.engine.state.program import StoredTables

from .oracle import assert_view_matches, explain_parts
from .workload import registered_workload

QUERY = "SELECT r.a, SUM(s.f) AS sf, COUNT(*) AS n FROM r JOIN s ON r.b = s.b GROUP BY r.a"


@pytest.fixture
def work(spark, vl, tmp_path):
    w = registered_workload(spark, str(tmp_path), seed=7, rows=15)
    return w


def _view_dirs(vl):
    root = os.path.join(vl.warehouse, "views")
    return set(os.listdir(root)) if os.path.exists(root) else set()


@pytest.mark.parametrize("sql,construct", [
    ("SELECT r.a FROM r ORDER BY r.b LIMIT 2", "ORDER BY r.b"),
    ("WITH RECURSIVE x AS (SELECT r.a FROM r) SELECT a FROM x", "WITH RECURSIVE"),
    ("SELECT r.a, COUNT(DISTINCT r.c, r.d) FROM r GROUP BY r.a", "COUNT(DISTINCT ...) with 2"),
    ("SELECT r.a, x.v FROM r LATERAL VIEW explode(array(r.b)) x AS v", "LATERAL VIEW"),
    ("SELECT r.a, rand() FROM r", "rand"),
    ("SELECT LAG(r.a) OVER (PARTITION BY r.b ORDER BY r.a) FROM r", "window function LAG"),
])
def test_unsupported_sql_is_refused_and_leaves_nothing(spark, vl, work, sql, construct):
    before = _view_dirs(vl)
    try:
        with pytest.raises(AnalysisException) as err:
            spark.sql(f"CREATE INCREMENTAL VIEW bad AS {sql}")
    finally:                      # a view created by mistake must not fail the next cases
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS bad")
    assert construct.lower() in str(err.value).lower()
    assert "bad" not in vl.view_names()
    assert _view_dirs(vl) == before


def test_missing_table_names_the_table_and_the_remedy(spark, vl, work):
    with pytest.raises(AnalysisException) as err:
        spark.sql("CREATE INCREMENTAL VIEW bad AS SELECT x.a FROM nowhere x")
    assert "nowhere" in str(err.value) and "register_table" in str(err.value)
    with pytest.raises(AnalysisException) as err:
        spark.sql("CREATE INCREMENTAL VIEW bad AS SELECT a FROM delta.`/no/such/table`")
    assert "/no/such/table" in str(err.value)
    assert "bad" not in vl.view_names()


def test_malformed_ddl_is_a_parse_error(spark, vl):
    with pytest.raises(ParseException) as err:
        spark.sql("CREATE INCREMENTAL VIEW v WITH (depth = deep) AS SELECT 1")
    assert "depth" in str(err.value)
    with pytest.raises(ParseException):
        spark.sql("REFRESH INCREMENTAL VIEW")


def test_ddl_statements(spark, vl, work):
    spark.sql(f"CREATE INCREMENTAL VIEW lc_v WITH (depth = 1) AS {QUERY}")
    row = spark.sql(f"CREATE INCREMENTAL VIEW IF NOT EXISTS lc_v AS {QUERY}").collect()[0]
    assert row.status == "exists"
    with pytest.raises(AnalysisException, match="already exists"):
        spark.sql(f"CREATE INCREMENTAL VIEW lc_v AS {QUERY}")
    spark.sql(f"CREATE INCREMENTAL VIEW lc_lines AS SELECT r.a,\n  COUNT(*) AS n\nFROM r\nGROUP BY r.a")
    shown = {r.view: r for r in spark.sql("SHOW INCREMENTAL VIEWS").collect()}
    assert shown["lc_v"].depth.startswith("1")
    # a row per view, on one line in the shell: the query's line breaks as spaces
    assert shown["lc_lines"].query == "SELECT r.a, COUNT(*) AS n FROM r GROUP BY r.a"
    spark.sql("DROP INCREMENTAL VIEW lc_lines")
    described = spark.sql("DESCRIBE INCREMENTAL VIEW lc_v").collect()
    assert any(r.section == "table" and "watermark version" in r.value for r in described)
    plan = explain_parts(spark, "lc_v")[0]
    assert "ON BATCH dr" in plan and "ON BATCH ds" in plan
    spark.sql("DROP INCREMENTAL VIEW lc_v")
    assert "lc_v" not in vl.view_names()
    assert spark.sql("DROP INCREMENTAL VIEW IF EXISTS lc_v").collect()[0].status == "not found"
    with pytest.raises(AnalysisException, match="does not exist"):
        spark.sql("REFRESH INCREMENTAL VIEW lc_v")


def test_delta_path_syntax_in_views_and_queries(spark, vl, work):
    r = work.paths["r"]
    assert spark.sql(f"SELECT COUNT(*) FROM delta.`{r}`").collect()[0][0] == len(work.current("r"))
    query = f"SELECT x.a, COUNT(*) AS n FROM delta.`{r}` x GROUP BY x.a"
    spark.sql(f"CREATE INCREMENTAL VIEW lc_path AS {query}")
    work.batch()
    spark.sql("REFRESH INCREMENTAL VIEW lc_path")
    assert_view_matches(spark, "lc_path", query)
    spark.sql("DROP INCREMENTAL VIEW lc_path")


def _no_feed_table(tmp_path, name):
    path = str(tmp_path / name)
    write_deltalake(path, pa.table({"k": pa.array([1, 2, 2], pa.int32())}))
    assert "delta.enableChangeDataFeed" not in DeltaTable(path).metadata().configuration
    return path


@pytest.mark.parametrize("theirs_elsewhere,replace", [(False, False), (True, True),
                                                       (True, False)])
def test_registering_a_table_while_another_process_registers_it(spark, tmp_path,
                                                                theirs_elsewhere, replace):
    """Two processes started together register the same name: the one whose add loses the
    race reads the catalog again and decides against the winner's entry (the same table:
    registered; another table: replaced when asked, else the usual error)."""
    warehouse = str(tmp_path / "wh")
    first, second = (Viewlet(spark, warehouse) for _ in range(2))
    ours = _no_feed_table(tmp_path, "ours")
    theirs = _no_feed_table(tmp_path, "theirs") if theirs_elsewhere else ours
    find = second.ctx.catalog.find
    raced = []

    def find_before_the_other_commits(name, kind=None):
        if not raced:             # second read the catalog just before first's add landed
            first.register_table(name, theirs)
            raced.append(name)
            return None
        return find(name, kind)

    second.ctx.catalog.find = find_before_the_other_commits
    if theirs_elsewhere and not replace:
        with pytest.raises(ViewletError, match="Pass replace=True"):
            second.register_table("t", ours, replace=replace)
        winner = theirs
    else:
        assert second.register_table("t", ours, replace=replace).status == "registered"
        winner = ours
    assert raced == ["t"]
    fresh = Viewlet(spark, warehouse).ctx.catalog
    assert [e.location for e in fresh.entries() if e.name == "t"] == \
        [fresh.find("t").location]
    assert fresh.find("t").location.rstrip("/").endswith(os.path.basename(winner))


def test_change_feed_is_turned_on_only_when_asked(spark, vl, tmp_path):
    """CREATE never writes to a user's table unasked: a table without a change data feed is
    refused (naming it and the remedies) unless the view or the session allows turning it on."""
    before = _view_dirs(vl)
    path = _no_feed_table(tmp_path, "nofeed")
    query = f"SELECT k, COUNT(*) AS n FROM delta.`{path}` GROUP BY k"
    with pytest.raises(AnalysisException) as err:
        spark.sql(f"CREATE INCREMENTAL VIEW lc_feed AS {query}")
    message = str(err.value)
    assert f"The change data feed of delta.`{path}` is off" in message
    assert f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES (delta.enableChangeDataFeed = true)" in message
    assert "WITH (enable_change_data_feed = true)" in message
    assert "SET spark.viewlet.enableChangeDataFeed = true" in message
    assert DeltaTable(path).version() == 0 and "lc_feed" not in vl.view_names()
    assert _view_dirs(vl) == before
    spark.sql(f"CREATE INCREMENTAL VIEW lc_feed WITH (enable_change_data_feed = true) AS {query}")
    assert DeltaTable(path).metadata().configuration["delta.enableChangeDataFeed"] == "true"
    write_deltalake(path, pa.table({"k": pa.array([2, 3], pa.int32())}), mode="append")
    DeltaTable(path).delete("k = 1")
    spark.sql("REFRESH INCREMENTAL VIEW lc_feed")
    assert_view_matches(spark, "lc_feed", query)
    spark.sql("DROP INCREMENTAL VIEW lc_feed")


def test_change_feed_session_setting_and_context_attribute(spark, vl, tmp_path):
    by_setting, by_attribute = _no_feed_table(tmp_path, "a"), _no_feed_table(tmp_path, "b")
    spark.conf.set("spark.viewlet.enableChangeDataFeed", "true")
    try:
        spark.sql(f"CREATE INCREMENTAL VIEW lc_conf AS SELECT k FROM delta.`{by_setting}`")
        with pytest.raises(AnalysisException, match="is off"):     # the view's false wins
            spark.sql("CREATE INCREMENTAL VIEW lc_no WITH (enable_change_data_feed = false) AS "
                      f"SELECT k FROM delta.`{_no_feed_table(tmp_path, 'c')}`")
    finally:
        spark.conf.unset("spark.viewlet.enableChangeDataFeed")
    assert DeltaTable(by_setting).metadata().configuration["delta.enableChangeDataFeed"] == "true"
    assert vl.auto_enable_change_feed is False                 # the default again
    vl.auto_enable_change_feed = True                          # the context's own switch wins
    try:
        spark.sql(f"CREATE INCREMENTAL VIEW lc_attr AS SELECT k FROM delta.`{by_attribute}`")
    finally:
        vl.auto_enable_change_feed = None
    assert DeltaTable(by_attribute).metadata().configuration["delta.enableChangeDataFeed"] == "true"
    for name in ("lc_conf", "lc_attr"):
        spark.sql(f"DROP INCREMENTAL VIEW {name}")


@pytest.mark.parametrize("fail_on", ["add_rows", "merge_replace"])
def test_crash_mid_batch_loses_nothing_and_applies_nothing_twice(spark, vl, work, monkeypatch, fail_on):
    name = f"lc_crash_{fail_on}"
    spark.sql(f"CREATE INCREMENTAL VIEW {name} AS {QUERY}")
    work.batch()
    work.batch()
    real = getattr(vl.ctx.store, fail_on)
    calls = {"n": 0}

    def crash_after_first(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2 or fail_on == "merge_replace":
            raise RuntimeError("simulated crash")
        return real(*args, **kwargs)

    monkeypatch.setattr(vl.ctx.store, fail_on, crash_after_first)
    with pytest.raises(AnalysisException, match="simulated crash"):
        spark.sql(f"REFRESH INCREMENTAL VIEW {name}")
    view = vl.ctx.load(name)
    assert view.manifest.latest().phase == "planned"
    monkeypatch.setattr(vl.ctx.store, fail_on, real)
    row = spark.sql(f"REFRESH INCREMENTAL VIEW {name}").collect()[0]
    assert "recovered" in row.status
    assert_view_matches(spark, name, QUERY)
    # Re-applying a committed batch is a no-op: every map already carries its txn id.
    last = view.manifest.last_committed()
    apply.apply_batch(view, last)
    assert_view_matches(spark, name, QUERY)
    spark.sql(f"DROP INCREMENTAL VIEW {name}")


def test_view_is_readable_from_a_new_process(spark, vl, work, tmp_path):
    spark.sql(f"CREATE INCREMENTAL VIEW lc_shared AS {QUERY}")
    work.batch()
    spark.sql("REFRESH INCREMENTAL VIEW lc_shared")
    expected = sorted(tuple(r) for r in spark.sql("SELECT a, n FROM lc_shared").collect())
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.join(os.path.dirname(__file__), '..', '..', 'python')!r})
        import viewlet
        from pyspark.sql import SparkSession
        b = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
        spark = viewlet.configure_spark(b, warehouse={vl.warehouse!r}).getOrCreate()
        viewlet.enable(spark)
        for r in spark.sql("SELECT a, n FROM lc_shared").collect():
            print("ROW", r.a, r.n)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = sorted(tuple(None if x == "None" else int(x) for x in line.split()[1:])
                  for line in out.stdout.splitlines() if line.startswith("ROW"))
    assert rows == expected
    spark.sql("DROP INCREMENTAL VIEW lc_shared")


IN_QUERY = ("SELECT r.a, COUNT(*) AS n FROM r "
            "WHERE r.b IN (SELECT s.b FROM s WHERE s.e > 2) GROUP BY r.a")


@pytest.mark.parametrize("rule,query", [("fused", QUERY), ("in_filters", IN_QUERY)],
                         ids=["map-fusion", "in-filters"])
def test_view_created_before_a_compile_rule_keeps_its_maps(spark, vl, work, monkeypatch,
                                                           rule, query):
    """A view runs the program stored with it: one created before a compile rule (`fused`:
    maps over one join are one map; `in_filters`: an IN (subquery) conjunct is its match
    count) keeps the maps its tables hold, in a process that never compiled it, while a new
    compile would give other maps; and it stays exact."""
    import functools
    before = functools.partial(create.compile_definition, **{rule: False})
    monkeypatch.setattr(create, "compile_definition", before)
    view = f"lc_before_{rule}"
    spark.sql(f"CREATE INCREMENTAL VIEW {view} AS {query}")
    monkeypatch.undo()
    entry = vl.ctx.load(view).entry
    vl.ctx.forget(entry.id)                                       # as a new process would
    loaded = vl.ctx.load(view).compiled
    assert list(loaded.program.maps) == list(entry.spec["maps"])
    assert [m["name"] for m in entry.spec["program"]["maps"]] == list(entry.spec["maps"])
    new = create.compile_definition(query, StoredTables(entry.spec["refs"]), None)
    assert len(new.program.maps) < len(loaded.program.maps)   # the rule changes the maps
    for _ in range(2):
        work.batch()
        spark.sql(f"REFRESH INCREMENTAL VIEW {view}")
        assert_view_matches(spark, view, query)
    spark.sql(f"DROP INCREMENTAL VIEW {view}")


def test_view_without_a_stored_program_is_rebuilt_once(spark, vl, work):
    """A catalog entry written before programs were stored: its maps cannot be proven to be
    the ones this version compiles, so its next REFRESH rebuilds it (saying why), stores the
    program, and later batches are incremental again; exact throughout."""
    from viewlet.engine.state.catalog import Entry
    view = "lc_unproven"
    spark.sql(f"CREATE INCREMENTAL VIEW {view} AS {QUERY}")
    entry = vl.ctx.catalog.find(view, "view")
    legacy = {k: v for k, v in entry.spec.items() if k != "program"}
    vl.ctx.catalog.replace(entry, Entry(entry.id, entry.kind, entry.name, entry.location, legacy))
    vl.ctx.forget(entry.id)
    work.batch()
    first = spark.sql(f"REFRESH INCREMENTAL VIEW {view}").first()
    assert first["status"].startswith("rebuilt: created by a Viewlet that did not store"), first
    assert_view_matches(spark, view, QUERY)
    rebuilt = vl.ctx.catalog.find(view, "view")
    assert rebuilt.id != entry.id and rebuilt.spec["program"]["format"] == 1
    work.batch()
    second = spark.sql(f"REFRESH INCREMENTAL VIEW {view}").first()
    assert second["status"] == "refreshed", second
    assert_view_matches(spark, view, QUERY)
    spark.sql(f"DROP INCREMENTAL VIEW {view}")
