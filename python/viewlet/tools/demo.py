"""End-to-end demo: TPC-H views kept fresh by Viewlet, checked against a full recompute.

    python -m viewlet demo --scale 0.01 --batches 5 --batch-size 1000 --views q1,q3,q6

or from Python::

    from viewlet import demo
    rows = demo.run(scale=0.01, batches=5, batch_size=1000, views=("q1", "q3", "q6"))

What it does:

1. generates TPC-H at ``scale`` as Delta tables under ``<warehouse>/tpch`` (skipped when a
   previous run left valid tables of the same scale there) and registers them under their
   TPC-H names;
2. creates one incremental view per name in ``views`` from ``sql/tpch/<name>.sql`` and
   checks its initial contents against the defining query;
3. per batch: applies a TPC-H update batch (inserts, deletes, updates) to the base tables,
   then per view runs ``REFRESH INCREMENTAL VIEW`` (timed), recomputes the defining query
   from scratch with Spark (``spark.sql(query).collect()``, timed) and checks that the view
   holds exactly the recomputed rows;
4. prints a table of the timings and checks and, per view, the median refresh/recompute
   ratio.

The check compares the two results as multisets of rows, with the same column names and
types; decimals, integers, strings and dates must be equal, doubles equal within a relative
tolerance of 1e-9.  Any mismatch makes :func:`run` raise :class:`DemoCheckFailed` once all
batches ran (the ``viewlet demo`` command then exits with status 1).
"""
from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Optional, Sequence, TextIO, Tuple

from ..errors import ViewletError
from .locations import CHECKOUT_DIR, EXAMPLES_DIR

DEFAULT_VIEWS: Tuple[str, ...] = ("q1", "q3", "q6")
REL_TOL = 1e-9
ABS_TOL = 1e-12          # doubles that should be 0 but carry rounding noise
_MARKER = "_viewlet_demo.json"
_MAX_SHOWN_DIFFS = 5

__all__ = ["run", "DemoCheckFailed", "sql_dir", "available_views", "load_query", "compare_rows",
           "DEFAULT_VIEWS"]


class DemoCheckFailed(ViewletError):
    """A view differed from the recompute of its defining query."""

    def __init__(self, message: str, rows: List[Dict]):
        super().__init__(message)
        self.rows = rows


# -- the view definitions ------------------------------------------------------------------
def sql_dir() -> Optional[Path]:
    """The directory holding the TPC-H view definitions.

    In order: ``$VIEWLET_SQL_DIR``; ``sql/tpch`` of the source checkout this module belongs
    to; the copy an installed package ships (``viewlet/examples/tpch``, made by setup.py)."""
    env = os.environ.get("VIEWLET_SQL_DIR")
    if env:
        return Path(env)
    for d in (CHECKOUT_DIR / "sql" / "tpch", EXAMPLES_DIR / "tpch"):
        if d.is_dir() and any(d.glob("*.sql")):
            return d
    return None


def _definitions(directory: Optional[Path] = None) -> Tuple[str, Dict[str, str]]:
    """(where from, {name: file text}) of the available view definitions."""
    d = Path(directory) if directory is not None else sql_dir()
    if d is None or not d.is_dir():
        raise ViewletError(f"No view definitions found (looked in {d or 'sql/tpch'}). Set "
                           "VIEWLET_SQL_DIR to a directory of .sql files.")
    return str(d), {p.stem: p.read_text() for p in d.glob("*.sql")}


def available_views(directory: Optional[Path] = None) -> List[str]:
    return sorted(_definitions(directory)[1], key=_query_order)


def _query_order(name: str):
    digits = "".join(c for c in name if c.isdigit())
    return (int(digits) if digits else 10 ** 6, name)


def load_query(name: str, directory: Optional[Path] = None) -> str:
    """The SELECT of ``<name>.sql`` as one line, comments removed.

    The header comments are documentation for readers of the file; without them the view's
    stored query (SHOW, EXPLAIN INCREMENTAL VIEW) is the bare SELECT."""
    from ..frontend.lexical import strip_comments

    where, texts = _definitions(directory)
    if name not in texts:
        known = ", ".join(sorted(texts, key=_query_order)) or "none"
        raise ViewletError(f"No view definition {name}.sql in {where}. Known views: {known}.")
    text = " ".join(strip_comments(texts[name]).split()).rstrip(";").strip()
    if not text:
        raise ViewletError(f"{name}.sql in {where} holds no query.")
    return text


# -- comparing results ---------------------------------------------------------------------
def _is_float(v) -> bool:
    return isinstance(v, float)


