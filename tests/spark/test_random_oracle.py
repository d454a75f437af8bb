"""Randomized workloads: after every refresh each view equals Spark's evaluation of its
defining query over the same table versions (inserts, deletes, updates, duplicates, NULLs,
several tables changing in one batch)."""
from __future__ import annotations

import zlib

import pytest

from .oracle import check_view_through_batches
from .workload import registered_workload

SHAPES = {
    "single_table_group": "SELECT r.a, SUM(r.c) AS sc, COUNT(*) AS n FROM r GROUP BY r.a",
    "global_aggregates": "SELECT COUNT(*) AS n, SUM(r.c) AS sc, AVG(r.c) AS av, COUNT(r.c) AS nc FROM r",
    "join_product_sum": "SELECT r.a, s.e, SUM(r.c * s.f) AS x FROM r JOIN s ON r.b = s.b GROUP BY r.a, s.e",
    "three_way_chain": "SELECT t.h, COUNT(*) AS n, SUM(s.f) AS sf FROM r, s, t "
                       "WHERE r.b = s.b AND s.e = t.e GROUP BY t.h",
    "self_join": "SELECT r1.a, COUNT(*) AS n FROM r r1 JOIN r r2 ON r1.b = r2.a GROUP BY r1.a",
    "theta_join": "SELECT r.a, COUNT(*) AS n, SUM(s.f) AS sf FROM r, s WHERE r.b < s.b GROUP BY r.a",
    "or_not_filter": "SELECT r.a, COUNT(*) AS n FROM r WHERE (r.b = 1 OR r.c > 2) AND NOT (r.a = 2) "
                     "GROUP BY r.a",
    "group_by_expression_double": "SELECT r.a % 2 AS par, SUM(r.d) AS sd, COUNT(r.d) AS nd "
                                  "FROM r GROUP BY r.a % 2",
    "avg_nullable": "SELECT s.e, AVG(s.f) AS af, COUNT(s.f) AS cf, COUNT(*) AS n FROM s GROUP BY s.e",
    "spj_bag": "SELECT r.a, s.e FROM r JOIN s ON r.b = s.b WHERE s.e > 0",
    "spj_expression": "SELECT r.a + s.e AS x, r.c FROM r, s WHERE r.b = s.b",
    "constants_in_aggregates": "SELECT s.b, SUM(s.f * 2 + 1) AS y, SUM(3) AS z, COUNT(1) AS w "
                               "FROM s GROUP BY s.b",
    "having": "SELECT r.b, SUM(r.c) AS sc FROM r GROUP BY r.b HAVING COUNT(*) > 1",
    "expressions_over_aggregates": "SELECT r.b, SUM(r.a) + 1 AS p, SUM(r.a) * COUNT(*) AS q "
                                   "FROM r GROUP BY r.b",
    "group_key_not_in_output": "SELECT SUM(r.c) AS sc, COUNT(*) AS n FROM r GROUP BY r.b",
    "string_filter_join": "SELECT t.h, SUM(s.f) AS sf FROM s JOIN t ON s.e = t.e "
                          "WHERE t.h LIKE 'x%' GROUP BY t.h",
    "cross_product_count": "SELECT COUNT(*) AS n, SUM(t.g) AS sg FROM s, t",
    # a batch of t keys r1 (by a) and s (by e), which r2 joins with on b: the compiler cuts
    # that map at b (compiler/rules.py cut_shared_joins) and the refresh joins the parts
    "shared_key_cycle": "SELECT r1.a, COUNT(*) AS n, SUM(s.f) AS sf FROM r r1, s, t, r r2 "
                        "WHERE r1.b = s.b AND s.b = r2.b AND r1.a = t.g AND t.e = s.e "
                        "GROUP BY r1.a",
    "four_atoms_two_selfs": "SELECT s1.e, COUNT(*) AS n FROM s s1, s s2, t WHERE s1.b = s2.b "
                            "AND s2.e = t.e GROUP BY s1.e",
}
DEPTH_VARIANTS = [("join_product_sum", 1), ("three_way_chain", 1), ("three_way_chain", 2),
                  ("theta_join", 0), ("spj_bag", 1), ("self_join", 1)]
CASES = [(name, None) for name in SHAPES] + DEPTH_VARIANTS
BATCHES = 3


@pytest.mark.parametrize("shape,depth", CASES,
                         ids=[f"{n}-depth{'inf' if d is None else d}" for n, d in CASES])
def test_view_equals_recompute_after_every_batch(spark, vl, tmp_path, shape, depth):
    seed = zlib.crc32(f"{shape}/{depth}".encode())
    work = registered_workload(spark, str(tmp_path), seed)
    view = f"v_{shape}_{'inf' if depth is None else depth}"
    check_view_through_batches(spark, work, view, SHAPES[shape], depth, BATCHES)


