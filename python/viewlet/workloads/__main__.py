"""Command line for the workload generators.

    python -m viewlet.workloads tpch-generate -s 1 -o /data/tpch1
    python -m viewlet.workloads tpch-stream /data/tpch1 --batches 10 --size 10000 --seed 42
    python -m viewlet.workloads orderbook-create -o /data/book
    python -m viewlet.workloads orderbook-stream /data/book --batches 10 --size 1000

Each applied batch prints one line: rows changed per table, the Delta
versions it spans and the generate/apply times.  Note that a new stream
process re-reads its state from the tables, so running ``*-stream`` twice
with the same seed does not repeat the same batches.
"""

from __future__ import annotations

import argparse
import sys
import time

from . import orderbook, tpch


def _run(stream, batches: int, size: int) -> None:
    for _ in range(batches):
        t0 = time.perf_counter()
        b = stream.next_batch(size)
        t1 = time.perf_counter()
        b.apply()
        t2 = time.perf_counter()
        versions = " ".join(f"{t}@{hi}" for t, (lo, hi) in b.versions.items())
        print(f"{b.summary()} | versions {versions} | gen {t1 - t0:.3f}s apply {t2 - t1:.3f}s", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m viewlet.workloads")
    sub = ap.add_subparsers(dest="cmd", required=True)

    g = sub.add_parser("tpch-generate", help="write TPC-H Delta tables (change data feed on)")
    g.add_argument("-s", "--scale", type=float, default=1.0)
    g.add_argument("-o", "--out", required=True)
    g.add_argument("-T", "--tables", default=",".join(tpch.ALL))
    g.add_argument("--overwrite", action="store_true")
    g.add_argument("--target-file-size", type=int, default=tpch.DEFAULT_TARGET_FILE_SIZE)

    s = sub.add_parser("tpch-stream", help="apply TPC-H update batches")
    s.add_argument("dir")
    s.add_argument("--batches", type=int, default=10)
    s.add_argument("--size", type=int, default=10_000)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--insert-fraction", type=float, default=0.5)
    s.add_argument("--update-fraction", type=float, default=0.05)

    c = sub.add_parser("orderbook-create", help="create empty bids/asks Delta tables")
    c.add_argument("-o", "--out", required=True)
    c.add_argument("--overwrite", action="store_true")

    o = sub.add_parser("orderbook-stream", help="apply order-book batches")
    o.add_argument("dir")
    o.add_argument("--batches", type=int, default=10)
    o.add_argument("--size", type=int, default=1000)
    o.add_argument("--seed", type=int, default=0)
    o.add_argument("--depth", type=int, default=1000)

    a = ap.parse_args(argv)
    if a.cmd == "tpch-generate":
        t0 = time.perf_counter()
        paths = tpch.generate(
            a.scale, a.out, a.tables.split(","), overwrite=a.overwrite, target_file_size=a.target_file_size
        )
        for t, p in paths.items():
            print(f"{t}\t{p}")
        print(f"generated SF {a.scale} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    elif a.cmd == "tpch-stream":
        stream = tpch.UpdateStream(
            tpch.table_paths(a.dir),
            seed=a.seed,
            insert_fraction=a.insert_fraction,
            update_fraction=a.update_fraction,
        )
        _run(stream, a.batches, a.size)
    elif a.cmd == "orderbook-create":
        for t, p in orderbook.create(a.out, overwrite=a.overwrite).items():
            print(f"{t}\t{p}")
    elif a.cmd == "orderbook-stream":
        paths = {sd: f"{a.dir.rstrip('/')}/{sd}" for sd in orderbook.SIDES}
        _run(orderbook.OrderBookStream(paths, seed=a.seed, depth=a.depth), a.batches, a.size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
