"""EXPLAIN and DESCRIBE: the trigger program and a view's state, as text rows."""
from __future__ import annotations

import json
from typing import List, Tuple

from .calculus.printer import show
from .compiler.program import Program
from .errors import ViewletError


def depth_text(depth) -> str:
    return {None: "unlimited (higher-order IVM)", 0: "0 (recompute)",
            1: "1 (first-order IVM)"}.get(depth, f"{depth}")


def explain_program(name: str, sql: str, program: Program) -> str:
    lines = [f"Incremental view {name}", f"  depth: {depth_text(program.depth)}",
             f"  query: {' '.join(sql.split())}", "", "Maps:"]
    for m in program.maps.values():
        role = "view state" if m.name == program.view_map else \
            "multiset of the view state (MIN / MAX / DISTINCT)" if m.group_keys is not None \
            else f"order-{m.level} delta map"
        if m.cache:
            role = f"view cache: order-{m.level} map of a nested query by its input variables"
        lines.append(f"  {m.name}[{', '.join(m.keys)}]  ({role})")
        for col, q in m.values.items():
            label = "" if col == "__v" else f".{col}"
            lines.append(f"    {m.name}{label} := {show(q)}")
    lines += ["", "Triggers (one per base relation; statements read map versions from batch start):"]
    for rel in program.relations():
        stmts = program.statements_for(rel)
        lines.append(f"  ON BATCH d{rel}:")
        if not stmts:
            lines.append("    (no statements)")
        for i, s in enumerate(stmts, 1):
            label = "" if s.column == "__v" else f".{s.column}"
            op = ":=" if s.strategy == "reevaluate" else "+="
            keys = ", ".join(s.rhs.group)
            loops = _loop_vars(s)
            loop = f"foreach {', '.join(loops)}: " if loops else ""
            lines.append(f"    {i:02d} {loop}{s.target}{label}[{keys}] {op} {show(s.rhs)}"
                         f"    -- {s.mode()}")
        fused = program.targets_for(rel)
        lines.append(f"    => {len(fused)} MERGE(s): {', '.join(fused)}")
    return "\n".join(lines)


def _loop_vars(stmt) -> List[str]:
    """Target keys the batch does not bind: they range over map entries (a join)."""
    from .calculus.ir import DeltaRel, Domain
    bound = set()
    for m in stmt.rhs.monomials:
        for a in m.atoms:
            if isinstance(a, (DeltaRel, Domain)):
                bound |= set(a.vars)
    return [k for k in stmt.rhs.group if k not in bound]


def describe_rows(view) -> List[Tuple[str, str, str]]:
    ctx = view.ctx
    rows = [("view", "name", view.name), ("view", "id", view.id),
            ("view", "query", view.spec["sql"]), ("view", "depth", depth_text(view.spec["depth"])),
            ("view", "map writes", view.spec.get("map_writes", "append")),
            ("view", "location", view.entry.location),
            ("view", "result columns", ", ".join(f"{c['name']} {c['type']}"
                                                 for c in view.spec["result"]["columns"]))]
    records = view.manifest.records()
    last = [r for r in records if r.phase == "committed"][-1]
    for rel, table in view.compiled.spec.tables.items():
        try:
            current = ctx.store.version(table.id)
        except ViewletError as e:       # a dropped table: DESCRIBE still works
            current = f"unreadable ({e.message})"
        if table.view:       # an upstream incremental view: read through its result table
            rows.append(("upstream view", table.display,
                         f"result version {last.watermarks[rel]} consumed, result at version "
                         f"{current}, location {table.id}; REFRESH refreshes it first"))
            continue
        rows.append(("table", table.display,
                     f"watermark version {last.watermarks[rel]}, table at version {current}, "
                     f"location {table.id}"))
    from .runtime.chain import dependents
    rows += [("downstream view", name, "reads this view; DROP it first to drop this view")
             for name in dependents(ctx, view.name)]
    for name, m in view.compiled.program.maps.items():
        snap = ctx.store.snapshot(view.map_path(name))
        rows.append(("map", name, f"keys [{', '.join(m.keys)}], level {m.level}, "
                                  f"version {snap.version}, {len(snap.files)} file(s)"))
    rows.append(("last batch", "batch", str(last.batch)))
    rows.append(("last batch", "at", str(last.at)))
    rows.append(("last batch", "stats", json.dumps(last.stats, default=str)))
    if records[-1].phase == "planned":
        rows.append(("last batch", "interrupted", f"batch {records[-1].batch} will be re-run "
                                                  "by the next REFRESH"))
    return rows
