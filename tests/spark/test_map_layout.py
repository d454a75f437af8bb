"""Maps on disk under batches: appended deltas, compaction into key-clustered files, vacuum,
reads that skip files by key, and batches split into phases; the view stays exact."""
from __future__ import annotations

import os

import pytest
from pyspark.errors import ParseException

from viewlet.plan import batch as plan_batch
from viewlet.engine.batch import leaves
from viewlet.engine.maintain import maps
from viewlet.engine.state import stats

from .oracle import assert_view_matches
from .workload import registered_workload

# s is looked up by b from r's changes (and r by b from s's): maps keyed by b
QUERY = "SELECT r.a, SUM(r.c * s.f) AS x, COUNT(*) AS n FROM r JOIN s ON r.b = s.b GROUP BY r.a"


def _parquet_files(path):
    return [f for f in os.listdir(path) if f.endswith(".parquet")]


def test_maps_compact_vacuum_and_skip_files(spark, vl, tmp_path, monkeypatch):
    monkeypatch.setattr(vl.ctx.hot_maps, "budget", 0)        # every batch reads its maps from Delta
    vl.ctx.hot_maps.evict_prefix("")
    monkeypatch.setattr(maps, "ROWS_PER_FILE", 2)        # several files even for tiny maps
    monkeypatch.setattr(stats, "COMPACT_FILES", 2)        # compaction every other append
    monkeypatch.setattr(leaves, "KEEP_FILES_ABOVE", 1.0)  # lookups always stage the rows kept
    work = registered_workload(spark, str(tmp_path), seed=5, rows=20)
    spark.sql(f"CREATE INCREMENTAL VIEW ml_compact AS {QUERY}")
    view = vl.ctx.load("ml_compact")
    layouts, compactions, skipped, filtered = {}, 0, False, False
    for _ in range(6):
        while not {"r", "s"} & set(work.batch()):
            pass
        spark.sql("REFRESH INCREMENTAL VIEW ml_compact")
        assert_view_matches(spark, "ml_compact", QUERY)
        last = view.manifest.last_committed()
        reads = last.stats.get("map_reads", [])
        assert all(source == "delta" for *_, source in reads)
        skipped |= any(read < total for _, read, total, _, _, _, _ in reads)
        # a lookup keeps only the rows of the batch's keys: some reads keep fewer rows
        # than the files they read hold
        filtered |= any(kept < rows for _, _, _, rows, _, kept, _ in reads)
        for name, layout in last.stats["layout"].items():
            # compacted in this batch: a new base, no appended files counted since
            if name in layouts and layout["appended_files"] == 0 and \
                    (layout["base_files"], layout["base_rows"]) != \
                    (layouts[name]["base_files"], layouts[name]["base_rows"]):
                compactions += 1
                # left on disk: the current version's files and the batch-start version's
                path = view.map_path(name)
                keep = vl.ctx.store.snapshot(path).files + \
                    vl.ctx.store.snapshot(path, last.map_versions[name]).files
                assert set(_parquet_files(path)) <= {os.path.basename(f) for f in keep}
            layouts[name] = layout
    assert compactions >= 2
    assert skipped                                       # some read skipped files by key
    assert filtered                                      # and some kept only matching rows
    for name in view.definition.maps:                       # files sorted by the cluster key
        snap = vl.ctx.store.snapshot(view.map_path(name))
        assert all(s.rows is not None for s in snap.stats)
    spark.sql("DROP INCREMENTAL VIEW ml_compact")


def _recording(fn, into: list):
    def recorded(*args):
        out = fn(*args)
        into.extend(out)
        return out
    return recorded


@pytest.mark.parametrize("query", [
    "SELECT t.h, COUNT(*) AS n, SUM(s.f) AS sf FROM r, s, t WHERE r.b = s.b AND s.e = t.e "
    "GROUP BY t.h",
    # a self-join: several blocks of one trigger write the same map, which later phases
    # must read once
    "SELECT s1.e, COUNT(*) AS n FROM s s1, s s2, t WHERE s1.b = s2.b AND s2.e = t.e "
    "GROUP BY s1.e",
], ids=["chain", "self_join"])
@pytest.mark.parametrize("blocks_per_query", [None, 1], ids=["packed", "query_per_block"])
def test_batches_split_into_phases_when_later_triggers_reread_deltas(spark, vl, tmp_path,
                                                                      monkeypatch, query,
                                                                      blocks_per_query):
    monkeypatch.setattr(plan_batch, "MAX_PENDING_READS", 0)   # every trigger its own phase
    built = []
    if blocks_per_query:      # phases too big for one query run as several, sharing leaves
        monkeypatch.setattr(plan_batch, "MAX_BLOCKS_PER_QUERY", blocks_per_query)
        monkeypatch.setattr(plan_batch, "_queries", _recording(plan_batch._queries, built))
    work = registered_workload(spark, str(tmp_path), seed=8)
    spark.sql(f"CREATE INCREMENTAL VIEW ml_phases AS {query}")
    phases = 0
    for _ in range(4):
        while not {"s", "t"} <= set(work.batch()):      # both triggers run: two phases
            pass
        spark.sql("REFRESH INCREMENTAL VIEW ml_phases")
        assert_view_matches(spark, "ml_phases", query)
        phases = max(phases, vl.ctx.load("ml_phases").manifest.last_committed().stats.get("phases", 0))
    assert phases >= 2
    if blocks_per_query:
        assert built and all(len(p.blocks) == 1 for p in built)
        per_trigger = [tuple(p.relations) for p in built]
        assert any(per_trigger.count(r) > 1 for r in per_trigger)   # a phase did split
    spark.sql("DROP INCREMENTAL VIEW ml_phases")


def test_map_writes_merge_keeps_one_row_per_key(spark, vl, tmp_path):
    """WITH (map_writes = 'merge'): each batch MERGEs its delta into every map (no appended
    rows, no compaction), and the view stays exact under inserts, deletes and updates."""
    work = registered_workload(spark, str(tmp_path), seed=11)
    spark.sql(f"CREATE INCREMENTAL VIEW ml_merge WITH (map_writes = 'merge') AS {QUERY}")
    view = vl.ctx.load("ml_merge")
    described = {r[1]: r[2] for r in spark.sql("DESCRIBE INCREMENTAL VIEW ml_merge").collect()}
    assert described["map writes"] == "merge"
    for _ in range(5):
        work.batch()
        spark.sql("REFRESH INCREMENTAL VIEW ml_merge")
        assert_view_matches(spark, "ml_merge", QUERY)
        last = view.manifest.last_committed()
        assert "layout" not in last.stats                  # nothing appended to compact
        for name in view.definition.maps:
            schema = view.map_schema(name)
            rows = vl.ctx.store.read_arrow(view.map_path(name))
            keys = rows.group_by(list(schema.keys), use_threads=False).aggregate([])
            assert keys.num_rows == rows.num_rows, name    # one row per key
    spark.sql("DROP INCREMENTAL VIEW ml_merge")


def test_map_writes_option_names_its_values(spark):
    with pytest.raises(ParseException, match="map_writes must be 'append' or 'merge'"):
        spark.sql(f"CREATE INCREMENTAL VIEW ml_bad WITH (map_writes = 'upsert') AS {QUERY}")
