"""The Python side of the parser hook: the JVM calls these methods through Py4J.

Nothing may escape as a Python exception (Py4J would bury it in a stack trace): every error
becomes a JSON reply the JVM turns into a Spark exception with the same message.
"""
from __future__ import annotations

import datetime as dt
import decimal
import json
import logging
import threading
import traceback

from . import commands, ddl, interrupts, relations
from ..errors import Cancelled, ViewletError, ViewletParseError
from ..engine.runtime import cancel
from ..frontend import syntax

log = logging.getLogger("viewlet")


def _error(e: BaseException, statement: str = "") -> str:
    if isinstance(e, ViewletError):
        return json.dumps({"error": {"kind": e.kind, "message": e.message, "position": e.position}})
    log.debug("internal error", exc_info=True)
    msg = f"Viewlet internal error: {type(e).__name__}: {e}"
    try:  # Spark errors raised by our own jobs: keep their message, drop the Java stack
        from pyspark.errors import PySparkException
        if isinstance(e, PySparkException):
            msg = f"Viewlet: Spark failed: {str(e).splitlines()[0]}"
    except ImportError:
        pass
    return json.dumps({"error": {"kind": "internal", "message": msg, "position": None,
                                 "trace": traceback.format_exc(limit=5)}})


def _json_value(v):
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, (dt.date, dt.datetime)):
        return v.isoformat()
    return v


def check_query_syntax(st, spark=None):
    """Syntax errors of a CREATE's query, positioned in the whole statement."""
    try:
        syntax.check(st.query, spark)
    except ViewletParseError as e:
        if e.position is not None:
            e.position += st.query_offset
        raise


class ViewletHandler:
    def __init__(self, viewlet):
        self.viewlet = viewlet
        self._lock = threading.Lock()
        self._tokens = {}          # statement id -> its cancel token, while it runs
        self._cancelled = {}       # statement id -> reason, for a cancel that came first

    def _context(self):
        """The engine's context statements run in: after this session was stopped and another
        started in this process, the one of the new session (session.follow_restart)."""
        from .session import follow_restart
        self.viewlet = follow_restart(self.viewlet)
        return self.viewlet.ctx

    def describe(self, text):
        try:
            table = relations.parse(text)
            if table is not None:        # Spark's DESCRIBE: answered for Viewlet's names only
                if not relations.claims(self._context(), table):
                    return json.dumps({"decline": True})
                return json.dumps({"columns": [{"name": n, "type": t}
                                               for n, t in relations.outputs(table)]})
            st = ddl.parse(text)
            if st.query is not None:       # a syntax error in the query is a parse error too
                check_query_syntax(st, self.viewlet.spark)
            return json.dumps({"columns": [{"name": n, "type": t} for n, t in ddl.OUTPUTS[st.kind]]})
        except BaseException as e:  # noqa: BLE001 - reported to the JVM
            return _error(e, text)

    def execute(self, text):
        return self._execute(text, None)

    def executeStatement(self, statement_id, text):  # noqa: N802 - Java interface name
        """execute() under an id that cancelStatement names (ViewletProtocol.execute)."""
        try:
            return self._execute(text, statement_id)
        finally:
            with self._lock:
                self._tokens.pop(statement_id, None)
                self._cancelled.pop(statement_id, None)

    def cancelStatement(self, statement_id, reason):  # noqa: N802 - Java interface name
        """The JVM thread running the statement was interrupted (a Spark Connect client
        interrupted its operation): it stops at its next step, as on Ctrl-C."""
        with self._lock:
            token = self._tokens.get(statement_id)
            if token is None:
                self._cancelled[statement_id] = reason
        if token is not None:
            token.cancel(reason)

    def _started(self, statement_id, token):
        if statement_id is None:
            return
        with self._lock:
            self._tokens[statement_id] = token
            reason = self._cancelled.pop(statement_id, None)
        if reason is not None:
            token.cancel(reason)

    def _execute(self, text, statement_id):
        token = st = None
        try:
            table = relations.parse(text)
            if table is not None:
                rows = relations.run(self._context(), table)
            else:
                st = ddl.parse(text)
                ctx = self._context()
                with cancel.statement(commands.title(st)) as token:
                    self._started(statement_id, token)
                    try:
                        rows = commands.run(ctx, st)
                    except BaseException:
                        if token.cancelled:  # what it left, for the error and Ctrl-C's message
                            token.message = commands.cancelled_message(ctx, st, token.reason)
                        raise
            return json.dumps({"rows": [[_json_value(v) for v in r] for r in rows]})
        except BaseException as e:  # noqa: BLE001
            if token is None or token.message is None:
                return _error(e, text)
            log.debug("statement cancelled", exc_info=True)
            if interrupts.cancelled_by_ctrl_c(token):   # nested in spark.sql on this thread
                interrupts.interrupt_call(token.message)
            return _error(Cancelled(token.message), text)

    def cancelAll(self):  # noqa: N802 - Java interface name
        """Ctrl-C in the spark-sql shell (io.viewlet.spark.ShellInterrupt): cancel every
        Viewlet statement running here; how many there were."""
        try:
            return cancel.cancel_all(f"{interrupts.CTRL_C} in the shell")
        except BaseException:  # noqa: BLE001 - nothing to report to the signal handler
            log.warning("cancelling Viewlet statements failed", exc_info=True)
            return 0

    def resolveRelation(self, parts_json):  # noqa: N802 - Java interface name
        try:
            df = self._context().resolve_relation(json.loads(parts_json))
            return None if df is None else df._jdf.queryExecution().analyzed()
        except ViewletError as e:
            log.warning("Viewlet could not resolve %s: %s", parts_json, e.message)
            return None
        except BaseException:  # noqa: BLE001
            log.warning("Viewlet could not resolve %s", parts_json, exc_info=True)
            return None

    def relationKinds(self, names_json):  # noqa: N802 - Java interface name
        try:
            return json.dumps(relations.kinds(self._context(), json.loads(names_json)))
        except BaseException:  # noqa: BLE001 - an answer Spark can act on: not Viewlet's
            log.warning("Viewlet could not look up %s", names_json, exc_info=True)
            return json.dumps([{"travel": False, "write": None} for _ in json.loads(names_json)])

    def resolveRelationAt(self, parts_json, version, micros):  # noqa: N802 - Java name
        # errors propagate: the JVM reports the Python message (a version that does not exist)
        df = relations.read_at(self._context(), json.loads(parts_json), version,
                               None if micros is None else int(micros))
        return None if df is None else df._jdf.queryExecution().analyzed()

    class Java:
        implements = ["io.viewlet.spark.ViewletHandler"]