def compare_rows(expected: Sequence[Sequence], actual: Sequence[Sequence],
                 rel_tol: float = REL_TOL, abs_tol: float = ABS_TOL) -> List[str]:
    """Differences between two results taken as multisets of rows; [] when they agree.

    Non-float values (decimals, integers, strings, dates, NULL) are compared exactly (a
    Decimal compares by value: 1.50 == 1.5); floats within ``rel_tol`` (NaN equals NaN).
    Rows are grouped by their non-float values, and within a group the float parts are
    matched in sorted order."""
    def split(rows):
        groups: Dict[tuple, List[tuple]] = defaultdict(list)
        for r in rows:
            r = tuple(r)
            exact = tuple(("f", None) if _is_float(v) else ("v", v) for v in r)
            floats = tuple(v for v in r if _is_float(v))
            groups[exact].append(floats)
        return groups

    def close(a: float, b: float) -> bool:
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)

    def show(exact, floats) -> str:
        it = iter(floats)
        return "(" + ", ".join(repr(next(it)) if k == "f" else repr(v) for k, v in exact) + ")"

    exp_g, act_g = split(expected), split(actual)
    diffs: List[str] = []
    if len(expected) != len(actual):
        diffs.append(f"row count: view has {len(actual)}, recompute has {len(expected)}")
    for key in sorted(set(exp_g) | set(act_g), key=repr):
        e = sorted(exp_g.get(key, []), key=lambda t: [(math.isnan(x), x) for x in t])
        a = sorted(act_g.get(key, []), key=lambda t: [(math.isnan(x), x) for x in t])
        for i in range(max(len(e), len(a))):
            if i >= len(e):
                diffs.append(f"extra in view:      {show(key, a[i])}")
            elif i >= len(a):
                diffs.append(f"missing from view:  {show(key, e[i])}")
            elif not all(close(x, y) for x, y in zip(e[i], a[i])):
                diffs.append(f"differs: view {show(key, a[i])} != recompute {show(key, e[i])}")
    return diffs


def _check(spark, view: str, query: str) -> Tuple[List[str], float, int]:
    """(differences, recompute seconds, view rows) of a view against its defining query."""
    t0 = time.perf_counter()
    expected_df = spark.sql(query)
    expected = expected_df.collect()
    recompute = time.perf_counter() - t0
    actual_df = spark.sql(f"SELECT * FROM {view}")
    actual = actual_df.collect()
    diffs = []
    exp_schema = [(f.name, f.dataType.simpleString()) for f in expected_df.schema.fields]
    act_schema = [(f.name, f.dataType.simpleString()) for f in actual_df.schema.fields]
    if exp_schema != act_schema:
        diffs.append(f"schema: view {act_schema} != recompute {exp_schema}")
    else:
        diffs.extend(compare_rows(expected, actual))
    return diffs, recompute, len(actual)


# -- data ------------------------------------------------------------------------------------
def _prepare_tpch(scale: float, directory: str, out: TextIO) -> Dict[str, str]:
    from ..workloads import tpch

    marker = os.path.join(directory, _MARKER)
    paths = tpch.table_paths(directory)
    if _valid_tpch(paths, marker, scale):
        _say(out, f"Using the TPC-H SF {scale:g} tables already in {directory}")
        return paths
    tpch.find_tpchgen()          # a clear error before deleting anything
    _say(out, f"Generating TPC-H SF {scale:g} into {directory} ...")
    t0 = time.perf_counter()
    if os.path.exists(marker):
        os.remove(marker)
    paths = tpch.generate(scale, directory, overwrite=True)
    with open(marker, "w") as f:
        json.dump({"scale": scale, "tables": list(paths)}, f)
    _say(out, f"  generated {len(paths)} tables in {time.perf_counter() - t0:.1f}s")
    return paths


def _valid_tpch(paths: Dict[str, str], marker: str, scale: float) -> bool:
    try:
        with open(marker) as f:
            info = json.load(f)
        if float(info.get("scale", -1)) != float(scale):
            return False
        from deltalake import DeltaTable
        for p in paths.values():
            if not os.path.isdir(os.path.join(p, "_delta_log")):
                return False
            DeltaTable(p).version()
        return True
    except Exception:
        return False


