"""Which target runs a batch: the local engine (DuckDB in this process) or Spark.

One plan, two targets (the Hot Dog paper's local and distributed code). The local target
avoids Spark's per-job cost (a small batch used to run as 8 to 130 Spark jobs), so it runs
every batch whose inputs are small enough for the driver; Spark runs the rest, and every
batch the local target cannot reproduce exactly.

The rule, per batch (`choose`):
  * `engine = 'spark'` (view option, else the session's `spark.viewlet.engine`): Spark.
  * the view uses SQL the local target cannot evaluate with Spark's exact results (a
    function without a checked equivalent, a cast whose rounding differs, ...): Spark, and
    EXPLAIN names the construct.
  * `engine = 'local'`: local. `auto` (the default): local when the rows the batch reads
    (its changes, maps and base tables read whole, the files its lookups read) are at most
    `spark.viewlet.local.maxInputRows` (default 10,000,000), else Spark.
A local batch that fails (an overflow, a division by zero under ANSI mode) runs again on
Spark, which gives Spark's own result or error; HISTORY records the target of every batch
and why.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional

import pyarrow as pa

from ..plan.local import types as T
from .local.executor import LocalEngineError, unavailable
from ..plan.local.translate import Translator
from ..plan.local.types import NotLocal
from ..plan.batch import LEAF_PREFIX, Leaf, Phase
from ..plan.cse import reference_counts
from ..plan.lower import MULT

LOCAL, SPARK, AUTO, DISTRIBUTED = "local", "spark", "auto", "distributed"
#: distributed: Spark with nothing collected to the driver (engine/distributed.py)
ENGINES = (AUTO, LOCAL, SPARK, DISTRIBUTED)
ENGINE_CONF = "spark.viewlet.engine"
MAX_ROWS_CONF = "spark.viewlet.local.maxInputRows"
DEFAULT_MAX_ROWS = 10_000_000
ANSI_CONF = "spark.sql.ansi.enabled"
MEMORY_CONF = "spark.viewlet.local.memory"
#: without spark.viewlet.local.memory, hot maps may take this share of spark.driver.memory
MEMORY_SHARE = 0.5

#: a local batch failing with one of these runs again on Spark
LOCAL_FAILURES = (LocalEngineError, NotLocal, MemoryError)


@dataclass(frozen=True)
class Choice:
    target: str
    reason: str
    input_rows: int = 0              # the rows the batch reads, as estimated


def failure_text(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}" if not isinstance(e, (LocalEngineError, NotLocal)) else str(e)


def conf(spark, key: str, default: Optional[str] = None) -> Optional[str]:
    try:
        return spark.conf.get(key, default)
    except Exception:        # a stopped session, a conf Spark refuses: the default
        return default


def setting(view) -> str:
    """The view's engine option, else the session's, else auto."""
    option = view.spec.get("engine")
    if option:
        return option
    value = (conf(view.ctx.spark, ENGINE_CONF) or AUTO).strip().lower()
    return value if value in ENGINES else AUTO


def max_rows(view) -> int:
    raw = conf(view.ctx.spark, MAX_ROWS_CONF)
    try:
        return int(raw) if raw is not None else DEFAULT_MAX_ROWS
    except ValueError:
        return DEFAULT_MAX_ROWS


def memory_budget(spark) -> int:
    """Bytes the hot maps may hold: spark.viewlet.local.memory (e.g. 512m, 4g; 0 keeps no
    map in memory), else half of spark.driver.memory (1g when unset)."""
    raw = conf(spark, MEMORY_CONF)
    if raw is not None:
        return parse_bytes(raw, MEMORY_CONF)
    return int(MEMORY_SHARE * parse_bytes(conf(spark, "spark.driver.memory", "1g") or "1g",
                                          "spark.driver.memory"))


_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "g": 1 << 30, "gb": 1 << 30, "t": 1 << 40, "tb": 1 << 40}


def parse_bytes(text: str, setting: str) -> int:
    """A size as Spark writes one (`512m`, `4g`, `1048576`)."""
    t = str(text).strip().lower()
    digits = t.rstrip("abcdefghijklmnopqrstuvwxyz ")
    unit = t[len(digits):].strip()
    try:
        if unit not in _UNITS:
            raise ValueError(unit)
        return int(float(digits) * _UNITS[unit])
    except ValueError:
        from ..errors import ViewletError
        raise ViewletError(f"{setting} = {text!r} is not a size: write bytes or a number with "
                           "k, m, g or t (e.g. 512m, 4g).") from None


def ansi(view) -> bool:
    return str(conf(view.ctx.spark, ANSI_CONF, "true")).lower() == "true"


def choose(view, plan, record, deltas: Dict[str, pa.Table]) -> Choice:
    mode = setting(view)
    rows = input_rows(view, plan, record, deltas)     # also sizes a Spark batch's partitions
    if mode in (SPARK, DISTRIBUTED):
        return Choice(SPARK, "engine = 'spark'", rows)
    blocker = local_blocker(view)
    if blocker is not None:
        return Choice(SPARK, f"the local target cannot run this view: {blocker}", rows)
    if mode == LOCAL:
        return Choice(LOCAL, "engine = 'local'", rows)
    limit = max_rows(view)
    if rows > limit:
        return Choice(SPARK, f"the batch reads about {rows:,} rows, more than {MAX_ROWS_CONF} "
                             f"= {limit:,}", rows)
    return Choice(LOCAL, f"the batch reads about {rows:,} rows (at most {limit:,} run locally)",
                  rows)


#: rows of batch input per shuffle partition of a Spark batch (at least one partition, at
#: most the session's spark.sql.shuffle.partitions)
ROWS_PER_PARTITION = 500_000


def batch_session(view, input_rows: Optional[int]):
    """The Spark session a batch query runs in: a clone of the user's session, taken per
    batch (about 2 ms), so it has everything the user's queries see (functions and UDFs,
    temporary views, the current database, every SQL setting) and only two settings of its
    own: adaptive execution off, so that a query's stages run as one Spark job (plus one per
    broadcast; adaptive execution ran each shuffle stage as a job of its own: a batch of
    TPC-H Q20 used to run 118 jobs, 69 now, Q17a 22 -> 12, and they ran faster too), and
    shuffle partitions sized to the batch. The user's session is never changed."""
    from pyspark.sql import SparkSession
    user = view.ctx.spark
    # cloneSession is Scala's private[sql], public in bytecode: py4j reaches it
    session = SparkSession(user.sparkContext, user._jsparkSession.cloneSession())
    session.conf.set("spark.sql.adaptive.enabled", "false")
    most = int(conf(user, "spark.sql.shuffle.partitions", "200") or 200)
    wanted = max(1, min(most, -(-(input_rows or 0) // ROWS_PER_PARTITION)))
    session.conf.set("spark.sql.shuffle.partitions", str(wanted))
    # Delta tables hold timestamps as INT64 microseconds (Spark writes INT96 by default)
    session.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    return session


def input_rows(view, plan, record, deltas: Dict[str, pa.Table]) -> int:
    """An upper bound of the rows the batch reads: its changes, the maps and base tables it
    reads whole, and the rows of the files its lookups may read (from Delta statistics)."""
    store = view.ctx.store
    total = sum(t.num_rows for t in deltas.values())
    seen = set()
    for phase in plan.phases:
        for leaf in phase.leaves.values():
            if leaf in seen or leaf.kind in ("delta", "pending"):
                continue
            seen.add(leaf)
            if leaf.kind == "rel":
                after, to = record.ranges[leaf.name]
                snap = store.snapshot(view.table_path(leaf.name), to if leaf.detail[0] else after)
            else:
                snap = store.snapshot(view.map_path(leaf.name), record.map_versions[leaf.name])
            total += _rows(snap)
    return total


def _rows(snap) -> int:
    if snap.stats is None:
        return 0
    return sum(s.rows or 0 for s in snap.stats)


# -- translation, cached per view ------------------------------------------------------------
def leaf_columns(view, leaf: Leaf) -> List:
    """The Spark-typed columns of a leaf, as the plan reads them."""
    if leaf.kind in ("delta", "rel"):
        table = view.compiled.spec.tables[leaf.name]
        types = {c.name.lower(): c.type for c in table.columns}
        cols = [(c, T.parse(types[c.lower()])) for c in view.columns_of(leaf.name)]
        return cols + ([(MULT, T.BIGINT)] if leaf.kind == "delta" else [])
    schema = view.map_schema(leaf.name)
    return [(k, T.parse(t)) for k, t in zip(schema.keys, schema.key_types)] + \
        [(c, T.parse(t)) for c, t in schema.values.items()]


def local_sql(view, phase: Phase) -> str:
    """The phase as DuckDB SQL with Spark's results (NotLocal if it cannot be)."""
    key = ("local_sql", id(phase), ansi(view))
    cache = view.compiled.cache
    if key not in cache:
        tables = {LEAF_PREFIX + name: leaf_columns(view, leaf) for name, leaf in phase.leaves.items()}
        try:
            tree, _ = Translator(tables, ansi=key[2]).query(phase.tree.copy())
            materialize_shared(tree)
            cache[key] = (phase, tree.sql(dialect="duckdb"))
        except NotLocal as e:
            cache[key] = (phase, e)
    value = cache[key][1]
    if isinstance(value, NotLocal):
        raise value
    return value


def materialize_shared(tree):
    """CTEs read more than once are computed once (DuckDB would inline them)."""
    with_ = tree.args.get("with_")
    if with_ is None:
        return
    counts = reference_counts(tree)
    for cte in with_.expressions:
        if counts[cte.alias_or_name] > 1:
            cte.set("materialized", True)


def local_blocker(view) -> Optional[str]:
    """Why the local target cannot run this view (None when it can): the first construct
    of its plan (every relation changed) or of its result query without an exact local
    equivalent."""
    key = ("local_blocker", ansi(view))
    cache = view.compiled.cache
    if key not in cache:
        cache[key] = _blocker(view)
    return cache[key]


def _blocker(view) -> Optional[str]:
    if view.compiled.depth == 0:
        return "depth 0 recomputes the view on Spark"
    missing = unavailable()
    if missing is not None:
        return missing
    relations = tuple(view.compiled.program.relations())
    try:
        plan = view.batch_plan(relations, relations)
        for phase in plan.phases:
            local_sql(view, phase)
        from .result_local import result_sql_local
        result_sql_local(view)
        if view.compiled.spec.window is not None:
            from .windowed import local_window_sql
            local_window_sql(view)
    except NotLocal as e:
        return str(e)
    return None
