"""Delta rules (calculus/delta.py) on expressions written as calculus text. The expectations
follow the rules of DBToaster [J] §3.4 (batch form, Hot Dog §3.1: a relation's delta is its
batch) and the range-restricted nested rule of [J] §5.3:

    d(Q1 + Q2) = dQ1 + dQ2             d(Sum[g] Q) = Sum[g] dQ       dR = the batch dR
    d(Q1 * Q2) = dQ1 * Q2 + Q1 * dQ2 + dQ1 * dQ2                    dc = dx = d(x θ y) = 0
    d(x := Q)  = Dom(dQ) * ((x := Q + dQ) - (x := Q))   Dom only when dQ binds Q's inputs
"""
from viewlet.calculus.delta import delta
from viewlet.calculus.normalize import fresh_names, normalize
from viewlet.calculus.parser import parse_expr

from .text import assert_expr, assert_query


def d(text, table):
    with fresh_names():
        return delta(parse_expr(text), table)


def test_product_with_one_changed_relation():
    assert_expr(d("r(a: x) * s(b: x)", "r"), "dr(a: x) * s(b: x)")
    assert_expr(d("r(a: x) * s(b: x)", "s"), "r(a: x) * ds(b: x)")


def test_a_relation_the_batch_does_not_touch_has_no_delta():
    assert_expr(d("Sum[x](r(a: x) * s(b: x))", "t"), "Sum[x](0)")


def test_self_join_takes_the_term_with_both_deltas():
    assert_expr(d("r(a: x) * r(a: y)", "r"),
                "dr(a: x) * r(a: y) + r(a: x) * dr(a: y) + dr(a: x) * dr(a: y)")


def test_self_join_of_the_journal_example_12_normalizes_to_two_terms():
    # Q[A,B] = R(A) * R(A) * S(B): d_{+R(x)} Q = (2 * R(x) + 1) * S(B), here for a batch dR
    with fresh_names():
        q = normalize(delta(parse_expr("Sum[A, B](r(a: A) * r(a: A) * s(b: B))"), "r"))
    assert_query(q, "Sum[A, B](2 * dr(a: A) * r(a: A) * s(b: B) + dr(a: A) * dr(a: A) * s(b: B))")


def test_sum_and_group_by_distribute_over_the_delta():
    assert_expr(d("Sum[x](r(a: x) + s(b: x))", "s"), "Sum[x](0 + ds(b: x))")


def test_conditions_values_constants_and_assignments_are_constant():
    # [J] Ex. 6: the condition and the values stay as factors of the batch's term
    assert_expr(d("2 * r(a: x, b: y) * (y > 3) * y * (z := y + 1) * s(b: z)", "r"),
                "2 * dr(a: x, b: y) * (y > 3) * y * (z := y + 1) * s(b: z)")


def test_nested_aggregate_the_batch_does_not_touch_is_constant():
    assert_expr(d("r(a: x) * (z := Sum[x](s(b: x)))", "r"), "dr(a: x) * (z := Sum[x](s(b: x)))")


def test_equality_correlated_nested_aggregate_is_restricted_to_the_touched_inputs():
    # (x := Q) changes only for the inputs the batch binds: Dom over ds's x column; the
    # condition reading it is one term over the rows where it flips (new value under a
    # fresh name: old and new in one monomial)
    flips = "((CASE WHEN (y < z_2) THEN 1 ELSE 0 END) <> (CASE WHEN (y < z) THEN 1 ELSE 0 END))"
    by = "{(CASE WHEN (y < z_2) THEN 1 ELSE 0 END) - (CASE WHEN (y < z) THEN 1 ELSE 0 END)}"
    assert_expr(d("r(a: x, b: y) * (z := Sum[x](s(b: x, c: w) * w)) * (y < z)", "s"),
                "r(a: x, b: y) * Dom[x](Sum[x](ds(b: x, c: dom_c)))"
                " * (z_2 := Sum[x](s(b: x, c: w) * w + ds(b: x, c: w2) * w2))"
                f" * (z := Sum[x](s(b: x, c: w) * w)) * {flips} * {by}")


def test_nested_value_read_by_a_value_keeps_old_and_new_terms():
    # a value (not only conditions) reads the nested aggregate: no single flip term
    assert_expr(d("r(a: x, b: y) * (z := Sum[x](s(b: x, c: w) * w)) * {z * y}", "s"),
                "r(a: x, b: y) * Dom[x](Sum[x](ds(b: x, c: dom_c)))"
                " * ((z := Sum[x](s(b: x, c: w) * w + ds(b: x, c: w2) * w2))"
                "    + -1 * (z := Sum[x](s(b: x, c: w) * w))) * {z * y}")


def test_inequality_correlated_nested_aggregate_is_not_restricted():
    # the batch does not bind the input x: the new value minus the old, for every x
    assert_expr(d("r(a: x) * (z := Sum[x](s(c: w) * (w < x)))", "s"),
                "r(a: x) * ((z := Sum[x](s(c: w) * (w < x) + ds(c: w2) * (w2 < x)))"
                "           + -1 * (z := Sum[x](s(c: w) * (w < x))))")


def test_uncorrelated_nested_aggregate_computes_its_value_twice():
    # [V] Ex. 8: Sum(sigma_{Sum(S) + dS = A} R) - Sum(sigma_{Sum(S) = A} R), as one term
    # over the rows of R whose comparison flips
    flips = "((CASE WHEN (z_2 = x) THEN 1 ELSE 0 END) <> (CASE WHEN (z = x) THEN 1 ELSE 0 END))"
    by = "{(CASE WHEN (z_2 = x) THEN 1 ELSE 0 END) - (CASE WHEN (z = x) THEN 1 ELSE 0 END)}"
    assert_expr(d("r(a: x) * (z := Sum[](s(b: w) * w)) * (z = x)", "s"),
                "r(a: x) * (z_2 := Sum[](s(b: w) * w + ds(b: w2) * w2))"
                f" * (z := Sum[](s(b: w) * w)) * {flips} * {by}")


def test_multiset_aggregate_takes_the_new_multiset():
    assert_expr(d("r(a: x) * (z := MIN[v] Sum[x, v](s(b: x, c: v)))", "s"),
                "r(a: x) * Dom[x](Sum[x](ds(b: x, c: dom_c)))"
                " * ((z := MIN[v] Sum[x, v](s(b: x, c: v) + ds(b: x, c: v)))"
                "    + -1 * (z := MIN[v] Sum[x, v](s(b: x, c: v))))")


def test_two_nested_aggregates_changed_by_one_batch_change_jointly():
    # new * new - old * old (the product rule's three terms, summed), over the inputs
    # either delta touches
    assert_expr(d("(y := Sum[x](s(b: x))) * (z := Sum[x](s(b: x, c: w) * w)) * r(a: x)", "s"),
                "r(a: x) * Dom[x](Sum[x](ds(b: x) + ds(b: x, c: dom_c)))"
                " * ((y := Sum[x](s(b: x) + ds(b: x))) * (z := Sum[x](s(b: x, c: w) * w + ds(b: x, c: w2) * w2))"
                "    + -1 * (y := Sum[x](s(b: x))) * (z := Sum[x](s(b: x, c: w) * w)))")
