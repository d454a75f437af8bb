"""`viewlet explain FILE.sql`: the trigger program of a definition, without Spark. The Spark
test checks that it prints exactly what EXPLAIN INCREMENTAL VIEW prints for the created view."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYTHON_DIR = ROOT / "python"
if str(PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(PYTHON_DIR))

from viewlet.tools import cli

TPCH = sorted((ROOT / "sql" / "tpch").glob("*.sql"))
ORDERBOOK = sorted((ROOT / "sql" / "orderbook").glob("*.sql"))
REFUSED: dict = {}                          # file stem -> construct named in the refusal


def _explain(capsys, *args):
    code = cli.main(["explain", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("path", TPCH + ORDERBOOK, ids=lambda p: p.stem)
def test_shipped_definitions_compile_offline(path, capsys):
    schema = "tpch" if path.parent.name == "tpch" else "orderbook"
    code, out, err = _explain(capsys, path, "--schema", schema)
    if path.stem in REFUSED:
        assert code == cli.EXIT_FAILED and REFUSED[path.stem] in err and not out
        return
    assert code == cli.EXIT_OK, err
    assert out.startswith(f"Incremental view {path.stem}\n")
    assert "Maps:" in out and "ON BATCH d" in out and "MERGE(s)" in out


def test_create_statement_file_and_depth_override(tmp_path, capsys):
    f = tmp_path / "create.sql"
    f.write_text("-- a header\nCREATE INCREMENTAL VIEW per_brand WITH (depth = 1) AS\n"
                 "SELECT p_brand, COUNT(*) AS n FROM part, partsupp\n"
                 "WHERE p_partkey = ps_partkey GROUP BY p_brand;\n")
    code, first_order, err = _explain(capsys, f, "--schema", "tpch")
    assert code == cli.EXIT_OK, err
    assert first_order.startswith("Incremental view per_brand\n  depth: 1 (first-order IVM)")
    code, higher, _ = _explain(capsys, f, "--schema", "tpch", "--depth", "unlimited")
    assert code == cli.EXIT_OK and "depth: unlimited" in higher
    assert higher.count("delta map") > first_order.count("delta map")


def test_errors_name_the_problem(tmp_path, capsys):
    q3 = ROOT / "sql" / "tpch" / "q3.sql"
    code, _, err = _explain(capsys, q3)
    assert code == cli.EXIT_FAILED and "'customer' not found" in err and "--table" in err
    code, _, err = _explain(capsys, tmp_path / "missing.sql")
    assert code == cli.EXIT_ENVIRONMENT and "no such file" in err
    code, _, err = _explain(capsys, q3, "--warehouse", tmp_path)
    assert code == cli.EXIT_ENVIRONMENT and "not a Viewlet warehouse" in err
    with pytest.raises(SystemExit) as bad:
        cli.main(["explain", str(q3), "--table", "customer"])
    assert bad.value.code == 2 and "NAME=PATH" in capsys.readouterr().err
    broken = tmp_path / "broken.sql"
    broken.write_text("SELECT o_custkey, SUM(o_totalprice) FROM orders GROUP BY 1 ORDER BY 3 LIMIT 2")
    code, _, err = _explain(capsys, broken, "--schema", "tpch")
    assert code == cli.EXIT_FAILED and "ORDER BY" in err


def test_table_option_reads_the_delta_schema_without_java(tmp_path):
    import pyarrow as pa
    from deltalake import write_deltalake
    write_deltalake(str(tmp_path / "t"), pa.table({"k": pa.array([1], pa.int64()),
                                                     "v": pa.array([2.5], pa.float64())}))
    f = tmp_path / "v.sql"
    f.write_text("SELECT k, SUM(v) AS total FROM t GROUP BY k")
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR), JAVA_HOME=str(tmp_path / "no-java"),
               PATH=os.path.dirname(sys.executable))       # no `java` reachable at all
    r = subprocess.run([sys.executable, "-m", "viewlet", "explain", str(f),
                        "--table", f"t={tmp_path / 't'}"],
                       capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "view_state[t_k]" in r.stdout and "t(k: t_k, v: t_v) * t_v" in r.stdout
    assert "ON BATCH dt:" in r.stdout


def test_caches_option_shows_the_view_caches(capsys):
    from viewlet.api import ddl
    from viewlet.errors import ViewletParseError
    cached = ROOT / "sql" / "orderbook" / "vwap_cached.sql"
    code, out, err = _explain(capsys, cached, "--schema", "orderbook")
    assert code == cli.EXIT_OK, err
    # one cache map of the nested query (VWAP's SUM over higher prices) by its input, holding
    # both of the nested aggregate's components: the non-NULL count and the sum
    lines = out.splitlines()
    headers = [i for i, line in enumerate(lines) if "(view cache:" in line]
    assert len(headers) == 1, out
    name = lines[headers[0]].split("[")[0].strip()
    columns = [line for line in lines if line.strip().startswith((f"{name} :=", f"{name}.v"))]
    assert len(columns) == 2, out
    code, plain, err = _explain(capsys, ROOT / "sql" / "orderbook" / "vwap.sql", "--schema", "orderbook")
    assert code == cli.EXIT_OK and "view cache" not in plain
    assert ddl.parse("CREATE INCREMENTAL VIEW v WITH (caches = on) AS SELECT 1").options == {"caches": True}
    with pytest.raises(ViewletParseError, match="caches must be true or false"):
        ddl.parse("CREATE INCREMENTAL VIEW v WITH (caches = maybe) AS SELECT 1")
