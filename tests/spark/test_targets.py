"""Where batches run (engine/batch/policy.py): the engine option and setting, the cost rule, the
fallback of a failing local batch to Spark, views the local target refuses, and what
HISTORY, EXPLAIN and DESCRIBE say about it. Every batch is checked against Spark."""
from __future__ import annotations

import os
import re
from urllib.parse import unquote, urlparse

import pytest

from viewlet.engine.local import executor as local_engine
from viewlet.engine.state import settings

from .oracle import assert_view_matches, explain_parts
from .workload import registered_workload

QUERY = "SELECT r.a, SUM(r.c) AS sc, COUNT(*) AS n FROM r JOIN s ON r.b = s.b GROUP BY r.a"


def _last(vl, view):
    return vl.ctx.load(view).manifest.last_committed().stats


def _batches(spark, work, view, query, n=3, engine=True):
    for _ in range(n):
        work.batch()
        spark.sql(f"REFRESH INCREMENTAL VIEW {view}")
        assert_view_matches(spark, view, query, engine)


def _keyed_tables(spark, tmp_path, first: str, second: str):
    """Two registered Delta tables (change feed on) of keys 0..1999: `first` (k, v) and
    `second` (k, w), v and w = k % 7; {name: path}."""
    import pyarrow as pa
    from deltalake import write_deltalake
    import viewlet
    paths = {n: os.path.join(str(tmp_path), n) for n in (first, second)}
    keys = list(range(2000))
    for name, col in ((first, "v"), (second, "w")):
        write_deltalake(paths[name], pa.table({"k": keys, col: [k % 7 for k in keys]}),
                        configuration={"delta.enableChangeDataFeed": "true"})
        viewlet.register_table(spark, name, paths[name], replace=True)
    return paths


@pytest.fixture
def auto(spark):
    """This test's batches follow the cost rule, whatever the suite's engine."""
    before = spark.conf.get(settings.ENGINE_CONF, None)
    spark.conf.set(settings.ENGINE_CONF, "auto")
    yield
    spark.conf.set(settings.ENGINE_CONF, before) if before else spark.conf.unset(settings.ENGINE_CONF)


def test_the_engine_option_wins_and_both_targets_agree(spark, vl, tmp_path, auto):
    work = registered_workload(spark, str(tmp_path), seed=41)
    for engine in ("local", "spark"):
        spark.sql(f"CREATE INCREMENTAL VIEW tg_{engine} WITH (engine = '{engine}') AS {QUERY}")
    try:
        for _ in range(3):
            work.batch()
            for engine in ("local", "spark"):
                spark.sql(f"REFRESH INCREMENTAL VIEW tg_{engine}")
                assert_view_matches(spark, f"tg_{engine}", QUERY)
                stats = _last(vl, f"tg_{engine}")
                if stats.get("engine"):
                    assert stats["engine"] == engine
                    assert stats["engine_reason"] == f"engine = '{engine}'"
        rows = {e: sorted(map(tuple, spark.sql(f"SELECT * FROM tg_{e}").collect()))
                for e in ("local", "spark")}
        assert rows["local"] == rows["spark"]
        history = spark.sql("DESCRIBE INCREMENTAL VIEW tg_local HISTORY").collect()
        ran = [r for r in history if r.batch > 0 and r.changes]
        assert ran and all(r.engine == "local" and r.spark_jobs == 0 for r in ran)
    finally:
        for engine in ("local", "spark"):
            spark.sql(f"DROP INCREMENTAL VIEW IF EXISTS tg_{engine}")


def test_the_rule_sends_large_batches_to_spark(spark, vl, tmp_path, auto):
    work = registered_workload(spark, str(tmp_path), seed=42)
    spark.sql(f"CREATE INCREMENTAL VIEW tg_rule AS {QUERY}")
    try:
        _batches(spark, work, "tg_rule", QUERY, 1)
        stats = _last(vl, "tg_rule")
        assert stats["engine"] == "local" and "rows (at most" in stats["engine_reason"]
        spark.conf.set(settings.MAX_ROWS_CONF, "1")          # every batch is "large" now
        try:
            _batches(spark, work, "tg_rule", QUERY, 2)
            stats = _last(vl, "tg_rule")
            assert stats["engine"] == "spark" and settings.MAX_ROWS_CONF in stats["engine_reason"]
            assert stats["spark_jobs"] >= 1
        finally:
            spark.conf.unset(settings.MAX_ROWS_CONF)
        spark.conf.set(settings.ENGINE_CONF, "spark")          # the session's setting
        _batches(spark, work, "tg_rule", QUERY, 1)
        assert _last(vl, "tg_rule")["engine"] == "spark"
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS tg_rule")


