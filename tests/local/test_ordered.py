"""The ordered table of top-N views (engine/maintain/topn.py) without Spark: random batches replace
groups' rows (groups appear, change, vanish, bag rows with copies), and after each the table
kept incrementally (recomputed from all rows only when `maintain` says it is short) equals the
first rows of every row sorted in the view's order."""
from __future__ import annotations

import random
from decimal import Decimal

import pyarrow as pa
import pytest

from viewlet.engine.maintain import topn as ordered
from viewlet.engine.state.layout import Column, ResultLayout
from viewlet.frontend.ordering import SortItem, TopN

OP = ordered.OP
SCHEMA = pa.schema([("g", pa.int64()), ("x", pa.float64()), ("d", pa.decimal128(10, 2)),
                    ("s", pa.string())])
LAYOUT = ResultLayout(tuple(Column(n, n, "") for n in SCHEMA.names), (("g", 0),), (),
                      bag=False, is_global=False)


def _row(rng, g):
    return {"g": g,
            "x": rng.choice([None, float("nan"), -0.0, 0.0, 1.5, -2.0, 3.25]),
            "d": rng.choice([None, Decimal("1.00"), Decimal("-3.50"), Decimal("7.25")]),
            "s": rng.choice([None, "a", "B", "é", "ab"])}


def _python_order(rows, top):
    """Spark's order written out in Python: NULLs first/last per item, NaN above every
    number, -0.0 = 0.0, then the output columns ascending with NULLs first."""
    def part(v, desc, nulls_first):
        if v is None:
            return (0 if nulls_first else 2,)
        if isinstance(v, float):
            v = (1, 0.0) if v != v else (0, v + 0.0)
            v = (-v[0], -v[1]) if desc else v
        elif desc:
            v = tuple(-ord(c) for c in v) + (1,) if isinstance(v, str) else -v
        return (1, v)
    items = [(SCHEMA.names[i.column], i.desc, i.nulls_first) for i in top.items] + \
        [(n, False, True) for n in SCHEMA.names]
    return sorted(rows, key=lambda r: [part(r[c], d, n) for c, d, n in items])


@pytest.mark.parametrize("slack", [1, None], ids=["slack1", "default"])
@pytest.mark.parametrize("seed", range(12))
def test_kept_rows_are_the_first_rows_of_all(seed, slack, monkeypatch):
    if slack is not None:
        monkeypatch.setattr(ordered, "SLACK_MAX", slack)
    rng = random.Random(seed)
    top = TopN((SortItem(1, rng.random() < 0.5, rng.random() < 0.5),
                SortItem(3, rng.random() < 0.5, rng.random() < 0.5)),
               limit=rng.randint(0, 4), offset=rng.randint(0, 2))
    keys = ordered.sort_keys(top, LAYOUT)
    groups = {g: [_row(rng, g) for _ in range(rng.randint(1, 2))] for g in range(rng.randint(0, 12))}
    everything = lambda: [r for rows in groups.values() for r in rows]  # noqa: E731
    table, complete = ordered.first_rows(pa.Table.from_pylist(everything(), SCHEMA), top, keys)
    for _ in range(25):
        touched = rng.sample(range(16), rng.randint(1, 4))
        for g in touched:                      # a group changes, appears or vanishes
            groups[g] = [_row(rng, g) for _ in range(rng.choice([0, 1, 1, 2]))]
            if not groups[g]:
                del groups[g]
        ins = [dict(r, **{OP: "ins"}) for g in touched for r in groups.get(g, [])]
        dels = [{"g": g, "x": None, "d": None, "s": None, OP: "del"} for g in touched]
        source = pa.Table.from_pylist(ins + dels, SCHEMA.append(pa.field(OP, pa.string())))
        table, complete, short = ordered.maintain(table, complete, source, top, keys, ["g"])
        if short:
            table, complete = ordered.first_rows(pa.Table.from_pylist(everything(), SCHEMA),
                                                 top, keys)
        want = _python_order(everything(), top)
        got = table.to_pylist()
        if complete:                  # it says it holds every row only when it does
            assert len(got) == len(want) <= ordered.capacity(top)
        assert min(len(want), top.wanted) <= len(got) <= ordered.capacity(top)
        same = lambda a, b: all(  # noqa: E731
            (x != x and y != y) or x == y for x, y in zip(a.values(), b.values()))
        assert all(same(a, b) for a, b in zip(got, want)), (got, want[:len(got)])
        shown = ordered.visible(table, top).to_pylist()
        assert all(same(a, b) for a, b in zip(shown, want[top.offset:top.wanted]))
        assert len(shown) == len(want[top.offset:top.wanted])


def test_deletes_at_the_top_recompute_and_others_do_not(monkeypatch):
    """Replacing rows far down the order changes nothing; deleting the first rows of a table
    that does not hold every row leaves it short."""
    monkeypatch.setattr(ordered, "SLACK_MAX", 1)
    top = TopN((SortItem(0, False, True),), limit=2)
    keys = ordered.sort_keys(top, LAYOUT)
    rows = [{"g": g, "x": 1.0, "d": None, "s": "a"} for g in range(10)]
    table, complete = ordered.first_rows(pa.Table.from_pylist(rows, SCHEMA), top, keys)
    assert table.column("g").to_pylist() == [0, 1, 2] and not complete
    schema = SCHEMA.append(pa.field(OP, pa.string()))
    late = pa.Table.from_pylist([dict(rows[7], x=2.0, **{OP: "ins"}), dict(rows[7], **{OP: "del"})],
                                schema)
    same, _, short = ordered.maintain(table, complete, late, top, keys, ["g"])
    assert same.equals(table) and not short
    early = pa.Table.from_pylist([dict(rows[g], **{OP: "del"}) for g in (0, 1)], schema)
    left, _, short = ordered.maintain(table, complete, early, top, keys, ["g"])
    assert short and left.column("g").to_pylist() == [2]
