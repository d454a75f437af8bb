"""The worked examples of the DBToaster papers, compiled by Viewlet.

Maps are identified by their definitions up to variable names (canonical form), never by
generated names; statements are compared through `statement_signatures`, which labels every
variable by the batch column that binds it or the target key it loops over.
"""
from decimal import Decimal

from compiler_helpers import (Q3_TABLES, aux_maps, compile_sql, dump, identify_maps, query,
                              reads_base, rel, statement_signatures)
from viewlet.calculus.delta import delta
from tests.reference.evaluate import ProgramSimulator, evaluate
from viewlet.calculus.ir import Rel
from viewlet.calculus.normalize import normalize
from viewlet.compiler.program import VALUE


# -- [J] Ex. 1: COUNT(R x S) -------------------------------------------------------------------

def _ex1():
    spec, p = compile_sql("SELECT COUNT(*) FROM R, S", fuse=False)
    roles = identify_maps(p, {
        "dR_Q": query([], Rel("s", (), ())),      # Delta_R Q = count(S)
        "dS_Q": query([], Rel("r", (), ())),      # Delta_S Q = count(R)
    })
    return spec, p, roles


def test_ex1_count_rxs_program():
    spec, p, roles = _ex1()
    assert list(spec.columns) == ["__count"] and spec.group == ()
    assert len(aux_maps(p)) == 2, dump(p)
    assert not reads_base(p)
    # "Inserting into R does Q += Delta_R Q and Delta_S Q += 1" (and symmetrically for S);
    # Delta_R Delta_S Q = 1 is a constant, so it is not a map.
    assert statement_signatures(p, roles, "Q") == {
        "r": ["Q.__count += dR_Q[] * Δr", "dS_Q.__v += Δr"],
        "s": ["Q.__count += dS_Q[] * Δs", "dR_Q.__v += Δs"],
    }


def test_ex1_state_trace():
    """[J] Ex. 1's table: from |R| = 2, |S| = 3, single-tuple inserts S, R, S, S."""
    spec, p, roles = _ex1()
    name = {role: n for n, (role, _) in roles.items()}
    # Delta_R Delta_S Q: what one inserted R tuple adds to Delta_S Q (the statement's rhs)
    (ds_stmt,) = [s for s in p.statements_for("r") if s.target == name["dS_Q"]]
    one_r = [({"a": 0, "b": 0}, 1)]
    tup = lambda i: {"a": i, "b": i, "c": i}  # noqa: E731
    sim = ProgramSimulator(p, {"r": [(tup(i), 1) for i in range(2)],
                               "s": [(tup(i), 1) for i in range(3)]})

    def state():
        return (sum(m for _, m in sim.relations["r"]), sum(m for _, m in sim.relations["s"]),
                sim.maps[p.view_map]["__count"][()], sim.maps[name["dR_Q"]][VALUE][()],
                sim.maps[name["dS_Q"]][VALUE][()],
                evaluate(ds_stmt.rhs, relations=sim.relations, deltas={"r": one_r})[()])

    trace = [state()]
    for i, table in enumerate("SRSS"):
        sim.apply({table.lower(): [(tup(10 + i), 1)]})
        trace.append(state())
    #          |R| |S|  Q  dRQ dSQ dRdSQ
    assert trace == [
        (2, 3, 6, 3, 2, 1),
        (2, 4, 8, 4, 2, 1),
        (3, 4, 12, 4, 3, 1),
        (3, 5, 15, 5, 3, 1),
        (3, 6, 18, 6, 3, 1),
    ]
    # deletes are the duals of inserts
    sim.apply({"r": [(tup(0), -1)], "s": [(tup(0), -1)]})
    assert state()[:5] == (2, 5, 10, 5, 2)


# -- [J] Ex. 2: Orders / Lineitem ----------------------------------------------------------------

EX2 = "SELECT SUM(LI.PRICE * O.XCH) FROM Orders O, Lineitem LI WHERE O.ORDK = LI.ORDK"


