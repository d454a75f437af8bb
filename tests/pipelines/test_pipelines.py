"""`viewlet pipelines`: the example project sql/pipelines/sales run twice with base-table
changes between (inserts, deletes, updates), every view checked against Spark's evaluation
of its query after each run, and the second run's incremental views against their history (a
`committed` batch, not a rebuild). Dry-run's report, before and after a first run, writing
nothing. The Spark 4.1+ gate of the command.
"""
from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "sql" / "pipelines" / "sales"

from tests.session_state import viewlet_restored  # noqa: E402
from viewlet.tools.pipelines.spec import spark_version_problem  # noqa: E402

needs_pipelines = pytest.mark.skipif(
    spark_version_problem() is not None,
    reason="Spark Declarative Pipelines exist from Spark 4.1 (test_version_gate runs here)")

# Spark's own evaluation of each view's definition (as written in the example's files)
ORACLE = {
    "customer_revenue": """
        SELECT o.customer_id, c.region, COUNT(*) AS orders, SUM(o.amount) AS revenue
        FROM orders o JOIN customers c ON o.customer_id = c.customer_id
        WHERE o.status <> 'cancelled' GROUP BY o.customer_id, c.region""",
    "region_revenue": """
        SELECT region, COUNT(*) AS customers, SUM(revenue) AS revenue,
               MAX(revenue) AS top_customer_revenue
        FROM ({customer_revenue}) GROUP BY region""",
    "order_amount_median": """
        SELECT c.region, median(o.amount) AS median_amount
        FROM orders o JOIN customers c ON o.customer_id = c.customer_id GROUP BY c.region""",
    "big_customers": """
        SELECT customer_id, region, revenue FROM ({customer_revenue}) WHERE revenue > 100""",
    "active_regions": """
        SELECT region, revenue FROM ({region_revenue}) WHERE customers >= 2""",
}
INCREMENTAL = ("customer_revenue", "region_revenue", "big_customers")
FULL = {"order_amount_median": "the aggregate MEDIAN",
        "active_regions": "defined with the DataFrame API"}


def oracle(name: str) -> str:
    """The view's query over base tables only (upstream views' queries inlined)."""
    return ORACLE[name].format(**{k: oracle(k) for k in ("customer_revenue", "region_revenue")
                                  if "{" + k + "}" in ORACLE[name]})


@pytest.fixture
def project(spark, vl, tmp_path):
    """The example copied to a scratch folder, its base tables made there by its
    make_tables.py and registered in a warehouse of its own (the session is switched to it
    for the test and back after: tests/session_state.py)."""
    with viewlet_restored(spark):
        yield from _example_project(spark, tmp_path)


def _example_project(spark, tmp_path):
    import viewlet
    from viewlet.tools.pipelines import spec as specs

    folder = tmp_path / "sales"
    shutil.copytree(EXAMPLE, folder)
    vl = viewlet.enable(spark, str(tmp_path / "warehouse"))
    import importlib.util
    module_spec = importlib.util.spec_from_file_location("make_tables", folder / "make_tables.py")
    make_tables = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(make_tables)
    tables = make_tables.create(str(folder / "data"))
    for name, path in tables.items():
        vl.register_table(name, path)
    # the pipeline's database, whose folder holds the tables recomputed in full (SDP's
    # managed tables), in the scratch folder
    spark.sql(f"CREATE DATABASE sales LOCATION '{tmp_path / 'sales.db'}'")
    spec_path = specs.locate(None, folder / "transformations")  # found from a subfolder
    yield vl, spec_path, specs.load(spec_path), tables
    for name in ("big_customers", "region_revenue", "customer_revenue"):
        spark.sql(f"DROP MATERIALIZED VIEW IF EXISTS {name}")
    spark.sql("DROP DATABASE IF EXISTS sales CASCADE")


def run(vl, spec_path, spec, dry=False):
    from viewlet.tools.pipelines.command import execute
    out = io.StringIO()
    code = execute(vl, spec_path, spec, dry=dry, out=out)
    return code, out.getvalue()


