"""Resolving base tables for the compiler and binding a query's table references to
DataFrames at chosen versions (for type probes, recomputation and initial loads)."""
from __future__ import annotations

from typing import Dict, Sequence, Tuple

import sqlglot
from pyspark.sql import DataFrame
from sqlglot import exp

from ...errors import TableNotFound, ViewletError
from ...frontend.collects import explicit_separators
from ...frontend.ctes import inline_ctes
from ...frontend.quantified import rewrite_quantified
from ...frontend.suggest import did_you_mean
from ...frontend.tables import ColumnInfo, TableInfo
from ..spark.catalog_tables import delta_location
from ..spark.io import read_table, spark_schema
from .graph import upstream_table
from .warehouse import normalize_location


# Spark's file data sources, referenced as format.`path` (never Delta tables).
FILE_FORMATS = ("parquet", "orc", "csv", "json", "avro", "text", "binaryfile")


class LiveResolver:
    """delta.`/path`, names given with register_table, Delta tables of Spark's catalog (with
    delta-spark, engine/spark/catalog_tables.py), and incremental views (read as their result tables,
    graph.py); nothing else can be a base table."""

    def __init__(self, ctx):
        self.ctx = ctx

    def location(self, parts: Sequence[str]) -> Tuple[str, str]:
        """(location, display name) of a table reference."""
        if len(parts) == 2 and parts[0].lower() == "delta":
            return normalize_location(parts[1]), f"delta.`{parts[1]}`"
        if len(parts) == 2 and parts[0].lower() in FILE_FORMATS:
            raise TableNotFound(
                f"{parts[0]}.`{parts[1]}` reads {parts[0]} files, but base tables of an "
                "incremental view must be Delta tables (Viewlet reads their changes from the "
                f"Delta change data feed). Convert the files into a Delta table (CONVERT TO "
                f"DELTA {parts[0]}.`{parts[1]}` with delta-spark, or deltalake's "
                f"convert_to_deltalake in Python) and write delta.`{parts[1]}`.")
        name = ".".join(parts)
        entry = self.ctx.catalog.find(name, "table") if len(parts) == 1 else None
        if entry is not None:
            return entry.location, name
        location = delta_location(self.ctx.spark, parts) if self.ctx.spark is not None else None
        if location is not None:
            return location, name
        known = [e.name for e in self.ctx.catalog.entries()] if len(parts) == 1 else []
        raise TableNotFound(
            f"Table '{name}' not found. Base tables of an incremental view are Delta tables: "
            f"in SQL, write the table's path as delta.`/path/to/{parts[-1]}`, or create it in "
            f"Spark's catalog (CREATE TABLE {name} ... USING delta, in a session with "
            f"delta-spark); to use the name {name} for a table elsewhere, register it once "
            f"(from Python: viewlet.register_table(spark, '{name}', '/path/to/{parts[-1]}'))."
            + did_you_mean(name, known, close_only=True))

    def resolve(self, parts: Sequence[str]) -> TableInfo:
        if len(parts) == 1:
            view = self.ctx.catalog.find(parts[0], "view")
            if view is not None:
                return upstream_table(self.ctx, view)
        location, display = self.location(parts)
        if not self.ctx.store.exists(location):
            raise TableNotFound(f"No Delta table at {location} (referenced as {display}). "
                                "Check the path, or create the table first.")
        snap = self.ctx.store.snapshot(location)
        schema = spark_schema(snap.schema)
        cols = tuple(ColumnInfo(f.name, f.dataType.simpleString(), f.nullable) for f in schema.fields)
        return TableInfo(location, display, cols)


def bind_tables(sql: str, frames: Dict[str, DataFrame], location_of) -> Tuple[str, Dict[str, DataFrame]]:
    """Rewrite every table reference of `sql` to a DataFrame parameter for spark.sql.

    `location_of(parts)` gives a reference's table location; `frames` maps locations to the
    DataFrames to read (e.g. snapshots at the batch's versions)."""
    # WITH clauses inlined, as the front end compiles them: CTE names are no tables
    tree, _ = inline_ctes(sqlglot.parse_one(sql, read="spark"), _no_failure)
    # listagg(x) keeps Spark's default separator (sqlglot would write `LISTAGG(x, ',')`)
    tree = explicit_separators(tree)
    # quantified comparisons (ALL / ANY / SOME), which Spark does not parse, as counts
    tree = rewrite_quantified(tree, sql, lambda t: frames[location_of([p.name for p in t.parts])].columns)
    params: Dict[str, DataFrame] = {}
    names: Dict[str, str] = {}

    def swap(node):
        if isinstance(node, exp.Table) and node.name:
            loc = location_of([p.name for p in node.parts])
            if loc not in frames:
                raise ViewletError(f"internal: no frame bound for {loc}")
            if loc not in names:
                names[loc] = f"__viewlet_t{len(names)}__"
                params[names[loc].strip("_")] = frames[loc]
            alias = node.alias_or_name
            return exp.Table(this=exp.to_identifier(names[loc]),
                             alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True)))
        return node

    # spark.sql(text, **params) formats the text: braces of the query itself are escaped
    text = tree.transform(swap).sql(dialect="spark").replace("{", "{{").replace("}", "}}")
    for loc, placeholder in names.items():
        text = text.replace(placeholder, "{" + placeholder.strip("_") + "}")
    return text, params


def _no_failure(construct, node, detail=None):
    raise ViewletError(f"internal: {construct} passed the front end")


def relation_frame(ctx, table, version: int) -> DataFrame:
    """A relation at a version, for queries over the defining SQL: an upstream view's
    result table without its hidden key columns."""
    columns = [c.name for c in table.columns] if table.view else None
    return read_table(ctx.spark, ctx.store, table.id, version, columns)