def _ex2():
    spec, p = compile_sql(EX2, fuse=False)
    O = rel("orders", ordk="k", xch="x")       # noqa: E741
    LI = rel("lineitem", ordk="k", price="p")
    roles = identify_maps(p, {
        "Q_O": query(["k"], LI, "p"),          # Delta_O Q / xch: Sum[ordk](Lineitem * price)
        "Q_LI": query(["k"], O, "x"),          # Delta_LI Q / price: Sum[ordk](Orders * xch)
        # row counts of the join, for the view's __count (group existence)
        "n_LI": query(["k"], LI),
        "n_O": query(["k"], O),
    })
    return spec, p, roles


def test_ex2_orders_lineitem_program():
    spec, p, roles = _ex2()
    assert list(spec.columns) == ["__count", "s0"]
    assert len(aux_maps(p)) == 4, dump(p)
    assert not reads_base(p), "unlimited depth: no statement reads a base relation"
    sigs = statement_signatures(p, roles, "Q")
    # on insert into O values (ordk, custk, xch): Q += xch * Q_O[ordk]; Q_LI[ordk] += xch
    assert "Q.s0 += Q_O[k=orders.ordk] * val(orders.xch) * Δorders" in sigs["orders"]
    assert "Q_LI[k=orders.ordk].__v += val(orders.xch) * Δorders" in sigs["orders"]
    # on insert into LI values (ordk, ptk, price): Q += price * Q_LI[ordk]; Q_O[ordk] += price
    assert "Q.s0 += Q_LI[k=lineitem.ordk] * val(lineitem.price) * Δlineitem" in sigs["lineitem"]
    assert "Q_O[k=lineitem.ordk].__v += val(lineitem.price) * Δlineitem" in sigs["lineitem"]
    # plus the same for the row count
    assert sigs == {
        "orders": sorted([
            "Q.s0 += Q_O[k=orders.ordk] * val(orders.xch) * Δorders",
            "Q_LI[k=orders.ordk].__v += val(orders.xch) * Δorders",
            "Q.__count += n_LI[k=orders.ordk] * Δorders",
            "n_O[k=orders.ordk].__v += Δorders"]),
        "lineitem": sorted([
            "Q.s0 += Q_LI[k=lineitem.ordk] * val(lineitem.price) * Δlineitem",
            "Q_O[k=lineitem.ordk].__v += val(lineitem.price) * Δlineitem",
            "Q.__count += n_O[k=lineitem.ordk] * Δlineitem",
            "n_LI[k=lineitem.ordk].__v += Δlineitem"]),
    }


def test_ex2_delta_is_the_papers():
    """[J] Ex. 6: Delta_{+O(ordk, custk, xch)} Q = xch * Sum(LI.price where LI.ordk = ordk), both
    as the normalized delta over the base relations and as the statement over the maps."""
    spec, p, roles = _ex2()
    dq = normalize(delta(spec.columns["s0"].to_expr(), "orders"), group=())
    assert len(dq.monomials) == 1
    li = [({"ordk": 1, "ptk": 1, "price": Decimal("10.00")}, 1),
          ({"ordk": 1, "ptk": 2, "price": Decimal("5.00")}, 1),
          ({"ordk": 2, "ptk": 1, "price": Decimal("7.00")}, 1)]
    batch = {"orders": [({"ordk": 1, "custk": 9, "xch": Decimal("2.00")}, 1)]}
    assert evaluate(dq, relations={"lineitem": li, "orders": []}, deltas=batch) == {(): 30}
    sim = ProgramSimulator(p, {"lineitem": li, "orders": []})
    (stmt,) = [s for s in p.statements_for("orders") if s.column == "s0"]
    assert evaluate(stmt.rhs, maps=sim.map_values(), deltas=batch) == {(): 30}


