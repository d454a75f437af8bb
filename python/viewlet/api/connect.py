"""Viewlet from a Spark Connect client (``SparkSession.builder.remote(...)``, pyspark-client).

A Connect client has no JVM: its SQL reaches the server, whose JVM parses Viewlet's statements
(the extension) and runs them in the Python driver attached to that JVM
(``viewlet.api.attach``, as in the spark-sql shell). So ``viewlet.enable`` on a Connect
session starts nothing locally: it checks that the server has Viewlet, attaches the server's
Python (so that a bad setup fails here, not at the first statement) and returns a
``ConnectViewlet``, whose methods are Viewlet's statements sent as SQL. What needs the engine
in this process (``load``, ``register_table``, continuous mode, hot maps) is refused with
the SQL or server setting to use instead.
"""
from __future__ import annotations

import os
import sys
from typing import Dict, List, Optional

from ..errors import ViewletError
from ..frontend.lexical import quote_identifier

EXTENSION = "io.viewlet.spark.ViewletExtensions"
WAREHOUSE_CONF = "spark.viewlet.warehouse"
PYTHON_CONF = "spark.viewlet.python"
ATTACH_CONF = "spark.viewlet.attach"
# Spark Connect appends the server's Java stack to every error's text by default; Viewlet's
# errors name the problem and the remedy, as classic PySpark shows them (no JVM stack).
STACKTRACE_CONF = "spark.sql.connect.serverStacktrace.enabled"
DOCS = "docs/connect.md"


def is_connect_session(spark) -> bool:
    """Whether `spark` is a Spark Connect session (no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def remote_url(options: Dict) -> Optional[str]:
    """The Connect URL a builder with these options connects to (``local[...]`` when pyspark
    starts the server in this process), or None for a classic session. pyspark's own rule:
    spark.remote, else $SPARK_REMOTE, else the master under spark.api.mode=connect."""
    url = options.get("spark.remote") or os.environ.get("SPARK_REMOTE")
    mode = str(options.get("spark.api.mode") or os.environ.get("SPARK_API_MODE") or "").lower()
    if url is None and mode == "connect":
        url = options.get("spark.master") or os.environ.get("MASTER") or "local"
    return None if url is None else str(url)


def local_server_settings(python: str = sys.executable) -> Dict[str, str]:
    """Settings of the Connect server pyspark starts in this process (``remote("local")``)
    beyond the jar, the extension and the warehouse. This Python drives that JVM through Py4J,
    but its Viewlet statements come from Connect sessions: the server attaches a Python driver
    of its own (spark.viewlet.attach=auto would see this one and not attach)."""
    return {PYTHON_CONF: python, ATTACH_CONF: "true", STACKTRACE_CONF: "false"}


def refuse_remote_builder(url: str) -> ViewletError:
    return ViewletError(
        f"viewlet.configure_spark cannot configure the Spark Connect server at {url}: it is "
        "already running, and Viewlet must be in it before it starts. Start it with "
        "`viewlet connect-server` (or add Viewlet's settings to Spark's "
        f"sbin/start-connect-server.sh, {DOCS}), then connect without configure_spark: "
        "spark = SparkSession.builder.remote(url).getOrCreate(); viewlet.enable(spark).")


_handles: Dict[str, "ConnectViewlet"] = {}


def enable(spark, warehouse: Optional[str] = None) -> "ConnectViewlet":
    """viewlet.enable for a Connect session: the server must have Viewlet; its warehouse is
    the server's (a client cannot choose another)."""
    extensions = _conf(spark, "spark.sql.extensions") or ""
    if EXTENSION not in extensions.split(","):
        raise ViewletError(
            "The Spark Connect server of this session runs without Viewlet's extension "
            f"(spark.sql.extensions is {extensions!r}). Start the server with Viewlet: "
            "`viewlet connect-server`, or viewlet.configure_spark(SparkSession.builder"
            f".remote('local[*]')) for a server in this process ({DOCS}).")
    served = _conf(spark, WAREHOUSE_CONF)
    if warehouse is not None and served is not None:
        from ..engine.state.warehouse import normalize_location
        if normalize_location(warehouse) != served:
            raise ViewletError(
                f"This Spark Connect server keeps Viewlet's views in {served} "
                f"({WAREHOUSE_CONF}); a client cannot switch it to {warehouse}. Call "
                "viewlet.enable(spark) without a warehouse, or start a server with "
                f"`viewlet connect-server --warehouse {warehouse}`.")
    handle = ConnectViewlet(spark, served)
    # The first Viewlet statement attaches the server's Python: a bad setup (no Viewlet in
    # spark.viewlet.python, a version mismatch) fails here, with the server's message.
    try:
        handle.view_names()
    except Exception as e:  # noqa: BLE001 - pyspark's Connect errors, reported as Viewlet's
        raise ViewletError(f"Viewlet is in the Spark Connect server but could not run "
                           f"there: {_first_part(e)}") from e
    _handles[spark.session_id] = handle
    return handle