def test_maps_held_in_memory_do_not_count_against_the_local_limit(spark, vl, tmp_path, auto,
                                                                   monkeypatch):
    """A batch whose maps the driver holds in memory, or can hold (they fit the hot-map
    budget together: the first local batch reads them whole), runs locally although they
    hold more rows than spark.viewlet.local.maxInputRows. When they do not fit, the batch's
    lookups are read first and count the rows they keep: a batch of two keys still runs
    locally, and runs on Spark once what its lookups keep passes the limit. Each lookup is
    read once, whichever target runs it. Exact every time."""
    import pyarrow as pa
    from deltalake import write_deltalake
    paths = _keyed_tables(spark, tmp_path, "ht", "hu")
    query = "SELECT ht.k, SUM(ht.v * hu.w) AS x, COUNT(*) AS n FROM ht JOIN hu ON ht.k = hu.k " \
            "GROUP BY ht.k"
    spark.sql(f"CREATE INCREMENTAL VIEW tg_held AS {query}")
    view = vl.ctx.load("tg_held")
    map_paths = [view.map_path(m) for m in view.definition.maps]
    try:
        cases = ((vl.ctx.hot_maps.budget, 100, "local", "map rows held in memory"),
                 (1, 100, "local", "its lookups keep 2 of their maps' 2,000 rows"),
                 (1, 3, "spark", "its lookups keep 2 of their maps' 2,000 rows"))
        for budget, limit, engine, reason in cases:
            spark.conf.set(settings.MAX_ROWS_CONF, str(limit))   # the maps alone hold more
            monkeypatch.setattr(vl.ctx.hot_maps, "budget", budget)
            for path in map_paths:                       # none hot: read from Delta
                vl.ctx.hot_maps.evict(path)
            write_deltalake(paths["ht"], pa.table({"k": [5, 1500], "v": [3, 4]}), mode="append")
            spark.sql("REFRESH INCREMENTAL VIEW tg_held")
            assert_view_matches(spark, "tg_held", query)
            stats = _last(vl, "tg_held")
            assert stats["engine"] == engine, stats
            assert reason in stats["engine_reason"], stats
            held = [vl.ctx.hot_maps.peek(p) is not None for p in map_paths]
            assert any(held) if budget > 1 else not any(held)
            if budget == 1:
                read = [(r[0], r[5]) for r in stats["map_reads"]]      # MapRead.to_json
                assert len(read) == len(set(r[0] for r in read)) == 1, read
                assert read[0][1] == 2 and stats["seconds"]["bind"] > 0, stats
    finally:
        spark.conf.unset(settings.MAX_ROWS_CONF)
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS tg_held")


