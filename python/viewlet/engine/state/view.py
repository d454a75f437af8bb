"""A view as one statement sees it: its catalog entry, its compiled program, where its
tables live, and what the batches derive from them once (batch plans, schemas)."""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from functools import cached_property
from typing import Dict, List

import pyarrow as pa
from pyspark.sql.types import StructType

from ...plan.batch import BatchPlan, build_plan
from ...plan.lower import q
from ..spark.io import arrow_schema
from .catalog import Entry
from .kept import map_location
from .manifest import Manifest
from .program import CompiledView, relation_columns


@dataclass
class MapSchema:
    keys: List[str]
    key_types: List[str]
    values: Dict[str, str]

    def ddl(self) -> str:
        cols = list(zip(self.keys, self.key_types)) + list(self.values.items())
        return ", ".join(f"{q(c)} {t}" for c, t in cols)

    def struct(self) -> StructType:
        return StructType.fromDDL(self.ddl())

    def to_json(self):
        return {"keys": self.keys, "key_types": self.key_types, "values": self.values}


class LoadedView:
    def __init__(self, ctx, entry: Entry, compiled: CompiledView):
        self.ctx, self.entry, self.compiled = ctx, entry, compiled
        self.spec = entry.spec

    id = property(lambda self: self.entry.id)
    name = property(lambda self: self.entry.name)

    @cached_property
    def _columns(self):
        return relation_columns(self.compiled.program)

    def columns_of(self, relation: str) -> List[str]:
        return self._columns.get(relation, [])

    def table_path(self, relation: str) -> str:
        return self.compiled.spec.tables[relation].id

    def map_path(self, name: str) -> str:
        return map_location(self.entry.location, name, self.spec["maps"][name])

    def map_schema(self, name: str) -> MapSchema:
        key = ("map_schema", name)
        if key not in self.compiled.cache:
            m = self.spec["maps"][name]
            self.compiled.cache[key] = MapSchema(m["keys"], m["key_types"], m["values"])
        return self.compiled.cache[key]

    def map_arrow_schema(self, name: str) -> pa.Schema:
        key = ("map_arrow_schema", name)
        if key not in self.compiled.cache:
            self.compiled.cache[key] = arrow_schema(self.map_schema(name).struct())
        return self.compiled.cache[key]

    @property
    def result_path(self) -> str:
        return self.ctx.layout.result_table(self.id)

    @property
    def ordered_path(self) -> str:
        return self.ctx.layout.ordered_table(self.id)

    @property
    def top_n(self):
        """ORDER BY ... LIMIT of a top-N view (None otherwise, and at depth 0: recomputed)."""
        return self.compiled.spec.top_n if self.compiled.depth != 0 else None

    @property
    def manifest(self) -> Manifest:
        return Manifest(self.ctx.store, self.ctx.layout.manifest_table(self.id))

    @property
    def app_id(self) -> str:
        return f"viewlet:{self.id}"

    def scratch_dir(self, batch: int) -> str:
        """Where one attempt at a batch keeps its input files (removed when it ends)."""
        return self.ctx.layout.scratch_dir(self.id, f"{batch}-{uuid.uuid4().hex[:12]}")

    def batch_plan(self, changed, active) -> BatchPlan:
        """The batch SQL for these changed relations (built once per view and set)."""
        key = ("plan", changed, active)
        plans = self.compiled.cache
        if key not in plans:
            plans[key] = build_plan(self, changed, active)
        return plans[key]
