"""Workload generators: base data plus update streams over Delta tables.

* :mod:`viewlet.workloads.tpch` -- ``generate(scale, out_dir)`` writes the
  TPC-H tables; ``UpdateStream(tables, seed).next_batch(size).apply()``.
* :mod:`viewlet.workloads.orderbook` -- the DBToaster order-book workload:
  ``create(out_dir)`` makes ``bids``/``asks``;
  ``OrderBookStream(tables, seed).next_batch(size).apply()``.

Both streams hand out :class:`Batch` objects with per-table counts of
inserted/deleted/updated rows and, once applied, the Delta versions they
span.
"""

from ._batch import Batch
from . import orderbook, tpch

__all__ = ["Batch", "orderbook", "tpch"]