def test_a_spark_batch_runs_its_small_phases_in_the_driver(spark, vl, tmp_path, auto,
                                                           monkeypatch):
    """Under auto, a batch the cost rule sends to Spark still runs in the driver's DuckDB each
    phase reading at most spark.viewlet.local.maxInputRows rows (changes, earlier phases'
    deltas, the rows lookups kept, maps read whole), and the touched groups' result rows: a
    batch of small phases runs no Spark job. A phase over the limit runs on Spark; a view
    forced to engine = 'spark' runs every phase there. Exact every time."""
    import pyarrow as pa
    from deltalake import write_deltalake
    paths = _keyed_tables(spark, tmp_path, "pt", "pu")
    query = "SELECT pt.k, SUM(pt.v * pu.w) AS x, COUNT(*) AS n FROM pt JOIN pu ON pt.k = pu.k " \
            "GROUP BY pt.k"
    # a nested aggregate: its batches read a map whole (a one-row global sum)
    nested = "SELECT pt.k, SUM(pt.v) AS s FROM pt WHERE pt.v * 1000 < " \
             "(SELECT SUM(pu.w) FROM pu) GROUP BY pt.k"
    queries = {"tg_small": query, "tg_small_forced": query, "tg_small_nested": nested}
    for name, text in queries.items():
        option = " WITH (engine = 'spark')" if name.endswith("forced") else ""
        spark.sql(f"CREATE INCREMENTAL VIEW {name}{option} AS {text}")
    views = [vl.ctx.load(v) for v in queries]
    monkeypatch.setattr(vl.ctx.hot_maps, "budget", 1)      # every map read from Delta
    try:
        # (rows appended to pt, to pu; the limit): both phases within it, then pt's over it
        for pt_keys, pu_keys, limit in (([5, 1500, 7], [8, 9, 10], 10),
                                        (list(range(100, 108)), [3], 12)):
            spark.conf.set(settings.MAX_ROWS_CONF, str(limit))
            for view in views:
                for name in view.definition.maps:
                    vl.ctx.hot_maps.evict(view.map_path(name))
            write_deltalake(paths["pt"], pa.table({"k": pt_keys, "v": [3] * len(pt_keys)}),
                            mode="append")
            write_deltalake(paths["pu"], pa.table({"k": pu_keys, "w": [4] * len(pu_keys)}),
                            mode="append")
            for name, text in queries.items():
                spark.sql(f"REFRESH INCREMENTAL VIEW {name}")
                assert_view_matches(spark, name, text)
            stats, forced = _last(vl, "tg_small"), _last(vl, "tg_small_forced")
            # its pt phase reads pt's changes and pu's one-row sum (a map read whole) in the
            # driver; its pu phase re-reads pt's maps whole, over the limit: on Spark
            assert _last(vl, "tg_small_nested")["driver_phases"] == 1
            assert stats["engine"] == "spark" and settings.MAX_ROWS_CONF in \
                stats["engine_reason"], stats
            assert stats["phases"] == forced["phases"] == 2, (stats, forced)
            ran = 2 if limit == 10 else 1
            assert stats["driver_phases"] == ran, stats
            assert (stats["spark_jobs"] == 0) if ran == 2 else (stats["spark_jobs"] >= 1), stats
            assert stats["engine_reason"].endswith(
                f"; {ran} of its 2 phase(s) read at most {limit} rows and ran in the driver")
            assert "driver_phases" not in forced and forced["spark_jobs"] >= 2, forced
    finally:
        spark.conf.unset(settings.MAX_ROWS_CONF)
        for name in queries:
            spark.sql(f"DROP INCREMENTAL VIEW IF EXISTS {name}")


def test_a_failing_local_batch_runs_again_on_spark(spark, vl, tmp_path, auto, monkeypatch):
    work = registered_workload(spark, str(tmp_path), seed=43)
    spark.sql(f"CREATE INCREMENTAL VIEW tg_fail WITH (engine = 'local') AS {QUERY}")
    try:
        def broken(self, sql, tables):
            raise local_engine.LocalEngineError("Out of Range Error: Overflow in multiplication")
        monkeypatch.setattr(local_engine.LocalEngine, "query", broken)
        _batches(spark, work, "tg_fail", QUERY, 2, engine=False)    # exact, computed by Spark
        stats = _last(vl, "tg_fail")
        assert stats["engine"] == "spark"
        assert stats["engine_reason"].startswith("the local target failed (Out of Range Error")
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS tg_fail")


def test_sql_the_local_target_cannot_reproduce_runs_on_spark(spark, vl, tmp_path, auto):
    query = "SELECT upper(t.h) AS uh, COUNT(*) AS n FROM t GROUP BY upper(t.h)"
    work = registered_workload(spark, str(tmp_path), seed=44)
    spark.sql(f"CREATE INCREMENTAL VIEW tg_refused WITH (engine = 'local') AS {query}")
    try:
        _batches(spark, work, "tg_refused", query, 2)
        stats = _last(vl, "tg_refused")
        if stats.get("engine"):
            assert stats["engine"] == "spark"
            assert "cannot run this view: function UPPER" in stats["engine_reason"]
        execution = explain_parts(spark, "tg_refused")[1]
        assert "local target: cannot run this view: function UPPER" in execution
        described = {(r[0], r[1]): r[2] for r in spark.sql(
            "DESCRIBE INCREMENTAL VIEW tg_refused").collect()}
        assert described[("execution", "local target")].startswith("cannot run this view")
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS tg_refused")


