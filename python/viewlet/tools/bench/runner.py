"""The benchmark run: per scale factor and workload, fresh base tables, one incremental view
per (view, depth), then per batch size a stream of batches; after every batch each view is
refreshed, the baselines recompute the defining query, and the views are checked against
the Spark recompute. Everything runs in one Spark session, side by side on the same batches.
"""
from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, TextIO, Tuple

from ...engine.state.settings import machine_memory
from ...errors import ViewletError
from . import baselines, data, definitions, metrics

REL_TOL = 1e-6          # doubles: the product guide's tolerance
SPARK, DUCKDB = "spark", "duckdb"
BASELINES = (SPARK, DUCKDB)


HO_MERGE = "ho-merge"    # higher-order, maps written by MERGE (view option map_writes)


def depth_label(depth) -> str:
    """None: higher-order; HO_MERGE; or a depth number."""
    if depth is None or depth == HO_MERGE:
        return depth or "ho"
    return f"d{depth}"


def method_name(depth: Optional[int], engine: str = "auto") -> str:
    """viewlet-<depth>, and -local / -spark when a target is forced (auto: the cost rule)."""
    return f"viewlet-{depth_label(depth)}" + ("" if engine == AUTO else f"-{engine}")


AUTO = "auto"
ENGINES = ("auto", "local", "spark")


@dataclass(frozen=True)
class Variant:
    """One Viewlet view of a definition: its depth and the target its batches run on."""
    depth: object
    engine: str = AUTO

    @property
    def method(self) -> str:
        return method_name(self.depth, self.engine)

    @property
    def label(self) -> str:
        return depth_label(self.depth) + ("" if self.engine == AUTO else f"_{self.engine}")


def parse_depth(text: str) -> Optional[int]:
    t = text.strip().lower()
    if t in ("ho", "higher-order", "unlimited", "none"):
        return None
    if t == HO_MERGE:
        return HO_MERGE
    try:
        d = int(t)
    except ValueError:
        raise ValueError(f"depth {text!r}: use ho (higher-order), ho-merge "
                         "(higher-order, maps written by MERGE) or a non-negative integer") from None
    if d < 0:
        raise ValueError(f"depth {text!r} must not be negative")
    return d


@dataclass
class CheckPolicy:
    """Which batches are checked: every one, or every n-th (and always the last)."""
    every: int = 1

    @classmethod
    def parse(cls, text: str) -> "CheckPolicy":
        t = text.strip().lower()
        if t == "every":
            return cls(1)
        if t.startswith("sample:"):
            try:
                n = int(t.split(":", 1)[1])
            except ValueError:
                n = 0
            if n >= 1:
                return cls(n)
        raise ValueError(f"--check {text!r}: use 'every' or 'sample:N' (N >= 1: every N-th batch "
                         "and the last one)")

    def wanted(self, index: int, count: int) -> bool:
        return index % self.every == 0 or index == count - 1

    def __str__(self):
        return "every" if self.every == 1 else f"sample:{self.every}"


@dataclass
class Options:
    scales: Sequence[float] = (0.01,)
    batch_sizes: Sequence[int] = (1000, 10000)
    batches: int = 3
    warmup: int = 1
    views: Sequence[str] = ()            # names or .sql paths; () = the views that exist
    depths: Sequence[Optional[int]] = (None, 1, 0)
    engines: Sequence[str] = (AUTO,)     # where refreshes run (view option engine)
    floor: bool = True                   # also measure the per-refresh floor (tools/bench/floor.py)
    floor_history: int = 200             # the floor view's batches (a median of its last ones)
    baselines: Sequence[str] = BASELINES
    check: CheckPolicy = field(default_factory=CheckPolicy)
    out: str = "bench-results"
    warehouse: Optional[str] = None      # None: a temporary directory, removed at the end
    seed: int = 1
    driver_memory: str = "2g"
    shuffle_partitions: int = 4
    conf: Sequence[Tuple[str, str]] = ()   # Spark settings of the session (--conf), after ours
    label: str = ""
    command: str = ""

    def validate(self):
        if not self.scales or any(s <= 0 for s in self.scales):
            raise ValueError("scale factors must be positive")
        if not self.batch_sizes or any(b <= 0 for b in self.batch_sizes):
            raise ValueError("batch sizes must be positive")
        if self.batches < 1 or self.warmup < 0:
            raise ValueError("--batches must be at least 1 and --warmup not negative")
        unknown = [b for b in self.baselines if b not in BASELINES]
        if unknown:
            raise ValueError(f"unknown baselines {unknown}; choose from {', '.join(BASELINES)}")
        if len(set(self.depths)) != len(self.depths):
            raise ValueError("a depth is listed twice")
        if not self.engines or any(e not in ENGINES for e in self.engines) or \
                len(set(self.engines)) != len(self.engines):
            raise ValueError(f"engines must be distinct values of {', '.join(ENGINES)}")

    def variants(self) -> List[Variant]:
        """Every (depth, engine) view to measure; depth 0 recomputes on Spark, once."""
        out = []
        for depth in self.depths:
            for engine in ([AUTO] if depth == 0 else self.engines):
                out.append(Variant(depth, engine))
        return out


