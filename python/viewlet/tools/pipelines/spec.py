"""The pipeline project's spec (spark-pipeline.yml), found, read and checked as
`spark-pipelines` does.

With pyspark's `pipelines` extra installed (PyYAML, and the Spark Connect client its CLI module
imports), SDP's own function reads and checks it (pyspark.pipelines.cli.load_pipeline_spec).
Without it, which is enough for Viewlet (no
Spark Connect here), the same rules are applied here: spark-pipeline.yml or .yaml in the folder
or its nearest ancestor, the same fields (name and storage required; catalog, database or
schema, configuration of strings, libraries of globs that are a file or a folder/**), and the
YAML read by PyYAML if present, else by SnakeYAML from Spark's own jars in the session's JVM.
"""
from __future__ import annotations

import glob as globbing
import importlib
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

MINIMUM_SPARK = (4, 1)


class PipelineError(Exception):
    """What stops a pipeline run before it writes anything: the message names the problem and
    the remedy. `exit_code` 2: the project or the environment."""

    exit_code = 2


def spark_version_problem(version: Optional[str] = None) -> Optional[str]:
    """Why this pyspark cannot run a pipeline (older than 4.1), or None."""
    if version is None:
        import pyspark
        version = pyspark.__version__
    parts = []
    for piece in version.split(".")[:2]:
        digits = "".join(c for c in piece if c.isdigit())
        parts.append(int(digits or 0))
    if tuple(parts) >= MINIMUM_SPARK:
        return None
    return (f"Spark Declarative Pipelines need Spark 4.1 or newer; this Python has pyspark "
            f"{version}, which has no pipelines (no pyspark.pipelines, no CREATE MATERIALIZED "
            f"VIEW in SQL files, no spark-pipelines). Install a newer pyspark, e.g. "
            f"pip install 'pyspark[sql]>=4.1,<4.4', or outside a pipeline create the views "
            f"with CREATE MATERIALIZED VIEW statements in a Viewlet session.")


SPEC_FILE_NAMES = ("spark-pipeline.yaml", "spark-pipeline.yml")
FIELDS = ("name", "storage", "catalog", "database", "schema", "configuration", "libraries",
          "definitions")         # the early spelling of libraries (Spark 4.1 previews)


@dataclass(frozen=True)
class LibrariesGlob:
    include: str


@dataclass(frozen=True)
class Spec:
    """The fields of SDP's PipelineSpec that a run reads."""

    name: str
    storage: str
    catalog: Optional[str]
    database: Optional[str]
    configuration: Mapping[str, str]
    libraries: Sequence[LibrariesGlob]


def sdp_cli() -> Optional[types.ModuleType]:
    """pyspark.pipelines.cli, SDP's command line module, when its imports are installed
    (PyYAML and the Spark Connect client: pyspark[pipelines]); else None."""
    try:
        return importlib.import_module("pyspark.pipelines.cli")
    except ImportError:
        return None


def locate(spec: Optional[str], cwd: Optional[Path] = None) -> Path:
    """The spec file: `spec` as given, else spark-pipeline.yml / .yaml in `cwd` or its
    nearest ancestor that has one."""
    if spec is not None:
        path = Path(spec)
        if not path.is_file():
            raise PipelineError(f"The pipeline spec file {spec} does not exist: give the path "
                                "of a spark-pipeline.yml with --spec, or run in the project's "
                                "folder.")
        return path.resolve()
    start = (cwd or Path.cwd()).resolve()
    current = start
    while True:
        found = [current / n for n in SPEC_FILE_NAMES if (current / n).is_file()]
        if len(found) > 1:
            raise PipelineError(f"Both {found[0].name} and {found[1].name} are in {current}: "
                                "remove one, or choose one with --spec.")
        if found:
            return found[0]
        if current.parent == current:
            raise PipelineError(f"No spark-pipeline.yml or spark-pipeline.yaml in {start} or "
                                "its parent folders: run in the pipeline project's folder, or "
                                "give --spec path/to/spark-pipeline.yml.")
        current = current.parent


