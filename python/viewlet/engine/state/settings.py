"""Refresh intervals as users write them ('10 seconds', '1 minute', '500 ms')."""
from __future__ import annotations

import re
from typing import Optional

from ...errors import ViewletError

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


LOCAL, SPARK, AUTO, DISTRIBUTED = "local", "spark", "auto", "distributed"
#: where a view's batches run (view option `engine`, session setting spark.viewlet.engine);
#: distributed: Spark with nothing collected to the driver (batch/distributed.py)
ENGINES = (AUTO, LOCAL, SPARK, DISTRIBUTED)
ENGINE_CONF = "spark.viewlet.engine"


MAX_ROWS_CONF = "spark.viewlet.local.maxInputRows"


DEFAULT_MAX_ROWS = 10_000_000


ANSI_CONF = "spark.sql.ansi.enabled"


MEMORY_CONF = "spark.viewlet.local.memory"


#: without spark.viewlet.local.memory, hot maps may take this share of spark.driver.memory
MEMORY_SHARE = 0.5


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


def ansi(view) -> bool:
    return str(conf(view.ctx.spark, ANSI_CONF, "true")).lower() == "true"


MIN_ROWS_CONF = "spark.viewlet.distributed.minChangeRows"


DEFAULT_MIN_ROWS = 5_000_000


def min_rows(spark) -> int:
    raw = conf(spark, MIN_ROWS_CONF)
    try:
        return int(raw) if raw is not None else DEFAULT_MIN_ROWS
    except ValueError:
        return DEFAULT_MIN_ROWS
