"""Running a pipeline's materialized views with Viewlet, in dependency order.

Each materialized view becomes `CREATE OR REFRESH MATERIALIZED VIEW name AS query`: the first
run creates it (the initial load), a later run applies the base tables' commits since the last
one (REFRESH), a changed query rebuilds it. A query Viewlet refuses (UnsupportedSQL: the
statement's error names the construct) is recomputed in full by Spark, as SDP recomputes
every materialized view, into a Delta table of the same name. Dry-run asks Viewlet's EXPLAIN
CREATE instead, which compiles a definition and creates nothing.

Order: a view runs after the pipeline's views it reads. A SQL query's reads are its table
names (sqlglot), qualified as SDP qualifies them (the statement's USE context) and matched with
the pipeline's datasets; a Python function's are found by calling it: PySpark's classic
DataFrames are analyzed at once, so a function reading a view this run has not made yet fails
with TABLE_OR_VIEW_NOT_FOUND and waits for it.
"""
from __future__ import annotations

import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Set, TextIO, Tuple

from ...api.commands import NOT_INCREMENTAL
from .graph import MATERIALIZED_VIEW, Dataset
from .spec import PipelineError

#: how Viewlet's CREATE begins the message of UnsupportedSQL
UNSUPPORTED = "Unsupported in an incremental view:"
INCREMENTAL, FULL = "incremental", "full"

Key = Tuple[str, ...]


@dataclass
class Outcome:
    """What a run (or dry-run) did with one dataset."""

    dataset: str
    maintained: str                 # incremental | full | - (not run)
    status: str                     # created, refreshed, recomputed, will create, failed, ...
    detail: str = ""                # the reason a view is recomputed in full, or the error
    notes: List[str] = field(default_factory=list)


def key(identifier) -> Key:
    return tuple(p.lower() for p in identifier)


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _message(e: BaseException) -> str:
    """An error's message without Spark's `== SQL ==` pointer and JVM stack."""
    text = str(e).strip()
    for cut in ("\n== SQL ==", " (line ", "\nJVM stacktrace:"):
        if cut in text:
            text = text.split(cut)[0]
    return text.strip()


