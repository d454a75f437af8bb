"""Window calls inside expressions (frontend/windows.py): each call a window function of the
layer, the expression a column over it; its parts that read columns or aggregates are hidden
inner columns, its literals stay in place (Spark types an integer literal dividing a decimal
by its value, a column by its type: a different scale)."""
from compiler_helpers import spec_of
from sqlglot import exp

from viewlet.frontend.windows import CALL, INPUT


def test_an_expression_over_a_window_call_is_a_column_over_hidden_inputs():
    spec = spec_of("SELECT s.c, s.b - AVG(s.b) OVER (PARTITION BY s.c) AS diff FROM s")
    layer = spec.window
    assert layer.columns[-1] == ("expr", 0, "diff")
    assert [f.kind for f in layer.functions] == ["avg"]
    template = layer.expressions[0]
    assert isinstance(template, exp.Sub)
    inp, call = template.this.name, template.expression.name
    assert call == f"{CALL}0"
    assert layer.hidden[int(inp[len(INPUT):]) - layer.visible] == "s.b"


def test_literals_stay_in_place_and_parts_without_calls_are_one_input():
    spec = spec_of("SELECT s.c, ROUND(SUM(s.b) OVER (PARTITION BY s.c) / 3, 2) AS a, "
                   "s.b * 2 - RANK() OVER (ORDER BY s.b) AS k FROM s")
    layer = spec.window
    third, k = layer.expressions
    assert sorted(lit.this for lit in third.find_all(exp.Literal)) == ["2", "3"]
    assert "s.b * 2" in layer.hidden
    assert not any(lit.this == "2" for lit in k.find_all(exp.Literal))
