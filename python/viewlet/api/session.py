"""Turning Viewlet on in a Spark session."""
from __future__ import annotations

import logging
import os
import sys
from typing import Dict, Optional

from pyspark.sql import SparkSession

from ..errors import NotEnabledError, ViewletError
from .context import Viewlet
from ..engine.state.published import publish_all, withdraw_temporary
from ..engine.state.warehouse import normalize_location

EXTENSION = "io.viewlet.spark.ViewletExtensions"
WAREHOUSE_CONF = "spark.viewlet.warehouse"
DEFAULT_WAREHOUSE = "viewlet-warehouse"
log = logging.getLogger("viewlet")
_current: Optional[Viewlet] = None


def configure_spark(builder: SparkSession.Builder, warehouse: Optional[str] = None,
                    delta_spark: bool = False) -> SparkSession.Builder:
    """Add Viewlet's extension jar and parser hook to a session builder (like delta's
    configure_spark_with_delta_pip, with which it composes in either order: both append to
    spark.sql.extensions). Call viewlet.enable(spark) once the session exists.

    Args:
        builder: the ``SparkSession.builder`` to configure.
        warehouse: directory or URI of the views' tables (``spark.viewlet.warehouse``);
            default ``./viewlet-warehouse`` at enable time.
        delta_spark: also add Delta Lake's extension, DeltaCatalog and its jar from Maven
            Central (docs/delta-sessions.md).

    A Spark Connect builder whose server pyspark starts in this process
    (``SparkSession.builder.remote("local[2]")``) gets the same settings, which go to that
    server's JVM, plus the Python the server attaches for Viewlet's statements
    (docs/connect.md).

    A local master's Python workers run this interpreter (PYSPARK_PYTHON, unless set):
    Spark's default, the first ``python3`` on the PATH, may lack the pyarrow and DuckDB
    the Spark target's phases run with (docs/operations.md).

    Returns:
        The builder, for chaining.

    Raises:
        ViewletError: the jar cannot be built or loaded into this process's JVM; the builder
            connects to a Connect server that is already running (``sc://...``: start that
            one with Viewlet, ``viewlet connect-server``).
    """
    from ..jvm import jar_path
    from ..jvm.running import ensure_loadable
    from . import connect
    remote = connect.remote_url(getattr(builder, "_options", {}))
    if remote is not None and remote.startswith("sc://"):
        raise connect.refuse_remote_builder(remote)
    jar = jar_path()
    ensure_loadable(jar)      # a JVM this process started for an earlier session
    if delta_spark:
        from . import delta_spark as delta
        for key, value in delta.settings(getattr(builder, "_options", {})).items():
            builder = builder.config(key, value)
    options = getattr(builder, "_options", {})
    jars = [j for j in str(options.get("spark.jars", "")).split(",") if j]
    extensions = [e for e in str(options.get("spark.sql.extensions", "")).split(",") if e]
    if jar not in jars:
        jars.append(jar)
    if EXTENSION not in extensions:
        extensions.append(EXTENSION)
    builder = builder.config("spark.jars", ",".join(jars)) \
        .config("spark.sql.extensions", ",".join(extensions))
    if warehouse is not None:
        builder = builder.config(WAREHOUSE_CONF, normalize_location(warehouse))
    if remote is None and str(options.get("spark.master", "local")).startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if remote is not None:    # a local Connect server: its Viewlet statements need a Python
        for key, value in connect.local_server_settings().items():
            if key not in options:     # the user's own choice wins
                builder = builder.config(key, value)
    return builder


