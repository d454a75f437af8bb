"""Spark's types of a map's columns, from its definition, without Spark.

A map's physical columns (its keys' types, each value column's type) are what Spark's
analyzer gives the map's definition lowered to SQL over the base tables. The local target's
translator types every expression by Spark's rules (plan/local/types.py), so the same
lowering typed by it gives the same types without a Spark analysis per definition (a wide
join's 76 maps took half a minute of CREATE that way). A definition the translator cannot
type (a function without a checked equivalent) raises NotLocal: Spark types that one.
"""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import sqlglot
from sqlglot import exp

from ..calculus.ir import Query
from .cse import ordered_ctes
from .local import types as T
from .local.translate import Translator
from .local.types import SparkType
from .lower import LEAF_PREFIX, AtomSource, LeafBuilder, lower_query

Columns = List[Tuple[str, SparkType]]


class _Relations(AtomSource):
    """Base relations as leaves named by relation (a definition reads nothing else)."""

    def __init__(self, sb: LeafBuilder):
        self.sb = sb

    def relation(self, relation):
        return ("rel", relation)

    def delta(self, relation):          # pragma: no cover - definitions read no batch
        raise AssertionError(f"a map definition reads the batch of {relation}")

    def map(self, name, lookups=None):  # pragma: no cover - definitions read no map
        raise AssertionError(f"a map definition reads map {name}")


def definition_types(query: Query, keys: Sequence[str], column: str,
                     relation_columns: Dict[str, Columns], ansi: bool = True) -> Columns:
    """The Spark types of `query` lowered as CREATE loads it (its keys named `keys`, its value
    `column`), relations typed by `relation_columns` (relation -> its columns' Spark types).
    Raises NotLocal when the local typer cannot type it."""
    sb = LeafBuilder()
    text = lower_query(query, _Relations(sb), sb, list(keys), column)
    tree = sqlglot.parse_one(text, read="spark")
    if sb.shared:
        ctes = [exp.CTE(this=sqlglot.parse_one(body, read="spark"),
                        alias=exp.TableAlias(this=exp.to_identifier(name)))
                for body, name in sb.shared.items()]
        tree.set("with_", exp.With(expressions=ordered_ctes(ctes)))
    tables = {LEAF_PREFIX + param: relation_columns[leaf[1]] for param, leaf in sb.params.items()}
    _, columns = Translator(tables, ansi=ansi).query(tree)
    return columns


def spark_type_name(t: SparkType) -> str:
    """The type as Spark's simpleString (what the catalog's map schemas hold)."""
    return t.spark_sql()


__all__ = ["definition_types", "spark_type_name", "T"]
