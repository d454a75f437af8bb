"""On-demand long crash run (not collected by pytest): many SIGKILLs of refreshing processes
at every fault point, during repairs, and at random moments, over four views (joins, global
aggregates with AVG, first-order IVM, recompute); after every kill the next process repairs
the views and checks them against Spark's recompute.

    .venv/bin/python integration/faults/run_faults.py --trials 40 --seed 1 [--state DIR]

Each trial is one child process (one JVM start, ~15-60 s). Exit 0 when every repair matched.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path[:0] = [os.path.join(ROOT, "python"), ROOT]

from tests.ops.crash_child import VIEWS  # noqa: E402
from tests.ops.test_crash_safety import run_trials  # noqa: E402
from viewlet.engine.runtime.faults import POINTS


def plan(rng: random.Random, trials: int):
    steps = []
    for i in range(trials):
        kind = rng.random()
        if kind < 0.25:                      # a random moment of the refresh loop
            steps.append(dict(kill_after=rng.uniform(0.5, 20.0)))
        else:
            point = POINTS[i % len(POINTS)]
            nth = rng.randint(1, 4) if point == "batch.map_merged" else 1
            steps.append(dict(fault=f"{point}:{nth}", in_recovery=kind > 0.8))
    return steps


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=40)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--state", help="directory for tables and warehouse (default: a temp dir)")
    args = p.parse_args()
    state = args.state or tempfile.mkdtemp(prefix="viewlet-faults-")
    steps = plan(random.Random(args.seed), args.trials)
    t0 = time.time()
    print(f"{len(steps)} killed children then a checking one; state in {state}", flush=True)
    run_trials(state, steps, list(VIEWS), seed=args.seed * 1000)
    print(f"OK: every repair equalled recompute ({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
