"""A pipeline project's definitions, registered through Spark Declarative Pipelines' own
registration API, as `spark-pipelines` registers them, in a classic session with Viewlet:

- SQL files go to SDP's SqlGraphRegistrationContext (the JVM code the Spark Connect server
  runs for `spark-pipelines`): Spark's parser splits and parses the statements, USE / SET
  apply, and every dataset and flow lands in a GraphRegistrationContext with the identifier
  SDP qualifies it to. Viewlet's parser stands aside meanwhile (ViewletParser.setSparkParses),
  so CREATE MATERIALIZED VIEW comes back as SDP's dataset.
- Python files are imported, as SDP's register_definitions imports them (the project folder
  as working directory, `spark` in the module), with a GraphElementRegistry of ours active:
  the `@dp.materialized_view` and other decorators register their outputs and flows there.

The result is one `Dataset` per output. Materialized views are Viewlet's to maintain; the
other kinds (streaming tables, flows into them, views, sinks, Auto CDC flows) are listed so
that the runner can refuse them by name and origin.
"""
from __future__ import annotations

import importlib.util
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Tuple

from .spec import PipelineError

MATERIALIZED_VIEW = "materialized view"


@dataclass
class Dataset:
    """One output of the pipeline's graph."""

    identifier: Tuple[str, ...]        # catalog, database, name, as SDP qualifies it
    kind: str                          # MATERIALIZED_VIEW, "streaming table", "flow", ...
    origin: str                        # file:line
    sql: Optional[str] = None          # the defining query (SQL files)
    function: Optional[Callable] = None  # the Python flow function (returns a DataFrame)
    sql_conf: Dict[str, str] = field(default_factory=dict)
    context: Tuple[Optional[str], Optional[str]] = (None, None)  # names resolve here
    notes: List[str] = field(default_factory=list)     # clauses SDP applies and Viewlet not
    refusal: Optional[str] = None      # why the runner cannot take it at all

    @property
    def name(self) -> str:
        return self.identifier[-1]

    @property
    def display(self) -> str:
        return ".".join(self.identifier)


def query_of(statement: str) -> str:
    """The query of a CREATE MATERIALIZED VIEW statement SDP parsed: the text after its AS,
    the first AS outside parentheses after VIEW (the clauses before it, a column list,
    COMMENT, TBLPROPERTIES, hold theirs in parentheses or string literals; sqlglot's
    tokenizer skips literals, comments and quoted names)."""
    from sqlglot.dialects.spark import Spark
    from sqlglot.tokens import TokenType

    depth, after_view = 0, False
    for token in Spark().tokenize(statement):
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif token.token_type == TokenType.VIEW:
            after_view = True
        elif after_view and depth == 0 and token.token_type == TokenType.ALIAS:
            return statement[token.end + 1:].strip().rstrip(";").strip()
    raise PipelineError(f"No AS before the query of {statement[:80]!r}.")


class _Registry:
    """The GraphElementRegistry the Python files' decorators write to (SDP's abstract class,
    subclassed when it is first needed: pyspark.pipelines exists from Spark 4.1 on)."""

    def __init__(self):
        self.outputs: list = []
        self.flows: list = []
        self.cdc_flows: list = []
        self.sql_files: List[Tuple[str, Path]] = []


def _registry_class():
    from pyspark.pipelines.graph_element_registry import GraphElementRegistry

    class Registry(_Registry, GraphElementRegistry):
        def register_output(self, output) -> None:
            self.outputs.append(output)

        def register_flow(self, flow) -> None:
            self.flows.append(flow)

        def register_auto_cdc_flow(self, flow) -> None:
            self.cdc_flows.append(flow)

        def register_sql(self, sql_text: str, file_path: Path) -> None:
            self.sql_files.append((sql_text, file_path))

    return Registry


@contextmanager
def _working_directory(path: Path) -> Iterator[None]:
    previous = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(previous)


@contextmanager
def _spark_parses(jvm) -> Iterator[None]:
    """Spark's parser alone for this thread's statements (SDP must see its own
    CREATE MATERIALIZED VIEW, not Viewlet's statement)."""
    parser = jvm.io.viewlet.spark.ViewletParser
    parser.setSparkParses(True)
    try:
        yield
    finally:
        parser.setSparkParses(False)


def _option(value):
    """A Scala Option's value, or None."""
    return value.get() if value.isDefined() else None


def _ident(identifier) -> Tuple[str, ...]:
    """A TableIdentifier's parts (catalog, database, name; SDP qualifies all three)."""
    return tuple(p for p in (_option(identifier.catalog()), _option(identifier.database()),
                             identifier.table()) if p is not None)