# `*` and `t.*` over USING / NATURAL joins (issue: rows under the wrong names): Spark lists
# the join columns first, also for `t.*`, and a RIGHT / FULL join's `t.*` keeps t's own value.
# r.a and r.b are both int, so a swap of the two cannot compare equal.
STAR_SHAPES = {
    "star_natural_qualified": "SELECT r.* FROM r NATURAL JOIN s",
    "star_natural_all": "SELECT * FROM r NATURAL JOIN s",
    "star_using_left_right_side": "SELECT s.* FROM r LEFT JOIN s USING (b)",
    "star_using_right_left_side": "SELECT r.* FROM r RIGHT JOIN s USING (b)",
    "star_natural_full": "SELECT * FROM s NATURAL FULL JOIN t",
    "star_natural_full_qualified": "SELECT t.* FROM s NATURAL FULL JOIN t",
    "star_using_chain": "SELECT * FROM r JOIN s USING (b) JOIN t USING (e)",
    "star_in_subquery": "SELECT x.*, x.a + 1 AS a1 FROM (SELECT r.* FROM r NATURAL JOIN s) x "
                        "WHERE x.a > 0",
    "star_in_union": "SELECT r.* FROM r NATURAL JOIN s UNION ALL SELECT r.* FROM r JOIN t "
                     "ON r.a = t.e",
}


@pytest.mark.parametrize("shape", list(STAR_SHAPES))
def test_star_over_using_equals_recompute_after_every_batch(spark, vl, tmp_path, shape):
    work = registered_workload(spark, str(tmp_path), zlib.crc32(f"star/{shape}".encode()))
    check_view_through_batches(spark, work, f"v_{shape}", STAR_SHAPES[shape], None, BATCHES)


# Aggregates over dates, timestamps, doubles and strings, grouped by expressions over them
# (table u: NULL-heavy, repeated values, deletes by key and tag, updates of the double)
TYPED_SHAPES = {
    # a double MAX, a timestamp MIN, keys that are expressions over a date, a nullable
    # string key (issue 20: an internal error on the first REFRESH was reported for it)
    "date_keys_timestamp_min":
        "SELECT year(u.d) AS y, month(u.d) AS m, u.tag, MAX(u.x) AS mx, MIN(u.ts) AS first_ts "
        "FROM u GROUP BY year(u.d), month(u.d), u.tag",
    # with an optimizer hint (the front end asserted on `SELECT /*+ ... */`: an internal error)
    "timestamp_keys_mixed":
        "SELECT /*+ REPARTITION(2) */ CAST(u.ts AS DATE) AS day, substring(u.tag, 1, 1) AS t1, hour(u.ts) AS hr, "
        "COUNT(*) AS n, SUM(u.x) AS sx, AVG(u.x) AS ax, MIN(u.d) AS md, MAX(u.tag) AS mt, "
        "MAX(u.ts) AS last_ts, COUNT(DISTINCT u.d) AS cd FROM u "
        "GROUP BY CAST(u.ts AS DATE), substring(u.tag, 1, 1), hour(u.ts)",
    "joined_date_trunc":
        "SELECT r.a, date_trunc('MONTH', u.d) AS mo, MIN(u.x) AS mn, MAX(u.d) AS last_d, "
        "COUNT(u.ts) AS nts FROM r JOIN u ON r.a = u.k GROUP BY r.a, date_trunc('MONTH', u.d)",
}
TYPED_CASES = [(n, None) for n in TYPED_SHAPES] + [("date_keys_timestamp_min", 1)]


@pytest.mark.parametrize("shape,depth", TYPED_CASES,
                         ids=[f"{n}-depth{'inf' if d is None else d}" for n, d in TYPED_CASES])
def test_typed_aggregates_equal_recompute_after_every_batch(spark, vl, tmp_path, shape, depth):
    seed = zlib.crc32(f"typed/{shape}/{depth}".encode())
    work = registered_workload(spark, str(tmp_path), seed, rows=16, null_heavy=True,
                               tables=("r", "u"))
    view = f"v_{shape}_{'inf' if depth is None else depth}"
    check_view_through_batches(spark, work, view, TYPED_SHAPES[shape], depth, BATCHES)


def test_timestamps_exact_in_any_driver_time_zone(spark, vl, tmp_path, monkeypatch):
    """The driver's local time zone must not move timestamps: result rows computed on Spark
    came back as Python rows, whose naive datetimes (local time) Arrow took for UTC."""
    import time
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        work = registered_workload(spark, str(tmp_path), zlib.crc32(b"typed/tz"), rows=16,
                                   null_heavy=True, tables=("u",))
        check_view_through_batches(spark, work, "v_tz", TYPED_SHAPES["date_keys_timestamp_min"],
                                   None, 2)
    finally:
        monkeypatch.undo()
        time.tzset()


def test_view_equals_recompute_across_manifest_compactions(spark, vl, tmp_path, monkeypatch):
    """A history longer than COMPACT_EVERY batches: the manifest is rewritten as one file
    (engine/state/manifest.py) between two batches, and the view stays exact through it and
    after (the next batches plan from the rewritten manifest's rows). Compacted every 4
    batches here, not every 16: the same rewrite, a quarter of the batches to reach it."""
    import viewlet
    from viewlet.engine.state import manifest
    every = 4
    monkeypatch.setattr(manifest, "COMPACT_EVERY", every)
    work = registered_workload(spark, str(tmp_path), zlib.crc32(b"long-history"))
    view = "v_long_history"
    batches = every + 2
    compacted = []

    def manifest_files():
        loaded = viewlet.context(spark).ctx.load(view)
        rows = len(loaded.manifest.all_records())
        compacted.append(len(loaded.manifest.store.snapshot(loaded.manifest.path).files) < rows)

    check_view_through_batches(spark, work, view, SHAPES["three_way_chain"], None, batches,
                               also=manifest_files)
    # checked after the initial load and each batch: one file a row until batch `every`
    assert compacted == [False] * every + [True] * 3, compacted
