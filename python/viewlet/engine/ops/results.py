"""What the operations return: one typed result per statement. Each is also the statement's
row (api/ddl.py OUTPUTS): its fields are the row's columns, read by attribute or by name
(`result.status`, `result["status"]`)."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Optional


class StatementResult:
    def __getitem__(self, column: str) -> Any:
        if column not in {f.name for f in fields(self)}:
            raise KeyError(column)
        return getattr(self, column)

    def get(self, column: str, default: Any = None) -> Any:
        return getattr(self, column) if column in {f.name for f in fields(self)} else default


@dataclass(frozen=True)
class Created(StatementResult):
    """CREATE (and a view's query replaced: CREATE OR REPLACE, ALTER ... AS)."""
    view: str
    status: str                # created, exists, replaced: ...
    maps: int
    rows: int                  # result rows
    seconds: float
    batch: Optional[int] = None    # the load's batch number in the view's history
    kept: int = 0              # maps kept from the view a new query replaced
    loaded: int = 0            # maps loaded from the base tables


@dataclass(frozen=True)
class Refreshed(StatementResult):
    """REFRESH (one batch, a chain of them, or a rebuild)."""
    view: str
    batch: int
    changes: int               # change rows read
    rows_changed: int          # result rows rewritten
    seconds: float
    status: str


@dataclass(frozen=True)
class Dropped(StatementResult):
    view: str
    status: str                # dropped, not found


@dataclass(frozen=True)
class Registered(StatementResult):
    """register_table."""
    table: str
    location: str
    status: str