def line_of(output: str, view: str) -> str:
    return next(line for line in output.splitlines()
                if line.startswith(f"  spark_catalog.sales.{view}:"))


def check_all(spark):
    from tests.spark.oracle import assert_view_matches
    for name in ORACLE:
        assert_view_matches(spark, name, oracle(name), engine=False)


def change_base_tables(tables):
    """Another job's commits: inserts, a delete and updates (delta-rs)."""
    import deltalake
    import pyarrow as pa
    from decimal import Decimal

    orders = deltalake.DeltaTable(tables["orders"])
    deltalake.write_deltalake(tables["orders"], pa.table({
        "order_id": pa.array([7, 8, 9], pa.int64()),
        "customer_id": pa.array([2, 5, 4], pa.int64()),
        "amount": pa.array([Decimal("40.00"), Decimal("60.00"), Decimal("1.00")],
                           pa.decimal128(10, 2)),
        "status": ["open", "open", "open"]}), mode="append")
    orders.delete("order_id = 3")                       # customer 2's only order so far
    orders.update(updates={"status": "'cancelled'"}, predicate="order_id = 6")   # customer 4 drops to 1.00
    orders.update(updates={"amount": "500.00"}, predicate="order_id = 2")
    deltalake.write_deltalake(tables["customers"], pa.table({
        "customer_id": pa.array([5], pa.int64()), "region": ["south"]}), mode="append")
    deltalake.DeltaTable(tables["customers"]).update(updates={"region": "'west'"}, predicate="customer_id = 3")


@needs_pipelines
def test_example_runs_incrementally_and_equals_spark(spark, project):
    vl, spec_path, spec, tables = project
    code, out = run(vl, spec_path, spec)
    assert code == 0, out
    for name in INCREMENTAL:
        assert "incremental, created" in line_of(out, name), out
    for name, why in FULL.items():
        assert "full, recomputed" in line_of(out, name) and why in line_of(out, name), out
    assert "COMMENT not applied" in out
    check_all(spark)

    change_base_tables(tables)
    code, out = run(vl, spec_path, spec)
    assert code == 0, out
    check_all(spark)
    for name in INCREMENTAL:
        assert "incremental, refreshed" in line_of(out, name), out
        statuses = [r.status for r in spark.sql(
            f"SELECT status FROM viewlet_history('{name}') ORDER BY batch").collect()]
        assert statuses[0] == "created" and statuses[-1] == "committed", (name, statuses)
        assert "rebuilt" not in statuses and "replaced" not in statuses, (name, statuses)
    for name, why in FULL.items():
        assert "full, recomputed" in line_of(out, name) and why in line_of(out, name), out

    code, out = run(vl, spec_path, spec)           # no new commits: nothing to apply
    assert code == 0, out
    for name in INCREMENTAL:
        assert "incremental, up to date" in line_of(out, name), out
    check_all(spark)


def _files(folder: Path):
    return sorted((str(p.relative_to(folder)), p.stat().st_mtime_ns)
                  for p in folder.rglob("*") if p.is_file())


@needs_pipelines
def test_dry_run_reports_and_writes_nothing(spark, project, tmp_path):
    vl, spec_path, spec, tables = project
    before = _files(tmp_path)
    code, out = run(vl, spec_path, spec, dry=True)
    assert code == 0, out
    assert "incremental, will create" in line_of(out, "customer_revenue"), out
    assert "incremental, will create" in line_of(out, "region_revenue"), out
    assert "spark_catalog.sales.customer_revenue in its place" in \
        line_of(out, "region_revenue"), out
    assert "full, will recompute" in line_of(out, "order_amount_median"), out
    assert "the aggregate MEDIAN" in line_of(out, "order_amount_median"), out
    # Python functions reading views the first run makes cannot be called before it
    assert "undecided. It reads spark_catalog.sales.customer_revenue" in \
        line_of(out, "big_customers"), out
    assert "nothing was written" in out
    assert _files(tmp_path) == before
    assert not spark.catalog.tableExists("customer_revenue")

    assert run(vl, spec_path, spec)[0] == 0
    before = _files(tmp_path)
    code, out = run(vl, spec_path, spec, dry=True)
    assert code == 0, out
    for name in INCREMENTAL:
        assert "incremental, will refresh" in line_of(out, name), out
    for name, why in FULL.items():
        assert "full, will recompute" in line_of(out, name) and why in line_of(out, name), out
    assert _files(tmp_path) == before