class BenchFailed(ViewletError):
    """Some view differed from its recompute, or a refresh failed."""

    def __init__(self, message: str, results: Dict):
        super().__init__(message)
        self.results = results


def run(options: Options, out: TextIO = sys.stdout) -> Dict:
    """Run the benchmark; write results.json, results.md and the plots to ``options.out``.
    Returns the results; raises BenchFailed (after writing them) if any check failed."""
    from . import report

    options.validate()
    views = definitions.resolve(options.views or definitions.available())
    temporary = options.warehouse is None
    warehouse = os.path.abspath(tempfile.mkdtemp(prefix="viewlet-bench-") if temporary
                                else options.warehouse)
    os.makedirs(warehouse, exist_ok=True)
    os.makedirs(options.out, exist_ok=True)
    results = report.new_results(options, views)
    spark = None
    try:
        _say(out, "Starting Spark (local[2], Spark UI on a free localhost port) ...")
        spark = _spark_session(warehouse, options)
        results["meta"]["machine"].update(report.spark_versions(spark))
        bench = _Bench(spark, warehouse, options, results, out)
        for scale in options.scales:
            for workload in sorted({v.workload for v in views}):
                bench.run_scale(scale, workload, [v for v in views if v.workload == workload])
                report.write_all(results, options.out, partial=True)
        if options.floor:
            from . import floor
            _say(out, "Per-refresh floor (one changed row, local target) ...")
            f = results["floor"] = floor.measure(bench.vl, warehouse,
                                                 history=options.floor_history)
            _say(out, f"  median {f['median_seconds'] * 1000:.1f} ms" +
                 (f"; the last {f['refreshes']} of {f['history']} batches "
                  f"{f['median_seconds_after_history'] * 1000:.1f} ms"
                  if f["history_measured"] else ""))
    finally:
        results["meta"]["finished"] = report.now()
        if spark is not None:
            try:
                spark.stop()
            except Exception:
                pass
        if temporary:
            shutil.rmtree(warehouse, ignore_errors=True)
    report.finish(results)
    report.write_all(results, options.out)
    _say(out, "")
    _say(out, report.markdown_summary(results))
    _say(out, f"Results written to {os.path.abspath(options.out)}")
    failures = results["checks"]["failures"]
    if failures:
        raise BenchFailed(f"{len(failures)} check(s) failed: " + " | ".join(failures[:5]), results)
    return results


def _spark_session(warehouse: str, options: Options):
    from pyspark.sql import SparkSession
    import viewlet

    port = metrics.free_port()
    builder = SparkSession.builder.master("local[2]").appName("viewlet-bench") \
        .config("spark.ui.enabled", "true") \
        .config("spark.ui.port", str(port)) \
        .config("spark.driver.bindAddress", "127.0.0.1") \
        .config("spark.driver.host", "127.0.0.1") \
        .config("spark.ui.showConsoleProgress", "false") \
        .config("spark.ui.retainedJobs", "5000") \
        .config("spark.ui.retainedStages", "10000") \
        .config("spark.sql.shuffle.partitions", str(options.shuffle_partitions)) \
        .config("spark.driver.memory", options.driver_memory) \
        .config("spark.sql.warehouse.dir", os.path.join(warehouse, "spark-warehouse"))
    for key, value in options.conf:
        builder = builder.config(key, value)
    spark = viewlet.configure_spark(builder, warehouse=warehouse).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _say(out: TextIO, text: str):
    print(text, file=out, flush=True)


