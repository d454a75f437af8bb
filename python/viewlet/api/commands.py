"""Running a parsed Viewlet statement against a context: rows for Spark to return."""
from __future__ import annotations

from contextlib import contextmanager
from typing import List, Optional, Sequence

from .ddl import OUTPUTS, Statement
from ..errors import UnsupportedSQL, ViewletError
from .explain import depth_text, describe_rows, explain_execution, explain_program
from ..engine.state.catalog import Entry
from ..engine.state.history import history_rows
from ..engine.state.program import compile_definition
from ..engine.ops.rebuild import NewDefinition
from ..engine.ops.replace import replace_view
from ..engine.ops.results import Created
from ..engine.state.settings import interval_text

# Options of CREATE that make a view's definition (CREATE OR REFRESH compares them).
DEFINITION_OPTIONS = ("depth", "caches", "map_writes", "engine", "refresh_policy")


@contextmanager
def _query_positions(st: Statement):
    """Errors positioned in the statement's query, positioned in the statement."""
    try:
        yield
    except ViewletError as e:
        if e.position is not None:
            e.position += st.query_offset
        raise


def run(ctx, st: Statement) -> List[Sequence]:
    if st.kind == "create":
        with _query_positions(st):
            r = _create(ctx, st)
    elif st.kind == "drop":
        r = ctx.drop_view(st.name, st.if_exists)
    elif st.kind == "refresh":
        r = ctx.refresh(st.name, full=st.options.get("full", False))
    elif st.kind == "alter":
        r = _alter(ctx, st)
    elif st.kind == "show":
        rows = []
        for e in ctx.catalog.entries("view"):
            view = ctx.load(e.name)
            last = view.manifest.last_committed()
            tables = ", ".join(t.display + (" (incremental view)" if t.view else "")
                               for t in view.compiled.spec.tables.values())
            mode, error = _refresh_state(ctx, e)
            # one line per view: a query's line breaks would split its row in the shell
            rows.append((e.name, depth_text(e.definition.depth), tables, last.batch,
                         " ".join(e.definition.sql.split()), mode, error))
        return rows
    elif st.kind == "describe":
        return view_description(ctx, ctx.load(st.name))
    elif st.kind == "history":
        return history_rows(ctx.load(st.name), st.options.get("limit"))
    elif st.kind == "explain" and st.query is not None:
        with _query_positions(st):
            return explain_definition_rows(ctx, st)
    elif st.kind == "explain":
        return explain_rows(ctx.load(st.name))
    else:
        raise ValueError(st.kind)
    return [tuple(r.get(name) for name, _ in OUTPUTS[st.kind])]


def explain_rows(view) -> List[Sequence]:
    """EXPLAIN's rows: one per line (as `.show()` and the shell print them), the trigger
    program, a blank line, then where batches run."""
    text = explain_program(view.name, view.definition.sql, view.compiled.program,
                           view.compiled.spec) + "\n\n" + \
        explain_execution(view)
    return [(line,) for line in text.split("\n")]


NOT_CREATED = "Not created: EXPLAIN CREATE compiles the definition only."
#: EXPLAIN CREATE's first line ends so for a query Viewlet cannot maintain; the next line
#: is the reason
NOT_INCREMENTAL = "not maintained incrementally."


def explain_definition_rows(ctx, st: Statement) -> List[Sequence]:
    """EXPLAIN CREATE ...'s rows: the trigger program of the definition, compiled against
    the tables' current schemas as CREATE would (EXPLAIN INCREMENTAL VIEW's first part once
    the view exists); no map is loaded and no table is written. A query Viewlet cannot
    maintain is answered, not raised (as Databricks' EXPLAIN CREATE MATERIALIZED VIEW says
    whether a query is incrementalizable): the construct, its position and the remedy."""
    try:
        compiled = compile_definition(st.query, ctx.resolver(), st.options.get("depth"),
                                      st.options.get("caches", False))
    except UnsupportedSQL as e:
        return [(f"Incremental view {st.name}: {NOT_INCREMENTAL}",),
                (f"  {e.message}",),
                ("  CREATE refuses this query under every REFRESH POLICY.",),
                ("",), (NOT_CREATED,)]
    text = explain_program(st.name, st.query, compiled.program, compiled.spec)
    return [(line,) for line in text.split("\n")] + [("",), (NOT_CREATED,)]


def _create(ctx, st: Statement):
    existing = ctx.catalog.find(st.name, "view")
    if st.must_exist and existing is None:
        ctx.load(st.name)                  # raises the usual 'does not exist' error
    if st.or_refresh and existing is not None:
        r = _refresh_or_replace(ctx, existing, st)
    elif st.or_replace and existing is not None:
        r = _replace(ctx, existing, st)
    else:
        r = ctx.create_view(st.name, st.query, st.options.get("depth"), st.if_not_exists,
                            caches=st.options.get("caches", False),
                            map_writes=st.options.get("map_writes", "append"),
                            engine=st.options.get("engine"),
                            enable_change_data_feed=st.options.get("enable_change_data_feed"),
                            refresh_policy=st.options.get("refresh_policy"))
        if r.get("status") != "created":
            return r
    if "refresh" in st.options:
        _set_refresh(ctx, st.name, st.options["refresh"])
    return r