def _origin(origin) -> str:
    path, line = _option(origin.filePath()), _option(origin.line())
    return f"{path}:{line}" if line is not None else str(path or "?")


def register(spark, spec_path: Path, spec) -> List[Dataset]:
    """Every output the project defines, in registration order (files in glob order)."""
    from pyspark.pipelines.graph_element_registry import graph_element_registration_context

    jvm = spark.sparkContext._jvm
    catalog = spec.catalog or spark.catalog.currentCatalog()
    database = spec.database or spark.catalog.currentDatabase()
    graph = jvm.org.apache.spark.sql.pipelines.graph
    context = graph.GraphRegistrationContext(
        catalog, database, jvm.org.apache.spark.api.python.PythonUtils.toScalaMap(
            dict(spec.configuration)))
    registry = _registry_class()()
    root = spec_path.parent.resolve()
    with _working_directory(root), graph_element_registration_context(registry):
        for library in spec.libraries:
            files = [p for p in root.glob(library.include)
                     if p.is_file() and "__pycache__" not in p.parts]
            for file in sorted(files):
                relative = file.relative_to(root)
                if file.suffix == ".sql":
                    registry.register_sql(file.read_text(encoding="utf-8"), relative)
                elif file.suffix == ".py":
                    _import(file, spark)
                else:
                    raise PipelineError(
                        f"Pipeline definitions file {relative} has an unsupported extension: "
                        f"SDP reads .py and .sql files; narrow the libraries glob "
                        f"{library.include!r} in {spec_path.name}.")
    for text, relative in registry.sql_files:
        with _spark_parses(jvm):
            try:
                graph.SqlGraphRegistrationContext(context).processSqlFile(
                    text, str(relative), spark._jsparkSession)
            except Exception as e:  # noqa: BLE001 - SDP's error names the statement
                raise PipelineError(f"{relative}: {_first_lines(e)}") from None
    datasets = _sql_datasets(context) + _python_datasets(registry, catalog, database)
    seen: Dict[Tuple[str, ...], Dataset] = {}
    for d in datasets:
        key = tuple(p.lower() for p in d.identifier)
        if key in seen and d.kind != "flow" and seen[key].kind != "flow":
            raise PipelineError(f"Dataset {d.display} is defined twice: at {seen[key].origin} "
                                f"and at {d.origin}; rename one.")
        seen.setdefault(key, d)
    return datasets


def _import(file: Path, spark) -> None:
    """Import a Python definitions file as SDP does (module named by its stem, `spark` set)."""
    spec = importlib.util.spec_from_file_location(file.stem, str(file))
    if spec is None or spec.loader is None:
        raise PipelineError(f"Cannot import {file}.")
    module = importlib.util.module_from_spec(spec)
    module.__dict__["spark"] = spark
    try:
        spec.loader.exec_module(module)
    except PipelineError:
        raise
    except Exception as e:  # noqa: BLE001 - the user's file failed: say which
        raise PipelineError(f"Importing {file.name} failed: {type(e).__name__}: "
                            f"{_first_lines(e)}") from None


def _first_lines(e: BaseException, n: int = 12) -> str:
    return "\n".join(str(e).strip().splitlines()[:n])


def _sql_datasets(context) -> List[Dataset]:
    """The SQL files' datasets and flows, from SDP's GraphRegistrationContext."""
    flows = [context.flows().apply(i) for i in range(context.flows().size())]
    own = {}
    out: List[Dataset] = []
    for flow in flows:
        ident = _ident(flow.identifier())
        if _ident(flow.destinationIdentifier()) == ident:
            own[ident] = flow
    for i in range(context.tables().size()):
        table = context.tables().apply(i)
        ident = _ident(table.identifier())
        origin = _origin(table.origin())
        if table.isStreamingTable():
            out.append(Dataset(ident, "streaming table", origin))
            continue
        flow = own.get(ident)
        statement = _option(flow.origin().sqlText()) if flow is not None else None
        if statement is None:
            out.append(Dataset(ident, MATERIALIZED_VIEW, origin,
                               refusal="its definition has no SQL text SDP recorded"))
            continue
        context_ = flow.queryContext()
        d = Dataset(ident, MATERIALIZED_VIEW, origin, sql=query_of(statement),
                    sql_conf=_scala_map(flow.sqlConf()),
                    context=(_option(context_.currentCatalog()),
                             _option(context_.currentDatabase())))
        if table.specifiedSchema().isDefined():
            d.refusal = ("its column list: SDP applies it as the table's schema, Viewlet takes "
                         "a view's columns from its query; remove the list and alias the "
                         "columns in the query (AS name, CAST(... AS type))")
        _notes(d, comment=_option(table.comment()) is not None,
               properties=table.properties().size() > 0,
               partitioned=_nonempty(table.partitionCols()),
               clustered=_nonempty(table.clusterCols()), fmt=_option(table.format()))
        out.append(d)
    for flow in flows:
        ident = _ident(flow.identifier())
        if own.get(ident) is flow:
            continue
        dest = ".".join(_ident(flow.destinationIdentifier()))
        out.append(Dataset(ident, "flow", _origin(flow.origin()),
                           refusal=f"a flow into {dest}"))
    for i in range(context.views().size()):
        view = context.views().apply(i)
        out.append(Dataset(_ident(view.identifier()), "view",
                           _origin(view.origin())))
    for i in range(context.sinks().size()):
        sink = context.sinks().apply(i)
        out.append(Dataset(_ident(sink.identifier()), "sink",
                           _origin(sink.origin())))
    return out


