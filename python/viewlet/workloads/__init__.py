"""Workload generators: TPC-H base data plus update streams over Delta tables.

* :mod:`viewlet.workloads.tpch` -- ``generate(scale, out_dir)`` and
  ``UpdateStream(tables, seed).next_batch(size).apply()``.
* :mod:`viewlet.workloads.orderbook` -- the DBToaster order-book workload
  (``bids``/``asks``) and ``OrderBookStream``.
"""

from . import tpch

__all__ = ["tpch", "orderbook"]


def __getattr__(name):  # lazy: orderbook is optional
    if name == "orderbook":
        from . import orderbook

        return orderbook
    raise AttributeError(name)