def context(spark) -> "ConnectViewlet":
    from ..errors import NotEnabledError
    handle = _handles.get(spark.session_id)
    if handle is None:
        raise NotEnabledError("Viewlet is not enabled for this Spark Connect session: call "
                              "viewlet.enable(spark) first.")
    return handle


def _conf(spark, key: str) -> Optional[str]:
    try:
        return spark.conf.get(key, None)
    except Exception:  # noqa: BLE001 - a setting the server does not know
        return None


def _first_part(e: BaseException) -> str:
    """A Connect error's message without the server's Java stack, when it sent one."""
    return str(e).split("\n\nJVM stacktrace:")[0]


class ConnectViewlet:
    """The handle ``viewlet.enable`` returns for a Spark Connect session.

    Every method is one Viewlet statement sent as SQL through the session; the engine runs
    next to the server's JVM. Errors are pyspark's Connect errors carrying Viewlet's
    message (``AnalysisException``; ``ParseException`` with ``PARSE_SYNTAX_ERROR`` for
    syntax).

    Not available here (they need the engine in this process): ``ctx`` (the engine's
    context: ``vl.ctx.load``, ...), ``register_table``
    (name tables with ``delta.`/path``` or, in a delta-spark server, catalog tables),
    continuous mode (``start``/``stop``: use ``SCHEDULE EVERY``), the notebook renderings
    of ``explain``/``describe`` (text and DataFrames instead) and the engine's settings
    as attributes (set them on the server: ``--conf spark.viewlet.engine=...``).
    """

    def __init__(self, spark, warehouse: Optional[str]):
        self.spark = spark
        self._warehouse = warehouse

    @property
    def warehouse(self) -> Optional[str]:
        """The server's warehouse (spark.viewlet.warehouse; None: its default)."""
        return self._warehouse

    def sql(self, statement: str):
        """Any statement, Viewlet's or Spark's: the session's DataFrame."""
        return self.spark.sql(statement)

    def create_view(self, name: str, sql: str, depth: Optional[int] = None,
                    if_not_exists: bool = False, or_replace: bool = False,
                    options: Optional[Dict[str, object]] = None) -> Dict:
        """CREATE [OR REPLACE] INCREMENTAL VIEW [IF NOT EXISTS] name [WITH (...)] AS sql; the
        statement's row as a dict. `options`: the WITH options (engine, map_writes, ...)."""
        opts = dict(options or {})
        if depth is not None:
            opts["depth"] = depth
        with_ = ""
        if opts:
            with_ = " WITH (" + ", ".join(f"{k} = {_literal(v)}" for k, v in opts.items()) + ")"
        text = ("CREATE " + ("OR REPLACE " if or_replace else "") + "INCREMENTAL VIEW "
                + ("IF NOT EXISTS " if if_not_exists else "") + quote_identifier(name)
                + with_ + " AS " + sql)
        return self._row(text)

    def refresh(self, name: str, full: bool = False) -> Dict:
        """REFRESH INCREMENTAL VIEW name [FULL]: the batch's row as a dict."""
        return self._row(f"REFRESH INCREMENTAL VIEW {quote_identifier(name)}"
                         + (" FULL" if full else ""))

    def drop_view(self, name: str, if_exists: bool = False) -> Dict:
        return self._row("DROP INCREMENTAL VIEW " + ("IF EXISTS " if if_exists else "")
                         + quote_identifier(name))

    def view_names(self) -> List[str]:
        """SHOW INCREMENTAL VIEWS: the names of the server's views."""
        return [r["view"] for r in self.spark.sql("SHOW INCREMENTAL VIEWS").collect()]

    def explain(self, name: str) -> str:
        """EXPLAIN INCREMENTAL VIEW name, as text."""
        return "\n".join(r[0] for r in self.spark.sql(
            f"EXPLAIN INCREMENTAL VIEW {quote_identifier(name)}").collect())

    def describe(self, name: str):
        """DESCRIBE INCREMENTAL VIEW name: a DataFrame (section, name, value)."""
        return self.spark.sql(f"DESCRIBE INCREMENTAL VIEW {quote_identifier(name)}")

    def history(self, name: str):
        """Every batch of the view: viewlet_history(name) as a DataFrame."""
        return self.spark.sql("SELECT * FROM viewlet_history(" + _literal(name) + ")")

    def read_view(self, name: str):
        """The view's rows, read as a table."""
        return self.spark.table(quote_identifier(name))

    def _row(self, statement: str) -> Dict:
        rows = self.spark.sql(statement).collect()
        return rows[0].asDict() if rows else {}

    def __getattr__(self, attr: str):
        from .context import Viewlet
        if attr.startswith("_") or not hasattr(Viewlet, attr):   # not the classic handle's
            raise AttributeError(f"'ConnectViewlet' object has no attribute '{attr}'")
        raise ViewletError(
            f"Viewlet's {attr} is not available from a Spark Connect client: the engine runs "
            "next to the server's JVM, and this handle sends Viewlet's SQL statements there "
            f"(create_view, refresh, drop_view, view_names, explain, describe, history, "
            f"read_view, sql). See {DOCS}.")


def _literal(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"
