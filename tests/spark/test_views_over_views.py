"""Views over incremental views (engine/ops/chains.py): after each REFRESH of the top view only,
every view of the chain equals Spark's recompute of its definition with its upstream
definitions inlined as subqueries, over the same base-table versions; DROP, DESCRIBE, SHOW
and REFRESH ... FULL of an upstream view."""
from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from tests.spark.oracle import assert_view_matches, refresh
from tests.spark.workload import SCHEMAS, registered_workload

# name -> (definition, depth, the definition with every upstream view inlined)
U_GROUPS = "SELECT r.b, COUNT(*) AS n, SUM(r.c) AS sc FROM r GROUP BY r.b"
U_HIDDEN = "SELECT SUM(r.c) AS sc, COUNT(*) AS n FROM r GROUP BY r.a"      # hidden key a
U_RECOMPUTE = "SELECT r.a, s.e FROM r JOIN s ON r.b = s.b"                    # depth 0, a bag
CHAIN = {
    "vv_groups": (U_GROUPS, None, U_GROUPS),
    "vv_hidden": (U_HIDDEN, None, U_HIDDEN),
    "vv_recompute": (U_RECOMPUTE, 0, U_RECOMPUTE),
    # aggregate over aggregate: a sum of per-group counts, grouped by another aggregate
    "vv_counts": ("SELECT n, SUM(n) AS total, COUNT(*) AS k, SUM(sc) AS ssc FROM vv_groups "
                  "GROUP BY n", None,
                  f"SELECT n, SUM(n) AS total, COUNT(*) AS k, SUM(sc) AS ssc FROM ({U_GROUPS}) "
                  "vv_groups GROUP BY n"),
    # a view joined with a base table (NULL join keys, duplicates)
    "vv_join": ("SELECT s.e, SUM(vv_groups.n * s.f) AS w, COUNT(*) AS k FROM vv_groups "
                "JOIN s ON vv_groups.b = s.b GROUP BY s.e", None,
                f"SELECT s.e, SUM(vv_groups.n * s.f) AS w, COUNT(*) AS k FROM ({U_GROUPS}) "
                "vv_groups JOIN s ON vv_groups.b = s.b GROUP BY s.e"),
    # a view without its upstream's hidden key, read whole; and a depth-0 upstream
    "vv_bag": ("SELECT * FROM vv_hidden WHERE n > 1", None,
               f"SELECT * FROM ({U_HIDDEN}) vv_hidden WHERE n > 1"),
    "vv_pairs": ("SELECT e, COUNT(*) AS k FROM vv_recompute GROUP BY e", None,
                 f"SELECT e, COUNT(*) AS k FROM ({U_RECOMPUTE}) vv_recompute GROUP BY e"),
    # two levels: a view over vv_counts over vv_groups, and over two views at once
    "vv_top": ("SELECT SUM(k) AS groups, SUM(total) AS rows FROM vv_counts WHERE n > 1", None,
               f"SELECT SUM(k) AS groups, SUM(total) AS rows FROM (SELECT n, SUM(n) AS total, "
               f"COUNT(*) AS k, SUM(sc) AS ssc FROM ({U_GROUPS}) vv_groups GROUP BY n) vv_counts "
               "WHERE n > 1"),
}
TOPS = ["vv_join", "vv_bag", "vv_pairs", "vv_top"]


def _watermarks(vl, name):
    view = vl.ctx.load(name)
    last = view.manifest.last_committed()
    return {t.id: last.watermarks[rel] for rel, t in view.compiled.spec.tables.items()
            if not t.view}


def _check_all(spark, vl):
    for name, (_, _, oracle) in CHAIN.items():
        assert_view_matches(spark, name, oracle)
    # one refresh brought every view to the same version of each base table
    seen = {}
    for name in CHAIN:
        for loc, version in _watermarks(vl, name).items():
            assert seen.setdefault(loc, version) == version, (name, loc)


@pytest.fixture
def chain(spark, vl, tmp_path):
    work = registered_workload(spark, str(tmp_path), seed=41, rows=12, null_heavy=True)
    for name, (query, depth, _) in CHAIN.items():
        options = "" if depth is None else f" WITH (depth = {depth})"
        spark.sql(f"CREATE INCREMENTAL VIEW {name}{options} AS {query}")
    yield work
    for name in reversed(list(CHAIN)):
        vl.drop_view(name, if_exists=True)


