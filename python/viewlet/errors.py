"""Errors users see. Each names the problem and, where there is one, the remedy."""
from __future__ import annotations

from typing import Optional


class ViewletError(Exception):
    kind = "analysis"

    def __init__(self, message: str, position: Optional[int] = None):
        super().__init__(message)
        self.message = message
        self.position = position


class ViewletParseError(ViewletError):
    kind = "parse"


class UnsupportedSQL(ViewletError):
    """A construct the compiler cannot maintain incrementally (rejected at CREATE)."""

    kind = "unsupported"

    def __init__(self, construct: str, detail: str = "", position: Optional[int] = None,
                 sql: Optional[str] = None):
        where = ""
        if position is not None and sql is not None:
            line = sql.count("\n", 0, position) + 1
            col = position - (sql.rfind("\n", 0, position) + 1) + 1
            where = f" at line {line}, column {col} of the query"
        msg = f"Unsupported in an incremental view: {construct}{where}."
        if detail:
            msg += f" {detail}"
        super().__init__(msg, position)
        self.construct = construct


class TableNotFound(ViewletError):
    kind = "not_found"


class ViewNotFound(ViewletError):
    kind = "not_found"


class ViewAlreadyExists(ViewletError):
    kind = "exists"


class ChangeFeedError(ViewletError):
    kind = "change_feed"


class NotEnabledError(ViewletError):
    kind = "not_enabled"


class ConcurrentUpdate(ViewletError):
    """Another writer committed to the same Viewlet table first (Delta's conflict check)."""

    kind = "conflict"
