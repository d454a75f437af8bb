"""The Spark target runs a batch's phases in one Spark job: one task running the local
target's DuckDB queries over the phases' leaves (engine/batch/task_phase.py, in_task.py): rows
the driver holds broadcast, local files read by the task, other files read by Spark into one
packed stream. Executors that cannot (no DuckDB in their Python) run the phases
as Spark SQL, remembered for the application; either way the view equals Spark's recompute."""
from __future__ import annotations

from viewlet.engine.batch import in_task, task_phase

from .oracle import assert_view_matches
from .workload import registered_workload

JOINED = ("SELECT r.a, t.h, SUM(r.c * s.f) AS x, COUNT(*) AS n FROM r JOIN s ON r.b = s.b "
          "JOIN t ON s.e = t.e GROUP BY r.a, t.h")
NESTED = ("SELECT r.a, COUNT(*) AS n, SUM(r.c) AS c FROM r "
          "WHERE r.d > (SELECT AVG(r2.d) FROM r AS r2) GROUP BY r.a")


def _batches(vl, work, view, query, spark, count, tables=("r", "s", "t"), every=False):
    """Refresh `view` after `count` batches that change its `tables` (`every`: each of
    them); the batches' stats."""
    stats = []
    for _ in range(count):
        changed = set()
        while not (set(tables) <= changed if every else set(tables) & changed):
            changed |= set(work.batch())
        vl.refresh(view)
        stats.append(vl.ctx.load(view).manifest.last_committed().stats)
        assert_view_matches(spark, view, query)
    return stats


def test_a_spark_batch_of_several_phases_runs_in_one_job(spark, vl, tmp_path):
    work = registered_workload(spark, str(tmp_path), seed=31, rows=30)
    for name, query, tables in (("pt_joined", JOINED, "rst"), ("pt_nested", NESTED, "r")):
        spark.sql(f"CREATE INCREMENTAL VIEW {name} WITH (engine = 'spark') AS {query}")
        try:
            batches = _batches(vl, work, name, query, spark, 2, tables, every=True)
            for stats in batches:
                assert stats["engine"] == "spark"
                # one job for the phases, one for the result rows of the touched groups
                assert stats["spark_jobs"] <= 2, stats
            if name == "pt_joined":   # r, s and t all change: later triggers' phases read
                # what earlier ones computed
                assert min(stats["phases"] for stats in batches) >= 2, batches
        finally:
            spark.sql(f"DROP INCREMENTAL VIEW IF EXISTS {name}")


def test_phases_run_one_task_each_when_the_batch_cannot_run_in_one(spark, vl, tmp_path,
                                                                   monkeypatch):
    # e.g. under auto, where small phases run in the driver: a phase that joins leaves is
    # a task of its own, reading what earlier phases computed as rows the driver sends
    from viewlet.engine.batch.spark import SparkTarget

    monkeypatch.setattr(SparkTarget, "begin", lambda self, phases: None)
    work = registered_workload(spark, str(tmp_path), seed=34, rows=30)
    spark.sql(f"CREATE INCREMENTAL VIEW pt_phased WITH (engine = 'spark') AS {JOINED}")
    try:
        for stats in _batches(vl, work, "pt_phased", JOINED, spark, 1, every=True):
            # a job per phase, and one for the result rows of the touched groups
            assert 2 <= stats["phases"] <= stats["spark_jobs"] <= stats["phases"] + 1, stats
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS pt_phased")


def test_executors_without_duckdb_run_the_phases_as_spark_sql(spark, vl, tmp_path, monkeypatch):
    def no_duckdb(query, batches):
        raise ModuleNotFoundError("No module named 'duckdb'")

    # shipped by value: the task runs this module's functions as they are when pickled
    monkeypatch.setattr(in_task, "_compute", no_duckdb)
    work = registered_workload(spark, str(tmp_path), seed=32, rows=30)
    spark.sql(f"CREATE INCREMENTAL VIEW pt_fallback WITH (engine = 'spark') AS {JOINED}")
    app = spark.sparkContext.applicationId
    try:
        first, second = _batches(vl, work, "pt_fallback", JOINED, spark, 2)
        assert "No module named 'duckdb'" in task_phase._UNABLE[app]
        # the first batch's failed task was one more job; then no task is tried
        assert first["spark_jobs"] > first["phases"] + 1
        assert second["spark_jobs"] > second["phases"]
    finally:
        task_phase._UNABLE.pop(app, None)
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS pt_fallback")


def test_leaves_spark_reads_reach_the_task_packed(spark, vl, tmp_path, monkeypatch):
    # files a task cannot open itself (an object store, deletion vectors, partition
    # columns) are read by Spark and packed into the task's one input stream
    monkeypatch.setattr(type(vl.ctx.store), "local_parquet", lambda self, snapshot: None)
    packed, pack = [], task_phase._packed_leaves

    def counted(view, spark_, streamed):
        packed.append(len(streamed))
        return pack(view, spark_, streamed)

    monkeypatch.setattr(task_phase, "_packed_leaves", counted)
    work = registered_workload(spark, str(tmp_path), seed=33, rows=30)
    spark.sql(f"CREATE INCREMENTAL VIEW pt_packed WITH (engine = 'spark') AS {NESTED}")
    try:
        for stats in _batches(vl, work, "pt_packed", NESTED, spark, 3, "r"):
            assert stats["spark_jobs"] <= 2, stats
        assert sum(packed) > 0         # some leaf of the batches went through the stream
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS pt_packed")


def test_a_file_without_a_column_the_phase_reads_runs_as_spark_sql(spark, vl, tmp_path, caplog):
    # x's first file predates its column c (Spark reads NULL there; a table with column
    # mapping names its columns otherwise in every file): the task refuses, Spark runs it
    import logging

    import pyarrow as pa
    import viewlet
    from deltalake import write_deltalake

    feed = {"delta.enableChangeDataFeed": "true"}
    x, y = str(tmp_path / "x"), str(tmp_path / "y")
    write_deltalake(x, pa.table({"a": pa.array([1, 2, 3], pa.int32())}), configuration=feed)
    write_deltalake(x, pa.table({"a": pa.array([1, 2], pa.int32()),
                                 "c": pa.array([5, 7], pa.int64())}),
                    mode="append", schema_mode="merge")
    write_deltalake(y, pa.table({"a": pa.array([1, 2, 3], pa.int32()),
                                 "w": pa.array([10, 20, 30], pa.int64())}), configuration=feed)
    viewlet.register_table(spark, "x", x, replace=True)
    viewlet.register_table(spark, "y", y, replace=True)
    query = "SELECT x.a, SUM(x.c * y.w) AS s, COUNT(*) AS n FROM x JOIN y ON x.a = y.a GROUP BY x.a"
    # first-order (depth 1): y's changes join x read whole, from its files
    spark.sql(f"CREATE INCREMENTAL VIEW pt_evolved WITH (depth = 1, engine = 'spark') AS {query}")
    try:
        write_deltalake(y, pa.table({"a": pa.array([1, 3], pa.int32()),
                                     "w": pa.array([100, 5], pa.int64())}), mode="append")
        with caplog.at_level(logging.INFO, logger="viewlet"):
            vl.refresh("pt_evolved")
        assert any("has no column c" in r.getMessage() for r in caplog.records)
        assert_view_matches(spark, "pt_evolved", query)
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS pt_evolved")
