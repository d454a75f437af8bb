"""The documentation site: ``mkdocs build --strict`` (offline) and a check of every link."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .htmltree import Page
from .linkcheck import check_site

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAV = ["index.html", "quickstart/index.html", "sql-reference/index.html", "concepts/index.html",
       "operations/index.html", "benchmark/index.html", "notebook/index.html",
       "internals/index.html"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_PROXY="*", no_proxy="*")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--clean",
                           "-f", os.path.join(ROOT, "mkdocs.yml"), "-d", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return str(out)


def _page(site, name) -> Page:
    with open(os.path.join(site, name), encoding="utf-8") as f:
        return Page(f.read())


def test_every_nav_page_is_built(site):
    for name in NAV:
        assert os.path.isfile(os.path.join(site, name)), name
    assert not os.path.exists(os.path.join(site, "hooks"))      # build code is not published


def test_every_link_and_anchor_resolves(site):
    assert check_site(site) == []


def test_notebook_page_shows_the_executed_notebook(site):
    page = _page(site, "notebook/index.html")
    images = [url for tag, _, url in page.links if tag == "img"]
    assert any(url.startswith("data:image/png;base64,") for url in images)   # the plot
    with open(os.path.join(site, "notebook", "index.html"), encoding="utf-8") as f:
        html_text = f.read()
    for css_class in ("viewlet-explain", "viewlet-describe"):    # vl.explain/describe as tables
        assert f'<div class="viewlet-display {css_class}">' in html_text
    assert "equal to spark.sql(query): True" in page.text
    assert "equal to spark.sql(query): False" not in page.text
    assert any(url == "../notebooks/viewlet-tour.ipynb" for _, _, url in page.links)
    assert os.path.isfile(os.path.join(site, "notebooks", "viewlet-tour.ipynb"))


def test_concepts_picture_is_published(site):
    page = _page(site, "concepts/index.html")
    images = [url for tag, _, url in page.links if tag == "img"]
    assert images == ["../img/weighted-sales-maps.svg"]
    svg = os.path.join(site, "img", "weighted-sales-maps.svg")
    import xml.etree.ElementTree as ET
    root = ET.parse(svg).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    texts = " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
    # the picture draws the maps of the program the page shows (EXPLAIN's text)
    import re
    with open(os.path.join(site, "concepts", "index.html"), encoding="utf-8") as f:
        explained = set(re.findall(r"\bm\d+_[a-z]+(?=\[)", f.read()))
    assert explained and set(re.findall(r"\bm\d+_[a-z]+", texts)) == explained
    assert "view_state[]" in texts


def test_link_check_reports_broken_links(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "index.html").write_text(
        '<h1 id="top">x</h1><a href="a/">ok</a><a href="#top">ok</a><a href="#nowhere">bad</a>'
        '<a href="missing.html">bad</a><a href="https://example.org/x">ok</a>'
        '<a href="https:/no-host">bad</a><img src="data:text/html;base64,PGI+">'
        '<a href="javascript:alert(1)">bad</a>')
    (tmp_path / "a" / "index.html").write_text(
        '<a href="../index.html#top">ok</a><a href="../index.html#gone">bad</a>'
        '<a href="../../outside.html">bad</a>')
    problems = check_site(str(tmp_path))
    assert len(problems) == 7, problems
    for fragment in ("#nowhere", "missing.html", "https:/no-host", "data:text/html",
                     "javascript:", "#gone", "outside.html"):
        assert sum(fragment in p for p in problems) == 1, (fragment, problems)
