"""A child process for crash tests: repair and check the views, then write base-table changes
and refresh with a fault armed until the fault (or a timer) kills this process.

    python tests/ops/crash_child.py STATE_DIR SEED [--fault POINT[:NTH]] [--kill-after SECONDS]
        [--fault-in-recovery] [--views a,b]

Exit 0: views repaired and equal to recompute (and no kill was asked for). Exit 3: a view
differs from recompute. Killed by SIGKILL: the fault fired (what the parent expects).
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path[:0] = [os.path.join(ROOT, "python"), ROOT]

VIEWS = {
    # several maps: a batch changing r and s MERGEs more than one map before the result
    "crash_join": ("SELECT r.a, SUM(s.f) AS sf, COUNT(*) AS n FROM r JOIN s ON r.b = s.b "
                   "GROUP BY r.a", None),
    "crash_global": ("SELECT COUNT(*) AS n, SUM(r.c) AS sc, AVG(r.d) AS ad FROM r", None),
    "crash_chain1": ("SELECT t.h, COUNT(*) AS n, SUM(s.f) AS sf FROM r, s, t "
                     "WHERE r.b = s.b AND s.e = t.e GROUP BY t.h", 1),
    "crash_recompute": ("SELECT r.a, s.e FROM r JOIN s ON r.b = s.b WHERE s.e > 0", 0),
    # a view over a view: its REFRESH refreshes crash_up first (engine/ops/chains.py)
    "crash_up": ("SELECT r.b, COUNT(*) AS n, SUM(r.c) AS sc FROM r GROUP BY r.b", None),
    "crash_down": ("SELECT n, COUNT(*) AS k, SUM(sc) AS ssc FROM crash_up GROUP BY n", None),
}
UPSTREAMS = {"crash_down": ["crash_up"]}       # created (and checked) with the view
ORACLES = {"crash_down": f"SELECT n, COUNT(*) AS k, SUM(sc) AS ssc FROM ({VIEWS['crash_up'][0]}) "
                         "crash_up GROUP BY n"}
MAX_ROUNDS = 6


def main():
    p = argparse.ArgumentParser()
    p.add_argument("state")
    p.add_argument("seed", type=int)
    p.add_argument("--fault")
    p.add_argument("--kill-after", type=float)
    p.add_argument("--fault-in-recovery", action="store_true")
    p.add_argument("--views", default=",".join(VIEWS), help="comma-separated names from VIEWS")
    args = p.parse_args()
    views = {name: VIEWS[name] for name in args.views.split(",")}
    checked = {up: VIEWS[up] for name in views for up in UPSTREAMS.get(name, [])}
    checked.update(views)

    from pyspark.sql import SparkSession
    import viewlet
    from viewlet.engine.runtime import faults
    from tests.ops.workload_state import attach_workload
    from tests.spark.oracle import assert_view_matches

    builder = SparkSession.builder.master(os.environ.get("VIEWLET_TEST_MASTER", "local[2]")) \
        .appName("viewlet-crash-child").config("spark.ui.enabled", "false") \
        .config("spark.sql.shuffle.partitions", "2").config("spark.driver.memory", "1g")
    spark = viewlet.configure_spark(builder, warehouse=os.path.join(args.state, "wh")).getOrCreate()
    spark.sparkContext.setLogLevel("OFF")
    vl = viewlet.enable(spark)
    work = attach_workload(os.path.join(args.state, "tables"), args.seed)
    for name, path in work.paths.items():
        viewlet.register_table(spark, name, path, replace=True)
    existing = set(vl.view_names())
    for name, (query, depth) in checked.items():
        if name not in existing:
            vl.create_view(name, query, depth)

    if args.fault and args.fault_in_recovery:
        faults.arm(args.fault)
    for name, (query, _) in views.items():      # repair what the previous child left
        result = vl.refresh(name)
        seconds = spark.sql(f"SELECT seconds FROM viewlet_history('{name}') "
                            f"WHERE batch = {result['batch']}").first().seconds
        print("REFRESH", name, result["status"], f"changes={result['changes']}",
              f"rows_changed={result['rows_changed']}", f"history_seconds={seconds}", flush=True)
    for name, (query, _) in checked.items():
        try:
            assert_view_matches(spark, name, ORACLES.get(name, query))
        except AssertionError as e:
            print(f"MISMATCH {name}: {e}", file=sys.stderr, flush=True)
            sys.exit(3)
        print("CHECKED", name, flush=True)
    if not (args.fault or args.kill_after):
        return
    faults.arm(args.fault)
    if args.kill_after:
        threading.Timer(args.kill_after, os.kill, (os.getpid(), signal.SIGKILL)).start()
    for _ in range(MAX_ROUNDS):       # until the fault point is reached
        work.batch()
        for name in views:
            vl.refresh(name)
    print("NOT KILLED", flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
