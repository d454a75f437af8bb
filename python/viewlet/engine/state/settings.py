"""The settings a statement runs with: the session's spark.viewlet.* settings and the view's
options (its catalog entry), read here and nowhere else.

`Settings` reads each session setting on first use and keeps it for its life: one statement
(a view's settings live as long as the LoadedView a statement loaded). What users may write
is parsed here too: engines, map writes, byte sizes and refresh intervals.
"""
from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Optional

from ...errors import ViewletError

log = logging.getLogger("viewlet")

# -- what users write ----------------------------------------------------------------------
LOCAL, SPARK, AUTO, DISTRIBUTED = "local", "spark", "auto", "distributed"
#: where a view's batches run (view option `engine`, session setting spark.viewlet.engine);
#: distributed: Spark with nothing collected to the driver (batch/distributed.py)
ENGINES = (AUTO, LOCAL, SPARK, DISTRIBUTED)
#: how batches write map deltas (view option map_writes; maintain/maps.py)
MAP_WRITES = ("append", "merge")
#: REFRESH POLICY (Databricks' clause): when a REFRESH may recompute the view in full
#: (ops/policy.py); a view created without the clause has none (Viewlet's own default)
POLICY_AUTO, POLICY_INCREMENTAL, POLICY_STRICT, POLICY_FULL = \
    "AUTO", "INCREMENTAL", "INCREMENTAL STRICT", "FULL"
REFRESH_POLICIES = (POLICY_AUTO, POLICY_INCREMENTAL, POLICY_STRICT, POLICY_FULL)


def policy_depth(policy: Optional[str], depth: Optional[int]) -> Optional[int]:
    """The depth a view is compiled at: REFRESH POLICY FULL keeps the view's state only
    (depth 0), which every batch recomputes from the base tables."""
    if policy != POLICY_FULL:
        return depth
    if depth not in (None, 0):
        raise ViewletError(f"REFRESH POLICY FULL recomputes the view at every batch (depth 0): "
                           f"a depth of {depth} contradicts it. Give one of the two.")
    return 0

# -- the session's settings ----------------------------------------------------------------
ENGINE_CONF = "spark.viewlet.engine"
MAX_ROWS_CONF = "spark.viewlet.local.maxInputRows"
DEFAULT_MAX_ROWS = 10_000_000
MIN_ROWS_CONF = "spark.viewlet.distributed.minChangeRows"
DEFAULT_MIN_ROWS = 5_000_000
MEMORY_CONF = "spark.viewlet.local.memory"
#: without spark.viewlet.local.memory, hot maps may take this share of spark.driver.memory
MEMORY_SHARE = 0.5
ENGINE_MEMORY_CONF = "spark.viewlet.local.engineMemory"
#: what the local engine's default limit leaves aside for the rest of the driver's process
ENGINE_MEMORY_MARGIN = 2 << 30
#: the least default limit of the local engine (where little is left beside the driver)
ENGINE_MEMORY_FLOOR = 1 << 30
#: how the Spark target runs a phase: in one task, by the local target's engine (duckdb), or
#: as Spark SQL's own plan (sql) (batch/task_phase.py)
PHASE_ENGINE_CONF = "spark.viewlet.spark.phaseEngine"
PHASE_ENGINES = ("duckdb", "sql")
LEASE_CONF = "spark.viewlet.refresh.leaseSeconds"
DEFAULT_LEASE_SECONDS = 60.0
PROGRESS_CONF = "spark.viewlet.progress.afterSeconds"
DEFAULT_PROGRESS_AFTER = 10.0
ENABLE_CHANGE_FEED_CONF = "spark.viewlet.enableChangeDataFeed"
REGISTER_CONF = "spark.viewlet.catalog.register"     # auto | true | false
ANSI_CONF = "spark.sql.ansi.enabled"


@dataclass(frozen=True)
class ViewOptions:
    """A view's own settings, as its catalog entry keeps them (None: not set)."""
    engine: Optional[str] = None
    map_writes: Optional[str] = None
    enable_change_data_feed: Optional[bool] = None
    refresh_policy: Optional[str] = None


