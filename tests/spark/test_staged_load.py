"""CREATE loads maps in rounds (compiler/staged_load.py): a map over several relations from
one relation joined with maps loaded before it. Every map table then holds exactly what its
definition computes on Spark, on the local and on the distributed target, and the view
follows its query through batches of every relation."""
from __future__ import annotations

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from viewlet.engine.batch.distributed import DistributedTarget
from viewlet.engine.batch.local import LocalTarget
from viewlet.engine.ops.load import SnapshotSource, initial_map
from viewlet.engine.spark.io import read_table

from .oracle import assert_view_matches, explain_parts
from .workload import registered_workload

#: a Q3-shaped chain: r - s - t, grouped by a column of each end
CHAIN = ("SELECT r.a, t.h, SUM(r.c * s.f) AS x, COUNT(*) AS n, MAX(t.g) AS mg "
         "FROM r JOIN s ON r.b = s.b JOIN t ON s.e = t.e WHERE r.c > 1 GROUP BY r.a, t.h")


@pytest.mark.parametrize("engine,target", [("local", LocalTarget),
                                           ("distributed", DistributedTarget)])
def test_maps_loaded_in_rounds_equal_their_definitions(spark, vl, tmp_path, monkeypatch,
                                                       engine, target):
    work = registered_workload(spark, str(tmp_path), seed=51, rows=40)
    phases = []
    original = target.execute

    def counted(self, phase):
        phases.append(phase.relations)
        return original(self, phase)

    monkeypatch.setattr(target, "execute", counted)
    name = f"staged_{engine}"
    spark.sql(f"CREATE INCREMENTAL VIEW {name} WITH (engine = '{engine}') AS {CHAIN}")
    try:
        assert len(phases) > 1, phases            # rounds: later maps from earlier ones
        # EXPLAIN shows the load's rounds, a line each, as they ran
        _, execution = explain_parts(spark, name)
        rounds = [line.strip() for line in execution.splitlines()
                  if line.strip().startswith("round ")]
        assert f"initial load (CREATE, REFRESH ... FULL; relations ranked by their rows now): " \
               f"{len(phases)} rounds" in execution, execution
        assert len(rounds) == len(phases) and "by the trigger on" in rounds[-1], execution
        view, store = vl.ctx.load(name), vl.ctx.store
        versions = {rel: store.version(table.id)
                    for rel, table in view.compiled.spec.tables.items()}
        source = SnapshotSource(vl.ctx, view.compiled, versions)
        try:
            for m in view.compiled.program.maps.values():
                schema, expected = initial_map(vl.ctx, m, source)
                path = view.map_path(m.name)
                actual = read_table(spark, store, path, store.version(path))
                columns = actual.columns
                expected = expected.select(*[F.col(c).cast(actual.schema[c].dataType).alias(c)
                                             for c in columns])
                assert_df_equality(actual, expected, ignore_row_order=True,
                                   ignore_nullable=True)
        finally:
            source.release()
        assert_view_matches(spark, name, CHAIN)
        # the distributed target's batches (seconds each) are the random oracle's subject in
        # its own part of the suite: one here, that the loaded maps refresh
        for _ in range(4 if engine == "local" else 1):
            work.batch()
            spark.sql(f"REFRESH INCREMENTAL VIEW {name}")
            assert_view_matches(spark, name, CHAIN)
    finally:
        spark.sql(f"DROP INCREMENTAL VIEW IF EXISTS {name}")
