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