def test_spark_batches_see_the_users_functions_and_leave_its_settings(spark, vl, tmp_path, auto):
    """A Spark batch runs in a clone of the user's session: the user's UDF resolves (a fresh
    sibling session has none), and the settings the batch changes (adaptive execution, shuffle partitions)
    stay as the user set them."""
    work = registered_workload(spark, str(tmp_path), seed=46)
    spark.udf.register("tg_twice", lambda x: None if x is None else 2 * x, "int")
    query = "SELECT tg_twice(r.a) AS k, COUNT(*) AS n FROM r GROUP BY 1"
    before = {k: spark.conf.get(k) for k in ("spark.sql.adaptive.enabled",
                                             "spark.sql.shuffle.partitions")}
    spark.sql(f"CREATE INCREMENTAL VIEW tg_udf WITH (engine = 'spark') AS {query}")
    try:
        _batches(spark, work, "tg_udf", query, 2)
        assert {k: spark.conf.get(k) for k in before} == before
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS tg_udf")


def test_explain_and_describe_show_the_engine_and_the_plan(spark, vl, tmp_path, auto):
    registered_workload(spark, str(tmp_path), seed=45)
    spark.sql(f"CREATE INCREMENTAL VIEW tg_explain AS {QUERY}")
    try:
        program, execution = explain_parts(spark, "tg_explain")
        assert program.startswith("Incremental view tg_explain")
        assert "engine: auto" in execution and "local target: can run this view" in execution
        assert settings.MAX_ROWS_CONF in execution and "batch plan" in execution
        assert "changes of r" in execution and "map " in execution
        described = {(r[0], r[1]): r[2] for r in spark.sql(
            "DESCRIBE INCREMENTAL VIEW tg_explain").collect()}
        assert described[("execution", "engine")] == "auto"
        assert "in memory" in described[("map", "view_state")]      # loaded hot at CREATE
        assert "driver memory" in described[("memory", "hot maps")]
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS tg_explain")


def test_engine_option_values_are_checked(spark, vl):
    from pyspark.errors import ParseException
    with pytest.raises(ParseException, match="engine must be 'auto', 'local' or 'spark'"):
        spark.sql("CREATE INCREMENTAL VIEW tg_bad WITH (engine = 'gpu') AS SELECT 1 AS x")


def test_a_load_in_the_driver_sums_each_block_by_its_keys(spark, vl, tmp_path, auto,
                                                         monkeypatch):
    """CREATE's maps computed in the driver: the load's packed result holds one row per
    block and key (each block summed in DuckDB, plan/batch.py Phase.summed_tree), not one per
    joined row (at most one for a block without keys); the views are exact then and after
    batches with deletes and updates."""
    from viewlet.engine.batch.local import LocalTarget
    from viewlet.plan.batch import TAG
    import pyarrow.compute as pc
    work = registered_workload(spark, str(tmp_path), seed=43, rows=40)
    queries = {"lb_grouped": QUERY,
               "lb_global": "SELECT COUNT(*) AS n, SUM(r.c) AS sc FROM r JOIN s ON r.b = s.b"}
    packed = []
    original = LocalTarget.execute

    def recorded(self, phase):
        out = original(self, phase)
        packed.append((phase, out))
        return out

    monkeypatch.setattr(LocalTarget, "execute", recorded)
    for view, query in queries.items():
        spark.sql(f"CREATE INCREMENTAL VIEW {view} WITH (engine = 'local') AS {query}")
    try:
        assert packed
        for phase, rows in packed:
            for block in phase.blocks:
                mine = rows.filter(pc.equal(rows.column(TAG), block.tag))
                keys = [block.slots[col] for col, _ in block.keys]
                distinct = mine.group_by(keys).aggregate([]).num_rows if keys else \
                    min(mine.num_rows, 1)
                assert mine.num_rows == distinct, (block.tag, mine.num_rows, distinct)
        for _ in range(2):
            work.batch()
            for view, query in queries.items():
                spark.sql(f"REFRESH INCREMENTAL VIEW {view}")
                assert_view_matches(spark, view, query)
    finally:
        for view in queries:
            spark.sql(f"DROP INCREMENTAL VIEW IF EXISTS {view}")


