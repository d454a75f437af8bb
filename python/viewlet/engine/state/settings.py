"""Refresh intervals as users write them ('10 seconds', '1 minute', '500 ms')."""
from __future__ import annotations

import re

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
