"""A Spark session with Viewlet's JVM extension and a fake Python handler (tests/jvm only)."""

import json
import re
import sys
from pathlib import Path

import pytest

_PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"
if str(_PYTHON_DIR) not in sys.path:  # running from a checkout without installing
    sys.path.insert(0, str(_PYTHON_DIR))

from viewlet.jvm import BRIDGE_CLASS, EXTENSIONS_CLASS, HANDLER_INTERFACE, jar_path  # noqa: E402


@pytest.fixture(scope="session")
def viewlet_jar():
    return jar_path()


@pytest.fixture(scope="module")
def jvm_spark(spark, viewlet_jar):
    """The run's one shared session (the root conftest.py), which loads the extension."""
    assert EXTENSIONS_CLASS in spark.conf.get("spark.sql.extensions", "")
    yield spark


def bridge(spark):
    return getattr(spark._jvm, BRIDGE_CLASS)


class FakeHandler:
    """Test double for Viewlet's Python compiler: canned replies, records every call."""

    class Java:
        implements = [HANDLER_INTERFACE]

    COLUMNS = [
        {"name": "name", "type": "string"},
        {"name": "n", "type": "bigint"},
        {"name": "ok", "type": "boolean"},
        {"name": "ts", "type": "timestamp"},
        {"name": "amount", "type": "decimal(10,2)"},
    ]
    ROWS = [["v1", 3, True, "2024-01-02T03:04:05", 1.25], [None, None, None, None, None]]

    def __init__(self, spark):
        self.spark = spark
        self.calls = []
        self.describe_reply = {"columns": self.COLUMNS}
        self.execute_reply = {"rows": self.ROWS}
        self.relations = {}  # name parts tuple -> callable returning a DataFrame

    def describe(self, text):
        self.calls.append(("describe", text))
        if re.match(r"(?is)\s*(DESC|DESCRIBE|ALTER\s+TABLE)\b", text) and \
                not re.search(r"(?i)\b(INCREMENTAL|MATERIALIZED)\b", text):
            return json.dumps({"decline": True})      # a table of Spark's, as Viewlet says
        return json.dumps(self.describe_reply)

    def execute(self, text):
        self.calls.append(("execute", text))
        if isinstance(self.execute_reply, Exception):
            raise self.execute_reply
        return json.dumps(self.execute_reply)

    def executeStatement(self, statement_id, text):  # noqa: N802 (Java interface name)
        return self.execute(text)

    def cancelStatement(self, statement_id, reason):  # noqa: N802 (Java interface name)
        self.calls.append(("cancel", (statement_id, reason)))

    def resolveRelation(self, ident_json):  # noqa: N802 (Java interface name)
        parts = tuple(json.loads(ident_json))
        self.calls.append(("resolve", parts))
        make = self.relations.get(parts)
        return make()._jdf.queryExecution().analyzed() if make else None

    def cancelAll(self):  # noqa: N802 (Java interface name)
        self.calls.append(("cancelAll", None))
        return 0

    def relationKinds(self, names_json):  # noqa: N802 (Java interface name)
        self.calls.append(("relationKinds", names_json))
        return json.dumps([{"travel": False, "write": None} for _ in json.loads(names_json)])

    def resolveRelationAt(self, ident_json, version, micros):  # noqa: N802
        self.calls.append(("resolveAt", (ident_json, version, micros)))
        return None

    def of(self, kind):
        return [arg for k, arg in self.calls if k == kind]


@pytest.fixture
def handler(jvm_spark):
    """A fresh FakeHandler registered for one test; the previous handler is restored after."""
    b = bridge(jvm_spark)
    previous = b.handler()
    h = FakeHandler(jvm_spark)
    b.register(h)
    yield h
    if previous is not None:
        b.register(previous)
    else:
        b.unregister()


@pytest.fixture
def no_handler(jvm_spark):
    b = bridge(jvm_spark)
    previous = b.handler()
    b.unregister()
    yield
    if previous is not None:
        b.register(previous)
