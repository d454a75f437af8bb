"""What the SQL front end needs to know about a base table (or an upstream incremental
view read like one), and the resolver interface."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Protocol, Sequence, Tuple


@dataclass(frozen=True)
class ColumnInfo:
    name: str
    type: str          # Spark SQL DDL type, e.g. "decimal(15,2)"
    nullable: bool = True


@dataclass(frozen=True)
class TableInfo:
    id: str                      # stable identity: the table's location (URI or path)
    display: str                 # how the user wrote it, for messages
    columns: Tuple[ColumnInfo, ...]
    #: set when the relation is another incremental view (its name): `id` is then the
    #: location of that view's result table, `columns` its visible output columns
    view: Optional[str] = None

    def column(self, name: str):
        low = name.lower()
        for c in self.columns:
            if c.name.lower() == low:
                return c
        return None


class TableResolver(Protocol):
    def resolve(self, parts: Sequence[str]) -> TableInfo:
        """Resolve a table reference (name parts as written) or raise TableNotFound."""


class ResolvedOnce:
    """A resolver that resolves each table reference once per translation: resolving reads
    the table's Delta log, and the name pass (frontend/names.py) and the translator both
    ask for every table. Failures are not kept (each asks again and gets the error)."""

    def __init__(self, resolver: TableResolver):
        self.resolver = resolver
        self._tables: dict = {}

    def resolve(self, parts: Sequence[str]) -> TableInfo:
        key = tuple(parts)
        if key not in self._tables:
            self._tables[key] = self.resolver.resolve(parts)
        return self._tables[key]
