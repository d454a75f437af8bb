"""Hot maps (viewlet.engine.local.hotmaps) without Spark: lookups return every row of the looked-up
keys (NULL keys included when asked), deltas and folds keep each key's sum, the cache keeps
only exact versions and stays within its budget."""
from __future__ import annotations

import datetime as dt
import random
from collections import defaultdict

import pyarrow as pa
import pytest

from viewlet.engine.local.hotmaps import HotMap, HotMaps

SCHEMA = pa.schema([("k0", pa.int64()), ("k1", pa.date32()), ("k2", pa.string()),
                    ("__v", pa.int64()), ("v1", pa.decimal128(38, 2))])


def _rows(rng, n, keys=40):
    data = []
    for _ in range(n):
        row = {"k0": None if rng.random() < 0.05 else rng.randint(0, keys),
               "k1": dt.date(2020, 1, 1) + dt.timedelta(days=rng.randint(0, 9)),
               "k2": rng.choice(["a", "b", None]), "__v": rng.choice([1, -1, 2])}
        # a map's value columns sum the rows its count counts: a key's value per row is
        # fixed, so a count of 0 means values of 0, as in every real map
        value = hash((row["k0"], row["k1"], row["k2"])) % 1000 - 500
        data.append(dict(row, v1=row["__v"] * value))
    return pa.Table.from_pylist(data, schema=SCHEMA)


def _sums(table: pa.Table, where=lambda r: True):
    out = defaultdict(lambda: [0, 0])
    for r in table.to_pylist():
        if where(r):
            key = (r["k0"], r["k1"], r["k2"])
            out[key][0] += r["__v"]
            out[key][1] += r["v1"]
    return {k: tuple(v) for k, v in out.items() if v != [0, 0]}


def _hot(rows, path="/maps/m"):
    return HotMap(path, 1, rows, ["k0", "k1", "k2"], ["__v", "v1"], ["__v"])


@pytest.mark.parametrize("seed", range(8))
def test_lookups_return_every_row_of_the_keys(seed):
    rng = random.Random(seed)
    hot = _hot(_rows(rng, 500))
    for version in range(2, 6):
        hot.apply(_rows(rng, 40), version)          # a tail of deltas
        everything = hot.all_rows()
        wanted0 = set(rng.sample(range(45), 6))
        wanted1 = {dt.date(2020, 1, 1) + dt.timedelta(days=d) for d in rng.sample(range(12), 4)}
        with_null = rng.random() < 0.5
        lookups = {"k0": (pa.array(sorted(wanted0)), with_null),
                   "k1": (pa.array(sorted(wanted1)), False)}

        def match(r):
            return (r["k0"] in wanted0 or (with_null and r["k0"] is None)) and r["k1"] in wanted1

        got = hot.lookup(lookups)
        assert _sums(got, match) == _sums(everything, match)     # nothing of theirs missing
        assert all(match(r) for r in got.to_pylist())             # and nothing else here
    assert hot.version == 5


def test_a_lookup_by_a_column_that_cannot_be_indexed_filters_exactly():
    rng = random.Random(3)
    hot = _hot(_rows(rng, 300))
    got = hot.lookup({"k2": (pa.array(["a"]), True)})
    assert got.num_rows and all(r["k2"] in ("a", None) for r in got.to_pylist())
    assert _sums(got) == _sums(hot.all_rows(), lambda r: r["k2"] in ("a", None))


def test_values_that_do_not_convert_give_a_superset():
    hot = _hot(_rows(random.Random(4), 100))
    got = hot.lookup({"k0": (pa.array(["not a number"]), False)})
    assert got.num_rows == hot.rows                 # cannot filter: every row, callers join


@pytest.mark.parametrize("by", ["arrow", "duckdb"])
def test_folding_keeps_every_sum_and_drops_zero_rows(monkeypatch, by):
    from viewlet.engine.local import hotmaps
    from viewlet.engine.local.executor import LocalEngine
    monkeypatch.setattr(hotmaps, "FOLD_MIN_ROWS", 100)
    rng = random.Random(5)
    base = _rows(rng, 200)
    hot = _hot(base)
    if by == "duckdb":
        hot.engine = LocalEngine(threads=2)

        def arrow_sum(*args):
            raise AssertionError("folded by Arrow, not by the engine")
        monkeypatch.setattr(hotmaps, "sum_by_key", arrow_sum)
    expected = _sums(base)
    folds = 0
    for version in range(2, 12):
        delta = _rows(rng, 150)
        hot.apply(delta, version)
        for k, v in _sums(delta).items():
            old = expected.get(k, (0, 0))
            expected[k] = (old[0] + v[0], old[1] + v[1])
        # a key whose support (__v) sums to 0 is gone, whatever its other columns say
        live = {k: v for k, v in _sums(hot.all_rows()).items() if v[0] != 0}
        assert live == {k: v for k, v in expected.items() if v[0] != 0}
        if not hot.tail:                               # folded: one row per live key
            folds += 1
            keys = [(r["k0"], r["k1"], r["k2"]) for r in hot.base.to_pylist()]
            assert len(keys) == len(set(keys))
            assert all(r["__v"] != 0 for r in hot.base.to_pylist())
            assert hot.base.schema == base.schema
    assert folds >= 2 and hot.version == 11


