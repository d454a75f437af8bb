"""Map fusion: definitions over the same join (a SUM's maps next to the row count's and the
count of non-NULL values') are columns of one map, so a batch reads, computes and writes
that join once. The fused program keeps every definition of the papers' program, as a
column; views created before fusion compile with fuse=False and keep their maps."""
import pytest

from compiler_helpers import aux_maps, compile_sql, dump
from test_randomized import check_equivalence
from test_tpch import TABLES, load_query, tpch_row
from viewlet.calculus.ir import Cond, MapRef, Value, walk_atoms
from viewlet.calculus.canonical import canonicalize
from viewlet.compiler.hoivm import join_skeleton
from viewlet.frontend.spec import COUNT_COLUMN


def _definitions(program):
    return {canonicalize(q, relations_first=True)[0]
            for m in aux_maps(program).values() for q in m.values.values()}


@pytest.mark.parametrize("name", ["q3", "q5", "q10"])
def test_fused_columns_are_the_papers_maps(name):
    _, fused = compile_sql(load_query(name), tables=TABLES)
    _, plain = compile_sql(load_query(name), tables=TABLES, fuse=False)
    # every definition of the unfused program is a column of the fused one, and no other
    assert _definitions(fused) == _definitions(plain), dump(fused)
    assert len(aux_maps(fused)) < len(aux_maps(plain))
    joins = []
    for m in aux_maps(fused).values():
        skeletons = {canonicalize(join_skeleton(q)[0], True)[0] for q in m.values.values()}
        assert len(skeletons) == 1, f"{m.name} fuses different joins:\n{dump(fused)}"
        joins += skeletons
    assert len(joins) == len(set(joins)), f"one join in two maps:\n{dump(fused)}"
    # the statements read fused columns: some MapRef names a column other than the first
    assert any(isinstance(a, MapRef) and a.column != "__v"
               for stmts in fused.triggers.values() for s in stmts for a in walk_atoms(s.rhs))
    # a statement per definition: no more than unfused (which misses a few duplicates)
    assert sum(map(len, fused.triggers.values())) <= sum(map(len, plain.triggers.values()))


def test_q3_lineitem_maps_fuse_count_sum_and_non_null_count():
    """Nullable columns: the revenue SUM needs the count of non-NULL values; the lineitem
    maps hold the row count (the support: a row is gone when it is 0), the revenue and the
    non-NULL count, one row per order."""
    nullable = {t: [(c, typ, True) for c, typ, _ in cols] for t, cols in TABLES.items()}
    _, fused = compile_sql(load_query("q3"), tables=nullable)
    by_relations = {tuple(sorted(m.relations())): m for m in aux_maps(fused).values()}
    for relations in [("lineitem",), ("lineitem", "orders")]:
        m = by_relations[relations]
        assert len(m.values) == 3 and m.support == "__v", dump(fused)
        atoms = [q.monomials[0].atoms for q in m.values.values()]
        assert not any(isinstance(a, Value) for a in atoms[0])          # the count
        assert sum(any(isinstance(a, Value) for a in x) for x in atoms) == 1     # revenue
        assert sum(any(isinstance(a, Cond) and a.pred.tests_not_null() for a in x)
                   for x in atoms) == 1                                   # non-NULL count
        assert m.zero_columns() == ["__v"]
    # the view's own state: a group is gone when its row count is 0, whatever its sums
    assert fused.maps[fused.view_map].zero_columns() == [COUNT_COLUMN]
    filters = {tuple(sorted(m.relations())): {a.pred.key for q in m.values.values()
                                              for a in q.monomials[0].atoms
                                              if isinstance(a, Cond) and not a.pred.tests_not_null()}
               for m in aux_maps(fused).values()}
    assert any("1995-03-15" in f for f in filters[("lineitem",)])   # filters stay in the join


@pytest.mark.parametrize("name", ["q3", "q5"])
def test_unfused_programs_still_equal_reevaluation(name):
    """Views created before fusion compile with fuse=False: that program stays correct."""
    sim = check_equivalence(load_query(name), None, 0, tables=TABLES, batches=6, row=tpch_row,
                            fuse=False)
    assert sim.nonempty
