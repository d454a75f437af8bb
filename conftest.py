"""Shared fixtures for tests/ and integration/: one Spark session per run, with Viewlet."""
from __future__ import annotations

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.abspath(__file__))
# Tests run the source tree (its jar is built on demand into a cache); the installed
# package (scripts/setup.sh) is what the demo and the CLI use. VIEWLET_TEST_INSTALLED=1:
# the tests of the package as installed from its wheel (tests/installed) import that one.
if os.environ.get("VIEWLET_TEST_INSTALLED") != "1" and \
        os.path.join(ROOT, "python") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, "python"))


# tests/delta runs in a pytest process of its own (scripts/test.sh) whose session has
# delta-spark's extension and catalog too: a JVM's session settings are fixed at its start.
DELTA_SESSION = os.environ.get("VIEWLET_TEST_DELTA_SPARK") == "1"
collect_ignore_glob = [] if DELTA_SESSION else ["tests/delta/*"]

# Spark's Python workers (the Spark target runs a batch's phases in one, with DuckDB) use
# this interpreter, as they do where its virtual environment is activated; the default,
# `python3` on the PATH, may lack pyarrow and DuckDB (the phases then run as Spark SQL,
# tests/spark/test_phase_task.py).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from pyspark.sql import SparkSession
    import viewlet
    warehouse = str(tmp_path_factory.mktemp("warehouse"))
    # VIEWLET_TEST_MASTER=local-cluster[2,1,1024] runs executors in separate JVMs
    # (tests/ops/test_local_cluster.py); SPARK_HOME must then point at the pyspark package.
    builder = SparkSession.builder.master(os.environ.get("VIEWLET_TEST_MASTER", "local[2]")) \
        .appName("viewlet-tests") \
        .config("spark.ui.enabled", "false") \
        .config("spark.sql.shuffle.partitions", "2") \
        .config("spark.viewlet.engine", os.environ.get("VIEWLET_TEST_ENGINE", "local"))
    # the engine: the target every batch runs on (tests/spark/oracle.py checks it), CI runs
    # each. Driver memory: VIEWLET_TEST_DRIVER_MEMORY, "default" for Spark's (1g); else 4g:
    # the whole suite's plans in one driver (Q8's view has 95 maps) outgrow 2g.
    memory = os.environ.get("VIEWLET_TEST_DRIVER_MEMORY", "4g")
    if memory != "default":
        builder = builder.config("spark.driver.memory", memory)
    # VIEWLET_TEST_JAVA_OPTIONS: extra driver JVM flags (e.g. -XX:TieredStopAtLevel=1, the
    # quick JIT only, ran two modules side by side in 250 s against 328 s; it is not CI's
    # default: a CI run in two streams with it lost its test JVM, cause unrecorded).
    # VIEWLET_TEST_INTERPRETED=1: whole-stage and expression codegen off. The test tables
    # hold tens of rows and nearly every query is new, so compiling Java for each costs more
    # CPU than it saves; results are Spark's either way (docs/internals.md, "Testing").
    if os.environ.get("VIEWLET_TEST_INTERPRETED") == "1":
        builder = builder.config("spark.sql.codegen.wholeStage", "false") \
            .config("spark.sql.codegen.factoryMode", "NO_CODEGEN")
    if os.environ.get("VIEWLET_TEST_JAVA_OPTIONS"):
        builder = builder.config("spark.driver.extraJavaOptions",
                                 os.environ["VIEWLET_TEST_JAVA_OPTIONS"])
    if DELTA_SESSION:
        # as a user would: delta's pip helper (the jar from Maven through Spark's Ivy), its
        # extension and catalog first, Viewlet's configure_spark appending to them
        from delta.pip_utils import configure_spark_with_delta_pip
        builder = configure_spark_with_delta_pip(builder) \
            .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension") \
            .config("spark.sql.catalog.spark_catalog",
                    "org.apache.spark.sql.delta.catalog.DeltaCatalog") \
            .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("spark-warehouse"))) \
            .config("spark.databricks.delta.snapshotPartitions", "2")
        # snapshotPartitions: delta-spark rebuilds a table's state in 50 tasks by default,
        # seconds per DML statement on a test's tables of a few rows
    session = viewlet.configure_spark(builder, warehouse=warehouse).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def vl(spark):
    import viewlet
    return viewlet.enable(spark)


# ---------------------------------------------------------------- when the test JVM dies
# Every test after it fails with py4j's "Connection refused", which says nothing of why.
# The first failure that finds the JVM gone records its exit status and the JVM's last words
# (its stderr lands in the running test's captured output), printed in the terminal summary
# and appended to $VIEWLET_TEST_JVM_REPORT (scripts/test.sh prints that file last).
JVM_EXITS = {
    0: "exited normally: its stdin closed (the Python side went away)",
    50: "Spark's handler exited on an uncaught fatal error (e.g. StackOverflowError in a task)",
    52: "Spark's handler exited on an OutOfMemoryError (the driver heap is spark.driver.memory)",
    -6: "aborted: the JVM itself crashed (see hs_err_pid*.log)",
    -9: "was SIGKILLed: the kernel's OOM killer (machine memory) or another process",
}
_jvm_death: list[str] = []


