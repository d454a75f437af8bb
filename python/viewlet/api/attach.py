"""``python -m viewlet.api.attach``: Viewlet's Python side for a Spark driver that has no Python.

The Viewlet jar (io.viewlet.spark.ViewletAttach) starts this module inside the spark-sql
shell (or any JVM-only Spark driver) when the first Viewlet statement runs, the way
spark-submit starts a Python app: the JVM runs a Py4J gateway and passes its port and secret
in PYSPARK_GATEWAY_PORT / PYSPARK_GATEWAY_SECRET. This process wraps the JVM's SparkSession,
calls viewlet.enable(spark) (which registers the handler the JVM is waiting for) and then
serves the JVM's callbacks until its stdin reaches end of file: the JVM holds the other end of
that pipe, so this happens when the JVM exits, however it exits.

Failures print one line starting with ``viewlet.api.attach:`` that names the problem and the
remedy, and exit with status 2; the JVM shows it in the statement's error.
"""
from __future__ import annotations

import logging
import os
import signal
import sys

# The attach protocol this module speaks; the jar's ViewletAttach.ProtocolVersion must match.
PROTOCOL = 3
EXIT_FAILED = 2
ATTACH_CLASS = "io.viewlet.spark.ViewletAttach"


class AttachError(Exception):
    """The attach cannot proceed; the message names the problem and the remedy."""


def main() -> int:
    # Ctrl-C in the shell's terminal reaches this process too; it belongs to the shell
    # (which cancels the running statement), not to this helper.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="viewlet: %(levelname)s: %(message)s")
    try:
        spark = attach_session()
        enable_handler(spark)
    except AttachError as e:
        print(f"viewlet.api.attach: {e}", file=sys.stderr, flush=True)
        return EXIT_FAILED
    # The JVM ends this process when it exits: the last REFRESH's committed row first.
    signal.signal(signal.SIGTERM, lambda *_: _end())
    wait_for_end_of_input()
    _end()


def _end() -> None:
    """Exit once the committed rows of returned REFRESHes are appended (they land after the
    statement: engine/ops/committing.py). The JVM is gone, so interpreter cleanup is
    skipped (pyspark's would try to reach it)."""
    from ..engine.state.manifest import settle_all
    settle_all()
    os._exit(0)


def attach_session():
    """A pyspark SparkSession around the JVM's own session, over the JVM's gateway."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ or "PYSPARK_GATEWAY_SECRET" not in os.environ:
        raise AttachError(
            "no Spark JVM to attach to (PYSPARK_GATEWAY_PORT/PYSPARK_GATEWAY_SECRET are not "
            "set). This module is started by Viewlet's jar inside a Spark driver; to use "
            "Viewlet from a shell, run `viewlet sql`.")
    import pyspark
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    gateway = launch_gateway()  # connects to the running gateway given by the environment
    jvm = gateway.jvm
    bridge = getattr(jvm, ATTACH_CLASS)
    check_protocol(bridge)
    jsession = bridge.session()
    if jsession is None:
        raise AttachError("the JVM has no active SparkSession to attach to.")
    check_spark_version(pyspark.__version__, jsession.version())
    jsc = jvm.org.apache.spark.api.java.JavaSparkContext(jsession.sparkContext())
    sc = SparkContext(gateway=gateway, jsc=jsc, conf=SparkConf(_jconf=jsc.getConf()))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # SparkContext installed its own handler
    return SparkSession(sc, jsparkSession=jsession)


def check_protocol(bridge) -> None:
    import viewlet
    theirs = int(bridge.protocolVersion())
    if theirs != PROTOCOL:
        raise AttachError(
            f"the Viewlet jar in this Spark speaks attach protocol {theirs}, but the Viewlet "
            f"Python package {viewlet.__version__} at {os.path.dirname(viewlet.__file__)} "
            f"speaks {PROTOCOL}. Use the same Viewlet version on both sides: start the shell "
            "with `viewlet sql`, or pass the jar from `python -c 'import viewlet.jvm; "
            "print(viewlet.jvm.jar_path())'` of the Python given in spark.viewlet.python.")


def check_spark_version(pyspark_version: str, jvm_version: str) -> None:
    """PySpark's Python code must match the JVM's Spark in major.minor."""
    def major_minor(v: str):
        return tuple(v.split(".")[:2])
    if major_minor(pyspark_version) != major_minor(jvm_version):
        raise AttachError(
            f"this Python has PySpark {pyspark_version} but the shell runs Spark "
            f"{jvm_version}. Point spark.viewlet.python at a Python whose pyspark matches "
            f"(pip install 'pyspark=={jvm_version}' viewlet), or start the shell from that "
            "Python's pyspark with `viewlet sql`.")


def enable_handler(spark) -> None:
    from .. import enable as enable_viewlet
    from ..errors import ViewletError
    try:
        enable_viewlet(spark)
    except ViewletError as e:
        raise AttachError(e.message) from None


def wait_for_end_of_input() -> None:
    stream = sys.stdin.buffer if sys.stdin is not None else None
    if stream is None:
        return
    while stream.read(65536):
        pass


if __name__ == "__main__":
    sys.exit(main())
