"""The batch of changes that the workload streams hand out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa


@dataclass
class Batch:
    """One batch of changes produced by a stream's ``next_batch``.

    ``inserts[table]`` holds the new rows (full table schema),
    ``updates[table]`` the key columns plus the new values of the updated
    columns, and ``deletes[table]`` describes the deleted rows -- its form
    depends on the workload (TPC-H: the inclusive order-key range ``(lo,
    hi)``; order book: a table of deleted ``id``s).

    ``counts[table]`` is ``{"inserted": n, "deleted": n, "updated": n}`` for
    every dynamic table, and ``size == rows_changed`` is the sum over all of
    them (an updated row counts once).  ``versions[table]`` is filled by
    :meth:`apply` with ``(version before, version after)`` for every table the
    batch committed to, so ``load_cdf(before + 1, after)`` is exactly this
    batch's change feed.
    """

    seq: int
    size: int
    inserts: dict[str, pa.Table]
    updates: dict[str, pa.Table]
    deletes: dict[str, Any]
    counts: dict[str, dict[str, int]]
    versions: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: seconds per commit, e.g. ``{"append lineitem": 0.04, ...}`` (set by apply)
    timings: dict[str, float] = field(default_factory=dict)
    applied: bool = False
    _stream: Any = field(default=None, repr=False, compare=False)

    @property
    def rows_changed(self) -> int:
        return sum(sum(c.values()) for c in self.counts.values())

    @property
    def inserted(self) -> int:
        return sum(c["inserted"] for c in self.counts.values())

    @property
    def deleted(self) -> int:
        return sum(c["deleted"] for c in self.counts.values())

    @property
    def updated(self) -> int:
        return sum(c["updated"] for c in self.counts.values())

    def apply(self) -> "Batch":
        """Apply this batch to the Delta tables (see :meth:`UpdateStream.apply`)."""
        if self._stream is None:
            raise RuntimeError("batch is not attached to a stream")
        self._stream.apply(self)
        return self

    def summary(self) -> str:
        parts = []
        for t, c in self.counts.items():
            bits = [f"{k[0]}{v}" for k, v in (("+", c["inserted"]), ("-", c["deleted"]), ("~", c["updated"])) if v]
            if bits:
                parts.append(f"{t} {'/'.join(bits)}")
        return (
            f"batch {self.seq}: {self.rows_changed} rows changed "
            f"(+{self.inserted} -{self.deleted} ~{self.updated}): " + ", ".join(parts)
        )

    def __str__(self) -> str:
        return self.summary()
