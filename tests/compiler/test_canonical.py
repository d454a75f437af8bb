"""Canonical forms of map definitions (duplicate-map elimination, [J] §5.1)."""
import pytest

from compiler_helpers import compile_sql, dump, query, rel
from tests.reference.evaluate import ProgramSimulator
from viewlet.calculus.ir import Cond
from viewlet.calculus.scalar import Scalar
from viewlet.calculus.canonical import canonicalize


def test_equal_up_to_renaming():
    a = query(["k"], rel("r", a="k", b="x"), rel("s", b="x", c="y"), "y")
    b = query(["q"], rel("s", b="z", c="w"), rel("r", a="q", b="z"), "w")
    assert canonicalize(a)[0] == canonicalize(b)[0]
    assert canonicalize(a)[1] == ("k",) and canonicalize(b)[1] == ("q",)


def test_key_order_follows_the_structure():
    a = query(["k1", "k2"], rel("r", a="k1", b="k2"))
    b = query(["k2", "k1"], rel("r", a="k1", b="k2"))
    (ta, ka), (tb, kb) = canonicalize(a), canonicalize(b)
    assert ta == tb and ka == kb == ("k1", "k2")


@pytest.mark.parametrize("a, b", [
    # keys differ
    (query(["k"], rel("r", a="k", b="x")), query(["x"], rel("r", a="k", b="x"))),
    # a value factor differs
    (query(["k"], rel("r", a="k", b="x"), "x"), query(["k"], rel("r", a="k", b="x"))),
    # a condition differs
    (query(["k"], rel("r", a="k", b="x"), Cond(Scalar.parse("x > 1"))),
     query(["k"], rel("r", a="k", b="x"), Cond(Scalar.parse("x > 2")))),
    # tables differ
    (query(["k"], rel("r", a="k")), query(["k"], rel("s", b="k"))),
])
def test_different_definitions_differ(a, b):
    assert canonicalize(a)[0] != canonicalize(b)[0]


def test_nested_aggregate_kinds_differ():
    """(x := MIN of a multiset) and (x := MAX of it) are different definitions; the same kind
    over the same multiset is the same one."""
    from viewlet.calculus.ir import Nested
    ms = query(["k", "v"], rel("s", b="k", c="v"))

    def over(kind):
        return query(["k"], rel("r", a="k"), Nested("x", ms, kind=kind), "x")
    texts = {kind: canonicalize(over(kind))[0] for kind in ("min", "max", "count_distinct")}
    assert len(set(texts.values())) == 3, texts
    assert canonicalize(over("min"))[0] == texts["min"]



def test_projections_on_different_columns_differ():
    # Sum[k](r(a=k)) counts r by column a, Sum[k](r(b=k)) by column b
    a = query(["k"], rel("r", a="k"))
    b = query(["k"], rel("r", b="k"))
    assert canonicalize(a)[0] != canonicalize(b)[0]


def test_self_join_keeps_both_projection_maps():
    """SELECT COUNT(*) FROM r r1, r r2 WHERE r1.b = r2.a needs Sum[x](r(a=x)) (for changes to
    r1) and Sum[x](r(b=x)) (for changes to r2); the compiler keeps only the first and reads it
    for both, so inserting (1, 2) and then (2, 3) yields COUNT 0 instead of 1."""
    spec, p = compile_sql("SELECT COUNT(*) FROM r r1, r r2 WHERE r1.b = r2.a")
    sim = ProgramSimulator(p, {"r": []})
    sim.apply({"r": [({"a": 1, "b": 2}, 1)]})
    sim.apply({"r": [({"a": 2, "b": 3}, 1)]})
    assert sim.expected() == {"__count": {(): 1}}
    assert sim.maps[p.view_map] == {"__count": {(): 1}}, dump(p)
