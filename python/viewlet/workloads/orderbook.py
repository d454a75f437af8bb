"""The DBToaster order-book workload: ``bids`` and ``asks`` over Delta.

The DBToaster / Hot Dog financial queries (VWAP, AXFinder, BrokerSpread,
BrokerVariance, MissedTrades, PriceSpread) run over two relations::

    bids(t bigint, id bigint, broker_id bigint, volume decimal(18,4), price decimal(18,4))
    asks(t bigint, id bigint, broker_id bigint, volume decimal(18,4), price decimal(18,4))

DBToaster declares ``volume`` and ``price`` as ``float``; here they are
``decimal(18,4)`` so that sums and products are exact and an incrementally
maintained view equals its full recomputation value for value (floating
point sums depend on the order of the additions).  Prices have a 0.01 tick
and volumes are whole numbers of shares, so the scale of 4 is never
exceeded by the generator; ``price * volume`` stays far below 10^14.

``t`` is an event timestamp (milliseconds since 2010-01-01, strictly
increasing over the stream), ``id`` is unique over both tables, and
``broker_id`` is in 0..9.

The stream follows the shape of the DBToaster order-book trace: new limit
orders arrive on either side around a moving mid price (a geometric random
walk), orders leave the book when they are executed (the best-priced
orders: highest bids, lowest asks) or cancelled (uniformly at random), and
partially executed orders have their volume reduced (an in-place update).
"""

from __future__ import annotations

import os
import shutil
import time
from typing import Mapping

import numpy as np
import pyarrow as pa

from ._batch import Batch
from ._util import decimal_from_units, decimal_units, int_array, run_chains, scan

__all__ = ["SIDES", "SCHEMA", "CDF_CONFIGURATION", "create", "OrderBookStream", "Batch"]

SIDES: tuple[str, ...] = ("bids", "asks")
PRICE_TYPE = pa.decimal128(18, 4)
VOLUME_TYPE = pa.decimal128(18, 4)
SCHEMA = pa.schema(
    [
        pa.field("t", pa.int64()),
        pa.field("id", pa.int64()),
        pa.field("broker_id", pa.int64()),
        pa.field("volume", VOLUME_TYPE),
        pa.field("price", PRICE_TYPE),
    ]
)
CDF_CONFIGURATION = {"delta.enableChangeDataFeed": "true"}
BROKERS = 10
_UNIT = 10_000  # decimal(18,4): 1.0 == 10_000 units
_TICK = 100  # 0.01
_T0 = 1_262_304_000_000  # 2010-01-01T00:00:00Z in ms


def create(out_dir: str, *, overwrite: bool = False) -> dict[str, str]:
    """Create empty ``out_dir/bids`` and ``out_dir/asks`` Delta tables with the
    change data feed on.  Returns ``{"bids": path, "asks": path}``.

    ``overwrite=True`` removes existing Delta tables at those paths first.
    The first batches of an :class:`OrderBookStream` fill the book.
    """
    from deltalake import write_deltalake

    out_dir = os.path.abspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    paths = {s: os.path.join(out_dir, s) for s in SIDES}
    for p in paths.values():
        if os.path.exists(p):
            if not overwrite:
                raise FileExistsError(f"{p} exists (pass overwrite=True to replace it)")
            if not os.path.isdir(os.path.join(p, "_delta_log")):
                raise FileExistsError(f"{p} exists and is not a Delta table; not removing it")
            shutil.rmtree(p)
    for p in paths.values():
        write_deltalake(p, SCHEMA.empty_table(), mode="error", configuration=CDF_CONFIGURATION)
    return paths


class _Side:
    """Live orders of one side, kept sorted by id."""

    def __init__(self, ids: np.ndarray, prices: np.ndarray, volumes: np.ndarray):
        order = np.argsort(ids, kind="stable")
        self.ids = ids[order].astype(np.int64)
        self.prices = prices[order].astype(np.int64)
        self.volumes = volumes[order].astype(np.int64)

    def __len__(self) -> int:
        return len(self.ids)