def test_the_cache_keeps_exact_versions_within_its_budget():
    rng = random.Random(6)
    maps = [HotMap(f"/maps/m{i}", 3, _rows(rng, 300), ["k0", "k1", "k2"], ["__v", "v1"], ["__v"])
            for i in range(4)]
    size = maps[0].nbytes
    cache = HotMaps(budget=int(size * 2.5))
    for m in maps:
        assert cache.put(m)
    assert cache.used() <= cache.budget
    assert cache.get("/maps/m0", 3) is None and cache.get("/maps/m3", 3) is maps[3]   # LRU out
    assert cache.get("/maps/m3", 4) is None              # another version: dropped
    assert cache.peek("/maps/m3") is None
    assert not HotMaps(budget=10).put(maps[1])           # larger than the whole budget
    assert HotMaps(budget=0).fits(1) is False


def test_maps_used_lately_are_not_evicted_for_a_map_not_yet_held():
    """Views refreshed in turn whose maps do not fit together: a map not yet held is loaded
    only beside the maps batches used in the last ACTIVE_SECONDS (then the idle ones make
    room, least recently used first); otherwise its batch reads Delta."""
    from viewlet.engine.local import hotmaps
    rng = random.Random(8)
    maps = [HotMap(f"/maps/m{i}", 1, _rows(rng, 300), ["k0", "k1", "k2"], ["__v", "v1"], ["__v"])
            for i in range(3)]
    size = max(m.nbytes for m in maps)
    now = [0.0]
    cache = HotMaps(budget=int(size * 2.5), clock=lambda: now[0])
    assert cache.put(maps[0]) and cache.put(maps[1])
    assert cache.fits(size) and not cache.admits(size)     # both in use: m2 would evict one
    now[0] += hotmaps.ACTIVE_SECONDS + 1
    assert cache.get("/maps/m1", 1) is maps[1]             # a batch uses m1 again
    assert cache.admits(size)                              # m0 is idle: it makes room
    assert cache.put(maps[2])
    assert cache.peek("/maps/m0") is None and cache.peek("/maps/m1") is maps[1]
    assert not cache.admits(size) and not cache.admits(0)
    maps[1].spare = True                                   # a spare map never blocks a load
    assert cache.admits(size)


def test_a_map_over_the_budget_is_not_loaded_again_whatever_its_guess():
    """A map whose rows took more than the whole budget when loaded (and were not kept) is
    not admitted again on a guess made from its files: every batch read it whole before."""
    rng = random.Random(10)
    big = _hot(_rows(rng, 400), "/views/big/m")
    cache = HotMaps(budget=big.nbytes // 2)
    assert cache.admits(big.nbytes // 4, [big.path])     # a low guess, before any load
    assert not cache.put(big)
    assert not cache.admits(big.nbytes // 4, [big.path])
    assert not cache.room(big.nbytes // 4, [big.path])     # nor as a spare map
    cache.evict_prefix("/views/big/")                      # the view dropped: forgotten
    assert cache.admits(big.nbytes // 4, [big.path])


def test_views_refreshed_in_turn_keep_the_maps_they_hold():
    """Three views refreshed in turn, minutes apart (longer than ACTIVE_SECONDS), whose maps
    fit two at a time: the first round loads each and evicts one; from then on the two held
    stay held and the evicted one is read from Delta (it is loaded again only beside the maps
    used in the last EVICTED_SECONDS), where before every batch loaded its map and evicted
    the next view's."""
    from viewlet.engine.local import hotmaps
    rng = random.Random(9)
    rows = [_rows(rng, 300) for _ in range(3)]
    paths = [f"/views/v{i}/m" for i in range(3)]
    size = max(_hot(r, p).nbytes for p, r in zip(paths, rows))
    now = [0.0]
    cache = HotMaps(budget=int(size * 2.5), clock=lambda: now[0])

    def refresh(i):
        """One batch of view i: its map from memory, else loaded when the cache admits it;
        True when it was loaded."""
        now[0] += hotmaps.ACTIVE_SECONDS * 3
        if cache.get(paths[i], 1) is not None or not cache.admits(size, [paths[i]]):
            return False
        assert cache.put(_hot(rows[i], paths[i]))
        return cache.get(paths[i], 1) is not None          # the batch reads what it loaded

    assert [refresh(i) for i in range(3)] == [True, True, True]     # v2 evicts v0
    assert cache.was_evicted(paths[0]) and not cache.was_evicted(paths[2])
    for _ in range(4):
        assert [refresh(i) for i in range(3)] == [False, False, False]
        assert [cache.peek(p) is not None for p in paths] == [False, True, True]
    # the caller's guess of a map's bytes (from its Parquet files' size) may be low: the
    # bytes it took when last loaded count
    assert cache.admits(1, ["/views/v9/m"]) and not cache.admits(1, [paths[0]])
    # the held maps idle for EVICTED_SECONDS: the evicted map makes its way back
    now[0] += hotmaps.EVICTED_SECONDS
    assert refresh(0) and not cache.was_evicted(paths[0])
    # a view dropped (its maps' prefix): its maps are no longer remembered as evicted
    assert cache.was_evicted(paths[1])
    cache.evict_prefix("/views/v1/")
    assert not cache.was_evicted(paths[1])
    # a map loaded (as CREATE leaves its maps) but evicted before any batch took it is not
    # held back: nothing says its view is part of a cycle
    now[0] += hotmaps.EVICTED_SECONDS
    cache.evict_prefix("/views/")
    for i in range(3):
        assert cache.put(_hot(rows[i], paths[i]))
    assert cache.peek(paths[0]) is None and not cache.was_evicted(paths[0])
