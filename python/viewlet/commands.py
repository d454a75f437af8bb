"""Running a parsed Viewlet statement against a context: rows for Spark to return."""
from __future__ import annotations

from typing import List, Sequence

from .ddl import OUTPUTS, Statement
from .errors import ViewletError
from .explain import depth_text, describe_rows, explain_program


def run(ctx, st: Statement) -> List[Sequence]:
    if st.kind == "create":
        if st.or_replace:
            ctx.drop_view(st.name, if_exists=True)
        try:
            r = ctx.create_view(st.name, st.query, st.options.get("depth"), st.if_not_exists)
        except ViewletError as e:
            if e.position is not None:  # positions in the query -> positions in the statement
                e.position += st.query_offset
            raise
    elif st.kind == "drop":
        r = ctx.drop_view(st.name, st.if_exists)
    elif st.kind == "refresh":
        r = ctx.refresh(st.name)
    elif st.kind == "show":
        rows = []
        for e in ctx.catalog.entries("view"):
            view = ctx.load(e.name)
            last = view.manifest.last_committed()
            tables = ", ".join(t.display for t in view.compiled.spec.tables.values())
            rows.append((e.name, depth_text(e.spec["depth"]), tables, last.batch, e.spec["sql"]))
        return rows
    elif st.kind == "describe":
        return describe_rows(ctx.load(st.name))
    elif st.kind == "explain":
        view = ctx.load(st.name)
        return [(explain_program(view.name, view.spec["sql"], view.compiled.program),)]
    else:
        raise ValueError(st.kind)
    return [tuple(r.get(name) for name, _ in OUTPUTS[st.kind])]