class _Bench:
    def __init__(self, spark, warehouse, options: Options, results: Dict, out: TextIO):
        import viewlet

        self.spark, self.warehouse, self.options = spark, warehouse, options
        self.results, self.out = results, out
        self.vl = viewlet.enable(spark, warehouse=warehouse)
        self.ui = metrics.SparkInput(spark)
        self.memory = metrics.MemoryProbe(spark)

    # -- one scale factor of one workload ------------------------------------------------
    def run_scale(self, scale: float, workload: str, views):
        o = self.options
        data_dir = os.path.join(self.warehouse, f"data-sf{scale:g}")
        _say(self.out, f"== {workload} at scale {scale:g}: preparing base tables ...")
        t0 = time.perf_counter()
        paths, stream = data.prepare(workload, scale, data_dir, o.seed,
                                     lambda s: _say(self.out, s))
        _say(self.out, f"  ready in {time.perf_counter() - t0:.1f}s: {', '.join(paths)}")
        for name, path in paths.items():
            self.vl.register_table(name, path, replace=True)
        duck = self._duckdb(paths) if DUCKDB in o.baselines else None
        created = self._create_views(scale, workload, views)
        try:
            for size in o.batch_sizes:
                count = o.warmup + o.batches
                for i in range(count):
                    self._batch(scale, workload, views, created, stream, duck, size, i, count)
                self._sizes(scale, size, created)
        finally:
            if duck is not None:
                duck.close()
            for name in created.values():
                self.vl.drop_view(name, if_exists=True)
            shutil.rmtree(os.path.join(self.warehouse, "_recompute"), ignore_errors=True)

    def _duckdb(self, paths) -> "baselines.DuckDBRecompute":
        from ...engine.state.settings import parse_bytes

        heap = parse_bytes(self.options.driver_memory, "--driver-memory")
        limit = baselines.duckdb_memory_limit(heap, machine_memory())
        self.results["meta"]["duckdb_memory_limit"] = limit
        return baselines.DuckDBRecompute(paths, memory_limit=limit,
                                         spill_dir=os.path.join(self.warehouse, "_duckdb_spill"))

    def _create_views(self, scale, workload, views) -> Dict[tuple, str]:
        """{(view, variant): Viewlet view name} of the views that could be created."""
        created = {}
        for v in views:
            for variant in self.options.variants():
                depth = variant.depth
                name = f"{v.name}_{variant.label}".replace("-", "_")
                rec = {"scale": scale, "workload": workload, "view": v.name, "file": v.path,
                       "method": variant.method, "name": name}
                self.vl.drop_view(name, if_exists=True)
                try:
                    r = self.vl.create_view(
                        name, v.query, depth=None if depth == HO_MERGE else depth,
                        caches=v.caches, map_writes="merge" if depth == HO_MERGE else "append",
                        engine=None if variant.engine == AUTO else variant.engine)
                except ViewletError as e:
                    rec["status"] = f"unsupported: {e}"
                except Exception as e:      # a bug, not a refusal: note it and go on
                    rec["status"] = f"create failed: {type(e).__name__}: {_first_line(e)}"
                    self._fail(f"{name} at SF {scale:g}: CREATE failed: {_first_line(e)}")
                else:
                    rec.update(status="created", maps=r["maps"], rows=r["rows"],
                               create_seconds=r["seconds"])
                    created[(v.name, variant)] = name
                self.results["views"].append(rec)
                _say(self.out, f"  {name}: {rec['status']}" + (
                    f" ({rec['maps']} maps, {rec['rows']} rows, {rec['create_seconds']:.1f}s)"
                    if rec["status"] == "created" else ""))
        # the initial contents are checked like every batch's
        for v in views:
            names = [created[(v.name, x)] for x in self.options.variants() if (v.name, x) in created]
            if names:
                try:
                    df = self.spark.sql(v.query)
                    schema, rows = df.schema, df.collect()
                except Exception as e:
                    self._fail(f"{v.name} at SF {scale:g} after CREATE: no recompute to check "
                               f"against: {_first_line(e)}")
                else:
                    self._check(scale, None, 0, v, names, schema, rows)
        return created

    # -- one batch -----------------------------------------------------------------------
    def _batch(self, scale, workload, views, created, stream, duck, size, index, count):
        o = self.options
        warm = index < o.warmup
        t0 = time.perf_counter()
        batch = stream.next_batch(size)
        stream.apply(batch)
        apply_s = time.perf_counter() - t0
        bkey = {"scale": scale, "workload": workload, "batch_size": size, "seq": batch.seq,
                "index": index, "warmup": warm}
        self.results["batches"].append(dict(bkey, tuples=batch.rows_changed,
                                            apply_seconds=apply_s, summary=batch.summary()))
        checked = o.check.wanted(index - o.warmup, count - o.warmup) if not warm else True
        groups: Dict[str, Dict] = {}
        line = []
        for v in views:
            for variant in o.variants():
                name = created.get((v.name, variant))
                if name is None:
                    continue
                rec = self._measure(bkey, batch, v, variant.method, groups,
                                    lambda: self.vl.refresh(name))
                if "error" not in rec:
                    rec["phases"] = self.vl.ctx.load(name).manifest.latest().stats
                    rec["engine"] = rec["phases"].get("engine")
                line.append(f"{v.name}/{variant.label} {rec['seconds']:.2f}s")
            spark_dir = os.path.join(self.warehouse, "_recompute", v.name)
            spark_ok = False
            if SPARK in o.baselines:
                rec = self._measure(bkey, batch, v, SPARK, groups,
                                    lambda: baselines.spark_recompute(self.spark, v.query, spark_dir))
                spark_ok = "error" not in rec
                line.append(f"{v.name}/spark {rec['seconds']:.2f}s")
            if duck is not None:
                holder = {}
                rec = self._measure(bkey, batch, v, DUCKDB, groups,
                                    lambda: holder.update(r=duck.run(v.query, v.tables)),
                                    timer=lambda: holder["r"][0], fatal=False)
                if "error" not in rec:
                    rec["result_rows"] = holder["r"][1].num_rows
                line.append(f"{v.name}/duckdb {rec['seconds']:.2f}s")
            names = [created[(v.name, x)] for x in o.variants() if (v.name, x) in created]
            if checked and names:
                try:
                    if spark_ok:
                        schema, rows = baselines.spark_result(self.spark, spark_dir)
                    else:
                        df = self.spark.sql(v.query)
                        schema, rows = df.schema, df.collect()
                except Exception as e:
                    self._fail(f"{v.name} at SF {scale:g} after batch {batch.seq}: no recompute "
                               f"to check against: {_first_line(e)}")
                else:
                    self._check(scale, size, batch.seq, v, names, schema, rows)
        inputs = self.ui.collect(groups)
        for group, rec in groups.items():
            rec.update(inputs.get(group, {}))
        tag = " (warm-up)" if warm else ""
        _say(self.out, f"[SF {scale:g} {workload} {size}] batch {batch.seq}{tag}: "
                       f"{batch.rows_changed} tuples applied in {apply_s:.2f}s; "
                       + ", ".join(line) + ("; checked" if checked else ""))

    def _measure(self, bkey, batch, v, method, groups, action, timer=None, fatal=True) -> Dict:
        """Run one timed step. A failing step is recorded with its error; it fails the run
        (``fatal``) unless it is a reference measurement that no check depends on (DuckDB:
        e.g. a query sqlglot cannot translate)."""
        group = f"bench-{len(self.results['measurements'])}"
        rec = dict(bkey, view=v.name, method=method, tuples=batch.rows_changed, group=group)
        self.memory.reset()
        self.ui.tag(group, f"{method} {v.name} batch {batch.seq}")
        t0 = time.perf_counter()
        try:
            r = action()
            rec["seconds"] = timer() if timer else time.perf_counter() - t0
            if isinstance(r, dict):
                rec.update(changes=r.get("changes"), rows_changed=r.get("rows_changed"))
        except Exception as e:
            rec["seconds"] = time.perf_counter() - t0
            rec["error"] = f"{type(e).__name__}: {_first_line(e)}"
            message = (f"{method} {v.name} batch {batch.seq} (size {bkey['batch_size']}, SF "
                       f"{bkey['scale']:g}): {rec['error']}")
            if fatal:
                self._fail(message)
            else:
                self.results["checks"].setdefault("baseline_errors", []).append(message)
        finally:
            self.ui.untag()
        rec.update(self.memory.peak())
        rec["tuples_per_second"] = rec["tuples"] / rec["seconds"] if rec["seconds"] > 0 else None
        self.results["measurements"].append(rec)
        groups[group] = rec
        return rec

    # -- checks and sizes ------------------------------------------------------------------
    def _check(self, scale, size, seq, v, names, schema, rows):
        from ..demo import compare_rows

        want = [(f.name, f.dataType.simpleString()) for f in schema.fields]
        for name in names:
            where = "after CREATE" if size is None else f"after batch {seq} (size {size})"
            self.results["checks"]["total"] += 1
            try:
                df = self.vl.read_view(name)
                got = [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
                diffs = [f"schema: view {got} != recompute {want}"] if got != want else \
                    compare_rows(rows, df.collect(), rel_tol=REL_TOL)
            except Exception as e:
                diffs = [f"cannot read the view: {type(e).__name__}: {_first_line(e)}"]
            if diffs:
                self._fail(f"{name} at SF {scale:g} {where}: " + "; ".join(diffs[:3]))
                _say(self.out, f"  CHECK FAILED {name} {where}: " + "; ".join(diffs[:3]))

    def _fail(self, message: str):
        self.results["checks"]["failures"].append(message)

    def _sizes(self, scale, size, created):
        for (view, variant), name in created.items():
            loaded = self.vl.ctx.load(name)
            maps = {m: metrics.delta_live_bytes(loaded.map_path(m)) for m in loaded.definition.maps}
            self.results["sizes"].append({
                "scale": scale, "batch_size": size, "view": view, "method": variant.method,
                "maps": len(maps), "map_bytes": sum(maps.values()), "map_bytes_by_map": maps,
                "result_bytes": metrics.delta_live_bytes(loaded.result_path),
                "directory_bytes": metrics.directory_bytes(loaded.entry.location)})


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def summarize(measurements: List[Dict]) -> List[Dict]:
    """Median and spread per (scale, batch size, view, method) over the steady-state batches."""
    groups: Dict[tuple, List[Dict]] = {}
    for m in measurements:
        if m.get("warmup") or "error" in m:
            continue
        groups.setdefault((m["scale"], m["batch_size"], m["view"], m["method"]), []).append(m)
    out = []
    for (scale, size, view, method), ms in sorted(groups.items(), key=lambda kv: (
            kv[0][0], kv[0][1], kv[0][2], kv[0][3])):
        secs = sorted(m["seconds"] for m in ms)
        med = statistics.median(secs)

        def med_of(key):
            vals = [m[key] for m in ms if m.get(key) is not None]
            return statistics.median(vals) if vals else None

        out.append({
            "scale": scale, "batch_size": size, "view": view, "method": method, "batches": len(ms),
            "median_seconds": med, "min_seconds": secs[0], "max_seconds": secs[-1],
            "tuples_per_second": (statistics.median(m["tuples"] for m in ms) / med) if med else None,
            "jvm_heap_peak_bytes": max((m.get("jvm_heap_peak_bytes") or 0) for m in ms),
            "python_rss_peak_bytes": max((m.get("python_rss_peak_bytes") or 0) for m in ms),
            "jvm_rss_peak_bytes": max((m.get("jvm_rss_peak_bytes") or 0) for m in ms),
            "spark_input_records": med_of("input_records"),
            "spark_input_bytes": med_of("input_bytes"),
            "spark_shuffle_read_bytes": med_of("shuffle_read_bytes"),
            "spark_jobs": med_of("jobs"),
            "spark_stages": med_of("stages"),
            "spark_tasks": med_of("tasks"),
            "engines": sorted({m.get("engine") or "" for m in ms} - {""}),
            "map_rows_read": _median_or_none([_map_rows(m, 3) for m in ms]),
            "map_rows_kept": _median_or_none([_map_rows(m, 5) for m in ms]),
        })
    return out


def _map_rows(m: Dict, field: int) -> Optional[int]:
    """A refresh's map rows summed over its map reads (the manifest's `map_reads`): in the
    files read (field 3) or kept for Spark (field 5). None for baselines."""
    reads = (m.get("phases") or {}).get("map_reads")
    if reads is None or any(len(r) <= field for r in reads):
        return None
    return sum((r[field] or 0) for r in reads)


def _median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None
