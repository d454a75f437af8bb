"""CREATE types a view's maps without Spark when it computes them in the driver
(ops/load.py typed_map, by the local target's typer): the types must be the ones Spark's
analyzer gives the same definitions (ops/load.py initial_map), which the Spark and
distributed targets write and every later batch reads. Compared for every map of the TPC-H
views and of the random oracle's shapes (NULLs, decimals, doubles, dates, timestamps,
strings); a definition the typer cannot type must say so (NotLocal), never guess."""
from __future__ import annotations

import pytest

import viewlet
from viewlet.engine.ops.load import SnapshotSource, initial_map, relation_types, typed_map
from viewlet.engine.state.program import compile_definition
from viewlet.plan.local.types import NotLocal
from viewlet.tools.demo import load_query

from .test_random_oracle import SHAPES, STAR_SHAPES, TYPED_SHAPES
from .test_tpch_nested import ALL as TPCH_VIEWS
from .workload import registered_workload


@pytest.fixture(scope="module")
def tables(spark, tmp_path_factory):
    from viewlet.workloads import tpch
    for name, path in tpch.generate(0.001, str(tmp_path_factory.mktemp("tpch"))).items():
        viewlet.register_table(spark, name, path, replace=True)
    registered_workload(spark, str(tmp_path_factory.mktemp("oracle")), 5, null_heavy=True,
                        tables=("r", "s", "t", "u"))


QUERIES = {**{name: load_query(name) for name in TPCH_VIEWS}, **SHAPES, **STAR_SHAPES,
           **TYPED_SHAPES}
# every map casts a timestamp to a date (time-zone dependent): Spark types them
UNTYPED = {"timestamp_keys_mixed"}


def _types(schema):
    return list(zip(schema.keys, schema.key_types)), dict(schema.values)


@pytest.mark.parametrize("name", list(QUERIES))
def test_maps_are_typed_as_spark_types_them(spark, vl, tables, name):
    ctx = vl.ctx
    compiled = compile_definition(QUERIES[name], ctx.resolver(), None)
    versions = {rel: ctx.store.version(t.id) for rel, t in compiled.spec.tables.items()}
    source = SnapshotSource(ctx, compiled, versions)
    typed, relations = 0, relation_types(compiled)
    try:
        for m in compiled.program.maps.values():
            by_spark, _ = initial_map(ctx, m, source)
            try:
                ours = typed_map(m, relations, ansi=True)
            except NotLocal:
                continue                   # loaded (and typed) by Spark
            typed += 1
            assert _types(ours) == _types(by_spark), m.name
    finally:
        source.release()
    assert bool(typed) == (name not in UNTYPED), typed
