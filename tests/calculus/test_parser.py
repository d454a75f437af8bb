"""The calculus's text form: parse(show(x)) == x for every query of compiled programs and for
each atom the printer writes; malformed text is refused with its position."""
import functools
from fractions import Fraction

import pytest

from compiler_helpers import compile_sql
from viewlet.calculus.ir import (COUNT_DISTINCT, MIN, Add, Const, Cond, DeltaRel, Domain, Groups, Lift,
                                 MapRef, Monomial, Mul, Nested, Query, Rel, Sum, Value)
from viewlet.calculus.parser import CalculusSyntaxError, parse, parse_expr, parse_monomial
from viewlet.calculus.printer import show, show_monomial
from viewlet.calculus.scalar import Scalar
from viewlet.errors import ViewletError

import test_multisets
import test_nested
import test_outer_joins
import test_setops
import test_tpch
import test_tpch_nested


def _views():
    """(id, sql, tables, caches): TPC-H and nested TPC-H views, nested subqueries, outer joins,
    set operations, MIN / MAX / DISTINCT multisets (also as view caches)."""
    for name in ("q1", "q3", "q5", "q6", "q10"):
        yield f"tpch-{name}", test_tpch.load_query(name), test_tpch.TABLES, False
    for name in ("q2", "q11", "q17", "q18", "q20", "q22"):
        yield (f"tpch-nested-{name}", test_tpch_nested.unlimited(test_tpch_nested.load(name)),
               test_tpch_nested.TPCH, False)
    for module in (test_nested, test_outer_joins, test_setops):
        for name, sql in sorted(module.SHAPES.items()):
            yield f"{module.__name__}-{name}", sql, None, False
    for name, sql in sorted(test_multisets.SHAPES.items()):
        yield f"multisets-{name}", sql, test_multisets.TYPED, False
    for name, sql in sorted(test_multisets.CACHED.items()):
        yield f"multisets-cached-{name}", sql, test_multisets.TYPED, True
    for name in ("scalar_eq_corr", "scalar_inequality_corr", "nested_twice"):
        yield f"nested-cached-{name}", test_nested.SHAPES[name], None, True


VIEWS = list(_views())


@functools.lru_cache(maxsize=None)
def program_queries(index):
    """Every map definition and trigger statement of the VIEWS[index] program."""
    _, sql, tables, caches = VIEWS[index]
    _, program = compile_sql(sql, None, tables=tables, caches=caches)
    queries = [q for m in program.maps.values() for q in m.values.values()]
    return queries + [s.rhs for stmts in program.triggers.values() for s in stmts]


@pytest.mark.parametrize("index", range(len(VIEWS)), ids=[v[0] for v in VIEWS])
def test_compiled_program_round_trips(index):
    queries = program_queries(index)
    assert queries
    for q in queries:
        text = show(q)
        assert parse(text) == q, text


def test_compiled_programs_cover_every_atom_kind():
    """The round trips above meet every atom (else a kind could print ambiguously unseen)."""
    from viewlet.calculus.ir import walk_atoms
    seen = set()
    for index in range(len(VIEWS)):
        for q in program_queries(index):
            for a in walk_atoms(q):
                seen.add(type(a).__name__ if not isinstance(a, Nested)
                         else ("Nested", a.kind != "sum", a.null_safe, a.cached))
    assert {"Rel", "DeltaRel", "MapRef", "Value", "Cond", "Lift", "Domain", "Groups"} <= seen
    assert {("Nested", False, True, False), ("Nested", False, False, True),
            ("Nested", True, False, False), ("Nested", True, True, False),
            ("Nested", True, False, True)} <= seen


