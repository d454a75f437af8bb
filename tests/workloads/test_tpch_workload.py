import datetime as dt
import os
from decimal import Decimal

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable

from viewlet.workloads import tpch
from viewlet.workloads._util import plain_types, scan

SF001_ROWS = {
    "region": 5,
    "nation": 25,
    "supplier": 100,
    "customer": 1500,
    "part": 2000,
    "partsupp": 8000,
    "orders": 15000,
    "lineitem": 60175,
}


def read_all(paths):
    return {t: scan(p) for t, p in paths.items()}


def cdf(path, start, end):
    return plain_types(pa.table(DeltaTable(path).load_cdf(start, end).read_all()))


def con_for(tables):
    con = duckdb.connect()
    for t, tbl in tables.items():
        con.register(t, tbl)
    return con


def one(con, sql):
    return con.execute(sql).fetchone()[0]


def check_integrity(tables):
    con = con_for(tables)
    # primary keys
    assert one(con, "SELECT count(*) - count(DISTINCT o_orderkey) FROM orders") == 0
    assert one(con, "SELECT count(*) FROM (SELECT l_orderkey, l_linenumber FROM lineitem GROUP BY ALL HAVING count(*) > 1)") == 0
    assert one(con, "SELECT count(*) - count(DISTINCT c_custkey) FROM customer") == 0
    assert one(con, "SELECT count(*) - count(DISTINCT p_partkey) FROM part") == 0
    assert one(con, "SELECT count(*) - count(DISTINCT s_suppkey) FROM supplier") == 0
    assert one(con, "SELECT count(*) FROM (SELECT ps_partkey, ps_suppkey FROM partsupp GROUP BY ALL HAVING count(*) > 1)") == 0
    # foreign keys
    assert one(con, "SELECT count(*) FROM lineitem ANTI JOIN orders ON l_orderkey = o_orderkey") == 0
    assert one(con, "SELECT count(*) FROM orders ANTI JOIN customer ON o_custkey = c_custkey") == 0
    assert one(con, "SELECT count(*) FROM lineitem ANTI JOIN partsupp ON l_partkey = ps_partkey AND l_suppkey = ps_suppkey") == 0
    assert one(con, "SELECT count(*) FROM partsupp ANTI JOIN part ON ps_partkey = p_partkey") == 0
    assert one(con, "SELECT count(*) FROM partsupp ANTI JOIN supplier ON ps_suppkey = s_suppkey") == 0
    assert one(con, "SELECT count(*) FROM customer ANTI JOIN nation ON c_nationkey = n_nationkey") == 0
    assert one(con, "SELECT count(*) FROM supplier ANTI JOIN nation ON s_nationkey = n_nationkey") == 0
    # every order has lineitems numbered 1..n
    assert one(con, "SELECT count(*) FROM orders ANTI JOIN lineitem ON l_orderkey = o_orderkey") == 0
    assert one(con, "SELECT count(*) FROM (SELECT l_orderkey FROM lineitem GROUP BY 1 HAVING max(l_linenumber) <> count(*) OR min(l_linenumber) <> 1)") == 0


def test_generate_delta_tables(tpch_tiny):
    assert list(tpch_tiny) == list(tpch.ALL)
    root = os.path.dirname(tpch_tiny["orders"])
    assert sorted(os.listdir(root)) == sorted(tpch.ALL)  # temporary Parquet removed
    for t, p in tpch_tiny.items():
        assert p == os.path.join(root, t)
        d = DeltaTable(p)
        assert d.metadata().configuration.get("delta.enableChangeDataFeed") == "true"
        proto = d.protocol()
        assert proto.min_reader_version == 1 and proto.min_writer_version <= 4
        data = scan(p)
        assert data.schema == tpch.SCHEMAS[t], t
        assert data.num_rows == SF001_ROWS[t], t
    li = scan(tpch_tiny["lineitem"], where="l_orderkey = 1")
    assert set(li.column("l_returnflag").to_pylist()) <= {"A", "R", "N"}
    assert isinstance(li.column("l_quantity")[0].as_py(), Decimal)
    assert isinstance(li.column("l_shipdate")[0].as_py(), dt.date)


