"""The local target's engine: DuckDB, in this process, over Arrow tables.

One in-memory DuckDB database per Viewlet context. Every query runs on a cursor of its own
(a connection to the same database) with its input tables registered on that cursor, so
concurrent batches (continuous mode's thread, a REFRESH in the notebook) never see each
other's tables. Queries are DuckDB SQL produced by translate.py from the plan's Spark SQL.
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
import warnings
from typing import Dict, Optional, Sequence

import pyarrow as pa

from ...storage.arrow import plain_types, without_zero_rows
from ..runtime import cancel

# Queries run by execute(), not sql(): sql() tokenizes the text in Python first (seconds for
# a wide join's batch query). DuckDB warns that execute()'s Arrow result costs a copy
# (measured: no slower on a 3-million-row sort). Filtered once for the process, not per
# call: warnings.catch_warnings is not thread-safe, and two threads sort maps side by side
# (the warning reached CREATE's output).
warnings.filterwarnings("ignore", message="Arrow output on a DB-API result", category=UserWarning)


class LocalEngineError(Exception):
    """DuckDB failed on a query (an overflow, a division by zero under ANSI mode, ...): the
    batch is run again on Spark, which computes Spark's own answer or error."""


def unavailable() -> Optional[str]:
    """Why the local engine cannot start in this process (DuckDB cannot be imported), or
    None. DuckDB is a dependency of the package; a broken or trimmed install sends every
    batch to Spark with this reason (EXPLAIN, HISTORY) instead of failing the batch."""
    try:
        import duckdb  # noqa: F401 - optional at run time: without it batches run on Spark
    except ImportError as e:
        return (f"the local target needs DuckDB, which cannot be imported here ({e}); "
                "reinstall Viewlet or `pip install duckdb` to run small batches in the driver")
    return None


def quoted_name(name: str) -> str:
    """A column or table name as a DuckDB identifier."""
    return '"' + name.replace('"', '""') + '"'


def available_engine(ctx) -> Optional["LocalEngine"]:
    """The context's local engine when DuckDB can be imported, else None (the caller does
    the work in Arrow)."""
    return ctx.local_engine if unavailable() is None else None


class LocalEngine:
    """`memory_limit`: bytes DuckDB may use (None: DuckDB's default, 80% of the machine);
    joins and aggregates beyond it spill to a directory of this engine's own under the
    system's temporary directory, removed at close, and a query that cannot spill fails
    with LocalEngineError (its batch runs on Spark)."""

    def __init__(self, threads: Optional[int] = None, memory_limit: Optional[int] = None):
        try:
            import duckdb        # optional at run time, as unavailable() says
        except ImportError as e:     # batch/policy.py checks first; this is the backstop
            raise LocalEngineError(unavailable() or str(e)) from e
        self._duckdb = duckdb
        # DuckDB's default for an in-memory database is .tmp in the working directory
        self._spill = tempfile.mkdtemp(prefix="viewlet-duckdb-")
        config = {"threads": threads or max(1, os.cpu_count() or 1),
                  "preserve_insertion_order": False, "temp_directory": self._spill}
        if memory_limit is not None:
            config["memory_limit"] = f"{max(1, memory_limit >> 20)}MiB"
        self._db = duckdb.connect(":memory:", config=config)
        self._lock = threading.Lock()
        # closed before the interpreter tears DuckDB's bindings down (which otherwise
        # reports the live connection's objects as leaks at exit)
        atexit.register(self.close)

    def query(self, sql: str, tables: Dict[str, pa.Table]) -> pa.Table:
        """Run `sql` with each of `tables` readable under its name; the result as Arrow."""
        cancel.check()
        with self._lock:                  # cursor() on one connection is not thread-safe
            cursor = self._db.cursor()
        token = cancel.current()          # a cancelled statement interrupts its query
        hook = token.on_cancel(cursor.interrupt) if token is not None else None
        try:
            try:
                for name, table in tables.items():
                    cursor.register(name, table)
                result = cursor.execute(sql).to_arrow_table()
            except self._duckdb.Error as e:
                cancel.check()            # interrupted: the statement was cancelled
                raise LocalEngineError(str(e).splitlines()[0]) from e
            return plain_types(result)
        finally:
            if hook is not None:
                token.forget(hook)
            cursor.close()

    def sorted_rows(self, table: pa.Table, columns: Sequence[str]) -> pa.Table:
        """`table`'s rows ordered by `columns` (ascending, NULLs first), in `table`'s schema:
        DuckDB sorts on every core, Arrow on one. Raises LocalEngineError when it cannot."""
        order = ", ".join(f"{quoted_name(c)} ASC NULLS FIRST" for c in columns)
        rows = self.query(f"SELECT * FROM rows ORDER BY {order}", {"rows": table})
        try:
            return rows.cast(table.schema)
        except (pa.ArrowException, ValueError) as e:
            raise LocalEngineError(f"sorted rows do not convert back: {e}") from e

    def close(self):
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
                shutil.rmtree(self._spill, ignore_errors=True)


def duckdb_sum_by_key(engine: "LocalEngine", rows: pa.Table, keys: Sequence[str],
                      values: Sequence[str], zero_columns: Optional[Sequence[str]] = None
                      ) -> pa.Table:
    """storage/arrow.py sum_by_key(rows, keys, values, zero_columns) run by DuckDB on every
    core (Arrow's group-by runs on one): one row per key (NULL keys one group, as in Arrow),
    each value summed exactly (NULL as 0) and cast back to its type (a sum out of its range
    fails the cast, as Arrow's sum does), keys whose `zero_columns` (default: every value
    column) all sum to 0 dropped."""
    names = ", ".join(quoted_name(k) for k in keys)
    sums = ", ".join(f"COALESCE(SUM({quoted_name(c)}), 0) AS {quoted_name(c)}" for c in values)
    sql = f"SELECT {names + ', ' if names else ''}{sums} FROM pieces" + \
        (f" GROUP BY {names}" if names else "")
    summed = engine.query(sql, {"pieces": rows})
    return without_zero_rows(summed.select(rows.schema.names).cast(rows.schema),
                             values if zero_columns is None else zero_columns)
