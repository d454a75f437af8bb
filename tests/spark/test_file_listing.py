"""Spark reads of a Delta snapshot's local files look the files up on the driver
(engine/spark/io.py `_listed_on_driver`): no Spark job for a table of more files than
spark.sql.sources.parallelPartitionDiscovery.threshold, the session's setting unchanged
after, and the rows read whole."""
from __future__ import annotations

import pyarrow as pa
from deltalake import write_deltalake

from viewlet.engine.spark.io import snapshot_frame
from viewlet.storage.deltars import DeltaRsStore

SETTING = "spark.sql.sources.parallelPartitionDiscovery.threshold"


def test_a_read_of_many_local_files_runs_no_listing_job(spark, tmp_path):
    path = str(tmp_path / "many")
    for i in range(40):              # 40 files: more than Spark's default threshold of 32
        write_deltalake(path, pa.table({"k": [i, i + 100], "v": [1, 2]}), mode="append")
    snap = DeltaRsStore().snapshot(path)
    assert len(snap.files) == 40
    before = spark.conf.get(SETTING, None)
    sc, group = spark.sparkContext, "viewlet-test-listing"
    earlier = sc.getLocalProperty("spark.jobGroup.id")
    sc.setLocalProperty("spark.jobGroup.id", group)
    try:
        frame = snapshot_frame(spark, snap)
        assert sc.statusTracker().getJobIdsForGroup(group) == []   # resolving it ran no job
    finally:
        sc.setLocalProperty("spark.jobGroup.id", earlier)
    assert spark.conf.get(SETTING, None) == before
    assert sorted(r.k for r in frame.collect()) == sorted(list(range(40)) + list(range(100, 140)))
