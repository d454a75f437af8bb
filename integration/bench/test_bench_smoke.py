"""The benchmark end to end at a tiny scale (CI smoke run), plus its option handling and the
target verdicts. No timing assertions: speed is what the benchmark reports, not what CI
checks."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from viewlet.tools import cli
from viewlet.tools.bench import report, runner

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VIEWS = ("q1", "q3", "q6")
DEPTHS = ("viewlet-ho", "viewlet-d1", "viewlet-d0")
METHODS = DEPTHS + ("spark", "duckdb")
BATCHES = 2


def _bench(*args, timeout=900):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    return subprocess.run([sys.executable, "-m", "viewlet", "bench", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bench")
    refused = tmp / "spread.sql"
    # over the order book: that workload's data, stream and baselines run too
    refused.write_text("-- STDDEV(DISTINCT ...) is refused at CREATE\n"
                       "SELECT broker_id, STDDEV(DISTINCT volume) AS spread FROM bids "
                       "GROUP BY broker_id\n")
    out = tmp / "results"
    proc = _bench("--scale", "0.002", "--batch-sizes", "200", "--batches", str(BATCHES),
                  "--warmup", "0", "--floor-history", "0", "--views", ",".join(VIEWS) + f",{refused}",
                  "--depths", "ho,1,0", "--check", "every", "--out", str(out),
                  "--warehouse", str(tmp / "wh"), "--label", "smoke")
    return proc, out


def test_every_check_passes_and_exit_status_is_0(smoke):
    proc, out = smoke
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    created = [v for v in results["views"] if v["status"] == "created"]
    assert {(v["view"], v["method"]) for v in created} >= {(v, m) for v in VIEWS for m in DEPTHS}
    # CREATE and every batch, for every view that exists
    assert results["checks"] == {"total": len(created) * (1 + BATCHES), "failures": []}
    # progress is printed per batch
    assert proc.stdout.count("[SF 0.002 tpch 200] batch ") == BATCHES
    assert proc.stdout.count("[SF 0.002 orderbook 200] batch ") == BATCHES


def test_refused_view_is_reported_and_the_run_goes_on(smoke):
    _, out = smoke
    results = json.loads((out / "results.json").read_text())
    status = {(v["view"], v["method"]): v["status"] for v in results["views"]}
    for depth in ("viewlet-ho", "viewlet-d1"):
        assert status[("spread", depth)].startswith("unsupported: ")
        assert "STDDEV(DISTINCT" in status[("spread", depth)]
    for v in VIEWS:
        for m in DEPTHS:
            assert status[(v, m)] == "created"
    # the refused view still has its recompute baselines, and no refresh rows
    mine = [m for m in results["measurements"] if m["view"] == "spread"]
    assert {m["workload"] for m in mine} == {"orderbook"}
    methods = {m["method"] for m in mine}
    assert "viewlet-ho" not in methods and {"spark", "duckdb"} <= methods
    assert all("error" not in m and m["tuples"] == 200 for m in mine)


def test_json_has_every_measurement(smoke):
    _, out = smoke
    results = json.loads((out / "results.json").read_text())
    meta = results["meta"]
    assert meta["machine"]["cores"] and meta["machine"]["spark"]
    assert "viewlet bench" in meta["command"] and meta["finished"]
    ms = [m for m in results["measurements"] if m["view"] in VIEWS]
    assert len(ms) == len(VIEWS) * len(METHODS) * BATCHES
    for m in ms:
        assert "error" not in m, m
        assert m["seconds"] > 0 and m["tuples"] == 200 and m["tuples_per_second"] > 0
        assert m["jvm_heap_peak_bytes"] > 0
        engine = "duckdb" if m["method"] == "duckdb" else \
            (m.get("phases") or {}).get("engine", "spark")
        if engine == "spark":                # Spark did the work: the UI saw its jobs
            assert m["jobs"] >= 1 and m["stages"] >= 1, m
            assert m["input_records"] >= 0 and m["input_bytes"] >= 0
        elif engine == "local":              # the local target: no Spark job at all
            assert m["jobs"] == 0, m
    # a recompute scans the base table; the higher-order refresh of Q1 does not
    by = {(m["view"], m["method"], m["seq"]): m for m in ms}
    for seq in {m["seq"] for m in ms}:
        assert by[("q1", "spark", seq)]["input_records"] > by[("q1", "viewlet-ho", seq)]["input_records"]
    for m in ms:
        if m["method"].startswith("viewlet-"):
            assert m["phases"]["seconds"]["total"] > 0
    summary = {(s["view"], s["method"]) for s in results["summary"]}
    assert summary >= {(v, m) for v in VIEWS for m in METHODS}
    sizes = {(s["view"], s["method"]): s for s in results["sizes"]}
    assert sizes[("q3", "viewlet-ho")]["maps"] > 1
    assert sizes[("q3", "viewlet-ho")]["map_bytes"] > 0
    assert sizes[("q3", "viewlet-d0")]["maps"] == 0
    assert {t["view"] for t in results["targets"]} >= set(VIEWS)


def test_markdown_and_plots(smoke):
    _, out = smoke
    md = (out / "results.md").read_text()
    assert "### SF 0.002, 200 tuples per batch" in md
    assert "### Targets (issues 18 and 30)" in md and "## Checks" in md
    for v in VIEWS:
        for m in METHODS:
            assert f"| {v} | {m} |" in md
    # every CREATE beside the Spark recompute of its query: seconds and their ratio
    results = json.loads((out / "results.json").read_text())
    spark = {s["view"]: s["median_seconds"] for s in results["summary"] if s["method"] == "spark"}
    for v in (v for v in results["views"] if v["status"] == "created"):
        row = next(line for line in md.splitlines()
                   if line.startswith(f"| {v['view']} (SF 0.002) | {v['method']} | created |"))
        ratio = row.split("|")[-2].strip()
        assert ratio == f"{v['create_seconds'] / spark[v['view']]:.1f}x", row
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == ["refresh_vs_batch_size_sf0.002.png", "refresh_vs_scale_batch200.png"]
    for p in pngs:
        assert (out / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"({p})" in md


# -- options ---------------------------------------------------------------------------------
def test_unknown_view_is_a_clear_error(capsys):
    assert cli.main(["bench", "--views", "q1,nope"]) == cli.EXIT_ENVIRONMENT
    err = capsys.readouterr().err
    assert "nope.sql" in err and "VIEWLET_SQL_DIR" in err


@pytest.mark.parametrize("args", [["--check", "sometimes"], ["--depths", "ho,-1"],
                                  ["--batch-sizes", "0"], ["--scale", "x"]])
def test_bad_options_exit_2(args, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["bench", *args])
    assert e.value.code == 2
    assert "viewlet bench: error" in capsys.readouterr().err


def test_check_policy_samples_and_keeps_the_last_batch():
    p = runner.CheckPolicy.parse("sample:3")
    assert [i for i in range(7) if p.wanted(i, 7)] == [0, 3, 6]
    assert [i for i in range(5) if p.wanted(i, 5)] == [0, 3, 4]
    assert all(runner.CheckPolicy.parse("every").wanted(i, 5) for i in range(5))


# -- target verdicts -------------------------------------------------------------------------
def _row(scale, batch, view, method, seconds, tuples=10_000):
    return {"scale": scale, "batch_size": batch, "view": view, "method": method,
            "median_seconds": seconds, "tuples_per_second": tuples / seconds}


def _verdicts(summary, views=()):
    return {(t["view"], t["target"].split()[0] + t["target"].split()[1]): t
            for t in report.targets(summary, list(views))}


def test_targets_at_the_issue_configuration():
    s = [_row(1.0, 10_000, "q3", "viewlet-ho", 0.05), _row(1.0, 10_000, "q3", "spark", 5.0),
         _row(1.0, 10_000, "q3", "duckdb", 0.4), _row(0.1, 10_000, "q3", "viewlet-ho", 0.02),
         _row(1.0, 10_000, "q1", "viewlet-ho", 1.0), _row(1.0, 10_000, "q1", "spark", 5.0),
         _row(1.0, 10_000, "q1", "duckdb", 0.5),
         _row(0.1, 10_000, "q20", "viewlet-ho", 0.2), _row(0.1, 10_000, "q20", "spark", 1.2)]
    floor = {"view": "floor", "at": "20 refreshes", "median_seconds": 0.06}
    t = {(x["view"], x["target"].split()[0] + x["target"].split()[1]): x
         for x in report.targets(s, [], floor)}
    assert t[("q3", "refresh>=")]["verdict"] == "pass"          # 100x faster than Spark
    assert t[("q3", "refresh>=")]["value"] == pytest.approx(100.0)
    assert t[("q3", "refreshfaster")]["verdict"] == "pass"      # 8x faster than DuckDB
    assert t[("q1", "refresh>=")]["verdict"] == "miss"          # 5x
    assert t[("q1", "refreshfaster")]["verdict"] == "miss"      # DuckDB is faster
    assert t[("q3", "refreshmedian")]["verdict"] == "miss"      # 2.5x slower at SF1 than SF0.1
    assert t[("q3", "Q3>=")]["verdict"] == "pass"               # 200,000 tuples/s
    assert t[("q20", "nestedview")]["verdict"] == "pass"        # 6x at SF 0.1
    assert t[("floor", "refreshtouching")]["verdict"] == "miss"    # 60 ms
    assert "not measured" in t[("q1", "refreshmedian")]["verdict"]


def test_create_and_sf10_targets():
    s = [_row(1.0, 10_000, "q3", "viewlet-ho", 0.1), _row(1.0, 10_000, "q3", "spark", 2.0),
         _row(10.0, 10_000, "q3", "viewlet-ho", 0.12), _row(10.0, 10_000, "q3", "spark", 15.0),
         _row(10.0, 10_000, "q3", "duckdb", 2.4), _row(0.1, 10_000, "q1", "viewlet-ho", 0.05),
         _row(0.1, 10_000, "q1", "spark", 0.5)]
    views = [{"view": "q3", "method": "viewlet-ho", "status": "created", "scale": 1.0,
              "create_seconds": 5.0},
             {"view": "q3", "method": "viewlet-ho", "status": "created", "scale": 10.0,
              "create_seconds": 60.0},
             {"view": "q1", "method": "viewlet-ho", "status": "created", "scale": 0.1,
              "create_seconds": 1.0}]
    t = {(x["view"], x["target"]): x for x in report.targets(s, views)}
    create = t[("q3", "CREATE <= 3x Spark recompute")]
    assert create["value"] == pytest.approx(2.5) and create["verdict"] == "pass"
    assert create["at"] == "SF 1"                                # SF 1, not SF 10's 4x
    q1 = t[("q1", "CREATE <= 3x Spark recompute")]
    assert q1["verdict"] == "pass (indicative)" and q1["at"] == "SF 0.1"
    assert t[("q3", "refresh >= 10x faster than DuckDB recompute")]["verdict"] == "pass"   # 20x
    assert t[("q3", "refresh >= 50x faster than Spark recompute")]["verdict"] == "pass"    # 125x
    growth = t[("q3", "refresh median at SF 10 <= 1.5x at SF 1")]
    assert growth["value"] == pytest.approx(1.2) and growth["verdict"] == "pass"
    assert not any(v == "q1" and "SF 10" in target for v, target in t)   # SF 10 not run


def test_targets_elsewhere_are_only_indicative_and_refusals_show():
    s = [_row(0.1, 1000, "q3", "viewlet-ho", 0.01, 1000), _row(0.1, 1000, "q3", "spark", 1.0, 1000)]
    views = [{"view": "q17a", "method": "viewlet-ho", "status": "unsupported: IN subquery"}]
    t = _verdicts(s, views)
    assert t[("q3", "refresh>=")]["verdict"] == "pass (indicative)"
    assert t[("q3", "refresh>=")]["at"] == "SF 0.1, 1000 tuples/batch"
    assert t[("q17a", "refresh>=")]["verdict"] == "unsupported"


def test_the_floor_reports_its_median_after_a_long_history_too():
    floor = {"view": "floor", "at": "20 refreshes, engine local", "median_seconds": 0.04,
             "min_seconds": 0.03, "max_seconds": 0.09, "refreshes": 20, "history": 200,
             "history_measured": True, "median_seconds_after_history": 0.045}
    text = "\n".join(report._floor_md({"floor": floor}))
    assert "median 40.0 ms (min 30.0, max 90.0); the last 20 of 200 batches: median 45.0 ms." \
        in text, text
    short = dict(floor, history=23, history_measured=False)
    assert "batches" not in "\n".join(report._floor_md({"floor": short}))


def test_the_history_benchmark_runs_and_reports_each_part(tmp_path):
    """integration/bench/history.py at a tiny size: a row per part and per hundred batches
    (the numbers are what it reports, not what this checks)."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    done = subprocess.run([sys.executable, os.path.join(ROOT, "integration/bench/history.py"),
                           "--manifest-batches", "200", "--floor-batches", "200",
                           "--internal-retention", "interval 2 seconds"],
                          cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "| reading its records in a new process |" in out
    assert "own tables' retention: interval 2 seconds" in out
    assert [line.split("|")[1].strip() for line in out.splitlines()
            if line.startswith("| 100 |") or line.startswith("| 200 |")] == ["100", "200"]
