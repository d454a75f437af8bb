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
        .config("spark.viewlet.engine", os.environ.get("VIEWLET_TEST_ENGINE", "local"))
    # 4g: the wide joins' plans (Q8: 95 maps) outgrow 2g over a whole run; the engine: the
    # target every batch runs on (tests/spark/oracle.py checks it), CI runs both
    session = viewlet.configure_spark(builder, warehouse=warehouse).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def vl(spark):
    import viewlet
    return viewlet.enable(spark)
