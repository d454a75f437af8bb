"""The Viewlet benchmark (issue 5): higher-order refresh vs first-order IVM vs recompute
(Viewlet depth 0, Spark SQL, DuckDB), side by side on the same update batches.

    python -m viewlet bench --scale 0.1,1 --batch-sizes 1000,10000 --views q1,q3,q6

or from Python::

    from viewlet.tools.bench import Options, run
    results = run(Options(scales=[0.01], batch_sizes=[1000], batches=3, out="results"))

Modules: ``definitions`` (which views, which workload), ``data`` (base tables and update
streams), ``runner`` (the batch loop), ``baselines`` (Spark and DuckDB recompute),
``metrics`` (Spark input per step, memory peaks, sizes), ``report`` (JSON, Markdown,
targets), ``plots`` (PNGs).
"""
from .runner import BenchFailed, CheckPolicy, Options, parse_depth, run

__all__ = ["run", "Options", "CheckPolicy", "BenchFailed", "parse_depth"]
