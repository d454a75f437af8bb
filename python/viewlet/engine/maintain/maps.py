"""Maps on disk.

A map's value for a key is the sum of the values of its rows with that key (every reader
sums: triggers read maps linearly, the result reads the state by key). So a batch appends
its delta in one commit carrying the batch's transaction id instead of rewriting the files
its keys fall in: writing costs what the delta costs, whatever the keys.

With the view option map_writes = 'merge' a batch instead MERGEs its delta into each map
(values added to the rows of equal keys, rows whose count reaches 0 deleted): one row per key
and no compaction, but the MERGE rewrites every file holding a touched key, which for keys
spread over a large map is most of it. The benchmark measures both (`ho-merge`).

Compaction folds the appended rows into the base now and then: rows summed by key, zero
rows dropped, sorted by the map's cluster order (the key batches look up most often first)
and written in files of ROWS_PER_FILE rows (more for large maps: at most MAX_FILES files),
whose min/max statistics let a batch read only the files that can hold its keys. It runs
when the appended rows outgrow the base (and one file's rows: a smaller map gains nothing
from it but costs a commit) or the appended files reach COMPACT_FILES (state/stats.py,
MapLayout.due), so its cost per batch stays proportional to the batch
(maintain/compaction.py). Files no version in use references are vacuumed at the next batch.
"""
from __future__ import annotations

from collections import Counter
from typing import Callable, Dict, List, Optional, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from ...calculus.ir import Domain, Groups, MapRef, Nested
from ...compiler.program import Program
from ...plan.lower import batch_origins
from ...storage.arrow import sum_by_key
from ..local.executor import LocalEngine, LocalEngineError
from ..runtime import faults
from ..runtime.progress import Progress
from ..state.manifest import BatchRecord
from ..state.retention import INTERNAL_TABLE_PROPERTIES
from ..state.stats import ROWS_PER_FILE, MapLayout
from ..state.view import LoadedView
from . import hot
from .writes import SideBySide

MAX_FILES = 64


def cluster_order(program: Program, name: str) -> List[int]:
    """Key positions to sort map `name` by: the position batches bind most often first."""
    counts: Counter = Counter()

    def visit(query, inherited):
        for mono in query.monomials:
            origins = batch_origins(mono, inherited)
            for atom in mono.atoms:
                if isinstance(atom, MapRef) and atom.name == name:
                    counts.update(j for j, v in enumerate(atom.vars) if v in origins)
                elif isinstance(atom, Nested):
                    visit(atom.query, {g: origins[g] for g in atom.inputs if g in origins})
                elif isinstance(atom, (Domain, Groups)):
                    visit(atom.query, {})

    for stmts in program.triggers.values():
        for s in stmts:
            visit(s.rhs, {})
    n = len(program.maps[name].keys)
    if not n:
        return []
    first = max(range(n), key=lambda j: (counts[j], -j))
    return [first] + [j for j in range(n) if j != first]


#: maps of at least this many rows are sorted by DuckDB, on every core (Arrow sorts on one:
#: TPC-H Q5's two largest maps at SF 1, 6 million rows each, took 2 s each)
ENGINE_SORT_FROM_ROWS = 1_000_000


def sort_rows(data: pa.Table, keys: Sequence[str], order: Sequence[int],
              engine: Optional[LocalEngine] = None) -> pa.Table:
    """`data` in cluster order: by the key columns `order` names, ascending, NULLs first.
    `engine`: the local engine, which sorts large maps (Arrow when it cannot)."""
    if not keys or data.num_rows < 2:
        return data
    if engine is not None and data.num_rows >= ENGINE_SORT_FROM_ROWS:
        try:
            return engine.sorted_rows(data, [keys[j] for j in order])
        except LocalEngineError:
            pass
    try:        # Arrow sorts and takes from one chunk about twice as fast as from many
        data = data.combine_chunks()
    except pa.ArrowInvalid:         # a string column past 2 GB stays chunked
        pass
    return data.take(pc.sort_indices(data, sort_keys=[(keys[j], "ascending", "at_start")
                                                      for j in order]))


def rows_per_file(rows: int) -> int:
    return max(ROWS_PER_FILE, -(-rows // MAX_FILES))


def write_initial(store, path: str, data: pa.Table, keys: Sequence[str], order: Sequence[int],
                  txn, engine: Optional[LocalEngine] = None) -> pa.Table:
    """Create the map's table holding `data` in cluster order (sorted by `engine`, when
    given and the map is large); the rows as written."""
    rows = sort_rows(data, keys, order, engine)
    store.create(path, rows, txn=txn, rows_per_file=rows_per_file(data.num_rows),
                 properties=INTERNAL_TABLE_PROPERTIES)
    return rows


def compact(store, path: str, keys: Sequence[str], values: Sequence[str], zero: Sequence[str],
            order: Sequence[int], metadata=None, rows: Optional[pa.Table] = None,
            rows_version: Optional[int] = None, engine: Optional[LocalEngine] = None):
    """Rewrite the map's current files as summed, sorted, clustered files (rows appended
    meanwhile stay, as extra files); None if a concurrent compaction won. `rows`: the map's
    rows at version `rows_version` when the caller has them (a hot map): used when that is
    the current version, else the files are read. `engine`: as for sort_rows. Returns (the
    new layout, the version it read, the version it committed, the rows written)."""
    snap = store.snapshot(path, store.version(path))
    if rows is None or rows_version != snap.version:
        try:
            rows = store.read_files(snap)
        except OSError:          # a concurrent compaction vacuumed this version's files: it won
            return None
    data = sort_rows(sum_by_key(rows, keys, values, zero), keys, order, engine)
    if not store.rewrite(path, data, snap.version, rows_per_file(data.num_rows), metadata):
        return None
    after = store.snapshot(path, store.version(path))
    return MapLayout(len(after.files), data.num_rows, 0, 0), snap.version, after.version, data


def write_deltas(view: LoadedView, record: BatchRecord, deltas: Dict[str, pa.Table],
                 progress: Progress) -> Dict[str, int]:
    """Every map's delta written with the batch's transaction id, appended (or MERGEd, view
    option map_writes = 'merge'), the maps side by side (writes.py), and each map's hot rows
    moved on with it; the rows written per map. Every write has ended when this returns."""
    ctx = view.ctx
    txn = view.txn(record.batch)
    meta = {"viewlet.view": view.name, "viewlet.batch": str(record.batch)}
    merging = view.settings.merging
    names = [name for name, total in deltas.items() if total.num_rows]
    if not names:
        return {}

    def write(name: str) -> Callable[[], object]:
        total = deltas[name]
        if merging:
            schema = view.map_schema(name)
            return lambda: ctx.store.merge_add(view.map_path(name), total, schema.keys,
                                               list(schema.values), view.zero_columns(name),
                                               txn, metadata=meta)
        return lambda: ctx.store.add_rows(view.map_path(name), total, txn, metadata=meta)

    which = f"the delta of map {names[0]}" if len(names) == 1 else \
        f"the deltas of {len(names)} maps"
    progress.step(f"{'merging' if merging else 'appending'} {which} "
                  f"({sum(deltas[name].num_rows for name in names)} rows)")
    changed_rows = {}
    with SideBySide([write(name) for name in names],
                    [view.map_path(name) for name in names]) as results:
        for name, written in zip(names, results):     # in order, each once it has committed
            changed_rows[name] = deltas[name].num_rows
            if written:
                faults.point("batch.map_merged")
            hot.sync_after_writes(view, name, record.map_versions[name], record.batch,
                                  deltas[name], written if isinstance(written, int) else None)
    return changed_rows
