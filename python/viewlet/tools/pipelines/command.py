"""`viewlet pipelines run | dry-run [--spec FILE] [--warehouse DIR] [--conf K=V ...]`: the
session, the spec, and the report. `execute` is the whole run on a session Viewlet is enabled
on (what the tests call); `main` builds that session as `spark-pipelines` builds its own (the
spec's configuration in the builder) with Viewlet's extension added.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Dict, Optional, TextIO

from .runner import FULL, INCREMENTAL, Pipeline
from .spec import PipelineError, load, locate, snakeyaml

EXIT_OK, EXIT_FAILED, EXIT_ENVIRONMENT = 0, 1, 2
WAREHOUSE_CONF = "spark.viewlet.warehouse"


def execute(vl, spec_path: Path, spec, dry: bool, out: TextIO = sys.stdout) -> int:
    """Register the project's definitions and run (or dry-run) its materialized views on
    `vl`'s session. Returns the exit status; raises PipelineError before writing anything
    when the project holds what this runner does not run."""
    from .graph import register

    datasets = register(vl.spark, spec_path, spec)
    pipeline = Pipeline(vl, datasets, out)
    verb = "dry-run" if dry else "run"
    out.write(f"viewlet pipelines {verb}: pipeline {spec.name!r} ({spec_path}), "
              f"{len(pipeline.views)} materialized view(s), Viewlet warehouse "
              f"{vl.warehouse}\n")
    if pipeline.refused and not dry:
        raise PipelineError(pipeline.refusal_message())
    outcomes = pipeline.walk(dry)
    failed = [o for o in outcomes if o.status in ("failed", "skipped")]
    counts = {m: sum(o.maintained == m for o in outcomes) for m in (INCREMENTAL, FULL)}
    if dry:
        out.write(f"{counts[INCREMENTAL]} view(s) will be maintained incrementally, "
                  f"{counts[FULL]} recomputed in full; nothing was written.\n")
    else:
        out.write(f"{counts[INCREMENTAL]} view(s) maintained incrementally, {counts[FULL]} "
                  f"recomputed in full, {len(failed)} failed or skipped.\n")
    if pipeline.refused:
        out.write(pipeline.refusal_message() + "\n")
        return EXIT_ENVIRONMENT
    return EXIT_FAILED if failed else EXIT_OK


def _warehouse(given: Optional[str], spec, spec_path: Path) -> str:
    """--warehouse; else the spec's spark.viewlet.warehouse; else viewlet/ under the spec's
    storage root. Relative spec paths are relative to the spec's folder."""
    if given:
        return given
    found = spec.configuration.get(WAREHOUSE_CONF)
    if not found:
        storage = spec.storage
        if storage.startswith("file://"):
            storage = storage[len("file://"):]
        found = storage.rstrip("/") + "/viewlet"
    if "://" not in found and not os.path.isabs(found):
        found = str(spec_path.parent / found)
    return found


def _has_catalog(warehouse: str) -> bool:
    from ...engine.state.warehouse import WarehouseLayout
    location = WarehouseLayout(warehouse).catalog
    if "://" in location and not location.startswith("file:"):
        return True                     # a remote warehouse: assume it is there
    return os.path.exists(location.replace("file://", ""))


def main(command: str, spec: Optional[str], warehouse: Optional[str],
         confs: Dict[str, str], out: TextIO = sys.stdout) -> int:
    """The command, once cli.py checked Spark's version and Java."""
    prog = f"viewlet pipelines {command}"
    from ...errors import ViewletError
    dry = command == "dry-run"
    scratch = None
    try:
        spec_path = locate(spec)
        from pyspark import SparkContext
        SparkContext._ensure_initialized()  # the JVM first: SnakeYAML reads the spec without PyYAML
        pipeline_spec = load(spec_path, snakeyaml(SparkContext._jvm))
        location = _warehouse(warehouse, pipeline_spec, spec_path)
        if dry and not _has_catalog(location):
            # a warehouse that does not exist holds no views and no tables: a scratch one
            # answers the same, and the dry-run leaves nothing behind
            scratch = tempfile.mkdtemp(prefix="viewlet-dry-run-")
            location = scratch
        import viewlet
        from pyspark.sql import SparkSession
        # Spark's stage bar off by default: the run prints a line per view
        builder = SparkSession.builder.appName(f"viewlet pipelines {pipeline_spec.name}") \
            .config("spark.ui.showConsoleProgress", "false")
        for k, v in {**dict(pipeline_spec.configuration), **confs}.items():
            builder = builder.config(k, v)
        spark = viewlet.configure_spark(builder, warehouse=location).getOrCreate()
        try:
            # Viewlet's JVM logs a refused statement at WARN; the run reports it per view
            spark.sparkContext.setLogLevel("ERROR")
            vl = viewlet.enable(spark, location)
            return execute(vl, spec_path, pipeline_spec, dry, out)
        finally:
            spark.stop()
    except PipelineError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return e.exit_code
    except ViewletError as e:             # the session could not take Viewlet
        print(f"{prog}: {e}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
