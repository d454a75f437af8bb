"""Running a batch plan (plan/batch.py) on a target: its phases in order, each packed result
split into every map's rows, summed per key into the map deltas; what a later phase reads
of an earlier trigger is summed first.
"""
from __future__ import annotations

import time
from typing import Dict, List, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from ...plan.batch import Phase, TAG
from ...storage.arrow import sum_by_key
from ..runtime import cancel


def run_phases(view, plan, inputs, execute, stats) -> Dict[str, pa.Table]:
    """Run the plan's phases in order (later ones read what earlier ones collected)."""
    seconds = stats["seconds"]
    pieces: Dict[str, List[pa.Table]] = {}
    collected: Dict[Tuple[str, str], List[pa.Table]] = {}
    for phase in plan.phases:
        cancel.check()
        t0 = time.perf_counter()
        packed = execute(phase)
        seconds["compute"] = seconds.get("compute", 0) + time.perf_counter() - t0
        t0 = time.perf_counter()
        phase_pieces = split_packed(view, phase, packed)
        if len(plan.phases) > 1:        # what later phases read of this trigger
            for target, tables in phase_pieces.items():
                key = (target, phase.relations[-1])     # a trigger may take several queries
                collected.setdefault(key, []).extend(tables)
                inputs.pending[key] = _map_delta(view, target, collected[key])
        for target, tables in phase_pieces.items():
            pieces.setdefault(target, []).extend(tables)
        seconds["split"] = seconds.get("split", 0) + time.perf_counter() - t0
    stats["map_reads"] = inputs.reads
    stats["phases"] = len(plan.phases)
    t0 = time.perf_counter()
    out = {target: _map_delta(view, target, tables) for target, tables in pieces.items()}
    seconds["split"] = seconds.get("split", 0) + time.perf_counter() - t0
    return out


def split_packed(view, plan: Phase, packed: pa.Table) -> Dict[str, List[pa.Table]]:
    """Per map: every member's rows as map rows (not yet summed)."""
    tags = packed.column(TAG)
    pieces: Dict[str, List[pa.Table]] = {}
    for b in plan.blocks:
        rows = packed.filter(pc.equal(tags, b.tag))
        if rows.num_rows == 0:
            continue
        for m in b.members:
            schema = view.map_schema(m.target)
            arrow_types = view.map_arrow_schema(m.target)
            cols = {}
            for block_col, key in zip(m.keys, schema.keys):
                j = int(block_col[1:])
                packed_col = b.slots[f"p{b.tag}_g{j}"]
                cols[key] = rows.column(packed_col).cast(arrow_types.field(key).type)
            for c in schema.values:
                cols[c] = rows.column(b.slots[m.out]) if c == m.column else \
                    pa.nulls(rows.num_rows, arrow_types.field(c).type)
            pieces.setdefault(m.target, []).append(pa.table(cols, schema=arrow_types))
    return pieces


def _map_delta(view, target: str, tables: List[pa.Table]) -> pa.Table:
    """The pieces of map `target`'s delta as one row per key; keys whose values all sum to
    0 dropped (a delta row that changes nothing)."""
    schema = view.map_schema(target)
    values = list(schema.values)
    return sum_by_key(pa.concat_tables(tables), schema.keys, values, values)
