"""How much history Viewlet's own tables keep (engine/state/retention.py): a view's maps and
manifest keep an hour of log entries and tombstones, its result table Delta's defaults; the
tables of a view created before get the retention when they are next compacted, and a hot
map follows that commit. The view stays exact throughout."""
from __future__ import annotations

from viewlet.engine.maintain import maps
from viewlet.engine.state import manifest, stats
from viewlet.engine.state.retention import INTERNAL_TABLE_PROPERTIES

from .oracle import assert_view_matches
from .workload import registered_workload

QUERY = "SELECT r.a, SUM(r.c * s.f) AS x, COUNT(*) AS n FROM r JOIN s ON r.b = s.b GROUP BY r.a"
#: what a table of a view created before the retention holds
BEFORE = {"delta.logRetentionDuration": "interval 30 days",
          "delta.deletedFileRetentionDuration": "interval 1 weeks"}


def _retention(store, path):
    props = store.properties(path)
    return {k: props.get(k) for k in INTERNAL_TABLE_PROPERTIES}


def test_internal_tables_keep_an_hour_and_the_result_keeps_deltas_defaults(spark, vl, tmp_path):
    registered_workload(spark, str(tmp_path), seed=3, rows=20)
    spark.sql(f"CREATE INCREMENTAL VIEW ret_new AS {QUERY}")
    view, store = vl.ctx.load("ret_new"), vl.ctx.store
    assert view.definition.maps
    for name in view.definition.maps:
        assert _retention(store, view.map_path(name)) == INTERNAL_TABLE_PROPERTIES, name
    assert _retention(store, view.manifest.path) == INTERNAL_TABLE_PROPERTIES
    assert _retention(store, view.result_path) == {k: None for k in INTERNAL_TABLE_PROPERTIES}
    spark.sql("DROP INCREMENTAL VIEW ret_new")


def test_a_view_created_before_gets_the_retention_at_its_next_compactions(
        spark, vl, tmp_path, monkeypatch):
    monkeypatch.setattr(maps, "ROWS_PER_FILE", 2)         # several files even for tiny maps
    monkeypatch.setattr(stats, "COMPACT_FILES", 2)        # compaction every other append
    monkeypatch.setattr(manifest, "COMPACT_EVERY", 2)
    work = registered_workload(spark, str(tmp_path), seed=4, rows=20)
    spark.sql(f"CREATE INCREMENTAL VIEW ret_old AS {QUERY}")
    view, store = vl.ctx.load("ret_old"), vl.ctx.store
    paths = [view.map_path(name) for name in view.definition.maps] + [view.manifest.path]
    for path in paths:
        store.set_properties(path, BEFORE)
    assert all(_retention(store, p) == BEFORE for p in paths)
    followed = False
    for _ in range(8):
        while not {"r", "s"} & set(work.batch()):
            pass
        spark.sql("REFRESH INCREMENTAL VIEW ret_old")
        assert_view_matches(spark, "ret_old", QUERY)
        for path in paths[:-1]:
            hot = vl.ctx.hot_maps.peek(path)
            # a map whose properties this batch set: its hot rows took the new version
            followed |= hot is not None and hot.version == store.version(path) and \
                store.commits(path, hot.version - 1, hot.version)[0].operation == "SET TBLPROPERTIES"
    view.manifest.settle()    # the last committed row (and compaction) after REFRESH returned
    assert all(_retention(store, p) == INTERNAL_TABLE_PROPERTIES for p in paths), \
        {p: _retention(store, p) for p in paths}
    assert followed
    spark.sql("DROP INCREMENTAL VIEW ret_old")
