"""Shared fixtures for tests/ and integration/: one Spark session per run, with Viewlet."""
from __future__ import annotations

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.abspath(__file__))
# Tests run the source tree (its jar is built on demand into a cache); the installed
# package (scripts/setup.sh) is what the demo and the CLI use.
if os.path.join(ROOT, "python") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, "python"))


# tests/delta runs in a pytest process of its own (scripts/test.sh) whose session has
# delta-spark's extension and catalog too: a JVM's session settings are fixed at its start.
DELTA_SESSION = os.environ.get("VIEWLET_TEST_DELTA_SPARK") == "1"
collect_ignore_glob = [] if DELTA_SESSION else ["tests/delta/*"]


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
        .config("spark.driver.memory", "4g") \
        .config("spark.driver.extraJavaOptions",
                os.environ.get("VIEWLET_TEST_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1")) \
        .config("spark.viewlet.engine", os.environ.get("VIEWLET_TEST_ENGINE", "local"))
    # 4g: the wide joins' plans (Q8: 95 maps) outgrow 2g over a whole run; the engine: the
    # target every batch runs on (tests/spark/oracle.py checks it), CI runs both.
    # TieredStopAtLevel=1 (the JVM's quick compiler only): the suite runs thousands of
    # different small queries, whose generated code the optimizing compiler would spend a
    # core on without paying back: two test modules side by side took 250 s with it, 328 s
    # without (377 s one after the other); the whole suite in two streams (scripts/test.sh)
    # gained less, 61 minutes on 2 cores. Semantics are the JVM's either way.
    if DELTA_SESSION:
        # as a user would: delta's pip helper (the jar from Maven through Spark's Ivy), its
        # extension and catalog first, Viewlet's configure_spark appending to them
        from delta.pip_utils import configure_spark_with_delta_pip
        builder = configure_spark_with_delta_pip(builder) \
            .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension") \
            .config("spark.sql.catalog.spark_catalog",
                    "org.apache.spark.sql.delta.catalog.DeltaCatalog") \
            .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("spark-warehouse")))
    session = viewlet.configure_spark(builder, warehouse=warehouse).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def vl(spark):
    import viewlet
    return viewlet.enable(spark)