# -- Spark -------------------------------------------------------------------------------------
def _spark_session(warehouse: str):
    from pyspark.sql import SparkSession

    import viewlet

    builder = SparkSession.builder.master("local[2]").appName("viewlet-demo") \
        .config("spark.ui.enabled", "false") \
        .config("spark.ui.showConsoleProgress", "false") \
        .config("spark.sql.shuffle.partitions", "4") \
        .config("spark.driver.memory", os.environ.get("VIEWLET_DEMO_DRIVER_MEMORY", "2g")) \
        .config("spark.sql.warehouse.dir", os.path.join(warehouse, "spark-warehouse"))
    spark = viewlet.configure_spark(builder, warehouse=warehouse).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _explain_brief(spark, view: str) -> List[str]:
    """The map and trigger summary lines of EXPLAIN INCREMENTAL VIEW."""
    lines = [r[0] for r in spark.sql(f"EXPLAIN INCREMENTAL VIEW {view}").collect()]
    maps, section = [], None
    for ln in lines:
        if ln and not ln.startswith(" "):
            section = ln.strip()
        elif section == "Maps:" and ln.startswith("  ") and not ln.startswith("   "):
            maps.append(ln.strip())
    out = [f"EXPLAIN INCREMENTAL VIEW {view}: {len(maps)} map(s)"] if maps else []
    out += [f"  {m}" for m in maps]
    relation = None
    for ln in lines:
        s = ln.strip()
        if s.startswith("ON BATCH "):
            relation = s[len("ON BATCH "):].rstrip(":")
        elif s.startswith("=>") and relation:
            out.append(f"  on a batch of {relation[1:] if relation.startswith('d') else relation}: "
                       f"{s[2:].strip()}")
    return out or lines[:6]


# -- output ------------------------------------------------------------------------------------
def _say(out: TextIO, text: str = ""):
    print(text, file=out, flush=True)


_COLUMNS = [("batch", ">5", "{}"), ("view", "<5", "{}"), ("base rows", ">9", "{}"),
            ("view rows", ">9", "{}"), ("changed", ">7", "{}"), ("refresh s", ">9", "{:.3f}"),
            ("recompute s", ">11", "{:.3f}"), ("ratio", ">6", "{:.3f}"), ("check", "<5", "{}")]
_KEYS = ["batch", "view", "base_rows_changed", "view_rows", "view_rows_changed",
         "refresh_seconds", "recompute_seconds", "ratio", "check"]


def _table_line(values) -> str:
    return "  ".join(format(v, spec) for v, (_, spec, _) in zip(values, _COLUMNS)).rstrip()


def _table_row(row: Dict) -> str:
    cells = [fmt.format(row[k]) for k, (_, _, fmt) in zip(_KEYS, _COLUMNS)]
    return _table_line(cells)


def print_table(rows: List[Dict], out: TextIO = sys.stdout):
    header = _table_line([name for name, _, _ in _COLUMNS])
    _say(out, header)
    _say(out, "-" * len(header))
    for r in rows:
        _say(out, _table_row(r))


def _print_summary(rows: List[Dict], views: Sequence[str], out: TextIO):
    _say(out)
    _say(out, "Median over the batches (ratio = refresh seconds / recompute seconds):")
    for v in views:
        mine = [r for r in rows if r["view"] == v]
        if not mine:
            continue
        ratio = statistics.median(r["ratio"] for r in mine)
        refresh = statistics.median(r["refresh_seconds"] for r in mine)
        recompute = statistics.median(r["recompute_seconds"] for r in mine)
        faster = f"refresh is {1 / ratio:.1f}x faster" if ratio < 1 else \
            f"refresh is {ratio:.1f}x slower"
        ok = sum(r["check"] == "OK" for r in mine)
        _say(out, f"  {v:<5} refresh {refresh:.3f}s  recompute {recompute:.3f}s  "
                  f"ratio {ratio:.3f} ({faster}); checks OK {ok}/{len(mine)}")
    _say(out, "(batch 1 includes JIT warm-up of the refresh and recompute code paths)")


