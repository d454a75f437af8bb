"""The small-file primitives refresh leases use (engine/state/lease.py), on a local warehouse
given as a path and as a file: URI."""
from __future__ import annotations

import pytest

from viewlet.storage.deltars import DeltaRsStore


@pytest.mark.parametrize("uri", [False, True])
def test_put_get_list_remove(tmp_path, uri):
    store = DeltaRsStore()
    directory = f"file://{tmp_path}/leases" if uri else str(tmp_path / "leases")
    assert store.list_names(directory) == []
    assert store.get_text(f"{directory}/1-a.json") is None
    store.put_text(f"{directory}/1-a.json", "first")
    store.put_text(f"{directory}/1-a.json", "second")         # replaced whole
    store.put_text(f"{directory}/2-b.json", "other")
    assert store.get_text(f"{directory}/1-a.json") == "second"
    assert store.list_names(directory) == ["1-a.json", "2-b.json"]   # no temporary files left
    store.remove_file(f"{directory}/1-a.json")
    store.remove_file(f"{directory}/1-a.json")                 # a missing file is fine
    assert store.list_names(directory) == ["2-b.json"]