def test_chain_equals_inlined_recompute_after_every_batch(spark, vl, chain):
    _check_all(spark, vl)
    for _ in range(2):
        chain.batch()
        for top in TOPS:          # only the views nobody reads: they refresh the others
            refresh(spark, top)
        _check_all(spark, vl)
    # a batch in which vv_groups has no changes (only s moves): vv_join still catches s
    groups_batch = vl.ctx.load("vv_groups").manifest.last_committed().batch
    write_deltalake(chain.paths["s"], pa.Table.from_pylist(
        [{"b": 1, "e": 2, "f": None}, {"b": None, "e": 1, "f": 3}, {"b": 1, "e": 2, "f": None}],
        schema=SCHEMAS["s"]), mode="append")
    assert vl.refresh("vv_join")["status"] == "refreshed"
    assert vl.ctx.load("vv_groups").manifest.last_committed().batch == groups_batch
    assert_view_matches(spark, "vv_join", CHAIN["vv_join"][2])


def test_drop_describe_show_and_full_refresh_of_an_upstream(spark, vl, chain):
    from viewlet.errors import ViewletError
    with pytest.raises(Exception, match=r"read by vv_counts, vv_join"):
        spark.sql("DROP INCREMENTAL VIEW vv_groups")
    assert spark.sql("SELECT COUNT(*) AS n FROM vv_groups").collect()[0].n > 0   # still there
    rows = {(r.section, r.name): r.value for r in
            spark.sql("DESCRIBE INCREMENTAL VIEW vv_counts").collect()}
    assert "REFRESH refreshes it first" in rows[("upstream view", "vv_groups")]
    assert ("downstream view", "vv_top") in rows
    assert ("downstream view", "vv_counts") in {
        (r.section, r.name) for r in spark.sql("DESCRIBE INCREMENTAL VIEW vv_groups").collect()}
    show = {r.view: r.tables for r in spark.sql("SHOW INCREMENTAL VIEWS").collect()}
    assert show["vv_join"] == "vv_groups (incremental view), s"
    # a column stored under another name cannot be read by name: refused with the remedy
    vl.create_view("vv_unnamed", "SELECT r.b, COUNT(*) FROM r GROUP BY r.b")
    try:
        with pytest.raises(ViewletError, match=r"stored as `count_1`.*plain alias"):
            vl.create_view("vv_over_unnamed", "SELECT * FROM vv_unnamed")
        assert vl.ctx.catalog.find("vv_over_unnamed") is None
    finally:
        vl.drop_view("vv_unnamed")

    chain.batch()
    old_counts = vl.ctx.catalog.find("vv_counts", "view").id
    out = vl.refresh("vv_groups", full=True)    # a new result table: its readers are rebuilt
    assert "vv_counts" in out["status"] and "vv_top" in out["status"]
    assert vl.ctx.catalog.find("vv_counts", "view").id != old_counts
    for name in ("vv_groups", "vv_counts", "vv_join", "vv_top"):
        assert_view_matches(spark, name, CHAIN[name][2])
    for top in TOPS:
        vl.refresh(top)
    _check_all(spark, vl)
    chain.batch()
    for top in TOPS:
        vl.refresh(top)
    _check_all(spark, vl)


def test_dependency_order_and_cycle_guard():
    """No Spark: the graph read from catalog specs (a cycle cannot be created through SQL,
    since a view reads only existing views; the guard stops a corrupted catalog)."""
    from types import SimpleNamespace
    from viewlet.errors import ViewletError
    from viewlet.engine.state import graph

    def ctx_of(reads):
        entries = [SimpleNamespace(name=n, spec={"refs": {u: {"id": u, "view": u} for u in ups}})
                   for n, ups in reads.items()]
        return SimpleNamespace(catalog=SimpleNamespace(entries=lambda kind=None: entries))

    ctx = ctx_of({"a": [], "b": ["a"], "c": ["b", "a"], "d": ["c"], "e": ["a"]})
    assert graph.upstream_order(ctx, ["d"]) == ["a", "b", "c", "d"]
    assert graph.downstream_order(ctx, "a") == ["b", "c", "d", "e"]
    assert graph.dependents(ctx, "A") == ["b", "c", "e"]
    with pytest.raises(ViewletError, match="would read itself"):
        graph.refuse_cycle(ctx, "a", ["d"])
    cyclic = ctx_of({"a": ["c"], "b": ["a"], "c": ["b"]})
    with pytest.raises(ViewletError, match=r"cycle \(b -> a -> c -> b\)"):
        graph.upstream_order(cyclic, ["b"])