# -- the demo ------------------------------------------------------------------------------------
def run(scale: float = 0.01, batches: int = 5, batch_size: int = 1000,
        warehouse: Optional[str] = None, seed: int = 1,
        views: Sequence[str] = DEFAULT_VIEWS, out: TextIO = sys.stdout) -> List[Dict]:
    """Run the demo; returns one dict per (batch, view) with the keys
    ``batch, view, base_rows_changed, view_rows, view_rows_changed, changes,
    refresh_seconds, recompute_seconds, ratio, check`` (``check`` is "OK" or "FAIL") and
    ``differences`` (list of str).

    ``warehouse=None`` uses a temporary directory that is removed at the end; with a
    directory, the TPC-H tables under ``<warehouse>/tpch`` are reused by later runs of the
    same scale (the update stream keeps changing them) and the views are replaced.
    Raises DemoCheckFailed if any view ever differs from its recompute."""
    if scale <= 0:
        raise ValueError("scale must be positive")
    if batches < 0 or batch_size < 0:
        raise ValueError("batches and batch_size must not be negative")
    views = [v.strip() for v in ([views] if isinstance(views, str) else views) if v.strip()]
    if not views:
        raise ValueError("no views given")
    queries = {v: load_query(v) for v in views}      # fail on a bad name before any work

    temporary = warehouse is None
    warehouse = os.path.abspath(tempfile.mkdtemp(prefix="viewlet-demo-") if temporary
                                else warehouse)
    os.makedirs(warehouse, exist_ok=True)
    spark = None
    try:
        paths = _prepare_tpch(scale, os.path.join(warehouse, "tpch"), out)
        _say(out, "Starting Spark (local[2]) ...")
        t0 = time.perf_counter()
        spark = _spark_session(warehouse)
        import viewlet
        viewlet.enable(spark, warehouse=warehouse)
        for name, path in paths.items():
            viewlet.register_table(spark, name, path, replace=True)
        _say(out, f"  ready in {time.perf_counter() - t0:.1f}s; registered {', '.join(paths)}")
        return _run(spark, paths, queries, batches, batch_size, seed, out)
    finally:
        if spark is not None:
            try:
                spark.stop()
            except Exception:       # e.g. the JVM died: keep the original error visible
                pass
        if temporary:
            shutil.rmtree(warehouse, ignore_errors=True)


def _run(spark, paths, queries: Dict[str, str], batches: int, batch_size: int, seed: int,
         out: TextIO) -> List[Dict]:
    from ..workloads import tpch

    views = list(queries)
    failures: List[str] = []
    for v, query in queries.items():
        _say(out, f"Creating incremental view {v} ...")
        r = spark.sql(f"CREATE OR REPLACE INCREMENTAL VIEW {v} AS {query}").collect()[0]
        diffs, _, nrows = _check(spark, v, query)
        status = "OK" if not diffs else "FAIL"
        _say(out, f"  {r['maps']} map(s), {r['rows']} row(s), created in {r['seconds']:.1f}s; "
                  f"initial contents check {status}")
        if diffs:
            failures.append(f"{v} after CREATE: " + "; ".join(diffs[:_MAX_SHOWN_DIFFS]))
            _show_diffs(out, diffs)
    for line in _explain_brief(spark, views[0] if "q3" not in views else "q3"):
        _say(out, line)

    stream = tpch.UpdateStream(paths, seed=seed)
    rows: List[Dict] = []
    for _ in range(batches):
        t0 = time.perf_counter()
        batch = stream.next_batch(batch_size)
        batch.apply()
        _say(out, f"{batch.summary()}; applied in {time.perf_counter() - t0:.2f}s")
        for v, query in queries.items():
            t0 = time.perf_counter()
            r = spark.sql(f"REFRESH INCREMENTAL VIEW {v}").collect()[0]
            refresh = time.perf_counter() - t0
            diffs, recompute, nrows = _check(spark, v, query)
            row = {"batch": batch.seq, "view": v, "base_rows_changed": batch.rows_changed,
                   "view_rows": nrows, "view_rows_changed": r["rows_changed"],
                   "changes": r["changes"], "refresh_seconds": refresh,
                   "recompute_seconds": recompute,
                   "ratio": refresh / recompute if recompute > 0 else float("inf"),
                   "check": "OK" if not diffs else "FAIL", "differences": diffs}
            rows.append(row)
            _say(out, f"  {v}: refresh {refresh:.3f}s ({r['status']}, {r['changes']} change "
                      f"row(s) read, {r['rows_changed']} view row(s) changed), recompute "
                      f"{recompute:.3f}s, check {row['check']}")
            if diffs:
                failures.append(f"{v} after batch {batch.seq}: " +
                                "; ".join(diffs[:_MAX_SHOWN_DIFFS]))
                _show_diffs(out, diffs)
    _say(out)
    print_table(rows, out)
    if rows:
        _print_summary(rows, views, out)
    if failures:
        _say(out)
        _say(out, f"CHECK FAILED: {len(failures)} view state(s) differ from the recompute:")
        for f in failures:
            _say(out, f"  {f}")
        raise DemoCheckFailed(f"{len(failures)} check(s) failed: " + " | ".join(failures), rows)
    _say(out)
    _say(out, f"All checks OK: {len(views)} view(s) equal their recompute after every batch.")
    return rows


def _show_diffs(out: TextIO, diffs: List[str]):
    for d in diffs[:_MAX_SHOWN_DIFFS]:
        _say(out, f"    {d}")
    if len(diffs) > _MAX_SHOWN_DIFFS:
        _say(out, f"    ... and {len(diffs) - _MAX_SHOWN_DIFFS} more difference(s)")