X, Y = Scalar.var("x"), Scalar.var("y")
SUM_S = Query(("x",), (Monomial(1, (Rel("s", ("b", "c"), ("x", "y")), Value(Y))),))
ATOMS = [
    Rel("r", ("a", "b"), ("x", "y")),
    Rel("r", (), ()),
    DeltaRel("orders", ("o_key",), ("x",)),
    MapRef("m1_r", ("x", "y")),
    MapRef("m1_r", (), "v2"),
    Value(X),
    Value(Scalar.parse("`x` * (1 - `y`)")),
    Value(Scalar.parse("-1")),
    Cond(Scalar.parse("`x` < 3 AND `y` LIKE 'a)b%'")),
    Cond(Scalar.parse("NOT `x` IS NULL")),
    Lift("z", Scalar.parse("CAST(NULL AS INT)")),
    Lift("z", X),
    Lift("z", Scalar.parse("CASE WHEN `x` = 0 THEN NULL ELSE `y` END")),
    Nested("z", SUM_S),
    Nested("z", SUM_S, null_safe=True),
    Nested("z", SUM_S, cached=True, null_safe=True),
    Nested("z", Query(("x", "y"), SUM_S.monomials), kind=MIN),
    Nested("z", Query(("x", "y"), SUM_S.monomials), kind=COUNT_DISTINCT, cached=True),
    Nested("z", Query((), ())),
    Domain(Query(("x",), (Monomial(1, (DeltaRel("s", ("b", "c"), ("x", "dom_c")),)),))),
    Groups(SUM_S),
]


@pytest.mark.parametrize("atom", ATOMS, ids=lambda a: show(a))
def test_atom_round_trips(atom):
    mono = Monomial(-2, (Rel("t", ("c",), ("x",)), atom))
    assert parse_monomial(show_monomial(mono)) == mono
    assert parse(show(Query(("x",), (mono, Monomial(1, (atom,)))))) == Query(("x",), (mono, Monomial(1, (atom,))))


def test_monomial_coefficients():
    assert parse_monomial("3") == Monomial(3, ())
    assert parse_monomial("-1/2 * x") == Monomial(Fraction(-1, 2), (Value(X),))
    assert parse("Sum[x](0)") == Query(("x",), ())


def test_expression_round_trips():
    r, s = Rel("r", ("a",), ("x",)), Rel("s", ("b",), ("x",))
    cond = Cond(Scalar.parse("`x` > 2"))
    for expr in [Mul((r, Add((s, Mul((Const(-1), s)))), cond)),
                 Sum(("x",), Add((r, Const(0), Mul((Const(2), s, Value(X)))))),
                 Mul((Sum(("x",), r), Nested("z", SUM_S), Lift("w", X), Cond(Scalar.parse("TRUE"))))]:
        assert parse_expr(show(expr)) == expr, show(expr)


def test_a_batch_is_a_d_prefixed_name_unless_tables_say_otherwise():
    assert parse_monomial("dr(a: x)").atoms == (DeltaRel("r", ("a",), ("x",)),)
    assert parse_monomial("dept(a: x)", tables={"dept"}).atoms == (Rel("dept", ("a",), ("x",)),)
    assert parse_monomial("ddept(a: x)", tables={"dept"}).atoms == (DeltaRel("dept", ("a",), ("x",)),)


@pytest.mark.parametrize("text,position,expected", [
    ("Sum[x](r(a: x) * )", 17, "an atom"),
    ("Sum[x](r(a x))", 11, "':' between a column and its variable"),
    ("Sum[x, ](r(a: x))", 7, "a variable"),
    ("Sum[x](r(a: x)", 14, "'+' or ')' closing the query"),
    ("Sum[x](r(a: x)) junk", 16, "the end of the text"),
    ("Sum[x](r(a: x) * (x < ))", 18, "a Spark SQL expression"),
    ("Sum[x](r(a: x) * {x + 1)", 23, "'}' closing the SQL"),
    ("Sum[x](Dom[y](Sum[x](dr(a: x))))", 7, "the same variables in Dom[...]"),
    ("Sum[x](r(a: x) * (z := MIN[v] Sum[x](s(b: x, c: w))))", 30, "a query whose last group variable is v"),
    ("r(a: x)", 0, "'Sum[' opening a query"),
])
def test_malformed_text_names_the_position(text, position, expected):
    with pytest.raises(CalculusSyntaxError) as err:
        parse(text)
    assert isinstance(err.value, ViewletError)
    assert err.value.position == position, err.value.message
    assert f"position {position} " in err.value.message and expected in err.value.message, err.value.message


def test_error_names_line_and_column():
    with pytest.raises(CalculusSyntaxError, match=r"position 22 \(line 2, column 15\)"):
        parse("Sum[x](\n    r(a: x) + +)")