@needs_pipelines
def test_streaming_tables_and_flows_are_refused_before_anything_runs(spark, project):
    from viewlet.tools.pipelines.spec import PipelineError
    vl, spec_path, spec, _ = project
    (spec_path.parent / "transformations" / "stream.sql").write_text(
        "CREATE STREAMING TABLE order_events AS SELECT * FROM STREAM(orders);\n"
        "CREATE FLOW backfill AS INSERT INTO order_events BY NAME SELECT * FROM orders;\n")
    with pytest.raises(PipelineError) as e:
        run(vl, spec_path, spec)
    message = str(e.value)
    assert "streaming table spark_catalog.sales.order_events (transformations/stream.sql:1)" \
        in message
    assert "flow spark_catalog.sales.backfill (transformations/stream.sql:2)" in message
    assert "spark-pipelines run" in message          # the remedy
    assert not spark.catalog.tableExists("customer_revenue")   # nothing ran


def test_version_gate(monkeypatch, capsys):
    """On pyspark 4.0 the command says pipelines need Spark 4.1+ (here for real when this
    Python has 4.0; else with the version it reads set to 4.0.1)."""
    import pyspark
    from viewlet.tools import cli

    if spark_version_problem() is None:
        monkeypatch.setattr(pyspark, "__version__", "4.0.1")
    assert cli.main(["pipelines", "run", "--spec", str(EXAMPLE / "spark-pipeline.yml")]) == 2
    err = capsys.readouterr().err
    assert "viewlet pipelines run: Spark Declarative Pipelines need Spark 4.1 or newer" in err
    assert "pyspark 4.0.1" in err and "pip install 'pyspark[sql]>=4.1" in err
    assert spark_version_problem("4.1.0") is None and spark_version_problem("4.3.0") is None


def test_spec_rules(tmp_path):
    """SDP's rules for the spec, applied without pyspark[pipelines] (PyYAML or SnakeYAML)."""
    from viewlet.tools.pipelines.spec import PipelineError, locate, unpack

    path = tmp_path / "spark-pipeline.yml"
    spec = unpack({"name": "p", "storage": "s", "schema": "db",
                   "libraries": [{"glob": {"include": "transformations/**"}}]}, path)
    assert (spec.database, spec.catalog) == ("db", None)
    assert [lib.include for lib in spec.libraries] == ["transformations/**/*"]
    early = unpack({"name": "p", "storage": "s",      # early 4.1 previews: definitions
                    "definitions": [{"glob": {"include": "a.sql"}}]}, path)
    assert [lib.include for lib in early.libraries] == ["a.sql"]
    for data, message in [({"name": "p"}, "required field 'storage'"),
                          ({"name": "p", "storage": "s", "targets": []}, "'targets' is "
                           "unexpected"),
                          ({"name": "p", "storage": "s", "libraries": ["t.sql"]},
                           "each entry of libraries is `- glob: {include: PATTERN}`"),
                          ({"name": "p", "storage": "s", "configuration": {"a": True}},
                           "strings to strings"),
                          ({"name": "p", "storage": "s",
                            "libraries": [{"glob": {"include": "t/**/*.sql"}}]},
                           "only file paths, or folder paths ending with /\\*\\*")]:
        with pytest.raises(PipelineError, match=message):
            unpack(data, path)
    (tmp_path / "spark-pipeline.yml").write_text("name: p\n")
    (tmp_path / "spark-pipeline.yaml").write_text("name: p\n")
    with pytest.raises(PipelineError, match="remove one, or choose one with --spec"):
        locate(None, tmp_path)
    os.remove(tmp_path / "spark-pipeline.yaml")
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert locate(None, tmp_path / "a" / "b") == tmp_path / "spark-pipeline.yml"