def test_generate_refuses_what_it_did_not_write_at_that_scale(tpch_tiny, tmp_path):
    root = os.path.dirname(tpch_tiny["region"])
    with pytest.raises(FileExistsError, match=r"region holds TPC-H region at scale 0\.01, not "
                       r"TPC-H region at scale 0\.02: pass overwrite=True .* another folder"):
        tpch.generate(0.02, root, tables=["region"])
    out = tpch.generate(0.01, str(tmp_path), tables=["nation", "region"])
    assert list(out) == ["region", "nation"]
    out = tpch.generate(0.01, str(tmp_path), tables=["region"], overwrite=True)
    assert scan(out["region"]).num_rows == 5
    os.rename(out["region"], str(tmp_path / "orders"))     # a table, but not TPC-H orders
    with pytest.raises(FileExistsError, match="orders holds TPC-H region at scale 0.01, not "
                       "TPC-H orders"):
        tpch.generate(0.01, str(tmp_path), tables=["orders"])
    other = tmp_path / "other"
    pa_table = pa.table({"r_regionkey": pa.array([1], pa.int64())})
    from deltalake import write_deltalake
    write_deltalake(str(other / "region"), pa_table)
    with pytest.raises(FileExistsError, match="holds a Delta table generate\\(\\) did not write"):
        tpch.generate(0.01, str(other), tables=["region"])
    (other / "nation").mkdir()
    with pytest.raises(FileExistsError, match="nation holds something that is not a Delta table"):
        tpch.generate(0.01, str(other), tables=["nation"])
    with pytest.raises(FileExistsError, match="not a Delta table; not removing it"):
        tpch.generate(0.01, str(other), tables=["nation"], overwrite=True)
    with pytest.raises(ValueError):
        tpch.generate(0.01, str(tmp_path), tables=["bogus"])


def test_generate_again_reuses_the_tables_of_that_scale(tpch_tiny, monkeypatch):
    """The README's example run twice: the second generate() finds every table written at
    its scale and returns them as they are (tpchgen-cli not run, no commit)."""
    root = os.path.dirname(tpch_tiny["orders"])
    versions = {t: DeltaTable(p).version() for t, p in tpch_tiny.items()}
    monkeypatch.setattr(tpch, "find_tpchgen", lambda: pytest.fail("generate() ran tpchgen-cli"))
    assert tpch.generate(0.01, root) == tpch_tiny
    assert {t: DeltaTable(p).version() for t, p in tpch_tiny.items()} == versions
    assert sorted(os.listdir(root)) == sorted(tpch.ALL)


def test_generate_keeps_changed_tables_and_adds_missing_ones(tmp_path):
    out = tpch.generate(0.01, str(tmp_path), tables=["region"])
    DeltaTable(out["region"]).delete("r_regionkey = 0")      # an update stream's change
    out = tpch.generate(0.01, str(tmp_path), tables=["nation", "region"])
    assert scan(out["region"]).num_rows == 4
    assert scan(out["nation"]).num_rows == 25
    assert sorted(os.listdir(tmp_path)) == ["nation", "region"]   # nothing left aside


def test_missing_binary_error(monkeypatch, tmp_path):
    monkeypatch.setattr(tpch.sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="pip install tpchgen-cli"):
        tpch.find_tpchgen()


def test_stream_batches_keep_integrity_and_size(tpch_copy):
    s = tpch.UpdateStream(tpch_copy, seed=7)
    assert s.live_orders == SF001_ROWS["orders"]
    assert s.live_lineitems == SF001_ROWS["lineitem"]
    batches = []
    for _ in range(12):
        b = s.next_batch(1000)
        assert b.rows_changed == b.size == 1000
        b.apply()
        assert b.applied and b.versions
        batches.append(b)
    # every kind of change happened
    assert sum(b.counts["orders"]["deleted"] for b in batches) > 0
    assert sum(b.counts["lineitem"]["updated"] for b in batches) > 0
    assert sum(b.counts["orders"]["updated"] for b in batches) > 0
    for t in ("customer", "part", "partsupp", "orders", "lineitem"):
        assert sum(b.counts[t]["inserted"] for b in batches) > 0, t

    tables = read_all(tpch_copy)
    check_integrity(tables)
    n_orders = tables["orders"].num_rows
    n_lines = tables["lineitem"].num_rows
    assert n_orders == s.live_orders and n_lines == s.live_lineitems
    # sizes stay near the initial size although ~6000 order/lineitem rows were deleted
    assert abs(n_orders - SF001_ROWS["orders"]) <= 0.02 * SF001_ROWS["orders"]
    assert abs(n_lines - SF001_ROWS["lineitem"]) <= 0.03 * SF001_ROWS["lineitem"]
    assert n_orders >= SF001_ROWS["orders"]
    # net counts agree with the batches
    for t in tpch.DYNAMIC:
        net = sum(b.counts[t]["inserted"] - b.counts[t]["deleted"] for b in batches)
        assert tables[t].num_rows == SF001_ROWS[t] + net, t
    # the oldest orders are gone, new keys are above the old maximum
    con = con_for(tables)
    assert one(con, "SELECT min(o_orderkey) FROM orders") > 1
    assert one(con, "SELECT max(o_orderkey) FROM orders") > 60000
    # static tables untouched
    assert DeltaTable(tpch_copy["nation"]).version() == 0