def read_yaml(text: str, jvm_yaml: Optional[Callable[[str], Any]] = None) -> Any:
    """The YAML document as Python values: PyYAML's safe_load when installed, else
    `jvm_yaml` (default: SnakeYAML in this process's Spark JVM)."""
    try:
        import yaml
        if hasattr(yaml, "safe_load"):
            return yaml.safe_load(text)
    except ModuleNotFoundError:
        pass
    if jvm_yaml is None:
        from pyspark import SparkContext
        if SparkContext._jvm is None:
            raise PipelineError("Reading spark-pipeline.yml needs PyYAML (pip install pyyaml) "
                                "or a running Spark JVM.")
        jvm_yaml = snakeyaml(SparkContext._jvm)
    return jvm_yaml(text)


def snakeyaml(jvm) -> Callable[[str], Any]:
    """A YAML reader over SnakeYAML, which Spark's jars ship (its 2.x default loader builds
    plain maps, lists and scalars only)."""
    def load(text: str) -> Any:
        return _python(jvm.org.yaml.snakeyaml.Yaml().load(text))
    return load


def _python(value: Any) -> Any:
    """Py4J's views of Java maps and lists as Python dicts and lists (recursively)."""
    from py4j.java_collections import JavaList, JavaMap
    if isinstance(value, JavaMap):
        return {_python(k): _python(v) for k, v in value.items()}
    if isinstance(value, JavaList):
        return [_python(v) for v in value]
    return value


def load(path: Path, jvm_yaml: Optional[Callable[[str], Any]] = None):
    """The spec's fields: SDP's own PipelineSpec when pyspark[pipelines] is installed, else
    the same fields checked by the same rules."""
    cli = sdp_cli()
    if cli is not None:
        try:
            return cli.load_pipeline_spec(path)
        except Exception as e:  # noqa: BLE001 - SDP's PySparkException names the field
            raise PipelineError(f"{path}: {e}") from None
    try:
        data = read_yaml(path.read_text(encoding="utf-8"), jvm_yaml)
    except PipelineError:
        raise
    except Exception as e:  # noqa: BLE001 - a YAML syntax error, with its position
        raise PipelineError(f"{path} is not valid YAML: {e}") from None
    return unpack(data, path)


def unpack(data: Any, path: Path) -> Spec:
    """SDP's rules for the spec's fields (pyspark.pipelines.cli.unpack_pipeline_spec)."""
    if not isinstance(data, dict):
        raise PipelineError(f"{path} does not hold a YAML mapping (name:, storage:, "
                            "libraries: ...).")
    for k in data:
        if k not in FIELDS:
            raise PipelineError(f"{path}: field {k!r} is unexpected (a spec has "
                                f"{', '.join(FIELDS)}).")
    for k in ("name", "storage"):
        if k not in data:
            raise PipelineError(f"{path}: the required field {k!r} is missing.")
    configuration = data.get("configuration") or {}
    if not isinstance(configuration, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in configuration.items()):
        raise PipelineError(f"{path}: configuration must map strings to strings (quote "
                            "values such as 'true' and '4')")
    libraries = []
    if "libraries" in data and "definitions" in data:
        raise PipelineError(f"{path}: give the globs once, under libraries (definitions is "
                            "its early spelling).")
    for entry in data.get("libraries", data.get("definitions")) or []:
        try:
            include = entry["glob"]["include"]
        except (KeyError, TypeError):
            raise PipelineError(f"{path}: each entry of libraries is `- glob: {{include: "
                                f"PATTERN}}`, not {entry!r}.") from None
        libraries.append(LibrariesGlob(_glob(include, path)))
    return Spec(name=data["name"], storage=data["storage"], catalog=data.get("catalog"),
                database=data.get("database", data.get("schema")),
                configuration=configuration, libraries=libraries)


def _glob(pattern: str, path: Path) -> str:
    """A libraries pattern as SDP allows it: a file, or a folder ending in /** (everything
    under it)."""
    if not globbing.has_magic(pattern):
        return pattern
    if pattern.endswith("/**") and not globbing.has_magic(pattern[:-3]):
        return pattern + "/*"
    raise PipelineError(f"{path}: invalid glob pattern {pattern!r} in libraries: only file "
                        "paths, or folder paths ending with /**, are allowed.")