WIDE = "SELECT r.a, SUM(r.c) AS sc, COUNT(*) AS n, SUM(s.f) AS sf, AVG(s.f) AS af, " \
       "SUM(r.c * s.f) AS x FROM r JOIN s ON r.b = s.b GROUP BY r.a"


def test_create_loads_in_the_driver_what_fits_it(spark, vl, tmp_path, auto, monkeypatch):
    """Base tables over spark.viewlet.distributed.minChangeRows load in the driver when
    they are within spark.viewlet.local.maxInputRows and the columns the view reads fit the
    hot maps' budget (weighed from the files); on the executors when either is passed. The
    bytes weighed are of the columns read, not of whole rows. Exact on every path."""
    from viewlet.engine.ops import create
    work = registered_workload(spark, str(tmp_path), seed=44, rows=40)
    weighed = []
    original = create.relation_bytes

    def recorded(*args):
        weighed.append(original(*args))
        return weighed[-1]

    monkeypatch.setattr(create, "relation_bytes", recorded)
    spark.conf.set(settings.MIN_ROWS_CONF, "10")              # the bases hold more rows
    cases = (({}, "local", "computed in the driver"),
             ({settings.MEMORY_CONF: "1"}, "distributed", "more than the hot maps' budget"),
             ({settings.MAX_ROWS_CONF: "10"}, "distributed", f"{settings.MAX_ROWS_CONF} = 10"))
    try:
        for i, (confs, engine, reason) in enumerate(cases):
            for key, value in confs.items():
                spark.conf.set(key, value)
            try:
                spark.sql(f"CREATE INCREMENTAL VIEW tg_fit{i} AS {QUERY}")
                stats = _last(vl, f"tg_fit{i}")
                assert stats["engine"] == engine and reason in stats["engine_reason"], stats
                assert_view_matches(spark, f"tg_fit{i}", QUERY)
            finally:
                for key in confs:
                    spark.conf.unset(key)
        assert len(weighed) == 2 and weighed[0] == weighed[1] > 0, weighed
        # r's columns a, b, c and s's b: fewer bytes than whole rows of r and s
        view = vl.ctx.load("tg_fit0")
        whole = 0
        for rel in ("r", "s"):
            snap = vl.ctx.store.snapshot(view.table_path(rel), vl.ctx.store.version(
                view.table_path(rel)))
            whole += sum(s.rows for s in snap.stats) * vl.ctx.store.row_bytes(snap.path,
                                                                             snap.files)
        assert weighed[0] < whole, (weighed, whole)
        work.batch()
        for i in range(len(cases)):
            spark.sql(f"REFRESH INCREMENTAL VIEW tg_fit{i}")
            assert_view_matches(spark, f"tg_fit{i}", QUERY)
    finally:
        spark.conf.unset(settings.MIN_ROWS_CONF)
        for i in range(len(cases)):
            spark.sql(f"DROP INCREMENTAL VIEW IF EXISTS tg_fit{i}")


def test_create_on_the_executors_loads_every_map_from_one_plan(spark, vl, tmp_path, auto,
                                                                monkeypatch):
    """CREATE on the executors computes the maps as the load program's batch plan, one Spark
    query per phase (ops/load.py executor_maps), never a query per map column; the view is
    exact then and after distributed batches."""
    from viewlet.engine.batch.distributed import DistributedTarget
    from viewlet.engine.ops import create

    def per_column(*args, **kwargs):
        raise AssertionError("a map loaded by one query per column")

    phases, summed_again = [], []
    original, original_sum = DistributedTarget.execute, DistributedTarget.sum

    def counted(self, phase):
        phases.append(self.summed)
        return original(self, phase)

    def summed(self, view, name, pieces):
        summed_again.append(name)
        return original_sum(self, view, name, pieces)

    monkeypatch.setattr(create, "initial_map", per_column)
    monkeypatch.setattr(DistributedTarget, "execute", counted)
    monkeypatch.setattr(DistributedTarget, "sum", summed)
    work = registered_workload(spark, str(tmp_path), seed=47, rows=30)
    spark.sql(f"CREATE INCREMENTAL VIEW tg_load WITH (engine = 'distributed') AS {WIDE}")
    try:
        assert phases and all(phases), phases       # the load's phases, blocks summed
        # each map here is one block summed by exactly its keys: written as the phase
        # summed it, with no second aggregation (a shuffle) on the way to its table
        assert summed_again == [], summed_again
        assert_view_matches(spark, "tg_load", WIDE)
        phases.clear()
        _batches(spark, work, "tg_load", WIDE, 2)
        assert phases and not any(phases)           # batches: rows summed per map after
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS tg_load")


