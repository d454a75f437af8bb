"""Errors users see. Each names the problem and, where there is one, the remedy.

The hierarchy is public (``viewlet.ViewletError`` and its subclasses, exported by the package):
catch ``ViewletError`` for every refusal and failure Viewlet reports, or a subclass for one
kind. ``kind`` is the category the JVM extension uses to map the error to Spark's
(``AnalysisException``, ``ParseException``, ...), and ``position`` a character offset into the
statement when the error points at one.
"""
from __future__ import annotations

from typing import Optional


class StatementInterrupted(KeyboardInterrupt):
    """KeyboardInterrupt ending a `spark.sql` call whose Viewlet statement was cancelled
    (Ctrl-C); the message says what the statement left. Not a ViewletError: like Ctrl-C in
    Python, it ends the program unless caught as KeyboardInterrupt."""


class ViewletError(Exception):
    """Base of every error Viewlet raises for a statement or an API call.

    Args:
        message: what went wrong and, where there is one, the remedy.
        position: offset of the offending text in the statement, if any.
    """

    kind = "analysis"

    def __init__(self, message: str, position: Optional[int] = None):
        super().__init__(message)
        self.message = message
        self.position = position


class ViewletParseError(ViewletError):
    """A Viewlet statement (CREATE/DROP/REFRESH/... INCREMENTAL VIEW) that does not parse."""

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
    """A base table named by a view is not a Delta table Viewlet can find."""

    kind = "not_found"


class ViewNotFound(ViewletError):
    """No incremental view of that name in the warehouse."""

    kind = "not_found"


class ViewAlreadyExists(ViewletError):
    """CREATE of a name that is already an incremental view (use OR REPLACE or IF NOT EXISTS)."""

    kind = "exists"


class ChangeFeedError(ViewletError):
    """A base table's change data feed is off, or its history needed by a batch is vacuumed."""

    kind = "change_feed"


#: what a rebuild from the current data does about a BaseTableChanged (its `cause`): the
#: view must be loaded anew (a replaced table, a retyped column, a rebuilt upstream view), or
#: its changes cannot be read incrementally (the change data feed turned off)
REINITIALIZE, NOT_INCREMENTAL = "reinitialize", "not incremental"


class BaseTableChanged(ViewletError):
    """A base table changed under a view in a way a batch cannot absorb (dropped, replaced by
    another table at its path, its change data feed turned off, a column the view reads
    dropped or retyped); found at REFRESH, before the batch is planned, with the remedy.
    `cause`: REINITIALIZE or NOT_INCREMENTAL when a rebuild can continue the view (what a
    REFRESH POLICY may do, engine/ops/policy.py), None when it cannot (a table or column
    the view reads is gone)."""

    kind = "base_table_changed"

    def __init__(self, message: str, position: Optional[int] = None,
                 cause: Optional[str] = None):
        super().__init__(message, position)
        self.cause = cause


class UpstreamViewChanged(ViewletError):
    """An incremental view another view reads was rebuilt or recreated since the reader was
    created, so the reader cannot continue from it (REFRESH ... FULL rebuilds the reader)."""

    kind = "base_table_changed"
    cause = REINITIALIZE


class Cancelled(ViewletError):
    """A running statement was cancelled (Ctrl-C, or cancelling from another thread). What it
    left is what a crash at that point leaves, which the next REFRESH repairs."""

    kind = "cancelled"


class NotEnabledError(ViewletError):
    """The session has no Viewlet: call ``viewlet.enable(spark)`` (or configure_spark)."""

    kind = "not_enabled"


class ConcurrentUpdate(ViewletError):
    """Another writer committed to the same Viewlet table first (Delta's conflict check)."""

    kind = "conflict"


class StoredProgramError(ViewletError):
    """A view's stored trigger program cannot be run by this version of Viewlet (a format it
    does not read, a stored text that fails its fingerprint, or a query that no longer
    reads as the program's maps); the message names the remedy (REFRESH ... FULL)."""

    kind = "analysis"
