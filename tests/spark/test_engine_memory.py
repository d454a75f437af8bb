"""spark.viewlet.local.engineMemory: the local engine's memory limit, by default what the
machine has beside the driver's heap and the hot maps (engine/state/settings.py)."""
from __future__ import annotations

import pytest

from viewlet.engine.state.settings import (ENGINE_MEMORY_CONF, ENGINE_MEMORY_FLOOR,
                                           Settings, machine_memory)
from viewlet.errors import ViewletError


@pytest.fixture
def conf(spark):
    yield spark.conf
    spark.conf.unset(ENGINE_MEMORY_CONF)


def test_the_default_leaves_the_driver_and_the_hot_maps_their_memory(spark, conf):
    settings = Settings(spark)
    machine = machine_memory()
    assert machine is not None                # Linux and macOS say
    limit = settings.engine_memory
    assert limit >= ENGINE_MEMORY_FLOOR
    if limit > ENGINE_MEMORY_FLOOR:
        assert limit + settings.driver_memory + settings.memory_budget < machine


def test_the_setting_overrides_it_and_a_bad_value_names_the_setting(spark, conf):
    conf.set(ENGINE_MEMORY_CONF, "3g")
    assert Settings(spark).engine_memory == 3 << 30
    conf.set(ENGINE_MEMORY_CONF, "lots")
    with pytest.raises(ViewletError, match=ENGINE_MEMORY_CONF):
        Settings(spark).engine_memory


def test_the_sessions_local_engine_runs_within_it(spark, vl):
    limit = Settings(spark).engine_memory
    shown = vl.ctx.local_engine.query("SELECT current_setting('memory_limit') AS v", {})
    assert _mib(shown.column("v")[0].as_py()) == pytest.approx(limit >> 20, rel=0.01)


def _mib(text: str) -> float:
    number, unit = text.split()
    return float(number) * {"MiB": 1, "GiB": 1024}[unit]
