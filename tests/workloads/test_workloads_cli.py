import os

from viewlet.workloads.__main__ import main


def test_cli_streams(tpch_copy, tmp_path, capsys):
    root = os.path.dirname(tpch_copy["orders"])
    assert main(["tpch-stream", root, "--batches", "1", "--size", "300", "--seed", "1"]) == 0
    assert main(["orderbook-create", "-o", str(tmp_path / "book")]) == 0
    assert main(["orderbook-stream", str(tmp_path / "book"), "--batches", "2", "--size", "100"]) == 0
    out = capsys.readouterr().out
    assert "batch 1: 300 rows changed" in out
    assert "batch 2: 100 rows changed" in out