class OrderBookStream:
    """Deterministic order-book change stream over the tables from :func:`create`.

    A batch of ``size`` tuples is made of

    * ``round(size * update_fraction)`` partial executions: live orders whose
      ``volume`` drops to 10-90% of what it was (``update_preimage`` /
      ``update_postimage`` in the change feed);
    * of the rest, a share ``insert_fraction`` of new orders, each a bid or
      an ask with equal odds, priced a few ticks (exponentially distributed,
      mean ``spread`` of the mid price) below (bids) or above (asks) a mid
      price that follows a geometric random walk (volatility ``volatility``
      per event), with a log-normal whole-share volume and a broker in 0..9;
    * and deletes: half executions of the best-priced orders (highest bids,
      lowest asks), half cancellations of random orders, never taking a side
      below ``depth`` live orders.  Unused delete or update budget becomes
      inserts, so a batch always changes exactly ``size`` rows; a fresh
      (empty) book fills up to ``depth`` orders per side and then hovers
      there.

    The stream assumes it is the only writer of the two tables; its state
    (live ids/prices/volumes, next id, clock, mid price) is read from them
    at construction.  Batches must be applied in the order they were made.
    Everything is a function of ``seed`` and the initial contents.
    """

    def __init__(
        self,
        tables: Mapping[str, str],
        seed: int = 0,
        *,
        depth: int = 1000,
        insert_fraction: float = 0.5,
        update_fraction: float = 0.1,
        start_price: float = 100.0,
        spread: float = 0.002,
        volatility: float = 0.0002,
        storage_options: dict[str, str] | None = None,
    ):
        from deltalake import DeltaTable

        missing = [s for s in SIDES if s not in tables]
        if missing:
            raise ValueError(f"OrderBookStream needs tables {missing}")
        if not 0.0 <= insert_fraction <= 1.0 or not 0.0 <= update_fraction <= 1.0:
            raise ValueError("fractions must be within [0, 1]")
        self.paths = {s: str(tables[s]) for s in SIDES}
        self.seed = seed
        self.depth = int(depth)
        self.insert_fraction = float(insert_fraction)
        self.update_fraction = float(update_fraction)
        self.spread = float(spread)
        self.volatility = float(volatility)
        self._dt = {s: DeltaTable(p, storage_options=storage_options) for s, p in self.paths.items()}
        self._side: dict[str, _Side] = {}
        max_id, max_t = 0, _T0
        for s in SIDES:
            data = scan(self._dt[s], ["t", "id", "volume", "price"])
            ids = data.column("id").to_numpy().astype(np.int64) if data.num_rows else np.empty(0, np.int64)
            side = _Side(
                ids,
                _units(data.column("price")),
                _units(data.column("volume")),
            )
            self._side[s] = side
            if len(side):
                max_id = max(max_id, int(side.ids.max()))
                max_t = max(max_t, int(data.column("t").to_numpy().max()))
        self._next_id = max_id + 1
        self._clock = max_t
        bids, asks = self._side["bids"], self._side["asks"]
        if len(bids) and len(asks):
            mid = (bids.prices.max() + asks.prices.min()) / 2
        elif len(bids):
            mid = bids.prices.max() * (1 + spread)
        elif len(asks):
            mid = asks.prices.min() * (1 - spread)
        else:
            mid = start_price * _UNIT
        self.mid = float(mid) / _UNIT
        self._rng = np.random.default_rng(seed)
        self._generated = 0
        self._applied = 0

    # -- state ---------------------------------------------------------------

    def live(self, side: str) -> int:
        """Live orders on ``side`` once every generated batch is applied."""
        return len(self._side[side])

    # -- generation ----------------------------------------------------------

    def next_batch(self, size: int) -> Batch:
        size = int(size)
        if size < 0:
            raise ValueError("size must be >= 0")
        rng = self._rng
        n_upd = int(round(size * self.update_fraction))
        rest = size - n_upd
        n_ins = int(round(rest * self.insert_fraction))
        n_del = rest - n_ins
        counts = {s: {"inserted": 0, "deleted": 0, "updated": 0} for s in SIDES}
        updates: dict[str, pa.Table] = {}
        deletes: dict[str, pa.Table] = {}

        # deletes, from the pre-batch book, split by each side's excess over depth
        excess = {s: max(0, len(self._side[s]) - self.depth) for s in SIDES}
        total_excess = sum(excess.values())
        take = {s: 0 for s in SIDES}
        if total_excess and n_del:
            want = min(n_del, total_excess)
            take["bids"] = min(excess["bids"], int(rng.binomial(want, excess["bids"] / total_excess)))
            take["asks"] = min(excess["asks"], want - take["bids"])
            take["bids"] = min(excess["bids"], want - take["asks"])
        keep: dict[str, np.ndarray] = {}
        for s in SIDES:
            side = self._side[s]
            k = take[s]
            mask = np.ones(len(side), dtype=bool)
            if k:
                n_exec = k // 2 + (k % 2 if rng.random() < 0.5 else 0)
                # executions: the best prices (ties broken by age: oldest first)
                signed = -side.prices if s == "bids" else side.prices
                best = np.lexsort((side.ids, signed))[:n_exec]
                mask[best] = False
                remaining = np.flatnonzero(mask)
                cancel = rng.choice(remaining, size=k - n_exec, replace=False)
                mask[cancel] = False
                gone = np.sort(side.ids[~mask])
                deletes[s] = pa.table({"id": int_array(gone, pa.int64())})
                counts[s]["deleted"] = len(gone)
            keep[s] = mask
        n_deleted = sum(take.values())

        # partial executions among surviving orders
        avail = {s: int(keep[s].sum()) for s in SIDES}
        n_upd = min(n_upd, sum(avail.values()))
        if n_upd:
            u_b = min(avail["bids"], int(rng.binomial(n_upd, avail["bids"] / sum(avail.values()))))
            u_a = min(avail["asks"], n_upd - u_b)
            u_b = n_upd - u_a
            for s, u in (("bids", u_b), ("asks", u_a)):
                if not u:
                    continue
                side = self._side[s]
                idx = np.sort(rng.choice(np.flatnonzero(keep[s]), size=u, replace=False))
                frac = rng.uniform(0.1, 0.9, size=u)
                whole = side.volumes[idx] // _UNIT
                new_vol = np.maximum(1, np.floor(whole * frac)).astype(np.int64) * _UNIT
                side.volumes[idx] = new_vol
                updates[s] = pa.table(
                    {
                        "id": int_array(side.ids[idx], pa.int64()),
                        "volume": decimal_from_units(new_vol, 18, 4),
                    }
                )
                counts[s]["updated"] = u

        # inserts: everything left over
        n_ins = size - n_deleted - n_upd
        inserts = self._new_orders(n_ins, counts)

        for s in SIDES:
            side = self._side[s]
            new = inserts[s]
            m = keep[s]
            side.ids = np.concatenate([side.ids[m], new.column("id").to_numpy()])
            side.prices = np.concatenate([side.prices[m], _units(new.column("price"))])
            side.volumes = np.concatenate([side.volumes[m], _units(new.column("volume"))])
        self._generated += 1
        batch = Batch(
            seq=self._generated,
            size=size,
            inserts=inserts,
            updates=updates,
            deletes=deletes,
            counts=counts,
            _stream=self,
        )
        assert batch.rows_changed == size
        return batch

    def _new_orders(self, n: int, counts) -> dict[str, pa.Table]:
        rng = self._rng
        ids = np.arange(self._next_id, self._next_id + n, dtype=np.int64)
        self._next_id += n
        ts = self._clock + np.cumsum(rng.integers(1, 50, size=n))
        if n:
            self._clock = int(ts[-1])
        steps = rng.normal(0.0, self.volatility, size=n)
        mids = self.mid * np.exp(np.cumsum(steps))
        if n:
            self.mid = float(mids[-1])
        is_bid = rng.random(n) < 0.5
        offset = rng.exponential(self.spread, size=n)
        raw = np.where(is_bid, mids * (1 - offset), mids * (1 + offset))
        ticks = np.where(is_bid, np.floor(raw * _UNIT / _TICK), np.ceil(raw * _UNIT / _TICK))
        prices = np.maximum(ticks, 1).astype(np.int64) * _TICK
        volumes = np.clip(np.rint(rng.lognormal(np.log(200.0), 1.0, size=n)), 1, 1_000_000).astype(np.int64) * _UNIT
        brokers = rng.integers(0, BROKERS, size=n)
        out = {}
        for s, m in (("bids", is_bid), ("asks", ~is_bid)):
            out[s] = pa.Table.from_arrays(
                [
                    int_array(ts[m], pa.int64()),
                    int_array(ids[m], pa.int64()),
                    int_array(brokers[m], pa.int64()),
                    decimal_from_units(volumes[m], 18, 4),
                    decimal_from_units(prices[m], 18, 4),
                ],
                schema=SCHEMA,
            )
            counts[s]["inserted"] = int(m.sum())
        return out

    # -- application ---------------------------------------------------------

    def apply(self, batch: Batch, *, check: bool = True, parallel: bool = True) -> Batch:
        """Write ``batch``: per side an append, a MERGE update of ``volume``
        and a MERGE delete by id -- at most three commits per table.  With
        ``parallel`` the two sides are written from two threads."""
        from deltalake import CommitProperties, write_deltalake

        if batch._stream is not self:
            raise ValueError("batch was generated by another stream")
        if batch.applied:
            raise RuntimeError(f"batch {batch.seq} was already applied")
        if batch.seq != self._applied + 1:
            raise RuntimeError(
                f"batches must be applied in order: next is {self._applied + 1}, got {batch.seq}"
            )
        props = CommitProperties(
            custom_metadata={"viewlet.workload": "orderbook", "viewlet.batch": str(batch.seq)}
        )
        problems: list[str] = []
        before = {s: self._dt[s].version() for s in SIDES}

        def side_ops(s: str) -> None:
            dt = self._dt[s]
            rows = batch.inserts.get(s)
            if rows is not None and rows.num_rows:
                t0 = time.perf_counter()
                write_deltalake(dt, rows, mode="append", commit_properties=props)
                batch.timings[f"append {s}"] = time.perf_counter() - t0
            src = batch.updates.get(s)
            if src is not None and src.num_rows:
                lo, hi = _range(src)
                t0 = time.perf_counter()
                res = (
                    dt.merge(
                        src,
                        predicate=f"t.id >= {lo} AND t.id <= {hi} AND t.id = s.id",
                        source_alias="s",
                        target_alias="t",
                        commit_properties=props,
                    )
                    .when_matched_update({"volume": "s.volume"})
                    .execute()
                )
                batch.timings[f"update {s}"] = time.perf_counter() - t0
                if res.get("num_target_rows_updated") != src.num_rows:
                    problems.append(f"{s}: updated {res.get('num_target_rows_updated')} != {src.num_rows}")
            gone = batch.deletes.get(s)
            if gone is not None and gone.num_rows:
                lo, hi = _range(gone)
                t0 = time.perf_counter()
                # a MERGE ... WHEN MATCHED DELETE hash-joins the ids: ~6x faster
                # than DELETE ... WHERE id IN (<thousands of literals>)
                res = (
                    dt.merge(
                        gone,
                        predicate=f"t.id >= {lo} AND t.id <= {hi} AND t.id = s.id",
                        source_alias="s",
                        target_alias="t",
                        commit_properties=props,
                    )
                    .when_matched_delete()
                    .execute()
                )
                res = {"num_deleted_rows": res.get("num_target_rows_deleted")}
                batch.timings[f"delete {s}"] = time.perf_counter() - t0
                if res.get("num_deleted_rows") != gone.num_rows:
                    problems.append(f"{s}: deleted {res.get('num_deleted_rows')} != {gone.num_rows}")

        run_chains({s: [(s, (lambda s=s: side_ops(s)), ())] for s in SIDES}, parallel)
        batch.versions = {s: (before[s], v) for s in SIDES if (v := self._dt[s].version()) != before[s]}
        batch.applied = True
        self._applied = batch.seq
        if check and problems:
            raise RuntimeError(f"batch {batch.seq} applied with unexpected row counts: " + "; ".join(problems))
        return batch

    def run(self, batches: int, size: int) -> list[Batch]:
        return [self.apply(self.next_batch(size)) for _ in range(batches)]


def _units(col) -> np.ndarray:
    if len(col) == 0:
        return np.empty(0, np.int64)
    return decimal_units(col.cast(pa.decimal128(18, 4)))


def _range(table: pa.Table) -> tuple[int, int]:
    ids = table.column("id").to_numpy()
    return int(ids.min()), int(ids.max())
