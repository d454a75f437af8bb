"""The depth limit of compile_view: 0 re-evaluates, 1 is first-order IVM, n materializes
deltas up to order n (their own statements read base relations), None is full HO-IVM."""
import pytest

from compiler_helpers import compile_sql, dump, reads
from viewlet.calculus.ir import DeltaRel, MapRef, Rel

CHAIN3 = "SELECT r.a, t.d, COUNT(*), SUM(s.c) FROM r, s, t WHERE r.b = s.b AND s.c = t.c GROUP BY r.a, t.d"
CHAIN3_COUNT = "SELECT r.a, t.d, COUNT(*) FROM r, s, t WHERE r.b = s.b AND s.c = t.c GROUP BY r.a, t.d"
QUERIES = [
    "SELECT r.a, SUM(s.c) FROM r JOIN s ON r.b = s.b WHERE s.c > 2 GROUP BY r.a",
    CHAIN3,
    "SELECT r1.a, COUNT(*) FROM r r1, r r2 WHERE r1.b = r2.a GROUP BY r1.a",
    "SELECT r.a, s.c FROM r, s WHERE r.b < s.b",
]


def _statements(p):
    return [s for stmts in p.triggers.values() for s in stmts]


@pytest.mark.parametrize("sql", QUERIES)
def test_depth0_reevaluates(sql):
    spec, p = compile_sql(sql, depth=0)
    assert p.depth == 0 and list(p.maps) == [p.view_map]
    assert sorted(p.triggers) == sorted(p.relations())
    for rel, stmts in p.triggers.items():
        assert all(s.strategy == "reevaluate" and s.target == p.view_map for s in stmts)
        # one := per state column, its defining query over the base relations
        assert {s.column: s.rhs for s in stmts} == spec.columns
        assert not any(reads(s, DeltaRel) or reads(s, MapRef) for s in stmts)


@pytest.mark.parametrize("sql", QUERIES)
def test_depth1_is_first_order(sql):
    spec, p = compile_sql(sql, depth=1)
    assert p.depth == 1 and list(p.maps) == [p.view_map], dump(p)
    stmts = _statements(p)
    assert stmts and all(s.strategy == "incremental" and s.target == p.view_map for s in stmts)
    assert not any(reads(s, MapRef) for s in stmts)
    # every delta joins the batch with the other (base) relations of the view
    for s in stmts:
        for m in s.rhs.monomials:
            assert any(isinstance(a, DeltaRel) for a in m.atoms)
        assert reads(s, Rel) or all(sum(isinstance(a, DeltaRel) for a in m.atoms) > 1
                                    for m in s.rhs.monomials), dump(p)
    assert {s.column for s in stmts} == set(spec.columns)


def test_depth1_single_table_needs_no_base_reads():
    spec, p = compile_sql("SELECT r.a, SUM(r.b) FROM r WHERE r.b > 0 GROUP BY r.a", depth=1)
    assert not any(reads(s, Rel) for s in _statements(p))
    assert compile_sql("SELECT r.a, SUM(r.b) FROM r WHERE r.b > 0 GROUP BY r.a")[1].maps.keys() \
        == p.maps.keys()


def test_depth2_materializes_first_order_maps_that_read_base_relations():
    spec, p = compile_sql(CHAIN3_COUNT, depth=2)
    aux = {n: m for n, m in p.maps.items() if n != p.view_map}
    assert aux and all(m.level == 1 for m in aux.values()), dump(p)
    # the view's statements read maps only
    for s in _statements(p):
        if s.target == p.view_map:
            assert not reads(s, Rel) and reads(s, MapRef), dump(p)
    # first-order maps over two relations are maintained first-order: they read base tables
    joined = [n for n, m in aux.items() if m.values["__v"].degree() == 2]
    assert len(joined) == 2, dump(p)   # Sum[b, d](S * T) and Sum[a, c](R * S)
    assert len(aux) == 4, dump(p)      # and Sum[a, b](R), Sum[c, d](T)
    for n in joined:
        stmts = [s for s in _statements(p) if s.target == n]
        assert stmts and all(reads(s, Rel) and not reads(s, MapRef) for s in stmts), dump(p)
    for n, m in aux.items():
        if n not in joined:
            assert all(not reads(s, Rel) for s in _statements(p) if s.target == n)


def test_depth_none_and_3_need_no_base_reads_for_three_tables():
    for depth in (None, 3):
        spec, p = compile_sql(CHAIN3, depth=depth)
        assert not any(reads(s, Rel) for s in _statements(p)), dump(p)
        levels = {m.level for n, m in p.maps.items() if n != p.view_map}
        assert levels == {1, 2}, dump(p)
    # deeper limits change nothing once the recursion has bottomed out
    assert dump(compile_sql(CHAIN3, depth=7)[1]).count("MAP") == \
        dump(compile_sql(CHAIN3, depth=None)[1]).count("MAP")


def test_two_table_join_at_depth2_is_full_hoivm():
    sql = QUERIES[0]
    p2, pn = compile_sql(sql, depth=2)[1], compile_sql(sql, depth=None)[1]
    assert not any(reads(s, Rel) for s in _statements(p2))
    assert len(p2.maps) == len(pn.maps)
