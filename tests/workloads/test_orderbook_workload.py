
import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable

from viewlet.workloads import orderbook as ob
from viewlet.workloads._util import plain_types, scan


def tables(paths):
    return {s: scan(p) for s, p in paths.items()}


def test_create_empty_tables(tmp_path):
    paths = ob.create(str(tmp_path))
    assert set(paths) == {"bids", "asks"}
    for p in paths.values():
        d = DeltaTable(p)
        assert d.metadata().configuration.get("delta.enableChangeDataFeed") == "true"
        t = scan(p)
        assert t.num_rows == 0 and t.schema == ob.SCHEMA
    with pytest.raises(FileExistsError):
        ob.create(str(tmp_path))
    ob.create(str(tmp_path), overwrite=True)


def test_stream_fills_book_and_keeps_invariants(tmp_path):
    paths = ob.create(str(tmp_path))
    s = ob.OrderBookStream(paths, seed=4, depth=300)
    batches = [s.next_batch(250).apply() for _ in range(8)]
    assert all(b.rows_changed == 250 for b in batches)
    assert batches[0].deleted == 0  # an empty book only fills
    assert sum(b.deleted for b in batches) > 0 and sum(b.updated for b in batches) > 0

    data = tables(paths)
    for side, t in data.items():
        assert t.schema == ob.SCHEMA
        assert t.num_rows == s.live(side)
        assert t.num_rows >= 300  # never deleted below depth
        assert t.num_rows <= 300 + 250
        net = sum(b.counts[side]["inserted"] - b.counts[side]["deleted"] for b in batches)
        assert t.num_rows == net
    con = duckdb.connect()
    con.register("bids", data["bids"])
    con.register("asks", data["asks"])
    # ids unique across both sides; brokers 0..9; positive whole volumes; 0.01 ticks
    assert con.execute("SELECT count(*) - count(DISTINCT id) FROM (SELECT id FROM bids UNION ALL SELECT id FROM asks)").fetchone()[0] == 0
    for side in ("bids", "asks"):
        lo, hi = con.execute(f"SELECT min(broker_id), max(broker_id) FROM {side}").fetchone()
        assert 0 <= lo and hi <= 9
        assert con.execute(f"SELECT count(*) FROM {side} WHERE volume < 1 OR volume <> floor(volume) OR price <= 0 OR price * 100 <> floor(price * 100)").fetchone()[0] == 0
    # bids are priced below asks on average (no systematically crossed book)
    assert con.execute("SELECT avg(price) FROM bids").fetchone()[0] < con.execute("SELECT avg(price) FROM asks").fetchone()[0]


def test_cdf_and_restart(tmp_path):
    paths = ob.create(str(tmp_path))
    s = ob.OrderBookStream(paths, seed=9, depth=100, update_fraction=0.2)
    s.run(3, 200)
    b = s.next_batch(200).apply()
    for side, (before, after) in b.versions.items():
        ch = plain_types(pa.table(DeltaTable(paths[side]).load_cdf(before + 1, after).read_all()))
        kinds = {r["values"]: r["counts"] for r in pc.value_counts(ch.column("_change_type")).to_pylist()}
        c = b.counts[side]
        assert kinds.get("insert", 0) == c["inserted"]
        assert kinds.get("delete", 0) == c["deleted"]
        assert kinds.get("update_preimage", 0) == kinds.get("update_postimage", 0) == c["updated"]
        post = ch.filter(pc.equal(ch.column("_change_type"), "update_postimage"))
        upd = dict(zip(b.updates[side].column("id").to_pylist(), b.updates[side].column("volume").to_pylist()))
        assert dict(zip(post.column("id").to_pylist(), post.column("volume").to_pylist())) == upd
    # a new stream picks up the live book, ids and clock from the tables
    s2 = ob.OrderBookStream(paths, seed=1, depth=100)
    assert s2.live("bids") == s.live("bids") and s2.live("asks") == s.live("asks")
    b2 = s2.next_batch(50)
    new_ids = pa.concat_tables([b2.inserts["bids"], b2.inserts["asks"]]).column("id").to_pylist()
    assert min(new_ids) == s._next_id
    b2.apply()


def test_deterministic(tmp_path):
    def fingerprint(root, apply):
        paths = ob.create(str(root))
        s = ob.OrderBookStream(paths, seed=21, depth=50)
        out = []
        for _ in range(3):
            b = s.next_batch(120)
            out.append((b.counts, {k: v.to_pylist() for k, v in b.inserts.items()},
                        {k: v.to_pylist() for k, v in b.updates.items()},
                        {k: v.to_pylist() for k, v in b.deletes.items()}))
            if apply:
                b.apply()
        return out

    assert fingerprint(tmp_path / "a", True) == fingerprint(tmp_path / "b", True)
    s = ob.OrderBookStream(ob.create(str(tmp_path / "c")), seed=22, depth=50)
    assert s.next_batch(120).inserts["bids"].to_pylist() != fingerprint(tmp_path / "d", False)[0][1]["bids"]
