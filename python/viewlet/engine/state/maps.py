"""A view's maps as data: their rows at a Delta version, from memory when the map is hot
(local/hotmaps.py; maintain/hot.py keeps hot maps equal to their tables), else from Delta
(by key: keyed.py)."""
from __future__ import annotations

from typing import Dict, FrozenSet

import pyarrow as pa

from ..local.executor import available_engine
from ..local.hotmaps import HotMap
from ...storage.arrow import key_lookups
from .keyed import read_keys


def hot_map(view, name: str, version: int, load: bool = False, spare: bool = False):
    """Map `name` of `view` hot in memory at `version`; with `load`, read whole from Delta
    into the cache when it is not and it fits the cache's budget (`spare`: fits beside the
    maps held now, and is the first evicted when others need room). None otherwise."""
    ctx = view.ctx
    path = view.map_path(name)
    hot = ctx.hot_maps.get(path, version)
    if hot is not None or not load:
        return hot
    snap = ctx.store.snapshot(path, version)
    guess = memory_guess(snap)
    if not (ctx.hot_maps.room(guess, [path]) if spare else ctx.hot_maps.admits(guess, [path])):
        return None
    schema = view.map_arrow_schema(name)
    rows = ctx.store.read_files(snap).select(schema.names).cast(schema)
    hot = new_hot_map(view, name, version, rows)
    hot.spare = spare
    return hot if ctx.hot_maps.put(hot) else None


def memory_guess(snap) -> int:
    """The bytes a map snapshot takes in memory: its Parquet files' bytes, compressed, four
    times over (a first guess; at least 1)."""
    return sum(s.size or 0 for s in snap.stats or ()) * 4 or 1


def held_maps(view, version_of: Dict[str, int]) -> FrozenSet[str]:
    """Of the maps `version_of` names (map -> version), those the local target holds in
    memory: hot at that version already, or loaded whole on first read (hot_map with
    `load`), when all of them fit the cache's budget together and the cache admits those not
    yet held (HotMaps.admits). Empty when they do not."""
    ctx = view.ctx
    held = new = 0
    loads = []
    for name, version in version_of.items():
        path = view.map_path(name)
        hot = ctx.hot_maps.get(path, version)
        if hot is not None:
            held += hot.nbytes
        else:
            new += memory_guess(ctx.store.snapshot(path, version))
            loads.append(path)
    fits = ctx.hot_maps.fits(held + new) and (not new or ctx.hot_maps.admits(new, loads))
    return frozenset(version_of) if fits else frozenset()


def new_hot_map(view, name: str, version: int, rows: pa.Table):
    schema = view.map_schema(name)
    return HotMap(view.map_path(name), version, rows, schema.keys, list(schema.values),
                  view.compiled.program.maps[name].zero_columns(), available_engine(view.ctx))


def rows_by_keys(view, name: str, version: int, rows: pa.Table, keys,
                 hold: bool = False) -> pa.Table:
    """Map `name`'s rows at `version` for the key values of `rows` (its columns `keys`, the
    map's first key columns): from memory when hot, else from the Delta files that may
    hold them (a superset: callers match keys exactly). `hold`: a map not hot is read whole
    and held as a spare hot map when the budget has room for it (hot_map): the Delta files
    holding a batch's keys are most of a large map's files, so reading them every batch
    grows with the map, and lookups in memory grow with the keys."""
    hot = hot_map(view, name, version, load=hold, spare=hold)
    if hot is not None:
        return hot.lookup(key_lookups(rows, keys))
    return read_keys(view.ctx.store, view.map_path(name), version, rows, keys,
                     available_engine(view.ctx))
