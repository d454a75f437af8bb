"""What batches record in the manifest about themselves (stats), in typed form."""
from __future__ import annotations

from typing import Dict, Optional

#: a map is compacted when its appended files reach this many (or outgrow its base's rows)
COMPACT_FILES = 16


class MapLayout:
    """What a map's files looked like after its last compaction, and what batches appended
    since (kept in batch stats, so that a batch needs no look at the map's files to know
    whether a compaction is due)."""

    def __init__(self, base_files: int, base_rows: int, appended_files: Optional[int] = None,
                 appended_rows: Optional[int] = None):
        self.base_files, self.base_rows = base_files, base_rows
        self.appended_files, self.appended_rows = appended_files, appended_rows

    def to_json(self):
        out = {"base_files": self.base_files, "base_rows": self.base_rows}
        if self.appended_files is not None:
            out.update(appended_files=self.appended_files, appended_rows=self.appended_rows)
        return out

    @classmethod
    def of(cls, stats: Optional[Dict], snap) -> "MapLayout":
        if stats:
            return cls(stats["base_files"], stats["base_rows"], stats.get("appended_files"),
                       stats.get("appended_rows"))
        return cls(len(snap.files), snapshot_rows(snap), 0, 0)

    def counted(self) -> bool:
        """Whether the appends since the last compaction were counted (layouts recorded
        before batches counted them are not)."""
        return self.appended_files is not None

    def after_append(self, rows: int) -> "MapLayout":
        return MapLayout(self.base_files, self.base_rows, (self.appended_files or 0) + 1,
                         (self.appended_rows or 0) + rows)

    def due(self, snap=None) -> bool:
        """Whether the map is compacted now; `snap`: its files now, for a layout whose
        appends were not counted (recorded before batches counted them)."""
        if snap is None:
            appended_files, appended_rows = self.appended_files, self.appended_rows
        else:
            appended_files = len(snap.files) - self.base_files
            appended_rows = snapshot_rows(snap) - self.base_rows
        return appended_files >= COMPACT_FILES or (appended_files > 1 and appended_rows > self.base_rows)


def snapshot_rows(snap) -> int:
    """The rows of a snapshot's files, from their statistics (0 without)."""
    return sum((s.rows or 0) for s in snap.stats) if snap.stats else 0
