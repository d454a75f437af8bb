"""A view's query replaced (CREATE OR REPLACE, ALTER ... AS, CREATE OR REFRESH with a new
query): the maps the new query still needs are kept where they are, untouched (their Delta
versions do not move), the others loaded at the versions the kept ones hold; the view equals
Spark's evaluation of the new query after the change and after later batches."""
from __future__ import annotations

import os

import pytest

from .oracle import assert_view_matches, refresh
from .workload import registered_workload

JOIN = "SELECT r.a, s.e, SUM(r.c * s.f) AS x, COUNT(*) AS n FROM r JOIN s ON r.b = s.b GROUP BY r.a, s.e"
# the same join, one more table and one more output: r's and s's maps are the same maps
WIDER = ("SELECT r.a, s.e, SUM(r.c * s.f) AS x, COUNT(*) AS n, SUM(t.g) AS sg FROM r "
         "JOIN s ON r.b = s.b JOIN t ON s.e = t.e GROUP BY r.a, s.e")
OTHER = "SELECT t.h, COUNT(*) AS n FROM t GROUP BY t.h"


def _maps(vl, view):
    """{map name: (its table, its Delta version)} of the view as the catalog has it."""
    loaded = vl.ctx.load(view)
    return {m: (loaded.map_path(m), vl.ctx.store.version(loaded.map_path(m)))
            for m in loaded.definition.maps}


@pytest.mark.parametrize("statement", ["CREATE OR REPLACE INCREMENTAL VIEW {v} AS {q}",
                                       "ALTER INCREMENTAL VIEW {v} AS {q}",
                                       "CREATE OR REFRESH MATERIALIZED VIEW {v} AS {q}"],
                         ids=["create-or-replace", "alter-as", "create-or-refresh"])
def test_a_new_query_keeps_the_maps_it_still_needs(spark, vl, tmp_path, statement):
    work = registered_workload(spark, str(tmp_path), seed=hash(statement) & 0xffff)
    view = "rp_" + statement.split()[2].lower()
    spark.sql(f"CREATE INCREMENTAL VIEW {view} AS {JOIN}")
    work.batch()
    refresh(spark, view)
    old_dir = vl.ctx.catalog.find(view, "view").location
    before = _maps(vl, view)
    row = spark.sql(statement.format(v=view, q=WIDER)).first()
    after = _maps(vl, view)
    kept = {name: where for name, where in after.items() if where[0] in
            {path for path, _ in before.values()}}
    assert kept, "no map kept"
    # a kept map is read where it was, at its version: the replace wrote nothing to it
    assert all(v == dict(before.values())[p] for p, v in kept.values()), (before, after)
    assert all(p.startswith(old_dir) for p, _ in kept.values())
    loaded = len(after) - len(kept)
    assert row["status"].startswith(f"replaced: {len(kept)} map(s) kept, {loaded} loaded"), row
    assert row["maps"] == len(after)
    assert_view_matches(spark, view, WIDER)
    for _ in range(2):
        work.batch()
        refresh(spark, view)
        assert_view_matches(spark, view, WIDER)
    history = spark.sql(f"DESCRIBE INCREMENTAL VIEW {view} HISTORY").collect()
    replaced = [r for r in history if r["status"] == "replaced"]
    assert len(replaced) == 1 and f"{len(kept)} map(s) kept" in replaced[0]["message"], history
    spark.sql(f"DROP INCREMENTAL VIEW {view}")
    assert not os.path.exists(old_dir)    # the kept maps' first directory goes with the view


def test_replaced_twice_and_back_and_nothing_left_over(spark, vl, tmp_path):
    """Back to the first query: the maps kept twice stay in the first view's directory; a
    query with nothing in common keeps no map; every directory a replace no longer needs is
    gone, and DROP leaves none. Each replace comes with changes not yet applied: it brings
    the view up to date first."""
    work = registered_workload(spark, str(tmp_path), seed=77)
    views_dir = os.path.join(vl.warehouse, "views")
    existing = set(os.listdir(views_dir)) if os.path.exists(views_dir) else set()
    spark.sql(f"CREATE INCREMENTAL VIEW rp_twice AS {JOIN}")
    for query in (WIDER, JOIN):
        work.batch()
        row = spark.sql(f"CREATE OR REPLACE INCREMENTAL VIEW rp_twice AS {query}").first()
        assert " 0 map(s) kept" not in row["status"], row
        work.batch()
        refresh(spark, "rp_twice")
        assert_view_matches(spark, "rp_twice", query)
    assert len(set(os.listdir(views_dir)) - existing) == 2     # the view's and the kept maps'
    row = spark.sql(f"ALTER MATERIALIZED VIEW rp_twice AS {OTHER}").first()
    assert row["status"].startswith("replaced: 0 map(s) kept"), row
    assert len(set(os.listdir(views_dir)) - existing) == 1
    work.batch()
    refresh(spark, "rp_twice")
    assert_view_matches(spark, "rp_twice", OTHER)
    spark.sql("DROP INCREMENTAL VIEW rp_twice")
    assert set(os.listdir(views_dir)) == existing


def test_alter_as_needs_the_view_and_keeps_its_settings(spark, vl, tmp_path):
    from pyspark.errors import AnalysisException
    registered_workload(spark, str(tmp_path), seed=78)
    with pytest.raises(AnalysisException, match="does not exist"):
        spark.sql(f"ALTER INCREMENTAL VIEW rp_nothing AS {JOIN}")
    spark.sql(f"CREATE INCREMENTAL VIEW rp_settings WITH (depth = 1, map_writes = 'merge') AS {JOIN}")
    spark.sql(f"ALTER INCREMENTAL VIEW rp_settings AS {WIDER}")
    spec = vl.ctx.catalog.find("rp_settings", "view").spec
    assert (spec["depth"], spec["map_writes"]) == (1, "merge")
    spark.sql(f"ALTER INCREMENTAL VIEW rp_settings WITH (depth = 2) AS {JOIN}")
    assert vl.ctx.catalog.find("rp_settings", "view").spec["depth"] == 2
    assert_view_matches(spark, "rp_settings", JOIN)
    spark.sql("DROP INCREMENTAL VIEW rp_settings")
