"""A batch's planned row commits while the batch reads and computes (engine/ops/planning.py):
nothing is written before it is durable, and a batch another refresher planned first while
this one computed is never applied twice."""
from __future__ import annotations

import threading

from viewlet.engine.batch import run
from viewlet.engine.state.manifest import RESULT, Manifest

from .oracle import assert_view_matches
from .workload import registered_workload

QUERY = "SELECT t.h, COUNT(*) AS n, SUM(s.f) AS sf FROM r, s, t WHERE r.b = s.b AND s.e = t.e " \
        "GROUP BY t.h"


def _changed_batch(work):
    while not {"r", "s", "t"} & set(work.batch()):
        pass


def _table_versions(vl, view):
    loaded = vl.ctx.load(view)
    paths = {m: loaded.map_path(m) for m in loaded.definition.maps}
    paths[RESULT] = loaded.result_path
    return {name: vl.ctx.store.version(path) for name, path in paths.items()}


def test_nothing_is_written_before_the_planned_row_commits(spark, vl, tmp_path, monkeypatch):
    """The planned row's commit is held until the batch has computed every delta; at that
    moment no map and not the result has moved, and the batch then commits exactly."""
    work = registered_workload(spark, str(tmp_path), seed=71)
    spark.sql(f"CREATE INCREMENTAL VIEW pr_v WITH (engine = 'local') AS {QUERY}")
    try:
        computed = threading.Event()
        seen = {}
        original_deltas, original_plan = run.driver_deltas, Manifest.plan

        def deltas_then_signal(*args, **kwargs):
            out = original_deltas(*args, **kwargs)
            computed.set()
            return out

        def plan_after_compute(self, batch, ranges, map_versions):
            assert computed.wait(120), "the batch did not compute while its plan was pending"
            seen["at_plan"] = _table_versions(vl, "pr_v")
            seen["recorded"] = dict(map_versions)
            return original_plan(self, batch, ranges, map_versions)

        monkeypatch.setattr("viewlet.engine.maintain.apply.driver_deltas", deltas_then_signal)
        monkeypatch.setattr(Manifest, "plan", plan_after_compute)
        _changed_batch(work)
        vl.refresh("pr_v")
        recorded = {k: v for k, v in seen["recorded"].items() if k in seen["at_plan"]}
        assert seen["at_plan"] == recorded          # nothing written before the plan
        assert _table_versions(vl, "pr_v") != recorded      # and the batch then wrote
        assert_view_matches(spark, "pr_v", QUERY)
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS pr_v")


def test_a_batch_planned_by_another_refresher_meanwhile_is_applied_once(spark, vl, tmp_path,
                                                                        monkeypatch):
    """Another refresher plans the same batch while this one computes it: this one's plan
    is refused, it writes nothing and starts over, finds the other's planned batch without
    a live refresher, and runs it once with its recorded inputs."""
    work = registered_workload(spark, str(tmp_path), seed=72)
    spark.sql(f"CREATE INCREMENTAL VIEW pr_lost WITH (engine = 'local') AS {QUERY}")
    try:
        original_plan = Manifest.plan
        calls = []

        def other_refresher_first(self, batch, ranges, map_versions):
            calls.append(batch)
            if len(calls) == 1:                  # the other refresher's row commits first
                assert original_plan(self, batch, ranges, map_versions)
            return original_plan(self, batch, ranges, map_versions)

        monkeypatch.setattr(Manifest, "plan", other_refresher_first)
        _changed_batch(work)
        before = _table_versions(vl, "pr_lost")
        result = vl.refresh("pr_lost")
        monkeypatch.setattr(Manifest, "plan", original_plan)
        assert calls == [calls[0]]               # planned once; the re-run needs no plan
        assert "recovered" in result.status, result.status
        after = _table_versions(vl, "pr_lost")
        # each table written by one batch: one commit each (no map needed compacting)
        assert all(after[k] - before[k] <= 1 for k in before), (before, after)
        records = vl.ctx.load("pr_lost").manifest.records()
        assert [(r.batch, r.phase) for r in records][-2:] == [(calls[0], "planned"),
                                                              (calls[0], "committed")]
        assert_view_matches(spark, "pr_lost", QUERY)
        _changed_batch(work)                     # and the next batch plans after it
        vl.refresh("pr_lost")
        assert_view_matches(spark, "pr_lost", QUERY)
    finally:
        spark.sql("DROP INCREMENTAL VIEW IF EXISTS pr_lost")