def test_maps_the_executors_load_are_sorted_across_files_of_their_size(spark, vl, tmp_path,
                                                                      auto, monkeypatch):
    """CREATE on the executors writes each map sorted by its cluster keys into files of at
    most the per-file rows (ops/load.py create_map): a map no larger than one file in one
    file without a sampled sort, a larger one range-partitioned so that the files hold
    disjoint, ordered key ranges (NULL first), which lookups skip by their statistics."""
    import pyarrow.parquet as pq
    from viewlet.engine.ops import create, load
    per_file = 4
    monkeypatch.setattr(load, "rows_per_file", lambda rows: per_file)
    bounds = {}
    original = load.create_map

    def recorded(ctx, path, frame, schema, arrow, txn, base_rows, rows=None):
        bounds[path] = rows
        return original(ctx, path, frame, schema, arrow, txn, base_rows, rows)

    monkeypatch.setattr(load, "create_map", recorded)
    monkeypatch.setattr(create, "create_map", recorded)
    registered_workload(spark, str(tmp_path), seed=50, rows=30)
    spark.sql(f"CREATE INCREMENTAL VIEW tg_sorted WITH (engine = 'distributed') AS {WIDE}")
    try:
        assert_view_matches(spark, "tg_sorted", WIDE)
        view = vl.ctx.load("tg_sorted")
        several = 0
        for name, schema in view.definition.maps.items():
            path = view.map_path(name)
            assert bounds.get(path) is not None, (name, bounds)      # the bound was known
            files = [pq.read_table(_local(path, relative))
                     for relative in vl.ctx.store.file_paths(path, 0).values()]
            rows = sum(f.num_rows for f in files)
            assert rows <= bounds[path], (name, rows, bounds[path])
            assert all(f.num_rows <= per_file for f in files), name
            if not schema.keys:
                continue
            first = schema.keys[schema.cluster[0]]
            ranges = []
            for f in files:
                keys = f.column(first).to_pylist()
                ordered = [(k is not None, k) for k in keys]
                assert ordered == sorted(ordered), (name, keys)      # sorted in its file
                ranges.append((ordered[0], ordered[-1]))
            ranges.sort()
            assert all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:])), (name, ranges)
            several += len(files) > 1
            if bounds[path] <= per_file:
                assert len(files) == 1, (name, len(files))
        assert several, "no map was large enough for several files"
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS tg_sorted")


def _local(table: str, relative: str) -> str:
    """A data file's local path, from the path its add action names."""
    path = unquote(urlparse(relative).path) if "://" in relative else relative
    return path if os.path.isabs(path) else os.path.join(table, path)


def test_create_on_the_executors_of_maps_the_local_typer_refuses(spark, vl, tmp_path, auto,
                                                                  monkeypatch):
    """A map definition the local typer cannot type (a function without a local
    equivalent) loads by its own queries, typed by Spark's analyzer; the view is exact."""
    from viewlet.engine.ops import create

    def one_plan(*args, **kwargs):
        raise AssertionError("loaded from the one plan")

    monkeypatch.setattr(create, "executor_maps", one_plan)
    query = "SELECT upper(t.h) AS uh, COUNT(*) AS n, SUM(t.g) AS sg FROM t GROUP BY upper(t.h)"
    work = registered_workload(spark, str(tmp_path), seed=48)
    spark.sql(f"CREATE INCREMENTAL VIEW tg_load_spark WITH (engine = 'distributed') AS {query}")
    try:
        assert_view_matches(spark, "tg_load_spark", query)
        _batches(spark, work, "tg_load_spark", query, 2)
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS tg_load_spark")


@pytest.mark.parametrize("shape", ["join_product_sum", "global_aggregates", "avg_nullable",
                                   "group_by_expression_double", "typed"])