class Pipeline:
    """The materialized views of one registered pipeline, run on `vl`'s session."""

    def __init__(self, vl, datasets: List[Dataset], out: TextIO):
        self.vl, self.spark, self.out = vl, vl.spark, out
        self.views = [d for d in datasets if d.kind == MATERIALIZED_VIEW]
        self.by_key: Dict[Key, Dataset] = {key(d.identifier): d for d in self.views}
        names: Dict[str, Dataset] = {}
        for d in self.views:
            other = names.setdefault(d.name.lower(), d)
            if other is not d:
                raise PipelineError(
                    f"Materialized views {other.display} ({other.origin}) and {d.display} "
                    f"({d.origin}) share the name {d.name}: Viewlet's views have one-part "
                    "names; rename one.")
        self.refused = [d for d in datasets if d.kind != MATERIALIZED_VIEW or d.refusal]

    # -- what cannot run ---------------------------------------------------------------------
    def refusals(self) -> List[str]:
        """One line per dataset this runner does not take, with why and what to do."""
        lines = []
        for d in self.refused:
            if d.kind == MATERIALIZED_VIEW:
                lines.append(f"materialized view {d.display} ({d.origin}): {d.refusal}.")
            else:
                what = f" ({d.refusal})" if d.refusal else ""
                lines.append(f"{d.kind} {d.display} ({d.origin}){what}")
        return lines

    def refusal_message(self) -> str:
        kinds = {d.kind for d in self.refused if d.kind != MATERIALIZED_VIEW}
        text = "viewlet pipelines runs a pipeline's materialized views only; it does not run:\n"
        text += "".join(f"  {line}\n" for line in self.refusals())
        if kinds:
            text += (
                "Streaming tables, flows, views and sinks are Spark's: SDP's engine runs them "
                "inside the Spark Connect server `spark-pipelines` starts, one whole dataflow "
                "graph per run, and has no way to hand that graph's materialized views to "
                "another engine. Keep them in a project of their own, run by spark-pipelines "
                "run, whose tables this project's views may read (Delta tables with their "
                "change data feed on).")
        return text.rstrip()

    # -- order -------------------------------------------------------------------------------
    def reads(self, d: Dataset, sql: str) -> Tuple[str, Set[Key]]:
        """`sql` with the pipeline's views named as Viewlet names them (their one-part name),
        and the views it reads."""
        import sqlglot
        from sqlglot import exp

        tree = sqlglot.parse_one(sql, read="spark")
        ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
        catalog, database = d.context
        deps: Set[Key] = set()
        renamed = False
        for table in list(tree.find_all(exp.Table)):
            if not isinstance(table.this, exp.Identifier):
                continue
            parts = [p.name for p in table.parts]
            if len(parts) == 1 and parts[0].lower() in ctes:
                continue
            qualified = ([catalog, database] + parts)[-3:] if len(parts) < 3 else parts
            found = self.by_key.get(key(p or "" for p in qualified))
            if found is None or found is d:
                continue
            deps.add(key(found.identifier))
            if len(parts) > 1 or parts[0] != found.name:
                renamed = True
                table.set("catalog", None)
                table.set("db", None)
                table.set("this", exp.to_identifier(found.name))
        return (tree.sql(dialect="spark") if renamed else sql), deps

    def missing_view(self, e: BaseException, d: Dataset) -> Optional[Key]:
        """The pipeline view a TABLE_OR_VIEW_NOT_FOUND error names, if it is one."""
        condition = getattr(e, "getCondition", lambda: None)()
        if condition != "TABLE_OR_VIEW_NOT_FOUND":
            return None
        name = (getattr(e, "getMessageParameters", lambda: {})() or {}).get("relationName", "")
        parts = [p for p in re.split(r"`\.`|\.", name.strip("`")) if p]
        if not parts:
            return None
        qualified = ([d.context[0], d.context[1]] + parts)[-3:] if len(parts) < 3 else parts
        found = self.by_key.get(key(p or "" for p in qualified))
        if found is None:       # a one-part name matches a pipeline view in any database
            found = next((v for v in self.views if v.name.lower() == parts[-1].lower()), None)
        return key(found.identifier) if found is not None else None

    # -- the session around one view ---------------------------------------------------------
    @contextmanager
    def scope(self, d: Dataset, create_database: bool) -> Iterator[None]:
        """The view's SQL confs and current catalog/database (where SDP resolves its names
        and writes its table) for the statements about it; restored after."""
        conf, spark = self.spark.conf, self.spark
        before = {k: conf.get(k, None) for k in d.sql_conf}
        catalog, database = spark.catalog.currentCatalog(), spark.catalog.currentDatabase()
        try:
            for k, v in d.sql_conf.items():
                conf.set(k, v)
            want_catalog, want_database = d.context
            if want_catalog and want_catalog != catalog:
                spark.catalog.setCurrentCatalog(want_catalog)
            if want_database and want_database != spark.catalog.currentDatabase():
                if create_database:
                    spark.sql(f"CREATE DATABASE IF NOT EXISTS {_quote(want_database)}")
                if spark.catalog.databaseExists(want_database):
                    spark.catalog.setCurrentDatabase(want_database)
            yield
        finally:
            for k, v in before.items():
                if v is None:
                    conf.unset(k)
                else:
                    conf.set(k, v)
            if spark.catalog.currentCatalog() != catalog:
                spark.catalog.setCurrentCatalog(catalog)
            if spark.catalog.currentDatabase() != database:
                spark.catalog.setCurrentDatabase(database)

    # -- the walk ----------------------------------------------------------------------------
    def walk(self, dry: bool) -> List[Outcome]:
        """Every view once, each after the views it reads; `dry`: decide, write nothing."""
        with _quiet_query_errors():
            return self._walk(dry)

    def _walk(self, dry: bool) -> List[Outcome]:
        # a refused view (dry-run goes on past it) counts as done: views reading it are skipped
        done: Dict[Key, Outcome] = {key(d.identifier): Outcome(d.display, "-", "refused")
                                    for d in self.views if d.refusal is not None}
        outcomes: List[Outcome] = []
        waits: Dict[Key, Set[Key]] = {key(d.identifier): set() for d in self.views
                                      if d.refusal is None}
        pending = [d for d in self.views if d.refusal is None]
        while pending:
            progressed = False
            for d in list(pending):
                k = key(d.identifier)
                if any(dep not in done for dep in waits[k]):
                    continue
                failed = [dep for dep in waits[k] if done[dep].status in
                          ("failed", "skipped", "refused")]
                if failed:
                    outcome = Outcome(d.display, "-", "skipped",
                                      f"it reads {', '.join('.'.join(f) for f in failed)}, "
                                      "which did not run")
                else:
                    known = len(waits[k])
                    outcome = self.one(d, dry, waits[k], done)
                if outcome is None:                 # it found views it reads: order again
                    progressed = progressed or len(waits[k]) > known
                    continue
                outcome.notes = list(d.notes)
                done[k] = outcome
                outcomes.append(outcome)
                pending.remove(d)
                progressed = True
                self.report(outcome)
            if not progressed:
                names = ", ".join(f"{d.display} (reads "
                                  f"{', '.join('.'.join(w) for w in waits[key(d.identifier)])})"
                                  for d in pending)
                raise PipelineError(f"These materialized views read each other in a cycle: "
                                    f"{names}. A view cannot read itself through others.")
        return outcomes

    def one(self, d: Dataset, dry: bool, waits: Set[Key],
            done: Dict[Key, Outcome]) -> Optional[Outcome]:
        """Run (or dry-run) one view; None when it turned out to read a view not done yet
        (added to `waits`)."""
        k = key(d.identifier)
        with self.scope(d, create_database=not dry):
            sql, frame, why_full = d.sql, None, None
            if d.function is not None:
                try:
                    frame = d.function()
                except Exception as e:  # noqa: BLE001 - a missing upstream, or the user's error
                    missing = self.missing_view(e, d)
                    if missing is not None and missing != k and missing not in done:
                        waits.add(missing)
                        return None
                    if missing is not None and dry:
                        return Outcome(d.display, "-", "undecided",
                                       f"it reads {'.'.join(missing)}, which the first run "
                                       "creates")
                    return Outcome(d.display, "-", "failed", _message(e))
                sql = sql_text(frame)
                if sql is None:
                    why_full = ("defined with the DataFrame API; Viewlet maintains SQL "
                                "queries: return spark.sql(\"SELECT ...\") from the function")
                    deps = self.frame_reads(frame, d)
                else:
                    sql, deps = self.reads(d, sql)
            else:
                sql, deps = self.reads(d, sql)
            new = deps - waits - {k}
            if new:             # the walk orders it after them (or skips it if one failed)
                waits.update(new)
                return None
            try:
                if dry:
                    return self.explain(d, sql, why_full, done)
                return self.run(d, sql, frame, why_full)
            except Exception as e:  # noqa: BLE001 - reported per view; the run goes on
                return Outcome(d.display, "-", "failed", _message(e))

    def frame_reads(self, frame, d: Dataset) -> Set[Key]:
        """The pipeline views a DataFrame reads. The DataFrame API analyzes each step at
        once, so its plan holds what the names resolved to, each under a `SubqueryAlias
        <name>` (a view, a catalog or registered table), and a name still unresolved as
        `'UnresolvedRelation [db, t]`: both read from the plan's text (a user's alias that
        equals a view's name only adds an ordering edge)."""
        plan = frame._jdf.queryExecution().logical().toString()
        names = [m.group(1).split(", ") for m in
                 re.finditer(r"UnresolvedRelation \[([^\]]*)\]", plan)]
        names += [re.split(r"`?\.`?", m.group(1).strip("`")) for m in
                  re.finditer(r"SubqueryAlias (\S+)", plan)]
        deps = set()
        for parts in names:
            parts = [p.strip().strip("`") for p in parts if p.strip()]
            if not parts:
                continue
            qualified = ([d.context[0], d.context[1]] + parts)[-3:] if len(parts) < 3 else parts
            found = self.by_key.get(key(p or "" for p in qualified))
            if found is None and len(parts) == 1:   # a Viewlet view: its one-part name
                found = next((v for v in self.views if v.name.lower() == parts[0].lower()),
                             None)
            if found is not None and found is not d:
                deps.add(key(found.identifier))
        return deps

    # -- run ---------------------------------------------------------------------------------
    def run(self, d: Dataset, sql: str, frame, why_full: Optional[str]) -> Outcome:
        if why_full is None and self.recomputed(d):
            why_full = self.taken_back(d, sql)
        if why_full is None:
            try:
                row = self.spark.sql(f"CREATE OR REFRESH MATERIALIZED VIEW {_quote(d.name)} "
                                     f"AS {sql}").collect()[0]
                return Outcome(d.display, INCREMENTAL, row["status"],
                               f"{row['rows']} row(s) written, {row['seconds']:.1f} s")
            except Exception as e:  # noqa: BLE001 - only UnsupportedSQL falls back
                if UNSUPPORTED not in str(e):
                    raise
                why_full = _message(e)
        return self.recompute(d, sql, frame, why_full)

    def taken_back(self, d: Dataset, sql: str) -> Optional[str]:
        """A view an earlier run recomputed in full: why it still is (its query is still one
        Viewlet refuses, or its table cannot give the name back), or None once its table is
        gone and Viewlet can create the view."""
        why = self.not_incremental(d, sql)
        if why is not None:
            return why
        if _delta_catalog(self.spark):
            self.spark.sql(f"DROP TABLE {'.'.join(_quote(p) for p in d.identifier)}")
            return None
        return ("an earlier run recomputed it in full into the Delta table registered under "
                "its name, and Viewlet has no statement that unregisters a table yet; to have "
                "it maintained incrementally, rename the view")

    def recompute(self, d: Dataset, sql: Optional[str], frame, why: str) -> Outcome:
        """SDP's refresh of a materialized view: the query evaluated by Spark, the table
        overwritten (a Delta table, change data feed on, so views downstream can read it)."""
        start = time.time()
        if d.name.lower() in {n.lower() for n in self.vl.view_names()}:
            self.spark.sql(f"DROP MATERIALIZED VIEW {_quote(d.name)}")  # was incremental
        if frame is None:
            frame = self.spark.sql(sql)
        if _delta_catalog(self.spark):
            rows = _write_catalog_table(self.spark, frame, d)
        else:
            rows = _write_registered_table(self.vl, frame, d)
        return Outcome(d.display, FULL, "recomputed",
                       f"{rows} row(s) written, {time.time() - start:.1f} s. Not incremental: "
                       f"{why}")

    # -- dry-run -----------------------------------------------------------------------------
    def explain(self, d: Dataset, sql: str, why_full: Optional[str],
                done: Dict[Key, Outcome]) -> Outcome:
        exists = self.exists(d.name)
        verb = "will refresh" if exists else "will create"
        if why_full is not None:
            return Outcome(d.display, FULL, "will recompute", f"Not incremental: {why_full}")
        unknown = [v.display for v in self.views if v is not d and v.sql is None and
                   re.search(rf"\b{re.escape(v.name)}\b", sql, re.I) and not self.exists(v.name)]
        if unknown:
            return Outcome(d.display, "-", "undecided",
                           f"it reads {', '.join(unknown)}, which the first run creates")
        checked, absent = self.inline_absent(d, sql)
        note = (f" (checked with the query of {', '.join(absent)} in its place: it does not "
                "exist yet)") if absent else ""
        why = self.not_incremental(d, checked)
        if why is not None:
            return Outcome(d.display, FULL, "will recompute", f"Not incremental: {why}{note}")
        return Outcome(d.display, INCREMENTAL, verb if not self.recomputed(d) else
                       "will create (recomputed in full until now)", note.strip(" ()"))

    def not_incremental(self, d: Dataset, sql: str) -> Optional[str]:
        """Why Viewlet cannot maintain `sql` (EXPLAIN CREATE's answer), or None when it can."""
        lines = [r[0] for r in self.spark.sql(
            f"EXPLAIN CREATE MATERIALIZED VIEW {_quote(d.name)} AS {sql}").collect()]
        if lines and lines[0].endswith(NOT_INCREMENTAL):
            return lines[1].strip()
        return None

    def is_view(self, name: str) -> bool:
        return name.lower() in {n.lower() for n in self.vl.view_names()}

    def exists(self, name: str) -> bool:
        """Whether a query can read `name` (a view, a catalog table, a registered table)."""
        if self.is_view(name):
            return True
        try:
            self.spark.table(_quote(name))
            return True
        except Exception:  # noqa: BLE001 - not found (analysis only: nothing runs)
            return False

    def recomputed(self, d: Dataset) -> bool:
        """A table of the view's name that is not a Viewlet view: an earlier full recompute."""
        return not self.is_view(d.name) and self.exists(d.name)

    def inline_absent(self, d: Dataset, sql: str) -> Tuple[str, List[str]]:
        """`sql` with each pipeline view it reads that does not exist yet replaced by that
        view's query (a subquery of the same name), for EXPLAIN CREATE before the first run."""
        import sqlglot
        from sqlglot import exp

        tree = sqlglot.parse_one(sql, read="spark")
        absent: List[str] = []
        for table in list(tree.find_all(exp.Table)):
            if not isinstance(table.this, exp.Identifier) or table.db or table.catalog:
                continue
            upstream = next((v for v in self.views if v.name.lower() == table.name.lower()
                             and v is not d), None)
            if upstream is None or upstream.sql is None or self.exists(upstream.name):
                continue
            inner, _ = self.reads(upstream, upstream.sql)
            inner, _ = self.inline_absent(upstream, inner)
            alias = table.alias or table.name
            table.replace(exp.Subquery(this=sqlglot.parse_one(inner, read="spark"),
                                       alias=exp.TableAlias(this=exp.to_identifier(alias))))
            absent.append(upstream.display)
        return (tree.sql(dialect="spark") if absent else sql), absent

    # -- output ------------------------------------------------------------------------------
    def report(self, o: Outcome) -> None:
        line = f"  {o.dataset}: " + (f"{o.maintained}, " if o.maintained in (INCREMENTAL, FULL)
                                     else "") + o.status
        if o.detail:
            line += f". {o.detail[0].upper()}{o.detail[1:]}"
        self.out.write(line.rstrip(".") + "\n")
        for note in o.notes:
            self.out.write(f"      note: {note}\n")
        self.out.flush()


