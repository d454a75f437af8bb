"""HTML and text renderings of EXPLAIN / DESCRIBE (viewlet.api.display) on a real view."""
from __future__ import annotations

import re

import pyarrow as pa
import pytest
from deltalake import write_deltalake

import viewlet
from tests.spark.oracle import explain_parts
from viewlet.api.display import Description, Explanation

from .htmltree import Page

# A string literal full of HTML metacharacters: it reaches the query text and the map
# definitions, so every rendering must escape it.
NASTY = '<script>alert("&")</script>'
QUERY = ("SELECT r.a, SUM(s.f) AS total, COUNT(*) AS n FROM shop_r r JOIN shop_s s ON r.b = s.b "
         f"WHERE s.tag <> '{NASTY}' GROUP BY r.a")


@pytest.fixture(scope="module")
def view(spark, vl, tmp_path_factory):
    root = tmp_path_factory.mktemp("display")
    cdf = {"delta.enableChangeDataFeed": "true"}
    write_deltalake(str(root / "r"), pa.table({"a": pa.array([1, 1, 2], pa.int32()),
                                               "b": pa.array([10, 20, 10], pa.int32())}),
                    configuration=cdf)
    write_deltalake(str(root / "s"), pa.table({"b": pa.array([10, 20, 20], pa.int32()),
                                               "f": [1.5, 2.0, 4.0],
                                               "tag": ["x", NASTY, "y"]}),
                    configuration=cdf)
    viewlet.register_table(spark, "shop_r", str(root / "r"), replace=True)
    viewlet.register_table(spark, "shop_s", str(root / "s"), replace=True)
    spark.sql(f"CREATE OR REPLACE INCREMENTAL VIEW shop_totals AS {QUERY}")
    yield "shop_totals"
    spark.sql("DROP INCREMENTAL VIEW IF EXISTS shop_totals")


def _strict(html_text: str) -> Page:
    page = Page(html_text, strict=True)
    assert page.errors == []
    return page


def test_explanation_text_is_the_explain_statement(spark, vl, view):
    program, execution = explain_parts(spark, view)
    explanation = vl.explain(view)
    assert isinstance(explanation, Explanation)
    assert explanation.text == program and explanation.execution == execution
    assert repr(explanation) == f"{program}\n\n{execution}" == str(explanation)


def test_explanation_structure_follows_the_program(vl, view):
    explanation = vl.explain(view)
    program = vl.ctx.load(view).compiled.program
    assert [m.name for m in explanation.maps] == list(program.maps)
    assert explanation.maps[0].role == "view state"
    assert [t.relation for t in explanation.triggers] == ["shop_r", "shop_s"]
    for t in explanation.triggers:
        assert [s.number for s in t.statements] == list(range(1, len(t.statements) + 1))
        assert len(t.statements) == len(program.statements_for(t.relation)) > 0
        assert set(t.merges) == {s.target for s in t.statements}
        for s in t.statements:       # each statement's text is its line of EXPLAIN
            assert f"{s.number:02d} {s.text}    -- {s.strategy}" in explanation.text

    page = _strict(explanation._repr_html_())
    values = sum(len(m.values) for m in explanation.maps)
    statements = sum(len(t.statements) for t in explanation.triggers)
    assert page.counts["table"] == 1 + len(explanation.triggers)
    # header row of every table + one row per map value column + one per statement
    assert page.counts["tr"] == page.counts["table"] + values + statements
    for m in explanation.maps:
        assert m.name in page.text
    for t in explanation.triggers:
        for s in t.statements:
            assert s.text in page.text       # unescaped text survives the HTML round trip


def test_explanation_html_escapes_user_strings(vl, view):
    explanation = vl.explain(view)
    assert NASTY in explanation.sql                       # the literal is in the data ...
    assert any(NASTY in d for m in explanation.maps for _, d in m.values)
    html_text = explanation._repr_html_()
    assert "<script>" not in html_text                    # ... never as markup
    assert "&lt;script&gt;alert(&quot;&amp;&quot;)&lt;/script&gt;" in html_text
    page = _strict(html_text)
    assert "script" not in page.counts
    assert NASTY in page.text


def test_description_matches_describe_statement(spark, vl, view):
    rows = [tuple(r) for r in spark.sql(f"DESCRIBE INCREMENTAL VIEW {view}").collect()]
    description = vl.describe(view)
    assert isinstance(description, Description)
    assert description.rows == rows
    assert description.value("view", "name") == view
    with pytest.raises(KeyError):
        description.value("view", "no such row")
    text_lines = repr(description).splitlines()
    assert len(text_lines) == len(rows)
    for line, (section, name, value) in zip(text_lines, rows):
        assert line.startswith(section) and name in line and line.endswith(value.rstrip())

    html_text = description._repr_html_()
    page = _strict(html_text)
    assert page.counts["tr"] == 1 + len(rows)
    assert "<script>" not in html_text and NASTY in page.text   # the query row
    maps = [n for s, n, _ in rows if s == "map"]
    assert maps and all(m in page.text for m in maps)


def test_markdown_form_is_the_text_in_a_fence_no_backticks_can_close():
    d = Description("v", [("view", "query", "SELECT '```' AS x"), ("view", "name", "v")])
    md = d._repr_markdown_()
    fence = re.match(r"(`+)text\n", md).group(1)
    assert len(fence) == 4
    assert md == f"{fence}text\n{repr(d)}\n{fence}\n"
    assert "```" in repr(d)


def test_description_escapes_every_cell():
    d = Description("v", [("<s>", "<n>", 'a "b" & <c>')])
    html_text = d._repr_html_()
    for raw in ("<s>", "<n>", "<c>"):
        assert raw not in html_text
    assert "&lt;s&gt;" in html_text and "&quot;b&quot; &amp; &lt;c&gt;" in html_text
    assert Page(html_text, strict=True).text.count('a "b" & <c>') == 1
