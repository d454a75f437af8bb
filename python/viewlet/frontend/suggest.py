"""`Did you mean ...` for misspelled names, ordered as Spark orders its suggestions (by edit
distance, nearest first)."""
from __future__ import annotations

from typing import Iterable, List

MAX_SUGGESTIONS = 5


def distance(a: str, b: str) -> int:
    """Levenshtein distance, case-insensitive (names are)."""
    a, b = a.lower(), b.lower()
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def nearest(name: str, candidates: Iterable[str], limit: int = MAX_SUGGESTIONS,
            close_only: bool = False) -> List[str]:
    """The candidates nearest to `name` first; `close_only`: only those a typo away."""
    unique = list(dict.fromkeys(candidates))
    if close_only:
        unique = [c for c in unique if distance(name, c) <= max(1, len(name) // 3)]
    return sorted(unique, key=lambda c: (distance(name, c.split(".")[-1]), c.lower()))[:limit]


def did_you_mean(name: str, candidates: Iterable[str], close_only: bool = False) -> str:
    """' Did you mean one of the following? [`a`, `b`]' (empty without candidates)."""
    found = nearest(name, candidates, close_only=close_only)
    if not found:
        return ""
    shown = ", ".join("`" + "`.`".join(part.replace("`", "``") for part in c.split(".")) + "`"
                      for c in found)
    return f" Did you mean one of the following? [{shown}]"
