"""NULL logic (calculus/nulls.py) as normalization applies it, text in and text out: SQL's
three-valued logic decided statically. A condition that can never be true takes its monomial
away, one that is always true goes, a value that is surely NULL adds nothing to a sum;
anything undecided is left to Spark. Outer-join padding (`y := CAST(NULL AS INT)`) is what
brings NULL literals into conditions."""
import pytest

from viewlet.calculus.normalize import fresh_names, normalize
from viewlet.calculus.parser import parse_expr

from .text import assert_query

PADDED = "r(a: x) * (y := CAST(NULL AS INT))"


def norm(text):
    with fresh_names():
        return normalize(parse_expr(text))


@pytest.mark.parametrize("condition", [
    "y = x", "y <> x", "x < y + 1", "NOT y = x",            # comparisons with NULL are NULL
    "NOT y IS NULL", "y <=> 1",                             # NULL is NULL, not 1
    "y IN (1, 2)", "y LIKE 'a%'", "y BETWEEN 1 AND x",
    "y > 1 AND x > 1",                                      # NULL AND anything: never TRUE
    "NOT (y > 1 OR y < 1)",
])
def test_a_condition_never_true_on_the_padding_removes_the_monomial(condition):
    assert_query(norm(f"Sum[x]({PADDED} * ({condition}) + s(b: x))"), "Sum[x](s(b: x))")


@pytest.mark.parametrize("condition", ["y IS NULL", "y <=> NULL", "y > 1 OR x = x OR TRUE",
                                       "NOT y IS NOT NULL", "-1 < 0.5"])
def test_a_condition_always_true_goes(condition):
    assert_query(norm(f"Sum[x]({PADDED} * ({condition}))"), "Sum[x](r(a: x))")


@pytest.mark.parametrize("condition,substituted", [
    ("y <=> x", "(CAST(NULL AS INT)) <=> x"),           # TRUE or FALSE: x decides
    ("y > 1 OR x > 1", "(CAST(NULL AS INT)) > 1 OR x > 1"),     # NULL OR x > 1 may be TRUE
    ("x IN (1, y)", "x IN (1, (CAST(NULL AS INT)))"),
])
def test_an_undecided_condition_stays_for_spark(condition, substituted):
    assert_query(norm(f"Sum[x]({PADDED} * ({condition}))"), f"Sum[x](r(a: x) * ({substituted}))")


def test_a_surely_null_value_adds_nothing():
    assert_query(norm(f"Sum[x]({PADDED} * {{y + x}} + s(b: x))"), "Sum[x](s(b: x))")
    assert_query(norm(f"Sum[x]({PADDED} * {{COALESCE(y, x)}})"),
                 "Sum[x](r(a: x) * {COALESCE((CAST(NULL AS INT)), x)})")


def test_a_nested_sum_correlated_on_a_null_input_has_its_empty_value():
    # no row matches NULL with `=`: the sum over no rows, 0
    assert_query(norm(f"Sum[x]({PADDED} * (z := Sum[y](s(b: y, c: w) * w)) * (z < x))"),
                 "Sum[x](r(a: x) * ((0) < x))")


def test_a_nested_min_correlated_on_a_null_input_is_null():
    assert_query(norm(f"Sum[x]({PADDED} * (z := MIN[v] Sum[y, v](s(b: y, c: v))) * (z < x))"),
                 "Sum[x](0)")


def test_a_null_safe_nested_aggregate_matches_the_null_input():
    # GROUP BY groups: NULL is a key like any other, so the aggregate stays
    text = f"Sum[x]({PADDED} * (z := null_safe Sum[y](s(b: y))) * (z < x))"
    assert_query(norm(text), text)
