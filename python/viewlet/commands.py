"""Running a parsed Viewlet statement against a context: rows for Spark to return."""
from __future__ import annotations

from typing import List, Sequence

from .ddl import OUTPUTS, Statement
from .errors import ViewletError
from .explain import depth_text, describe_rows, explain_execution, explain_program
from .runtime.catalog import Entry
from .runtime.history import history_rows
from .runtime.schedule import interval_text


def run(ctx, st: Statement) -> List[Sequence]:
    if st.kind == "create":
        if st.or_replace:
            ctx.drop_view(st.name, if_exists=True)
        try:
            r = ctx.create_view(st.name, st.query, st.options.get("depth"), st.if_not_exists,
                                caches=st.options.get("caches", False),
                                map_writes=st.options.get("map_writes", "append"),
                                engine=st.options.get("engine"))
            if "refresh" in st.options and r.get("status") == "created":
                _set_refresh(ctx, st.name, st.options["refresh"])
        except ViewletError as e:
            if e.position is not None:  # positions in the query -> positions in the statement
                e.position += st.query_offset
            raise
    elif st.kind == "drop":
        r = ctx.drop_view(st.name, st.if_exists)
    elif st.kind == "refresh":
        r = ctx.refresh(st.name, full=st.options.get("full", False))
    elif st.kind == "alter":
        r = _set_refresh(ctx, st.name, st.options["refresh"])
    elif st.kind == "show":
        rows = []
        for e in ctx.catalog.entries("view"):
            view = ctx.load(e.name)
            last = view.manifest.last_committed()
            tables = ", ".join(t.display + (" (incremental view)" if t.view else "")
                               for t in view.compiled.spec.tables.values())
            mode, error = _refresh_state(ctx, e)
            rows.append((e.name, depth_text(e.spec["depth"]), tables, last.batch, e.spec["sql"],
                         mode, error))
        return rows
    elif st.kind == "describe":
        return view_description(ctx, ctx.load(st.name))
    elif st.kind == "history":
        return history_rows(ctx.load(st.name), st.options.get("limit"))
    elif st.kind == "explain":
        view = ctx.load(st.name)
        return [(explain_program(view.name, view.spec["sql"], view.compiled.program,
                                 view.compiled.spec),),
                (explain_execution(view),)]
    else:
        raise ValueError(st.kind)
    return [tuple(r.get(name) for name, _ in OUTPUTS[st.kind])]


def _set_refresh(ctx, name, every):
    """Record the view's refresh interval (None: manual) and start or stop it here."""
    entry = ctx.catalog.find(name, "view")
    if entry is None:
        ctx.load(name)                     # raises the usual 'does not exist' error
    spec = dict(entry.spec, refresh=every)
    ctx.catalog.replace(entry, Entry(entry.id, entry.kind, entry.name, entry.location, spec))
    if every is None:
        ctx.stop(entry.name)
    else:
        ctx.start(entry.name)
    return {"view": entry.name, "refresh": interval_text(every),
            "status": "refreshing in this session" if every else "manual"}


def _refresh_state(ctx, entry):
    mode = interval_text(entry.spec.get("refresh"))
    running = ctx._continuous is not None and ctx._continuous.running(entry.name)
    status = ctx._continuous.status.get(entry.name.lower()) if running else None
    if running:
        mode += f" (running in this session, {status.batches} batch(es))"
    return mode, status.last_error if status else None


def view_description(ctx, view):
    """DESCRIBE INCREMENTAL VIEW's rows: the view's definition, then its refresh state."""
    mode, error = _refresh_state(ctx, view.entry)
    return describe_rows(view) + [("refresh", "mode", mode), ("refresh", "last error", error or "")]
