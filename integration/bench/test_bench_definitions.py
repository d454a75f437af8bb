"""Which views a benchmark runs: names and files, and the workload each one needs."""
from __future__ import annotations

import pytest

from viewlet.tools.bench import definitions
from viewlet.errors import ViewletError


def test_names_resolve_to_the_sql_examples_with_their_workload():
    (q3,) = definitions.resolve(["q3"])
    assert q3.path.endswith("q3.sql") and q3.workload == definitions.TPCH
    assert q3.tables == ("customer", "lineitem", "orders")
    assert q3.query.startswith("SELECT") and "--" not in q3.query


def test_a_file_over_the_order_book(tmp_path):
    f = tmp_path / "Book_Notional.sql"
    f.write_text("-- per broker\nWITH b AS (SELECT * FROM bids)\n"
                 "SELECT broker_id, SUM(price * volume) AS n FROM b GROUP BY broker_id;\n")
    (view,) = definitions.resolve([str(f)])
    assert view.name == "book_notional" and view.workload == definitions.ORDERBOOK
    assert view.tables == ("bids",) and not view.query.endswith(";")


@pytest.mark.parametrize("text, message", [
    ("SELECT * FROM lineitem, bids", "only TPC-H tables"),
    ("SELECT COUNT(*) AS n FROM trades", "reads trades"),
    ("-- nothing here\n", "holds no query"),
    ("SELEC oops FROM", "cannot parse"),
])
def test_bad_files_are_clear_errors(tmp_path, text, message):
    f = tmp_path / "v.sql"
    f.write_text(text)
    with pytest.raises(ViewletError, match=message):
        definitions.resolve([str(f)])


def test_missing_names_files_and_duplicates(tmp_path):
    with pytest.raises(ViewletError, match="No view definition nope.sql"):
        definitions.resolve(["q1", "nope"])
    with pytest.raises(ViewletError, match="does not exist"):
        definitions.resolve([str(tmp_path / "gone.sql")])
    with pytest.raises(ViewletError, match="listed twice"):
        definitions.resolve(["q1", "Q1"])
    with pytest.raises(ViewletError, match="No views given"):
        definitions.resolve([" "])


def test_default_views_are_the_issue_views_that_exist():
    names = definitions.available()
    assert {"q1", "q3", "q6", "q10"} <= set(names)
    assert names == [n for n in definitions.ISSUE_VIEWS if n in names]