class Settings:
    """The settings of one statement: `options` (a view's) over the session's, over the
    defaults. Each session setting is read from Spark on first use, then kept."""

    def __init__(self, spark, options: Optional[ViewOptions] = None):
        self.spark = spark
        self.options = options or ViewOptions()

    def _conf(self, key: str, default: Optional[str] = None) -> Optional[str]:
        try:
            return self.spark.conf.get(key, default)
        except Exception:        # a stopped session, a conf Spark refuses: the default
            return default

    # -- where batches run ---------------------------------------------------------------
    @cached_property
    def engine(self) -> str:
        """The view's engine option, else the session's, else auto."""
        if self.options.engine:
            return self.options.engine
        value = (self._conf(ENGINE_CONF) or AUTO).strip().lower()
        return value if value in ENGINES else AUTO

    @property
    def engine_source(self) -> str:
        """Where `engine` comes from, as EXPLAIN says it."""
        return "view option engine" if self.options.engine else \
            f"session setting {ENGINE_CONF}" if self.engine != AUTO else "default"

    @cached_property
    def max_input_rows(self) -> int:
        """The most rows a batch may read to run on the local target (under auto)."""
        return _int(self._conf(MAX_ROWS_CONF), DEFAULT_MAX_ROWS)

    @cached_property
    def min_change_rows(self) -> int:
        """Above this many rows, a batch's changes (a load's base tables, a depth-0 result, a
        map to compact) are handled by the executors (under auto)."""
        return _int(self._conf(MIN_ROWS_CONF), DEFAULT_MIN_ROWS)

    @cached_property
    def phase_engine(self) -> str:
        """How the Spark target runs a phase: `duckdb` (the default: one Spark task running
        the local target's query over the phase's inputs) or `sql` (Spark's own plan)."""
        value = (self._conf(PHASE_ENGINE_CONF) or "duckdb").strip().lower()
        if value not in PHASE_ENGINES:
            log.warning("%s=%r is not one of %s; using duckdb", PHASE_ENGINE_CONF, value,
                        ", ".join(PHASE_ENGINES))
            return "duckdb"
        return value

    @cached_property
    def ansi(self) -> bool:
        """Spark's ANSI mode (the local target's translation follows it)."""
        return str(self._conf(ANSI_CONF, "true")).lower() == "true"

    @cached_property
    def shuffle_partitions(self) -> int:
        """The session's spark.sql.shuffle.partitions: a Spark batch uses at most as many."""
        return int(self._conf("spark.sql.shuffle.partitions", "200") or 200)

    @property
    def memory_budget(self) -> int:
        """Bytes the hot maps may hold: spark.viewlet.local.memory (e.g. 512m, 4g; 0 keeps no
        map in memory), else half of spark.driver.memory (1g when unset)."""
        raw = self._conf(MEMORY_CONF)
        if raw is not None:
            return parse_bytes(raw, MEMORY_CONF)
        return int(MEMORY_SHARE * self.driver_memory)

    @property
    def engine_memory(self) -> Optional[int]:
        """Bytes the local engine (DuckDB, in the driver's process) may use before it spills
        to disk or fails the batch, which then runs on Spark: spark.viewlet.local.engineMemory,
        else the machine's memory less the driver's heap, the hot maps' budget and
        ENGINE_MEMORY_MARGIN, at least ENGINE_MEMORY_FLOOR (None where the machine's memory
        is unknown: DuckDB's own default, 80% of the machine, beside the JVM's heap)."""
        raw = self._conf(ENGINE_MEMORY_CONF)
        if raw is not None:
            return parse_bytes(raw, ENGINE_MEMORY_CONF)
        machine = machine_memory()
        if machine is None:
            return None
        return memory_beside_driver(machine, self.driver_memory, self.memory_budget)

    @cached_property
    def driver_memory(self) -> int:
        """The driver JVM's heap: spark.driver.memory in bytes (Spark's default 1g)."""
        return parse_bytes(self._conf("spark.driver.memory", "1g") or "1g", "spark.driver.memory")

    # -- how views are written -----------------------------------------------------------
    @property
    def map_writes(self) -> str:
        return self.options.map_writes or "append"

    @property
    def merging(self) -> bool:
        """Batches MERGE their map deltas (map_writes = 'merge'), rather than append them."""
        return self.map_writes == "merge"

    @cached_property
    def auto_enable_change_feed(self) -> bool:
        """The session's spark.viewlet.enableChangeDataFeed (default off): whether CREATE may
        turn on a base table's change data feed for views without the option (the view's
        enable_change_data_feed option, then the context's own switch, come first)."""
        value = self.spark.conf.get(ENABLE_CHANGE_FEED_CONF, "false") or "false"
        return value.strip().lower() == "true"

    # -- around batches ------------------------------------------------------------------
    @cached_property
    def lease_seconds(self) -> float:
        """How long a refresh lease lives without a heartbeat (state/lease.py)."""
        return max(_seconds(self._conf(LEASE_CONF), LEASE_CONF, DEFAULT_LEASE_SECONDS), 1.0)

    @cached_property
    def progress_after(self) -> float:
        """Seconds an operation runs before its progress shows (runtime/progress.py)."""
        return _seconds(self._conf(PROGRESS_CONF), PROGRESS_CONF, DEFAULT_PROGRESS_AFTER)

    # -- Spark's catalog -----------------------------------------------------------------
    @cached_property
    def publishes(self) -> bool:
        """Views are made visible to Spark's catalog unless spark.viewlet.catalog.register
        is false."""
        return (self.spark.conf.get(REGISTER_CONF, "auto") or "auto").strip().lower() != "false"

    @cached_property
    def delta_catalog(self) -> bool:
        """The session's catalog is delta-spark's (Delta tables are catalog tables, Delta's
        SQL parses)."""
        catalog = self.spark.conf.get("spark.sql.catalog.spark_catalog", "") or ""
        return catalog.endswith("DeltaCatalog")

    @property
    def registers_views(self) -> bool:
        """Views become Delta tables of the catalog (needs delta-spark's catalog)."""
        return self.publishes and self.delta_catalog