def test_inserted_values_are_plausible(tpch_copy):
    s = tpch.UpdateStream(tpch_copy, seed=3)
    b = s.next_batch(5000)
    for t, tbl in b.inserts.items():
        assert tbl.schema == tpch.SCHEMAS[t]
    con = con_for(b.inserts)
    lo, hi = dt.date(1992, 1, 1), dt.date(1998, 12, 31)
    assert one(con, "SELECT min(o_orderdate) FROM orders") >= lo
    assert one(con, "SELECT max(o_orderdate) FROM orders") <= dt.date(1998, 8, 2)
    assert one(con, "SELECT max(l_receiptdate) FROM lineitem") <= hi
    assert one(con, "SELECT count(*) FROM lineitem WHERE l_shipdate <= (SELECT o_orderdate FROM orders WHERE o_orderkey = l_orderkey)") == 0
    assert one(con, "SELECT count(*) FROM lineitem WHERE l_receiptdate <= l_shipdate") == 0
    assert set(b.inserts["lineitem"].column("l_returnflag").to_pylist()) == {"A", "R", "N"}
    assert set(b.inserts["lineitem"].column("l_linestatus").to_pylist()) == {"O", "F"}
    assert set(b.inserts["orders"].column("o_orderstatus").to_pylist()) <= {"O", "F", "P"}
    assert set(b.inserts["orders"].column("o_orderpriority").to_pylist()) <= set(tpch.PRIORITIES)
    assert set(b.inserts["lineitem"].column("l_shipmode").to_pylist()) <= set(tpch.SHIP_MODES)
    assert set(b.inserts["customer"].column("c_mktsegment").to_pylist()) <= set(tpch.SEGMENTS)
    assert one(con, "SELECT min(l_quantity) FROM lineitem") >= 1
    assert one(con, "SELECT max(l_quantity) FROM lineitem") <= 50
    assert one(con, "SELECT max(l_discount) FROM lineitem") <= Decimal("0.10")
    assert one(con, "SELECT max(l_tax) FROM lineitem") <= Decimal("0.08")
    # l_extendedprice = l_quantity * p_retailprice, as in TPC-H
    ext = one(con, "SELECT sum(abs(l_extendedprice - l_quantity * (90000 + (l_partkey // 10) % 20001 + 100 * (l_partkey % 1000)) / 100)) FROM lineitem")
    assert ext == 0
    # o_totalprice = sum of the lines' charges, rounded per line
    diff = one(con, """
        SELECT max(abs(o_totalprice - s)) FROM orders JOIN (
          SELECT l_orderkey, sum(l_extendedprice * (1 + l_tax) * (1 - l_discount)) s FROM lineitem GROUP BY 1
        ) ON l_orderkey = o_orderkey""")
    assert diff <= Decimal("0.05")
    assert one(con, "SELECT count(*) FROM customer WHERE c_name <> 'Customer#' || lpad(c_custkey::VARCHAR, 9, '0')") == 0
    assert one(con, "SELECT count(*) FROM customer WHERE c_phone NOT SIMILAR TO '[0-9]{2}-[0-9]{3}-[0-9]{3}-[0-9]{4}'") == 0
    assert one(con, "SELECT count(*) FROM part WHERE p_type NOT SIMILAR TO '[A-Z]+ [A-Z]+ [A-Z]+'") == 0