@contextmanager
def _quiet_query_errors() -> Iterator[None]:
    """PySpark logs every failed query to stderr (its SQLQueryContextLogger and
    DataFrameQueryContextLogger) before the caller sees the error; the walk expects some (a
    function reading a view not made yet, a query Viewlet refuses) and reports each itself."""
    import logging
    loggers = [logging.getLogger(n) for n in ("SQLQueryContextLogger",
                                              "DataFrameQueryContextLogger")]
    before = [lg.disabled for lg in loggers]
    for lg in loggers:
        lg.disabled = True
    try:
        yield
    finally:
        for lg, was in zip(loggers, before):
            lg.disabled = was


def sql_text(frame) -> Optional[str]:
    """The SQL a DataFrame is, when it is exactly `spark.sql(text)` (its unanalyzed plan's
    root was parsed from that text); None for a DataFrame the DataFrame API built or changed
    (the root of `spark.sql(q).filter(...)` has no SQL origin) or a parameterized query."""
    plan = frame._jdf.queryExecution().logical()
    if "Parameterized" in plan.getClass().getSimpleName():
        return None
    text = plan.origin().sqlText()
    if not text.isDefined():
        return None
    return text.get().strip().rstrip(";").strip()


def _delta_catalog(spark) -> bool:
    """Whether the session's catalog makes Delta tables (delta-spark's DeltaCatalog)."""
    return "DeltaCatalog" in (spark.conf.get("spark.sql.catalog.spark_catalog", "") or "")


