"""Base data and update streams for the benchmark's workloads (generators in
viewlet.workloads: TPC-H from tpchgen-cli, the DBToaster-style order book)."""
from __future__ import annotations

import os
from typing import Callable, Dict, Tuple

from .definitions import ORDERBOOK, TPCH


def book_depth(scale: float) -> int:
    """Live orders per side of the order book at a scale factor: 100k at SF1, at least 1000."""
    return max(1000, int(round(100_000 * scale)))


def prepare(workload: str, scale: float, directory: str, seed: int,
            say: Callable[[str], None]) -> Tuple[Dict[str, str], object]:
    """Fresh base tables for ``workload`` at ``scale`` under ``directory`` and the update
    stream over them: ({table: path}, stream)."""
    if workload == TPCH:
        from ...workloads import tpch
        paths = tpch.generate(scale, os.path.join(directory, "tpch"), overwrite=True)
        return paths, tpch.UpdateStream(paths, seed=seed)
    if workload == ORDERBOOK:
        from ...workloads import orderbook
        paths = orderbook.create(os.path.join(directory, "orderbook"), overwrite=True)
        depth = book_depth(scale)
        stream = orderbook.OrderBookStream(paths, seed=seed, depth=depth)
        # the stream starts from an empty book: fill it to its steady depth first
        while min(stream.live(s) for s in orderbook.SIDES) < depth:
            stream.apply(stream.next_batch(depth))
        say(f"  order book filled to {stream.live('bids')} bids, {stream.live('asks')} asks")
        return paths, stream
    raise ValueError(f"unknown workload {workload}")