def test_cdf_shows_inserts_deletes_and_update_images(tpch_copy):
    s = tpch.UpdateStream(tpch_copy, seed=11, update_fraction=0.1)
    b = s.next_batch(2000).apply()
    assert b.counts["orders"]["deleted"] > 0 and b.counts["lineitem"]["updated"] > 0
    for t, (before, after) in b.versions.items():
        assert after > before
        # at most one commit per operation kind: append, update, delete
        assert after - before <= 3
        ch = cdf(tpch_copy[t], before + 1, after)
        kinds = pc.value_counts(ch.column("_change_type")).to_pylist()
        kinds = {k["values"]: k["counts"] for k in kinds}
        c = b.counts[t]
        assert kinds.get("insert", 0) == c["inserted"], t
        assert kinds.get("delete", 0) == c["deleted"], t
        assert kinds.get("update_preimage", 0) == c["updated"], t
        assert kinds.get("update_postimage", 0) == c["updated"], t

    before, after = b.versions["lineitem"]
    ch = cdf(tpch_copy["lineitem"], before + 1, after)
    con = con_for({"ch": ch, "upd": b.updates["lineitem"]})
    # post-images carry the new quantity/discount; extended price rescaled with the quantity
    assert one(con, """
        SELECT count(*) FROM ch JOIN upd USING (l_orderkey, l_linenumber)
        WHERE _change_type = 'update_postimage'
          AND ch.l_quantity = upd.l_quantity AND ch.l_discount = upd.l_discount""") == b.counts["lineitem"]["updated"]
    assert one(con, """
        SELECT count(*) FROM ch pre JOIN ch post USING (l_orderkey, l_linenumber)
        WHERE pre._change_type = 'update_preimage' AND post._change_type = 'update_postimage'
          AND pre.l_extendedprice * post.l_quantity <> post.l_extendedprice * pre.l_quantity""") == 0
    # deleted lineitems are exactly those of the deleted orders
    lo, hi = b.deletes["lineitem"]
    assert one(con, f"SELECT count(*) FROM ch WHERE _change_type = 'delete' AND l_orderkey NOT BETWEEN {lo} AND {hi}") == 0

    before, after = b.versions["orders"]
    ch = cdf(tpch_copy["orders"], before + 1, after)
    con = con_for({"ch": ch, "upd": b.updates["orders"]})
    assert one(con, """
        SELECT count(*) FROM ch JOIN upd USING (o_orderkey)
        WHERE _change_type = 'update_postimage' AND ch.o_orderpriority = upd.o_orderpriority""") == b.counts["orders"]["updated"]


def _fingerprint(batch):
    return (
        batch.counts,
        batch.deletes,
        {t: tbl.to_pylist() for t, tbl in batch.inserts.items()},
        {t: tbl.to_pylist() for t, tbl in batch.updates.items()},
    )


def test_deterministic_for_a_seed(tpch_tiny, tpch_copy):
    # generation only reads the tables, so two streams over the same tables are comparable
    a = tpch.UpdateStream(tpch_tiny, seed=5)
    b = tpch.UpdateStream(tpch_tiny, seed=5)
    c = tpch.UpdateStream(tpch_tiny, seed=6)
    fa = [_fingerprint(a.next_batch(700)) for _ in range(3)]
    fb = [_fingerprint(b.next_batch(700)) for _ in range(3)]
    fc = [_fingerprint(c.next_batch(700)) for _ in range(3)]
    assert fa == fb
    assert fa != fc
    # applying does not change what comes next
    d = tpch.UpdateStream(tpch_copy, seed=5)
    fd = [_fingerprint(d.next_batch(700).apply()) for _ in range(3)]
    assert fd == fa


def test_apply_in_order_only(tpch_copy):
    s = tpch.UpdateStream(tpch_copy, seed=1)
    b1 = s.next_batch(100)
    b2 = s.next_batch(100)
    with pytest.raises(RuntimeError, match="in order"):
        b2.apply()
    b1.apply()
    with pytest.raises(RuntimeError, match="already applied"):
        b1.apply()
    b2.apply()
    check_integrity(read_all(tpch_copy))


def test_insert_only_and_small_batches(tpch_copy):
    s = tpch.UpdateStream(tpch_copy, seed=2, insert_fraction=1.0, update_fraction=0.0)
    for size in (0, 1, 2, 3, 17):
        b = s.next_batch(size)
        assert b.rows_changed == size
        assert b.deleted == 0 and b.updated == 0
        b.apply()
    tables = read_all(tpch_copy)
    check_integrity(tables)
    assert tables["orders"].num_rows >= SF001_ROWS["orders"]


def test_parallel_and_sequential_apply_agree(tpch_tiny, tpch_copy, tmp_path):
    import shutil

    other = {}
    for t, p in tpch_tiny.items():
        shutil.copytree(p, tmp_path / "seq" / t)
        other[t] = str(tmp_path / "seq" / t)
    a = tpch.UpdateStream(tpch_copy, seed=8)
    b = tpch.UpdateStream(other, seed=8)
    for _ in range(2):
        ba = a.apply(a.next_batch(800), parallel=True)
        bb = b.apply(b.next_batch(800), parallel=False)
        assert ba.versions == bb.versions
    for t in tpch.DYNAMIC:
        key = [c for c in tpch.SCHEMAS[t].names if c.endswith("key") or c.endswith("linenumber")]
        ta = scan(tpch_copy[t]).sort_by([(k, "ascending") for k in key])
        tb = scan(other[t]).sort_by([(k, "ascending") for k in key])
        assert ta.equals(tb), t