def test_ex2_decimal_values():
    spec, p, roles = _ex2()
    o = lambda k, x: ({"ordk": k, "custk": 1, "xch": Decimal(x)}, 1)  # noqa: E731
    li = lambda k, pr: ({"ordk": k, "ptk": 1, "price": Decimal(pr)}, 1)  # noqa: E731
    sim = ProgramSimulator(p, {"orders": [o(1, "2.00")], "lineitem": [li(1, "10.00")]})
    sim.apply({"lineitem": [li(1, "5.55"), li(2, "1.10")]})
    sim.apply({"orders": [o(2, "0.10"), o(1, "0.50")]})
    assert sim.maps[p.view_map]["s0"] == {(): Decimal("38.985")}  # 15.55 * 2.50 + 1.10 * 0.10
    assert sim.maps[p.view_map]["__count"] == {(): 5}
    assert sim.expected() == sim.maps[p.view_map]


# -- [TEX] §3.1: the TPC-H Q3-like program ---------------------------------------------------

Q3 = """select l.ordkey, o.sprior, sum(l.extprice)
        from customer c, orders o, lineitem l
        where c.custkey = o.custkey and l.ordkey = o.ordkey
        group by l.ordkey, o.sprior"""


def _q3():
    spec, p = compile_sql(Q3, tables=Q3_TABLES, fuse=False)
    O = lambda ck, ok, sp: rel("orders", custkey=ck, ordkey=ok, sprior=sp)  # noqa: E731,E741
    L = lambda ok, ep: rel("lineitem", ordkey=ok, extprice=ep)              # noqa: E731
    C = lambda ck: rel("customer", custkey=ck)                              # noqa: E731
    roles = identify_maps(p, {
        # the draft's maps (definitions as in the digest, checked there by simulation)
        "m_c": query(["ck", "ok", "sp"], O("ck", "ok", "sp"), L("ok", "ep"), "ep"),
        "m_cl": query(["ck", "ok", "sp"], O("ck", "ok", "sp")),
        "m_l": query(["ok", "sp"], C("ck"), O("ck", "ok", "sp")),
        "m_o": query(["ck"], C("ck")),
        "m_co": query(["ok"], L("ok", "ep"), "ep"),
        # Viewlet also keeps each group's row count (__count: a group exists while its count
        # is non-zero, which a SUM cannot tell). Its deltas need the COUNT versions of the
        # maps that carry extprice: m_c without the price factor, and m_co likewise. The
        # count versions of m_cl, m_l and m_o are those maps themselves (no price factor).
        "m_c#": query(["ck", "ok", "sp"], O("ck", "ok", "sp"), L("ok", "ep")),
        "m_co#": query(["ok"], L("ok", "ep")),
    })
    return spec, p, roles


def test_q3_like_maps():
    spec, p, roles = _q3()
    assert list(spec.columns) == ["__count", "s0"]
    assert sorted(r for r, _ in roles.values()) == sorted(
        ["m_c", "m_cl", "m_l", "m_o", "m_co", "m_c#", "m_co#"])
    assert len(aux_maps(p)) == 7, dump(p)
    assert not reads_base(p)


