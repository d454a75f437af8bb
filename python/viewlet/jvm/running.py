"""The Viewlet jar in a JVM this Python process already runs (a session restarted in a notebook).

PySpark starts its JVM once per Python process, with the jars of the first session's builder
on its class path; `spark.stop()` ends the SparkContext, not the JVM. A session built later with
`viewlet.configure_spark` gets Viewlet's jar in `spark.jars`, which Spark ships to executors
but does not add to the running driver's class loader, so the driver cannot load the parser
extension (`SHOW INCREMENTAL VIEWS` is a Spark parse error) nor the bridge (`'JavaPackage'
object is not callable`). `ensure_loadable` adds the jar to that class loader before the
session exists: the extension classes then load as if the JVM had started with them.
"""
from __future__ import annotations

from ..errors import ViewletError
from . import EXTENSIONS_CLASS

RESTART_REMEDY = ("restart the Python process (in a notebook: restart the kernel) and build "
                  "its first Spark session with viewlet.configure_spark(SparkSession.builder, "
                  "warehouse=...)")


def running_gateway():
    """The Py4J gateway of the JVM this process started for PySpark, or None."""
    from pyspark import SparkContext
    return SparkContext._gateway


def loadable(jvm, class_name: str = EXTENSIONS_CLASS) -> bool:
    """Whether the JVM's context class loader (the one Spark loads extensions with) has it."""
    from py4j.protocol import Py4JError
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(class_name, False, loader)
        return True
    except Py4JError:
        return False


def ensure_loadable(jar: str) -> None:
    """Make the classes of `jar` loadable in the JVM this process already runs, if any
    (no JVM yet: the session's builder starts one with the jar)."""
    gateway = running_gateway()
    if gateway is None:
        return
    jvm = gateway.jvm
    if loadable(jvm):
        return
    from py4j.protocol import Py4JError
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        # Spark's MutableURLClassLoader (spark-submit's driver loader) has a public addURL.
        loader.addURL(jvm.java.io.File(jar).toURI().toURL())
    except Py4JError:
        pass
    if not loadable(jvm):
        raise ViewletError(
            "This Python process already runs a Spark JVM that was started without Viewlet's "
            "jar (an earlier session was built without viewlet.configure_spark), and the jar "
            f"cannot be added to it. To use Viewlet, {RESTART_REMEDY}.")


def not_loaded_message(extension: str) -> str:
    """enable() on a session without the extension: what happened and what to do."""
    return ("Viewlet's extension is not loaded in this Spark session. Build the session with "
            "viewlet.configure_spark(SparkSession.builder, warehouse=...).getOrCreate(), or "
            f"start it with --jars <viewlet jar> --conf spark.sql.extensions={extension}. If "
            "you did, getOrCreate() returned a session that was already running without it: "
            "call spark.stop() first, then build the session again (the jar is added to the "
            "running JVM).")
