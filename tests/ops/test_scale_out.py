"""A batch larger than the driver's heap is maintained exactly: the distributed batch
(engine/batch/distributed.py, engine/maintain/distributed.py) reads, computes and writes it
on the executors of a local-cluster, in a driver JVM capped at 256 MB
(tests/ops/scale_out_child.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pyspark

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def test_a_batch_larger_than_the_driver_heap_is_maintained_exactly(tmp_path):
    env = dict(os.environ, SPARK_HOME=os.path.dirname(pyspark.__file__))
    out = subprocess.run([sys.executable, os.path.join(HERE, "scale_out_child.py"),
                          str(tmp_path), "25000"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=1500)
    tail = out.stdout[-3000:] + out.stderr[-3000:]
    assert out.returncode == 0, tail
    facts = json.loads(next(line[6:] for line in out.stdout.splitlines()
                            if line.startswith("FACTS ")))
    assert facts["batch_bytes"] > facts["heap"], facts      # the batch does not fit the heap
    assert facts["engine"] == "distributed", facts
    # weighed by its bytes in memory: its rows are far fewer than minChangeRows
    assert "in memory, more than a quarter of spark.driver.memory" in facts["reason"], facts
    assert facts["view_rows"] > 22_500, facts              # and so does the view
    # a small batch afterwards is not sent to the executors (its changes are few; which of
    # the driver's targets runs it depends on the map rows it reads)
    assert facts["small_engine"] in ("local", "spark"), facts
    assert facts["differences"] == 0, facts                 # both batches exact