def _nonempty(option) -> bool:
    return option.isDefined() and option.get().nonEmpty()


def _scala_map(m) -> Dict[str, str]:
    out = {}
    it = m.iterator()
    while it.hasNext():
        pair = it.next()
        out[pair._1()] = pair._2()
    return out


def _notes(d: Dataset, comment: bool, properties: bool, partitioned: bool, clustered: bool,
           fmt: Optional[str]) -> None:
    clauses = [c for c, given in (("COMMENT", comment), ("TBLPROPERTIES", properties),
                                  ("PARTITIONED BY", partitioned), ("CLUSTER BY", clustered),
                                  (f"USING {fmt}", fmt is not None and fmt.lower() != "delta"))
               if given]
    if clauses:
        d.notes.append(f"{', '.join(clauses)} not applied (Viewlet writes a Delta table laid "
                       "out by itself)")


def _qualify(name: str, catalog: str, database: str) -> Tuple[str, ...]:
    """A Python dataset's name qualified with the pipeline's catalog and database, as SDP's
    server qualifies it (GraphIdentifierManager)."""
    from sqlglot import exp
    table = exp.to_table(name, dialect="spark")
    return (table.catalog or catalog, table.db or database, table.name)


def _python_datasets(registry: _Registry, catalog: str, database: str) -> List[Dataset]:
    from pyspark.pipelines.output import MaterializedView, Sink, StreamingTable, TemporaryView

    out: List[Dataset] = []
    flows_by_target: Dict[Tuple[str, ...], list] = {}
    for flow in registry.flows:
        flows_by_target.setdefault(_qualify(flow.target, catalog, database), []).append(flow)
    for output in registry.outputs:
        ident = _qualify(output.name, catalog, database)
        loc = output.source_code_location
        origin = f"{os.path.basename(loc.filename)}:{loc.line_number}"
        if isinstance(output, MaterializedView):
            flows = flows_by_target.pop(ident, [])
            d = Dataset(ident, MATERIALIZED_VIEW, origin, context=(catalog, database))
            if len(flows) != 1:
                d.refusal = f"{len(flows)} flows write it (append flows are SDP's)"
            else:
                d.function = flows[0].func
                d.sql_conf = dict(flows[0].spark_conf or {})
            if output.schema is not None:
                d.refusal = ("its schema argument: Viewlet takes a view's columns from its "
                             "query; cast and alias them in the query instead")
            _notes(d, comment=output.comment is not None,
                   properties=bool(output.table_properties),
                   partitioned=bool(output.partition_cols), clustered=bool(output.cluster_by),
                   fmt=output.format)
            out.append(d)
        elif isinstance(output, StreamingTable):
            flows_by_target.pop(ident, None)
            out.append(Dataset(ident, "streaming table", origin))
        elif isinstance(output, TemporaryView):
            flows_by_target.pop(ident, None)
            out.append(Dataset(ident, "view", origin))
        elif isinstance(output, Sink):
            out.append(Dataset(ident, "sink", origin))
        else:
            out.append(Dataset(ident, type(output).__name__, origin))
    for target, flows in flows_by_target.items():
        for flow in flows:
            loc = flow.source_code_location
            out.append(Dataset(_qualify(flow.name, catalog, database), "flow",
                               f"{os.path.basename(loc.filename)}:{loc.line_number}",
                               refusal=f"a flow into {'.'.join(target)}"))
    for flow in registry.cdc_flows:
        loc = flow.source_code_location
        out.append(Dataset(_qualify(flow.name or flow.target, catalog, database),
                           "Auto CDC flow", f"{os.path.basename(loc.filename)}:{loc.line_number}"))
    return out