def test_map_deltas_summed_by_duckdb_stay_exact(spark, vl, tmp_path, auto, monkeypatch, shape):
    """Large map deltas are summed by DuckDB before Arrow (batch/local.py LocalTarget.sum):
    with the threshold at one row, every delta goes that way and every view (NULL values,
    doubles, decimals, dates and timestamps as keys, no keys) equals Spark's recompute."""
    import zlib
    from viewlet.engine.batch import local
    from .test_random_oracle import SHAPES, TYPED_SHAPES
    monkeypatch.setattr(local, "DUCKDB_SUM_FROM_ROWS", 1)
    seen = []
    engine_query = vl.ctx.local_engine.query

    def counted(sql, tables):
        if "FROM pieces" in sql:
            seen.append(sql)
        return engine_query(sql, tables)

    monkeypatch.setattr(vl.ctx.local_engine, "query", counted)
    if shape == "typed":
        work = registered_workload(spark, str(tmp_path), zlib.crc32(b"duck-sum/typed"), rows=16,
                                   null_heavy=True, tables=("r", "u"))
        query = TYPED_SHAPES["date_keys_timestamp_min"]
    else:
        work = registered_workload(spark, str(tmp_path), zlib.crc32(f"duck-sum/{shape}".encode()))
        query = SHAPES[shape]
    view = f"ds_{shape}"
    spark.sql(f"CREATE INCREMENTAL VIEW {view} WITH (engine = 'local') AS {query}")
    read = {t for t in work.paths if re.search(rf"\b{t}\.", query)}
    seen.clear()       # the load's own sums are not what this test is about
    try:
        for _ in range(3):
            while not read & set(work.batch()):      # a batch the view has changes in
                pass
            spark.sql(f"REFRESH INCREMENTAL VIEW {view}")
            assert_view_matches(spark, view, query)
        assert seen, "no delta was summed by DuckDB"
    finally:
        spark.sql(f"DROP INCREMENTAL VIEW IF EXISTS {view}")


@pytest.mark.parametrize("engine", ["local", "distributed"])
def test_members_of_a_block_share_one_copy_of_its_rows(spark, vl, tmp_path, auto, monkeypatch,
                                                       engine):
    """A block whose members each write their own column of one map yields that map one
    piece as long as the block's rows (batch/target.py sharing_rows), not one per member,
    in the driver (an Arrow table) and on the executors (a DataFrame); the view stays
    exact."""
    from viewlet.engine.batch.distributed import DistributedTarget
    from viewlet.engine.batch.target import ArrowTarget
    from viewlet.plan.batch import TAG
    import pyarrow.compute as pc
    query = "SELECT r.a, COUNT(*) AS n, SUM(r.c) AS sc, AVG(r.c) AS ac, COUNT(r.c) AS nc " \
            "FROM r GROUP BY r.a"
    checked = []
    kind = ArrowTarget if engine == "local" else DistributedTarget
    original = kind.split

    def rows_of(table, tag=None):
        if engine == "local":
            return table.num_rows if tag is None else \
                pc.sum(pc.equal(table.column(TAG), tag)).as_py() or 0
        return (table if tag is None else table.where(f"{TAG} = {tag}")).count()

    def recorded(self, view, phase, packed):
        pieces = original(self, view, phase, packed)
        for b in phase.blocks:
            targets = {m.target for m in b.members}
            columns = [(m.target, m.column) for m in b.members]
            if len(b.members) > 1 and len(targets) == 1 and len(set(columns)) == len(columns):
                block_rows = rows_of(packed, b.tag)
                piece_rows = sum(rows_of(t) for t in pieces.get(next(iter(targets)), []))
                checked.append((block_rows, piece_rows))
        return pieces

    monkeypatch.setattr(kind, "split", recorded)
    work = registered_workload(spark, str(tmp_path), seed=49, rows=30)
    spark.sql(f"CREATE INCREMENTAL VIEW tg_shared WITH (engine = '{engine}') AS {query}")
    try:
        _batches(spark, work, "tg_shared", query, 2 if engine == "distributed" else 3)
        assert checked and all(piece == block for block, piece in checked), checked
        assert any(block > 0 for block, _ in checked), checked
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS tg_shared")