def test_q3_like_triggers():
    spec, p, roles = _q3()
    sigs = statement_signatures(p, roles, "m", view_keys=("ok", "sp"))
    # The verbatim program ([TEX] §3.1; m' = m_c, m'' = m_cl), statement by statement.
    verbatim = {
        # on_insert_customer(ck,nm,nk,bal):
        "customer": [
            # m[ordkey, sprior] += m_c[ck, ordkey, sprior]
            "m[ok=out, sp=out].s0 += m_c[ck=customer.custkey, ok=out:ok, sp=out:sp] * Δcustomer",
            # m_l[ordkey, sprior] += m_cl[ck, ordkey, sprior]
            "m_l[ok=out, sp=out].__v += m_cl[ck=customer.custkey, ok=out:ok, sp=out:sp] * Δcustomer",
            # m_o[ck] += 1
            "m_o[ck=customer.custkey].__v += Δcustomer",
        ],
        # on_insert_lineitem(ok,ep):
        "lineitem": [
            # m[ok, sprior] += ep * m_l[ok, sprior]
            "m[ok=lineitem.ordkey, sp=out].s0 += m_l[ok=lineitem.ordkey, sp=out:sp]"
            " * val(lineitem.extprice) * Δlineitem",
            # m_c[custkey, ok, sprior] += ep * m_cl[custkey, ok, sprior]
            "m_c[ck=out, ok=lineitem.ordkey, sp=out].__v += m_cl[ck=out:ck, ok=lineitem.ordkey,"
            " sp=out:sp] * val(lineitem.extprice) * Δlineitem",
            # m_co[ok] += ep
            "m_co[ok=lineitem.ordkey].__v += val(lineitem.extprice) * Δlineitem",
        ],
        # on_insert_order(ck,ok,sp):
        "orders": [
            # m[ok, sp] += m_co[ok] * m_o[ck]
            "m[ok=orders.ordkey, sp=orders.sprior].s0 += m_co[ok=orders.ordkey]"
            " * m_o[ck=orders.custkey] * Δorders",
            # m_l[ok, sp] += m_o[ck]
            "m_l[ok=orders.ordkey, sp=orders.sprior].__v += m_o[ck=orders.custkey] * Δorders",
            # m_c[ck, ok, sp] += m_co[ok]
            "m_c[ck=orders.custkey, ok=orders.ordkey, sp=orders.sprior].__v"
            " += m_co[ok=orders.ordkey] * Δorders",
            # m_cl[ck, ok, sp] += 1
            "m_cl[ck=orders.custkey, ok=orders.ordkey, sp=orders.sprior].__v += Δorders",
        ],
    }
    # The row count: the same statements without the price factor, writing __count, m_c#
    # and m_co# (m_l, m_cl and m_o already count rows).
    row_counts = {
        "customer": [
            "m[ok=out, sp=out].__count += m_c#[ck=customer.custkey, ok=out:ok, sp=out:sp] * Δcustomer",
        ],
        "lineitem": [
            "m[ok=lineitem.ordkey, sp=out].__count += m_l[ok=lineitem.ordkey, sp=out:sp] * Δlineitem",
            "m_c#[ck=out, ok=lineitem.ordkey, sp=out].__v += m_cl[ck=out:ck, ok=lineitem.ordkey,"
            " sp=out:sp] * Δlineitem",
            "m_co#[ok=lineitem.ordkey].__v += Δlineitem",
        ],
        "orders": [
            "m[ok=orders.ordkey, sp=orders.sprior].__count += m_co#[ok=orders.ordkey]"
            " * m_o[ck=orders.custkey] * Δorders",
            "m_c#[ck=orders.custkey, ok=orders.ordkey, sp=orders.sprior].__v"
            " += m_co#[ok=orders.ordkey] * Δorders",
        ],
    }
    assert sigs == {r: sorted(verbatim[r] + row_counts[r]) for r in verbatim}


def test_q3_like_program_runs():
    """Single-tuple inserts and deletes in random interleavings, as in the digest's check."""
    import random
    spec, p, roles = _q3()
    rng = random.Random(3)
    sim = ProgramSimulator(p, {})
    live = {"customer": [], "orders": [], "lineitem": []}
    for step in range(120):
        table = rng.choice(sorted(live))
        if live[table] and rng.random() < 0.3:
            row = live[table].pop(rng.randrange(len(live[table])))
            sim.apply({table: [(row, -1)]})
        else:
            row = {"customer": lambda: {"custkey": rng.randrange(4), "name": "n", "nationkey": 1,
                                        "acctbal": Decimal("1.00")},
                   "orders": lambda: {"custkey": rng.randrange(4), "ordkey": rng.randrange(6),
                                      "sprior": rng.randrange(2)},
                   "lineitem": lambda: {"ordkey": rng.randrange(6),
                                        "extprice": Decimal(rng.randrange(1, 999)) / 100}}[table]()
            live[table].append(row)
            sim.apply({table: [(row, 1)]})
        for name in p.maps:
            assert sim.maps[name] == sim.expected(name), (step, name)
    assert sim.maps[p.view_map]["s0"], "the trace should produce a non-empty view"
