"""Compiling a view definition without a Spark session (`viewlet explain FILE.sql`).

The compiler needs only table schemas, and those come from Delta logs (delta-rs), from the
warehouse catalog, or from the known TPC-H and order-book schemas. No JVM starts.
"""
from __future__ import annotations

import os
from typing import Dict, Optional, Sequence, Tuple

import pyarrow as pa

from ..api import ddl
from ..frontend import lexical
from ..errors import TableNotFound, ViewletError
from ..api.explain import explain_program
from ..engine.state.catalog import Catalog
from ..engine.state.program import compile_definition
from ..engine.state.warehouse import WarehouseLayout, normalize_location
from ..engine.state.tables import LiveResolver
from ..frontend.tables import ColumnInfo, TableInfo
from ..storage.deltars import DeltaRsStore

SCHEMA_SETS = ("tpch", "orderbook")


def known_schemas(name: str) -> Dict[str, pa.Schema]:
    """The tables of a shipped workload, by name (no data needed)."""
    if name == "tpch":
        from ..workloads.tpch import SCHEMAS
        return dict(SCHEMAS)
    if name == "orderbook":
        from ..workloads.orderbook import SCHEMA, SIDES
        return {side: SCHEMA for side in SIDES}
    raise ViewletError(f"Unknown schema set '{name}'. Known: {', '.join(SCHEMA_SETS)}.")


def _table_info(location: str, display: str, schema: pa.Schema) -> TableInfo:
    from ..engine.spark.io import spark_schema
    fields = spark_schema(schema).fields
    return TableInfo(location, display,
                     tuple(ColumnInfo(f.name, f.dataType.simpleString(), f.nullable) for f in fields))


class _NoCatalog:
    def find(self, name, kind=None):
        return None

    def entries(self, kind=None):
        return []


class _Offline:
    """What LiveResolver needs from a context: a store and (maybe) a warehouse catalog; no
    Spark session, so no Spark catalog to look names up in."""
    spark = None

    def __init__(self, warehouse: Optional[str]):
        self.store = DeltaRsStore()
        self.catalog = Catalog(self.store, WarehouseLayout(warehouse)) if warehouse else _NoCatalog()


class OfflineResolver:
    """Table references resolved, in order, by `--table NAME=PATH`, a named schema set, the
    warehouse catalog, and `delta.\\`/path\\``."""

    def __init__(self, warehouse: Optional[str] = None, tables: Optional[Dict[str, str]] = None,
                 schema_set: Optional[str] = None):
        self.live = LiveResolver(_Offline(warehouse))
        self.tables = {k.lower(): normalize_location(v) for k, v in (tables or {}).items()}
        self.schemas = known_schemas(schema_set) if schema_set else {}
        self.warehouse = warehouse

    def resolve(self, parts: Sequence[str]) -> TableInfo:
        name = ".".join(parts)
        if len(parts) == 1 and name.lower() in self.tables:
            location = self.tables[name.lower()]
            if not self.live.ctx.store.exists(location):
                raise TableNotFound(f"No Delta table at {location} (given for {name} with --table).")
            return _table_info(location, name, self.live.ctx.store.snapshot(location).schema)
        if len(parts) == 1 and name.lower() in self.schemas:
            return _table_info(f"schema:{name.lower()}", name, self.schemas[name.lower()])
        try:
            return self.live.resolve(parts)
        except TableNotFound as e:
            if len(parts) == 2 and parts[0].lower() == "delta":
                raise
            hint = "" if self.warehouse else " No --warehouse was given."
            raise TableNotFound(f"{e.message}{hint} Offline, name tables with --table "
                                f"{name}=/path/to/delta/table, or --schema tpch|orderbook for "
                                "the shipped workloads.") from None


def read_definition(path: str) -> Tuple[str, str, Optional[int]]:
    """(view name, query, depth) from a file holding a bare SELECT (named after the file) or
    one CREATE INCREMENTAL VIEW statement (see `read_options` for its other options)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ViewletError(f"Cannot read {path}: {e.strerror}.") from None
    stripped = lexical.strip_comments(text).strip()
    if not stripped:
        raise ViewletError(f"{path} holds no SQL.")
    if stripped.split(None, 1)[0].upper() == "CREATE":
        st = ddl.parse(text)
        return st.name, st.query, st.options.get("depth")
    name = os.path.splitext(os.path.basename(path))[0]
    # Comments blanked, not removed: error positions stay those of the file.
    return name, lexical.strip_comments(text).rstrip().rstrip(";").rstrip(), None


def read_options(path: str) -> dict:
    """The WITH (...) options of the CREATE statement in `path` ({} for a bare SELECT)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    stripped = lexical.strip_comments(text).strip()
    if stripped and stripped.split(None, 1)[0].upper() == "CREATE":
        return ddl.parse(text).options
    return {}


def explain_file(path: str, resolver: OfflineResolver, depth: Optional[int] = None,
                 depth_given: bool = False) -> str:
    """EXPLAIN INCREMENTAL VIEW's text for the definition in `path`; `depth` (when given)
    overrides a CREATE statement's WITH (depth = ...)."""
    name, query, file_depth = read_definition(path)
    compiled = compile_definition(query, resolver, depth if depth_given else file_depth,
                                  read_options(path).get("caches", False))
    return explain_program(name, query, compiled.program, compiled.spec)