def _int(raw: Optional[str], default: int) -> int:
    try:
        return int(raw) if raw is not None else default
    except ValueError:
        return default


def _seconds(raw: Optional[str], key: str, default: float) -> float:
    if raw is None:
        return default
    try:
        return float(raw)
    except ValueError:
        log.warning("%s=%r is not a number of seconds; using %s", key, raw, default)
        return default


_BYTES = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "g": 1 << 30, "gb": 1 << 30, "t": 1 << 40, "tb": 1 << 40}


def parse_bytes(text: str, setting: str) -> int:
    """A size as Spark writes one (`512m`, `4g`, `1048576`)."""
    t = str(text).strip().lower()
    digits = t.rstrip("abcdefghijklmnopqrstuvwxyz ")
    unit = t[len(digits):].strip()
    try:
        if unit not in _BYTES:
            raise ValueError(unit)
        return int(float(digits) * _BYTES[unit])
    except ValueError:
        raise ViewletError(f"{setting} = {text!r} is not a size: write bytes or a number with "
                           "k, m, g or t (e.g. 512m, 4g).") from None


def size_text(n: int) -> str:
    """A size in bytes as people read it (`1.5 GB`)."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


# -- refresh intervals as users write them ('10 seconds', '1 minute', '500 ms') --------------
_UNITS = {"ms": 0.001, "millisecond": 0.001, "s": 1, "sec": 1, "second": 1, "m": 60, "min": 60,
          "minute": 60, "h": 3600, "hour": 3600, "d": 86400, "day": 86400, "week": 604800}
# How intervals are shown: the largest unit that divides them.
_SHOWN = (("week", 604800), ("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))
_FORM = re.compile(r"^\s*(?:INTERVAL\s+)?(\d+(?:\.\d+)?)\s*([A-Za-z]+)\s*$", re.I)
MIN_SECONDS = 0.1


def parse_interval(text: str) -> float:
    """Seconds in an interval like '10 seconds'; ValueError naming the accepted forms."""
    m = _FORM.match(text or "")
    unit = m.group(2).lower() if m else ""
    if unit not in _UNITS and unit.endswith("s"):      # plurals
        unit = unit[:-1]
    if not m or unit not in _UNITS:
        raise ValueError(f"Invalid refresh interval '{text}': write a number and a unit, e.g. "
                         "'10 seconds', '2 minutes', '1 hour', '1 day' or '500 milliseconds'")
    seconds = float(m.group(1)) * _UNITS[unit]
    if seconds < MIN_SECONDS:
        raise ValueError(f"Refresh interval '{text}' is shorter than {MIN_SECONDS} seconds")
    return seconds


def interval_text(seconds) -> str:
    if seconds is None:
        return "manual"
    for unit, size in _SHOWN:
        count = seconds / size
        if count >= 1 and count == int(count):
            return f"every {int(count)} {unit}{'s' if count != 1 else ''}"
    return f"every {seconds:g} seconds"


def machine_memory() -> Optional[int]:
    """The machine's physical memory in bytes (None where the platform does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def memory_beside_driver(machine: int, driver_memory: int, hot_maps: int) -> int:
    """Bytes a DuckDB in the driver's process may use: the machine's memory less the JVM's
    heap, the hot maps and ENGINE_MEMORY_MARGIN, at least ENGINE_MEMORY_FLOOR."""
    return max(ENGINE_MEMORY_FLOOR, machine - driver_memory - hot_maps - ENGINE_MEMORY_MARGIN)
