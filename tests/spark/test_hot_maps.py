"""Maps hot in driver memory (engine/local/hotmaps.py, engine/maintain/hot.py) in real refreshes: batches
read them from memory, another writer of the same view makes a session read Delta again
(never a stale map), and a bound too small for the maps leaves the view exact."""
from __future__ import annotations

from viewlet.api.context import Viewlet

from .oracle import assert_view_matches
from .workload import registered_workload

QUERY = "SELECT t.h, COUNT(*) AS n, SUM(s.f) AS sf FROM r, s, t WHERE r.b = s.b AND s.e = t.e " \
        "GROUP BY t.h"


def _sources(vl, view):
    reads = vl.ctx.load(view).manifest.last_committed().stats.get("map_reads", [])
    return {r[-1] for r in reads}


def _batch(spark, work, view, refresh):
    while not {"r", "s", "t"} & set(work.batch()):
        pass
    refresh()
    assert_view_matches(spark, view, QUERY)


def test_batches_read_hot_maps_and_another_writer_sends_them_back_to_delta(spark, vl, tmp_path):
    work = registered_workload(spark, str(tmp_path), seed=61)
    spark.sql(f"CREATE INCREMENTAL VIEW hm_v WITH (engine = 'local') AS {QUERY}")
    view = vl.ctx.load("hm_v")
    try:
        hot = {m: vl.ctx.hot_maps.peek(view.map_path(m)) for m in view.definition.maps}
        assert all(h is not None and h.version == 0 for h in hot.values())   # from CREATE
        for _ in range(3):
            _batch(spark, work, "hm_v", lambda: vl.refresh("hm_v"))
            assert _sources(vl, "hm_v") <= {"memory"}
        for m in view.definition.maps:                 # each at its map's current version
            h = vl.ctx.hot_maps.peek(view.map_path(m))
            assert h is not None and h.version == vl.ctx.store.version(view.map_path(m))
        # Another session's context refreshes the same view: its batches move the maps on.
        other = Viewlet(spark, vl.warehouse)
        _batch(spark, work, "hm_v", lambda: other.refresh("hm_v"))
        # This session's hot maps no longer hold the current versions: never read as such,
        # read from Delta (and kept again) as batches need them.
        _batch(spark, work, "hm_v", lambda: vl.refresh("hm_v"))
        assert "delta" in _sources(vl, "hm_v") or not _sources(vl, "hm_v")
        sources = []
        for _ in range(4):
            _batch(spark, work, "hm_v", lambda: vl.refresh("hm_v"))
            sources.append(_sources(vl, "hm_v"))
        assert sources[-1] <= {"memory"}
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS hm_v")


def test_maps_larger_than_the_memory_bound_are_read_from_delta(spark, vl, tmp_path, monkeypatch):
    """The view's maps, hot after CREATE and used by a batch, are evicted for another view's
    map (DESCRIBE says so); then no map fits the bound and every batch reads Delta, exact."""
    import pyarrow as pa
    from viewlet.engine.local.hotmaps import HotMap
    work = registered_workload(spark, str(tmp_path), seed=62, rows=30)
    spark.sql(f"CREATE INCREMENTAL VIEW hm_small WITH (engine = 'local') AS {QUERY}")
    view = vl.ctx.load("hm_small")
    try:
        assert all(vl.ctx.hot_maps.peek(view.map_path(m)) is not None for m in view.definition.maps)
        _batch(spark, work, "hm_small", lambda: vl.refresh("hm_small"))   # a batch uses them
        assert _sources(vl, "hm_small") <= {"memory"}
        used = {r[0] for r in view.manifest.last_committed().stats["map_reads"]}
        assert used
        other = HotMap("/another/view/map", 0, pa.table({"k": list(range(1000)), "v": [1] * 1000}),
                       ["k"], ["v"], ["v"])
        monkeypatch.setattr(vl.ctx.hot_maps, "budget", other.nbytes)
        assert vl.ctx.hot_maps.put(other)                          # room made for it
        described = {(r[0], r[1]): r[2] for r in spark.sql(
            "DESCRIBE INCREMENTAL VIEW hm_small").collect()}
        assert all("evicted for other views' maps" in described[("map", m)] for m in used)
        monkeypatch.setattr(vl.ctx.hot_maps, "budget", 64)       # bytes: no map fits
        vl.ctx.hot_maps.evict_prefix("")
        assert all(vl.ctx.hot_maps.peek(view.map_path(m)) is None for m in view.definition.maps)
        for _ in range(3):
            _batch(spark, work, "hm_small", lambda: vl.refresh("hm_small"))
            assert _sources(vl, "hm_small") <= {"delta"}
            assert vl.ctx.hot_maps.used() <= vl.ctx.hot_maps.budget
        described = {(r[0], r[1]): r[2] for r in spark.sql(
            "DESCRIBE INCREMENTAL VIEW hm_small").collect()}
        assert all("not in memory" in described[("map", m)] for m in view.definition.maps)
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS hm_small")


def test_the_view_state_is_held_in_memory_when_the_budget_has_room(spark, vl, tmp_path):
    """A local batch looks up its touched groups' state in memory: a state map not hot (a
    new process, a CREATE on the executors) is read whole once and held as a spare, then
    kept equal to its table by later batches; exact throughout."""
    work = registered_workload(spark, str(tmp_path), seed=62)
    spark.sql(f"CREATE INCREMENTAL VIEW hm_state WITH (engine = 'local') AS {QUERY}")
    view = vl.ctx.load("hm_state")
    state = view.map_path(view.definition.view_map)
    try:
        for m in view.definition.maps:
            vl.ctx.hot_maps.evict(view.map_path(m))
        for _ in range(2):
            _batch(spark, work, "hm_state", lambda: vl.refresh("hm_state"))
            held = vl.ctx.hot_maps.peek(state)
            assert held is not None and held.spare, held
            assert held.version == vl.ctx.store.version(state)
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS hm_state")


def test_spare_maps_are_evicted_before_the_maps_batches_read():
    import pyarrow as pa
    from viewlet.engine.local.hotmaps import HotMap, HotMaps

    def hot(path, spare=False):
        rows = pa.table({"k": pa.array(range(1000), pa.int64()), "v": pa.array([1] * 1000, pa.int64())})
        h = HotMap(path, 0, rows, ["k"], ["v"], ["v"])
        h.spare = spare
        return h

    one = hot("a").nbytes
    maps = HotMaps(budget=2 * one)
    assert maps.put(hot("a")) and maps.put(hot("state", spare=True))
    assert not maps.room(one)                      # full: a spare is not loaded beside them
    maps.get("state", 0)                           # the most recently used, and still first out
    assert maps.put(hot("b"))
    assert maps.peek("state") is None and maps.peek("a") is not None and maps.peek("b") is not None