def _refresh_or_replace(ctx, entry: Entry, st: Statement):
    """CREATE OR REFRESH of an existing view: the same definition is refreshed (one batch);
    a new one replaces it, keeping the maps it still needs and the view's history."""
    wanted = {"depth": st.options.get("depth"), "caches": st.options.get("caches", False),
              "map_writes": st.options.get("map_writes", "append"),
              "engine": st.options.get("engine"),
              "refresh_policy": st.options.get("refresh_policy")}
    definition = entry.definition
    if " ".join(st.query.split()) == " ".join(definition.sql.split()) and \
            wanted == _settings_of(definition):
        r = ctx.refresh(entry.name)
        return Created(entry.name, r.status, len(definition.maps), r.rows_changed, r.seconds)
    have = _settings_of(definition)
    changed = [k for k in DEFINITION_OPTIONS if wanted[k] != have[k]]
    reason = "CREATE OR REFRESH with a new " + \
        ("query" if " ".join(st.query.split()) != " ".join(definition.sql.split())
         else "setting of " + ", ".join(changed))
    return _replace(ctx, entry, st, reason)


def _settings_of(definition) -> dict:
    return {"depth": definition.depth, "caches": bool(definition.caches),
            "map_writes": definition.map_writes or "append", "engine": definition.engine,
            "refresh_policy": definition.refresh_policy}


def _replace(ctx, entry: Entry, st: Statement, reason: Optional[str] = None):
    """A new definition of an existing view: the maps it still needs are kept
    (engine/ops/replace.py). ALTER ... AS keeps the view's settings where it names none."""
    given = {k: st.options[k] for k in DEFINITION_OPTIONS if k in st.options}
    if st.must_exist:
        settings = _settings_of(entry.definition)
    else:
        settings = {"depth": None, "caches": False, "map_writes": "append", "engine": None,
                    "refresh_policy": None}
    settings.update(given)
    return replace_view(ctx, entry.name, NewDefinition(
        st.query, settings["depth"], settings["caches"], settings["map_writes"],
        settings["engine"], st.options.get("enable_change_data_feed"),
        settings["refresh_policy"]),
        reason or ("ALTER ... AS" if st.must_exist else "CREATE OR REPLACE"))


def _alter(ctx, st: Statement):
    """SET REFRESH ... / Databricks' ADD | ALTER | DROP SCHEDULE (which check that the view
    has, or has not, a schedule, as Databricks does)."""
    action = st.options.get("schedule")
    if action is not None:
        entry = ctx.catalog.find(st.name, "view")
        if entry is None:
            ctx.load(st.name)                   # raises the usual 'does not exist' error
        scheduled = entry.definition.refresh is not None
        if action == "add" and scheduled:
            raise ViewletError(f"Incremental view '{entry.name}' already has a schedule "
                               f"({interval_text(entry.definition.refresh)}): use ALTER SCHEDULE "
                               "to change it.")
        if action in ("alter", "drop") and not scheduled:
            raise ViewletError(f"Incremental view '{entry.name}' has no schedule: use ADD "
                               "SCHEDULE to give it one.")
    return _set_refresh(ctx, st.name, st.options["refresh"])


def _set_refresh(ctx, name, every):
    """Record the view's refresh interval (None: manual) and start or stop it here."""
    entry = ctx.catalog.find(name, "view")
    if entry is None:
        ctx.load(name)                     # raises the usual 'does not exist' error
    ctx.catalog.replace(entry, Entry.of_view(entry.id, entry.name, entry.location,
                                             entry.definition.with_refresh(every)))
    if every is None:
        ctx.stop(entry.name)
    else:
        ctx.start(entry.name)
    return {"view": entry.name, "refresh": interval_text(every),
            "status": "refreshing in this session" if every else "manual"}


def _refresh_state(ctx, entry):
    mode = interval_text(entry.definition.refresh)
    status = ctx.refresh_status(entry.name)
    if status is not None:
        mode += f" (running in this session, {status.batches} batch(es))"
    return mode, status.last_error if status else None


def view_description(ctx, view):
    """DESCRIBE INCREMENTAL VIEW's rows: the view's definition, then its refresh state."""
    mode, error = _refresh_state(ctx, view.entry)
    return describe_rows(view) + [("refresh", "mode", mode), ("refresh", "last error", error or "")]


_VERBS = {"create": "CREATE", "drop": "DROP", "refresh": "REFRESH", "alter": "ALTER",
          "describe": "DESCRIBE", "history": "DESCRIBE", "explain": "EXPLAIN"}


def title(st: Statement) -> str:
    """The statement in a few words, for progress and cancellation messages."""
    if st.kind == "show":
        return "SHOW INCREMENTAL VIEWS"
    return f"{_VERBS.get(st.kind, st.kind.upper())} INCREMENTAL VIEW {st.name}"


def cancelled_message(ctx, st: Statement, reason) -> str:
    """What a cancelled statement left: the same as a crash at that point, which the next
    REFRESH repairs (engine/runtime/cancel.py)."""
    head = f"{title(st)} was cancelled ({reason or 'cancelled'})."
    if st.kind == "create":
        return f"{head} Nothing was created."
    if st.kind != "refresh":
        return head
    try:
        latest = ctx.load(st.name).manifest.latest()
    except Exception:  # noqa: BLE001 - the message must not fail
        return head
    if latest.phase == "planned":
        return (f"{head} Nothing was half-applied: batch {latest.batch} is planned and not "
                "committed, and the next REFRESH completes it with exactly its recorded inputs "
                "(maps it already wrote are not written twice).")
    return f"{head} The view is at batch {latest.batch}; no batch was left half-applied."
