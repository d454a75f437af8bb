"""Distributed correctness: a subset of the Spark oracle and lifecycle tests with executors
in separate JVMs (local-cluster), and a warehouse given as a file:/// URI."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pyspark
import pytest

from tests.spark.oracle import assert_view_matches
from tests.spark.workload import Workload

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MASTER = "local-cluster[2,1,1024]"
SUBSET = [
    "tests/ops/test_local_cluster.py::test_executors_are_separate_jvms",
    "tests/spark/test_random_oracle.py", "-k",
    "join_product_sum-depthinf or three_way_chain-depth1 or add_rows or test_executors",
    "tests/spark/test_lifecycle.py",
]


def test_executors_are_separate_jvms(spark):
    if not spark.sparkContext.master.startswith("local-cluster"):
        pytest.skip("runs inside test_oracle_subset_on_local_cluster")
    # the driver plus two executor JVMs (they register asynchronously: poll, bounded)
    deadline = time.monotonic() + 180
    status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus
    while status().size() < 3 and time.monotonic() < deadline:
        spark.sparkContext.parallelize(range(4), 4).count()
    assert status().size() == 3


@pytest.mark.skipif(os.environ.get("VIEWLET_TEST_MASTER", "").startswith("local-cluster"),
                    reason="already on local-cluster")
def test_oracle_subset_on_local_cluster(tmp_path):
    env = dict(os.environ, VIEWLET_TEST_MASTER=MASTER,
               SPARK_HOME=os.path.dirname(pyspark.__file__))   # local-cluster starts workers
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "--basetemp", str(tmp_path / "t"), *SUBSET],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    tail = out.stdout[-3000:] + out.stderr[-2000:]
    assert out.returncode == 0, tail
    assert " passed" in out.stdout and " skipped" not in out.stdout, tail


def test_file_uri_warehouse(spark, vl, tmp_path):   # vl: delta.`path` in the oracle
    from viewlet.api.context import Viewlet
    work = Workload(str(tmp_path / "tables"), seed=31)
    ctx = Viewlet(spark, "file://" + str(tmp_path / "uri wh"))
    assert ctx.warehouse.startswith("file://")
    r, s = work.paths["r"], work.paths["s"]
    query = (f"SELECT r.a, SUM(s.f) AS sf, COUNT(*) AS n FROM delta.`{r}` r "
             f"JOIN delta.`{s}` s ON r.b = s.b GROUP BY r.a")
    ctx.create_view("uri_v", query)
    for _ in range(2):
        work.batch()
        ctx.refresh("uri_v")
        actual = ctx.read_view("uri_v")
        actual.createOrReplaceTempView("uri_v_rows")
        assert_view_matches(spark, "uri_v_rows", query)
    location = ctx.ctx.catalog.find("uri_v").location
    assert location.startswith("file://") and os.path.isdir(location[len("file://"):])
    ctx.drop_view("uri_v")
    assert not os.path.exists(location[len("file://"):])
