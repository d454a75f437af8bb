"""Splitting a phase's packed rows by block tag (batch/target.py rows_by_tag): runs of one tag
are sliced, and the rows of each tag are exactly those a filter by tag keeps, in any chunking."""
from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.compute as pc

from viewlet.engine.batch import target
from viewlet.plan.batch import TAG


def _packed(rng: random.Random, runs, chunks: int) -> pa.Table:
    tags = [tag for tag, n in runs for _ in range(n)]
    rows = pa.table({TAG: pa.array(tags, pa.int32()),
                     "c_bigint_0": pa.array([rng.randrange(100) if rng.random() > 0.1 else None
                                             for _ in tags], pa.int64()),
                     "c_string_0": pa.array([f"v{i}" for i in range(len(tags))])})
    cuts = sorted(rng.sample(range(1, len(tags)), chunks - 1)) if chunks > 1 else []
    bounds = [0] + cuts + [len(tags)]
    return pa.concat_tables([rows.slice(a, b - a) for a, b in zip(bounds, bounds[1:])])


def test_each_tag_gets_exactly_its_rows_in_order():
    rng = random.Random(5)
    for case in range(30):
        runs = [(rng.randrange(4), rng.randrange(2000, 4000)) for _ in range(rng.randrange(1, 9))]
        packed = _packed(rng, runs, rng.choice([1, 2, 7]))
        by_tag = target.rows_by_tag(packed)
        assert by_tag is not None, case
        assert set(by_tag) == set(tag for tag, _ in runs)
        for tag, rows in by_tag.items():
            want = packed.filter(pc.equal(packed.column(TAG), tag))
            assert rows.equals(want), (case, tag)


def test_short_runs_are_left_to_the_filter():
    rng = random.Random(6)
    packed = _packed(rng, [(i % 3, 5) for i in range(400)], 3)
    assert target.rows_by_tag(packed) is None
    assert target.rows_by_tag(packed.slice(0, 0)) == {}
