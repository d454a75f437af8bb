"""Map rows on the driver: the rows of given keys from a map snapshot, and adding value
rows by key. Arrow group-by treats NULL keys as equal, as map keys require."""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Optional, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from ...storage.arrow import (KeyLookups, is_in, key_lookups, merged_values, plain_types,
                               prunable)
from ...storage.base import Snapshot
from ..local.executor import LocalEngineError, quoted_name


def read_keys(store, path: str, version: int, rows: pa.Table, keys: Sequence[str],
              engine=None) -> pa.Table:
    """The snapshot's rows whose key columns hold values of `rows`' keys, column by column
    (read_matching: a superset of the matching rows, callers match keys exactly). Not whole
    files: a file an executor wrote may span most of the key range, and its rows would all
    reach the driver (and, on the Spark target, the JVM)."""
    return read_matching(store, store.snapshot(path, version), key_lookups(rows, keys), engine)


#: files read (and filtered) at a time: the driver holds the matching rows, not the map
FILES_PER_READ = 8


def read_matching(store, snap: Snapshot, lookups: KeyLookups,
                  engine=None) -> pa.Table:
    """Exactly the rows of `snap` whose column c holds one of lookups[c]'s values (or NULL
    when lookups[c] says so) for every c: files skipped by statistics
    (`Snapshot.restricted`), then `matching_rows` of the files left."""
    return matching_rows(store, snap.restricted(lookups), lookups, engine)


def matching_rows(store, snap: Snapshot, lookups: KeyLookups,
                  engine=None) -> pa.Table:
    """read_matching over a snapshot already restricted to `lookups`: the rows of its files
    filtered, a few files at a time in Arrow, or, with `engine` (the local target's,
    local/executor.py) and files on local disk, by DuckDB: its Parquet reader semi-joins the
    key columns with the values (2-10x faster than Arrow on TPC-H maps, one map and key
    column at a time, where a batch's keys reach most files). Columns whose values cannot
    be compared exactly (floating point, timestamps) or do not convert to the column's type
    are not filtered on (the rows kept are a superset, as with file skipping)."""
    tests = []
    for c, (values, has_null) in lookups.items():
        field = snap.schema.field(c) if c in snap.schema.names else None
        if field is not None and prunable(field.type):
            tests.append((c, values, has_null))
    if engine is not None and tests and snap.files:
        rows = _semi_joined(store, engine, snap, tests)
        if rows is not None:
            return rows
    parts = []
    for i in range(0, len(snap.files), FILES_PER_READ):
        chunk = replace(snap, files=snap.files[i:i + FILES_PER_READ],
                        stats=snap.stats[i:i + FILES_PER_READ] if snap.stats is not None else None)
        rows = store.read_files(chunk)
        mask = None
        for c, values, has_null in tests:
            column = rows.column(c)
            value_set = merged_values([values], column.type)
            if value_set is None:                               # e.g. lossy: no filter
                continue
            test = is_in(column, value_set, has_null)
            mask = test if mask is None else pc.and_(mask, test)
        parts.append(rows if mask is None else rows.filter(mask))
    return pa.concat_tables(parts) if parts else store.read_files(snap)


#: characters DuckDB's read_parquet takes for a glob in a path
_GLOB = re.compile(r"[*?\[\]{}]")


def _semi_joined(store, engine, snap: Snapshot, tests) -> Optional[pa.Table]:
    """read_matching's rows read by DuckDB, typed as read_files types them; None when the
    files are not plain local Parquet (remote, deletion vectors, a path DuckDB would take
    for a glob), no column converts, or DuckDB fails (the Arrow reading then says why)."""
    paths = store.local_parquet(snap)
    if not paths or any(_GLOB.search(p) for p in paths):
        return None
    tables, joins = {}, []
    for i, (c, values, has_null) in enumerate(tests):
        t = snap.schema.field(c).type
        typed = merged_values([values], t)
        if typed is None:                                       # e.g. lossy: no filter
            continue
        if has_null:
            typed = pa.concat_arrays([typed, pa.nulls(1, t)])
        name = f"__viewlet_keys{i}"
        tables[name] = pa.table({"v": typed})
        equal = "IS NOT DISTINCT FROM" if has_null else "="
        joins.append(f"SEMI JOIN {name} ON m.{quoted_name(c)} {equal} {name}.v")
    if not joins:
        return None
    files = ", ".join("'" + p.replace("'", "''") + "'" for p in paths)
    columns = ", ".join(f"m.{quoted_name(c)}" for c in snap.schema.names)
    sql = f"SELECT {columns} FROM read_parquet([{files}]) AS m " + " ".join(joins)
    try:
        rows = engine.query(sql, tables)
        return rows.cast(plain_types(snap.schema.empty_table()).schema)
    except (LocalEngineError, pa.ArrowException, ValueError):
        return None
