"""What a batch records about itself in the manifest (a committed row's `stats`), typed.

The manifest keeps it as JSON with the keys below (HISTORY and DESCRIBE read them); a batch
builds a `BatchStats` and the manifest writes `to_json()`; `from_json` reads a row back (the
previous batch's map layouts and ordered rows, a recovered batch's counts).

    seconds, delta_rows, engine, engine_reason, input_rows, map_reads, phases, driver_phases,
    layout, ordered, result_rows_changed, map_rows_changed, spark_jobs, result_version,
    rebuilt, maps_kept, maps_loaded, error, dropped
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Dict, List, Optional

#: a map is compacted when its appended files reach this many, or when its appended rows
#: outgrow both its base's rows and COMPACT_MIN_ROWS
COMPACT_FILES = 16
#: the rows of a file a compaction writes (maintain/maps.py, more for large maps)
ROWS_PER_FILE = 32768
#: a map smaller than one file gains no file skipping from a compaction, which costs it a
#: Delta commit; it waits for COMPACT_FILES
COMPACT_MIN_ROWS = ROWS_PER_FILE


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

    @property
    def rows(self) -> int:
        """Rows in the map's files (its base and what was appended since, as counted)."""
        return (self.base_rows or 0) + (self.appended_rows or 0)

    def due(self, snap=None) -> bool:
        """Whether the map is compacted now; `snap`: its files now, for a layout whose
        appends were not counted (recorded before batches counted them)."""
        if snap is None:
            appended_files, appended_rows = self.appended_files, self.appended_rows
        else:
            appended_files = len(snap.files) - self.base_files
            appended_rows = snapshot_rows(snap) - self.base_rows
        return appended_files >= COMPACT_FILES or (
            appended_files > 1 and appended_rows > max(self.base_rows, COMPACT_MIN_ROWS))


def snapshot_rows(snap) -> int:
    """The rows of a snapshot's files, from their statistics (0 without)."""
    return sum((s.rows or 0) for s in snap.stats) if snap.stats else 0


@dataclass
class MapRead:
    """One read of a map by a batch (the manifest keeps it as a list of these seven)."""
    map: str
    files_read: int                # files read (0 from memory)
    files: Optional[int]           # files the map has (None from memory)
    rows_read: Optional[int]       # rows of the files read (the hot map's rows read)
    rows: Optional[int]            # rows the map has
    rows_kept: Optional[int]       # rows the batch's query got
    source: str                    # "delta" or "memory"

    def to_json(self) -> list:
        return [self.map, self.files_read, self.files, self.rows_read, self.rows,
                self.rows_kept, self.source]


@dataclass
class OrderedStats:
    """A top-N view's ordered table after the batch (maintain/topn.py)."""
    complete: bool = False         # it holds every row of the query
    rows: Optional[int] = None
    recomputed: Optional[bool] = None   # the batch derived it again from the view state

    def to_json(self) -> Dict:
        out = {"complete": self.complete}
        if self.rows is not None:
            out["rows"] = self.rows
        if self.recomputed is not None:
            out["recomputed"] = self.recomputed
        return out

    @classmethod
    def from_json(cls, data: Optional[Dict]) -> "OrderedStats":
        data = data or {}
        return cls(data.get("complete", False), data.get("rows"), data.get("recomputed"))


@dataclass
class BatchStats:
    #: seconds per phase of the batch: create, total, read_changes, plan, compute, split,
    #: result, merge, compact, merge_result, recompute
    seconds: Dict[str, float] = field(default_factory=dict)
    delta_rows: Optional[Dict[str, int]] = None    # change rows read per relation
    engine: Optional[str] = None                   # the target that computed the batch
    engine_reason: Optional[str] = None
    input_rows: Optional[int] = None               # rows the batch reads, as estimated
    map_reads: Optional[List[MapRead]] = None
    phases: Optional[int] = None                   # queries of the batch plan run
    driver_phases: Optional[int] = None            # a Spark batch under auto: of its phases,
    #                                                those the driver's DuckDB ran
    layout: Optional[Dict[str, MapLayout]] = None  # appended maps' layouts, for compactions
    ordered: Optional[OrderedStats] = None
    result_rows_changed: Optional[int] = None
    map_rows_changed: Optional[Dict[str, int]] = None
    spark_jobs: Optional[int] = None
    result_version: Optional[int] = None           # the result table's version after it
    rebuilt: Optional[str] = None                  # a load: why the view was loaded again
    maps_kept: Optional[Dict[str, str]] = None     # a new query: map -> the replaced one's map
    maps_loaded: Optional[List[str]] = None
    error: Optional[str] = None                    # a failed refresh's row
    dropped: Optional[str] = None                  # a dropped batch's row: why

    def add_seconds(self, phase: str, seconds: float) -> None:
        self.seconds[phase] = self.seconds.get(phase, 0) + seconds

    def applied(self):
        """(changes, rows_changed) as REFRESH reports them: the change rows read, the result
        rows rewritten."""
        return sum((self.delta_rows or {}).values()), self.result_rows_changed or 0

    def to_json(self) -> Dict:
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None or (f.name == "seconds" and not value):
                continue
            if f.name == "map_reads":
                value = [r.to_json() for r in value]
            elif f.name == "layout":
                value = {name: layout.to_json() for name, layout in value.items()}
            elif f.name == "ordered":
                value = value.to_json()
            out[f.name] = value
        return out

    @classmethod
    def from_json(cls, data: Optional[Dict]) -> "BatchStats":
        data = dict(data or {})
        known = {f.name for f in fields(cls)}
        out = cls(**{k: v for k, v in data.items() if k in known})
        if out.map_reads is not None:
            out.map_reads = [MapRead(*r) for r in out.map_reads]
        if out.layout is not None:
            out.layout = {n: MapLayout.of(v, None) for n, v in out.layout.items()}
        if out.ordered is not None:
            out.ordered = OrderedStats.from_json(out.ordered)
        return out
