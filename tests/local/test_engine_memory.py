"""The local engine's memory limit (engine/local/executor.py LocalEngine): DuckDB spills
past it to a directory of the engine's own, and a query that cannot spill fails with
LocalEngineError (its batch then runs on Spark) instead of growing the driver's process."""
from __future__ import annotations

import os
import tempfile

import pytest

from viewlet.engine.local.executor import LocalEngine, LocalEngineError

LIMIT = 64 << 20


@pytest.fixture
def engine():
    e = LocalEngine(threads=2, memory_limit=LIMIT)
    yield e
    e.close()


def _setting(engine, name):
    return engine.query(f"SELECT current_setting('{name}') AS v", {}).column("v")[0].as_py()


def test_the_limit_is_applied_and_spills_go_to_a_directory_of_its_own(engine):
    assert _setting(engine, "memory_limit") == "64.0 MiB"
    spill = _setting(engine, "temp_directory")
    assert os.path.dirname(spill) == tempfile.gettempdir()     # not the working directory
    assert os.path.isdir(spill)
    engine.close()
    assert not os.path.exists(spill)


def test_an_aggregate_larger_than_the_limit_spills_and_is_exact(engine):
    # 3 million groups of two rows each: more hash table than 64 MiB
    rows = engine.query("SELECT COUNT(*) AS n, SUM(s) AS total FROM (SELECT i % 3000000 AS k, "
                        "SUM(i) AS s FROM range(6000000) r(i) GROUP BY k)", {}).to_pylist()
    assert rows == [{"n": 3_000_000, "total": 6_000_000 * 5_999_999 // 2}]


def test_a_query_that_cannot_fit_fails_as_a_local_engine_error(engine):
    with pytest.raises(LocalEngineError, match="Out of Memory"):
        engine.query("SELECT list(i) AS l FROM range(60000000) r(i)", {})