def test_query_of_a_statement():
    from viewlet.tools.pipelines.graph import query_of
    assert query_of("CREATE MATERIALIZED VIEW `as` (a INT COMMENT 'as') COMMENT 'x as y' "
                    "TBLPROPERTIES ('a'='b') AS WITH c AS (SELECT 1 AS x) SELECT * FROM c") \
        == "WITH c AS (SELECT 1 AS x) SELECT * FROM c"
    assert query_of("CREATE MATERIALIZED VIEW v\n-- AS in a comment\nAS\n  SELECT 1;") \
        == "SELECT 1"


@needs_pipelines
def test_command_line_in_the_project_folder(tmp_path):
    """The example as docs/pipelines.md runs it: `python make_tables.py`, then `viewlet
    pipelines dry-run` in the project's folder (its own Spark session with the spec's
    configuration, the spec read without PyYAML when it is absent, the warehouse the spec
    names), which writes nothing."""
    import subprocess
    import sys

    folder = tmp_path / "sales"
    shutil.copytree(EXAMPLE, folder)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT / "python")] + [p for p in [os.environ.get("PYTHONPATH")] if p]))

    def command(*argv):
        proc = subprocess.run([sys.executable, *argv], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout

    command("make_tables.py")
    before = _files(tmp_path)
    out = command("-m", "viewlet", "pipelines", "dry-run", "--conf", "spark.ui.enabled=false")
    assert f"pipeline 'sales' ({folder / 'spark-pipeline.yml'})" in out, out
    assert f"Viewlet warehouse {folder / 'warehouse'}" in out, out
    assert "incremental, will create" in line_of(out, "customer_revenue"), out
    assert "full, will recompute" in line_of(out, "order_amount_median"), out
    assert _files(tmp_path) == before, "dry-run wrote files"


def _project(tmp_path, sql: str):
    from viewlet.tools.pipelines import spec as specs
    folder = tmp_path / "p"
    (folder / "defs").mkdir(parents=True)
    (folder / "spark-pipeline.yml").write_text(
        "name: p\nstorage: s\nlibraries:\n  - glob:\n      include: defs/**\n")
    (folder / "defs" / "views.sql").write_text(sql)
    spec_path = folder / "spark-pipeline.yml"
    return spec_path, specs.load(spec_path)


@needs_pipelines
def test_a_cycle_is_refused_naming_its_views(vl, tmp_path):
    from viewlet.tools.pipelines.spec import PipelineError
    spec_path, spec = _project(tmp_path, "CREATE MATERIALIZED VIEW cyc_a AS SELECT * FROM cyc_b;\n"
                                         "CREATE MATERIALIZED VIEW cyc_b AS SELECT * FROM cyc_a;\n")
    with pytest.raises(PipelineError, match=r"read each other in a cycle: "
                       r"spark_catalog.default.cyc_a \(reads spark_catalog.default.cyc_b\), "
                       r"spark_catalog.default.cyc_b \(reads spark_catalog.default.cyc_a\)"):
        run(vl, spec_path, spec, dry=True)


@needs_pipelines
def test_dry_run_names_a_refused_view_and_skips_its_readers(vl, tmp_path):
    spec_path, spec = _project(tmp_path, "CREATE MATERIALIZED VIEW cols (x INT) AS SELECT 1 AS x;"
                                         "\nCREATE MATERIALIZED VIEW reads_cols AS "
                                         "SELECT x FROM cols;\n")
    code, out = run(vl, spec_path, spec, dry=True)
    assert code == 2, out
    assert "spark_catalog.default.reads_cols: skipped. It reads spark_catalog.default.cols, " \
        "which did not run" in out, out
    assert "materialized view spark_catalog.default.cols (defs/views.sql:1): its column list" \
        in out, out
