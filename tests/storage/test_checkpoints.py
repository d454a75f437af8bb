"""Tables Viewlet creates are checkpointed every 10 commits (storage/deltars.py
OWN_TABLE_PROPERTIES): a handle reads at most a few log entries since the last checkpoint,
however many batches the table has seen. A caller's own delta.* properties still apply."""
from __future__ import annotations

import json
import os

import pyarrow as pa
from deltalake import DeltaTable

from viewlet.engine.state.manifest import Txn
from viewlet.storage.deltars import DeltaRsStore

ROWS = pa.table({"k": pa.array([1], pa.int64()), "v": pa.array([1], pa.int64())})


def _last_checkpoint(path):
    with open(os.path.join(path, "_delta_log", "_last_checkpoint")) as f:
        return json.load(f)["version"]


def test_created_tables_are_checkpointed_every_ten_commits(tmp_path):
    store = DeltaRsStore()
    for name, kwargs in (("written", {}), ("clustered", {"rows_per_file": 2})):
        path = str(tmp_path / name)
        store.create(path, ROWS, txn=Txn("viewlet:test", 0), **kwargs)
        for batch in range(1, 25):
            store.add_rows(path, ROWS, Txn("viewlet:test", batch))
        conf = DeltaTable(path).metadata().configuration
        assert conf.get("delta.checkpointInterval") == "10", conf
        # 25 commits (versions 0-24): the last checkpoint is fewer than 10 commits back
        assert 24 - 10 < _last_checkpoint(path) <= 24
        assert store.read_arrow(path).num_rows == 25       # every row, through the checkpoint


def test_a_callers_properties_apply_beside_them(tmp_path):
    store = DeltaRsStore()
    path = str(tmp_path / "t")
    store.create(path, ROWS, properties={"delta.enableChangeDataFeed": "true",
                                         "viewlet.view": "v"})
    conf = DeltaTable(path).metadata().configuration
    assert conf["delta.enableChangeDataFeed"] == "true" and conf["viewlet.view"] == "v"
    assert conf["delta.checkpointInterval"] == "10"