def enable(spark: SparkSession, warehouse: Optional[str] = None) -> Viewlet:
    """Connect this session's Viewlet statements (CREATE/REFRESH/... INCREMENTAL VIEW) to
    Python and publish the warehouse's views in the session's catalog.

    On a Spark Connect session the engine runs next to the server's JVM, not here: this
    checks the server has Viewlet, starts its Python side and returns a
    ``viewlet.api.connect.ConnectViewlet``, whose methods send Viewlet's statements as SQL.

    Args:
        spark: a session built with ``configure_spark`` (or connected to a Connect server
            started with Viewlet).
        warehouse: overrides ``spark.viewlet.warehouse`` for this session (a Connect
            session uses its server's, and refuses another).

    Returns:
        The Viewlet handle (``create_view``, ``refresh``, ``explain``, ``describe``, ...).

    Raises:
        ViewletError: the session was built without Viewlet's extension (the message says
            how to add it).
    """
    global _current
    from . import connect
    if connect.is_connect_session(spark):
        return connect.enable(spark, warehouse)
    jvm = spark.sparkContext._jvm
    extensions = spark.conf.get("spark.sql.extensions", "") or ""
    if EXTENSION not in extensions:
        from ..jvm.running import not_loaded_message
        overwritten = f" (spark.sql.extensions is {extensions!r}: a later .config() of it " \
            "replaced Viewlet's; list both, comma-separated, or set it before " \
            "viewlet.configure_spark, which appends to it)" if extensions else ""
        raise ViewletError(not_loaded_message(EXTENSION) + overwritten)
    location = warehouse or spark.conf.get(WAREHOUSE_CONF, None) or \
        os.path.join(os.getcwd(), DEFAULT_WAREHOUSE)
    vl = Viewlet(spark, location)
    from pyspark.java_gateway import ensure_callback_server_started
    from .handler import ViewletHandler
    ensure_callback_server_started(spark.sparkContext._gateway)
    # Catalog tables before the handler: where the JVM attached this Python (the spark-sql
    # shell), its first statement goes on once the handler is registered and may read them.
    publish_all(vl.ctx, temporary=False)
    jvm.io.viewlet.spark.ViewletBridge.register(ViewletHandler(vl))
    from .interrupts import install
    install()                          # Ctrl-C cancels a running Viewlet statement
    if _current is not None and _current.spark is spark and _current.warehouse != vl.warehouse:
        withdraw_temporary(_current.ctx)   # the other warehouse's views leave this session
    _current = vl
    # an in-memory catalog of a new session has none of the views; the temporary ones read
    # their result tables through the handler
    publish_all(vl.ctx, catalog=False)
    log.info("Viewlet enabled: warehouse %s", vl.warehouse)
    return vl


def stopped(spark: SparkSession) -> bool:
    """Whether `spark.stop()` ended the session's SparkContext."""
    return spark.sparkContext._jsc is None


def follow_restart(ctx: Viewlet, spark: Optional[SparkSession] = None) -> Viewlet:
    """`ctx`, or when its session was stopped and another one runs in this process (a notebook
    restarting its session), a context enabled on the new session: its warehouse setting,
    else ctx's warehouse."""
    if not stopped(ctx.spark):
        return ctx
    if spark is None:
        spark = SparkSession.getActiveSession() or SparkSession._instantiatedSession
    if spark is None or stopped(spark):
        return ctx
    log.info("Viewlet follows the new Spark session of this process")
    return enable(spark, spark.conf.get(WAREHOUSE_CONF, None) or ctx.warehouse)


def context(spark: Optional[SparkSession] = None) -> Viewlet:
    """The Viewlet handle ``enable`` returned for this session (the last one enabled when
    `spark` is None); follows a session restarted in this process.

    Raises:
        NotEnabledError: Viewlet was not enabled on the session.
    """
    from . import connect
    if spark is not None and connect.is_connect_session(spark):
        return connect.context(spark)
    if _current is not None and spark is not None:
        follow_restart(_current, spark)
    if _current is None or (spark is not None and _current.spark is not spark
                            and _current.spark._jsparkSession != spark._jsparkSession):
        if _current is not None and spark is not None and \
                _current.spark.sparkContext is spark.sparkContext:
            return _current
        raise NotEnabledError("Viewlet is not enabled for this Spark session: call "
                              "viewlet.enable(spark) first.")
    return _current


def register_table(spark: SparkSession, name: str, path: str, replace: bool = False) -> Dict:
    """Give the Delta table at `path` a name usable in view definitions and queries.

    Args:
        spark: a session Viewlet is enabled on.
        name: the table's name (Spark's identifier rules).
        path: directory or URI of an existing Delta table.
        replace: re-point an existing name.

    Returns:
        The registration (table, location, status).

    Raises:
        NotEnabledError: Viewlet was not enabled on the session.
        ViewletError: no Delta table at `path`, or the name is taken and `replace` is False.
    """
    return context(spark).register_table(name, path, replace)