def _test_jvm():
    """The Popen of the JVM PySpark launched in this process, or None (no JVM started)."""
    if "pyspark" not in sys.modules:    # a failure in a JVM-free test: no import for it
        return None
    from viewlet.jvm.running import running_gateway
    return getattr(running_gateway(), "proc", None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.failed or _jvm_death:
        return
    proc = _test_jvm()
    code = proc.poll() if proc is not None else None
    if code is None:
        return
    words = "\n".join(text for title, text in report.sections if "stderr" in title)
    crash_log = [os.path.join(d, f"hs_err_pid{proc.pid}.log") for d in (ROOT, os.getcwd())]
    _jvm_death.append(
        f"The test JVM (pid {proc.pid}) {JVM_EXITS.get(code, 'exited')} - exit status {code}; "
        f"first seen gone at {item.nodeid} ({report.when}).\n"
        + "".join(f"Its crash log: {p}\n" for p in crash_log if os.path.exists(p))
        + "Its last stderr lines:\n" + "\n".join(words.splitlines()[-40:]) + "\n")
    path = os.environ.get("VIEWLET_TEST_JVM_REPORT")
    if path:
        with open(path, "a") as out:
            out.write(_jvm_death[0])


def pytest_terminal_summary(terminalreporter):
    for text in _jvm_death:
        terminalreporter.section("the test JVM died", sep="!")
        terminalreporter.write(text)


# ---------------------------------------------------------- the views a test run creates
# VIEWLET_RECORD_VIEWS=FILE appends one JSON line per view CREATE compiles (its query, the
# tables it resolved to, its options): the corpus tests/compiler/test_deterministic.py
# compiles under several hash seeds (scripts/test.sh runs it after the suite).
def pytest_configure(config):
    path = os.environ.get("VIEWLET_RECORD_VIEWS")
    if path:
        from tests.view_corpus import record_creates
        record_creates(path)


# ------------------------------------------------------------ named parts of the suite
# VIEWLET_TEST_SUBSET picks a named part of the collected tests (scripts/test.sh):
#   representative  the other end of the Spark range: the oracle modules' first case of
#                   each test function (their other tests whole), the DDL, JVM, shell and
#                   pipelines and Spark Connect tests, TPC-H's smallest views, map types of
#                   a few views
#   restart         the restart variant (VIEWLET_TEST_RESTART=1): each oracle module's first
#                   test (case), TPC-H Q5, Q21 and Q22a
ORACLE_MODULES = ("test_random_oracle", "test_nested_oracle", "test_subquery_forms",
                  "test_select_subqueries", "test_multisets", "test_more_sql",
                  "test_sql_constructs", "test_windows", "test_top_n", "test_views_over_views",
                  "test_orderbook_nested", "test_replace")
WHOLE_MODULES = ("test_ddl", "test_databricks_ddl", "test_extension", "test_delta_hint",
                 "test_build",
                 "test_pipelines",    # pipelines exist from Spark 4.1: only the newest end runs them
                 "test_spark_sql_shell", "test_attach_module", "test_launcher", "test_connect",
                 "test_connect_disconnect", "test_connect_interrupt", "test_connect_local",
                 "test_connect_launcher")
# subset -> (cases kept per test function, or per module when None; chosen cases by module)
SUBSETS = {
    "representative": (1, {"test_tpch_nested": ("q1-sf0.001", "q6-sf0.001", "q21-sf0.001"),
                           # CREATE's own typing against this Spark's analyzer
                           "test_map_types": ("q8", "q22a", "avg_nullable", "joined_date_trunc",
                                              "group_by_expression_double")}),
    # Q8 (95 maps) is left to the seeds part, which compiles it under other hash seeds: the
    # same program; here views of a few maps each load it from the catalog in another process
    "restart": (None, {"test_tpch_nested": ("q5-sf0.001", "q21-sf0.001", "q22a-sf0.01")}),
}


def pytest_collection_modifyitems(config, items):
    subset = os.environ.get("VIEWLET_TEST_SUBSET")
    if not subset:
        return
    per_function, chosen = SUBSETS[subset]
    seen: dict = {}
    keep, drop = [], []
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1]
        if module in chosen:
            ok = getattr(item, "callspec", None) is not None and item.callspec.id in chosen[module]
        elif module in ORACLE_MODULES and per_function is None:
            ok = module not in seen
            seen[module] = True
        elif module in ORACLE_MODULES:
            key = (module, item.originalname)
            seen[key] = seen.get(key, 0) + 1
            ok = seen[key] <= per_function
        else:
            ok = subset == "representative" and module in WHOLE_MODULES
        (keep if ok else drop).append(item)
    config.hook.pytest_deselected(items=drop)
    items[:] = keep