def _write_catalog_table(spark, frame, d: Dataset) -> int:
    """A delta-spark session: the table in the catalog, where SDP writes it."""
    name = ".".join(_quote(p) for p in d.identifier)
    frame.write.format("delta").mode("overwrite").option("overwriteSchema", "true") \
        .option("delta.enableChangeDataFeed", "true").saveAsTable(name)
    return spark.table(name).count()


def _write_registered_table(vl, frame, d: Dataset) -> int:
    """The embedded default (no Delta in Spark's catalog): a Delta table at the location
    Spark gives the managed table of that name, written by delta-rs and registered with
    Viewlet under the view's name (readable by name, and as a base table by other views)."""
    import deltalake

    location = _managed_location(vl.spark, d)
    data = frame.toArrow()
    deltalake.write_deltalake(location, data, mode="overwrite", schema_mode="overwrite",
                              configuration={"delta.enableChangeDataFeed": "true"})
    vl.register_table(d.name, location, replace=True)
    return data.num_rows


def _managed_location(spark, d: Dataset) -> str:
    """Where Spark's catalog puts a managed table d (its database's directory)."""
    from urllib.parse import urlparse
    from urllib.request import url2pathname

    database = d.identifier[-2] if len(d.identifier) > 1 else spark.catalog.currentDatabase()
    if spark.catalog.databaseExists(database):
        root = spark.catalog.getDatabase(database).locationUri
    else:
        root = spark.conf.get("spark.sql.warehouse.dir").rstrip("/") + f"/{database}.db"
    parsed = urlparse(root)
    if parsed.scheme in ("", "file"):
        root = url2pathname(parsed.path)
    return root.rstrip("/") + "/" + d.name
