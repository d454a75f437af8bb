"""EXPLAIN and DESCRIBE: the trigger program and a view's state, as text rows."""
from __future__ import annotations

import json
from typing import List, Tuple

from ..calculus.printer import show
from ..compiler.program import Program
from ..compiler.staged_load import MapLoad
from ..engine.batch import policy
from ..engine.maintain.topn import capacity
from ..engine.maintain.window import describe
from ..engine.ops.load import load_order_now
from ..engine.state.graph import dependents
from ..engine.state.settings import MEMORY_CONF, size_text
from ..engine.state.stats import OrderedStats
from ..errors import TableNotFound, ViewletError
from ..plan.lower import SUB_PREFIX


def depth_text(depth) -> str:
    return {None: "unlimited (higher-order IVM)", 0: "0 (recompute)",
            1: "1 (first-order IVM)"}.get(depth, f"{depth}")


def explain_program(name: str, sql: str, program: Program, spec=None) -> str:
    """`spec`: the front end's ViewSpec, for how the result is derived (ORDER BY / LIMIT)."""
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
    if spec is not None:
        lines += result_lines(spec, program.depth)
    return "\n".join(lines)


def result_lines(spec, depth) -> List[str]:
    """How the result table follows from the view state beyond its groups' rows."""
    lines: List[str] = []
    if spec.window is not None:
        lines += describe(spec, depth)
    top = spec.top_n
    if top is None:
        return lines
    names = [o.name for o in spec.outputs]
    lines += ["", "Result (ORDER BY / LIMIT):",
             f"  top-N: {top.text(names)}; rows tied on the ORDER BY keys are ordered by every "
             "output column (ascending, NULLs first), then the group keys"]
    if depth == 0:
        return lines + ["  every batch recomputes the query, ORDER BY and LIMIT included"]
    cap = capacity(top)
    return lines + [
        f"  ordered table: the first {cap} rows of the query without ORDER BY / LIMIT, in that "
        f"order ({top.wanted} wanted + {cap - top.wanted} slack); a batch replaces the rows of "
        "the groups it touched and adds their new rows that sort before the last row kept "
        "(all of them while the table holds every row)",
        f"  recompute: only when deletes leave fewer than {top.wanted} rows while rows are "
        "missing: the ordered rows are derived again from the whole view state",
        f"  result table: rows {top.offset + 1}..{top.wanted} of the ordered table, rewritten "
        "when they change; it is unordered, read it with SELECT * FROM view ORDER BY ..."]


def explain_execution(view) -> str:
    """EXPLAIN's second part: where batches run (engine/batch/policy.py) and the batch plan
    every target evaluates, for a batch that changes every relation."""
    lines = policy.explain(view)
    if view.compiled.depth == 0:
        return "\n".join(lines)
    relations = tuple(view.compiled.program.relations())
    plan = view.batch_plan(relations, relations)
    lines.append(f"  batch plan (every relation changed): {len(plan.phases)} quer"
                 f"{'y' if len(plan.phases) == 1 else 'ies'}, maps written: {', '.join(plan.targets)}")
    for i, phase in enumerate(plan.phases, 1):
        shared = sum(1 for c in (phase.tree.args.get("with_").expressions
                                 if phase.tree.args.get("with_") else [])
                     if c.alias_or_name.startswith(SUB_PREFIX))
        lines.append(f"    query {i}: triggers {', '.join(phase.relations)}; {len(phase.blocks)} "
                     f"block(s), {shared} shared subquer{'y' if shared == 1 else 'ies'}")
        reads = sorted({_leaf_text(view, leaf) for leaf in phase.leaves.values()})
        lines.append(f"      reads: {'; '.join(reads)}")
    try:
        order = load_order_now(view)
    except TableNotFound as e:         # a base table gone: EXPLAIN still shows the rest
        return "\n".join(lines + [f"  initial load: not shown, a base table cannot be read ({e})"])
    return "\n".join(lines + load_lines(order))


def load_lines(order: List[MapLoad]) -> List[str]:
    """How CREATE and REFRESH ... FULL compute the maps (compiler/staged_load.py), a line
    per round."""
    rounds = 1 + max((m.round for m in order), default=0)
    lines = [f"  initial load (CREATE, REFRESH ... FULL; relations ranked by their rows now): "
             f"{rounds} round{'s' if rounds > 1 else ''}"]
    for k in range(rounds):
        these = [m for m in order if m.round == k]
        if k == 0:
            text = "from their definitions over the base tables: " + \
                ", ".join(m.name for m in these)
        else:
            text = "; ".join(f"{m.name} by the trigger on {m.via} over "
                             f"{', '.join(m.reads)}" for m in these)
        lines.append(f"    round {k + 1}: {text}")
    return lines


def _leaf_text(view, leaf) -> str:
    if leaf.kind == "delta":
        return f"changes of {leaf.name}"
    if leaf.kind == "rel":
        return f"{leaf.name} at batch {'end' if leaf.detail[0] else 'start'}"
    if leaf.kind == "pending":
        return f"{leaf.name}'s delta from an earlier query"
    if not leaf.detail:
        return f"map {leaf.name} whole"
    keys = view.map_schema(leaf.name).keys
    return f"map {leaf.name} by key {', '.join(keys[j] for j, _ in leaf.detail)}"


def _loop_vars(stmt) -> List[str]:
    """Target keys the batch does not bind: they range over map entries (a join)."""
    from ..calculus.ir import DeltaRel, Domain
    bound = set()
    for m in stmt.rhs.monomials:
        for a in m.atoms:
            if isinstance(a, (DeltaRel, Domain)):
                bound |= set(a.vars)
    return [k for k in stmt.rhs.group if k not in bound]


def describe_rows(view) -> List[Tuple[str, str, str]]:
    ctx = view.ctx
    rows = [("view", "name", view.name), ("view", "id", view.id),
            ("view", "query", view.definition.sql),
            ("view", "depth", depth_text(view.definition.depth)),
            ("view", "map writes", view.settings.map_writes),
            ("view", "refresh policy", view.definition.refresh_policy or
             "none (a batch that cannot be applied incrementally is refused with the remedy)"),
            ("view", "location", view.entry.location),
            ("view", "result columns", ", ".join(f"{c.name} {c.type}"
                                                 for c in view.definition.result.columns))]
    records = view.manifest.records()
    last = [r for r in records if r.phase == "committed"][-1]
    top = view.top_n
    if top is not None:
        kept = last.batch_stats.ordered or OrderedStats()
        names = [o.name for o in view.compiled.spec.outputs]
        rows.append(("view", "order", f"{top.text(names)}; the ordered table holds "
                                      f"{'?' if kept.rows is None else kept.rows} row(s)"
                                      f"{', every row of the query' if kept.complete else ''}"
                                      f", location {view.ordered_path}"))
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
    rows += [("downstream view", name, "reads this view; DROP it first to drop this view")
             for name in dependents(ctx, view.name)]
    blocker = policy.local_blocker(view)
    rows.append(("execution", "engine", view.settings.engine))
    rows.append(("execution", "local target", f"cannot run this view: {blocker}" if blocker
                 else "can run this view"))
    in_memory = 0
    for name, m in view.compiled.program.maps.items():
        if name not in view.definition.maps:     # depth 0: the state is recomputed, not kept
            rows.append(("map", name, f"keys [{', '.join(m.keys)}], recomputed by each batch "
                                      "(depth 0), no table"))
            continue
        path = view.map_path(name)
        snap = ctx.store.snapshot(path)
        hot = ctx.hot_maps.peek(path)
        if hot is not None:
            memory = f"in memory ({size_text(hot.nbytes)}, {hot.rows:,} rows, " \
                     f"version {hot.version})"
        elif ctx.hot_maps.was_evicted(path):
            memory = "not in memory (evicted for other views' maps: batches read its keys " \
                     "from Delta)"
        else:
            memory = "not in memory"
        in_memory += hot.nbytes if hot is not None else 0
        rows.append(("map", name, f"keys [{', '.join(m.keys)}], level {m.level}, "
                                  f"version {snap.version}, {len(snap.files)} file(s), {memory}"))
    rows.append(("memory", "hot maps", f"{size_text(in_memory)} of this view's maps in driver "
                                       f"memory; {size_text(ctx.hot_maps.used())} of "
                                       f"{size_text(ctx.hot_maps.budget)} used by all views "
                                       f"({MEMORY_CONF})"))
    rows.append(("last batch", "batch", str(last.batch)))
    rows.append(("last batch", "at", str(last.at)))
    if last.batch:
        stats = last.batch_stats
        rows.append(("last batch", "engine", f"{stats.engine or 'spark'}: "
                                             f"{stats.engine_reason or 'before local batches'}"))
    rows.append(("last batch", "stats", json.dumps(last.stats, default=str)))
    if records[-1].phase == "planned":
        rows.append(("last batch", "interrupted", f"batch {records[-1].batch} will be re-run "
                                                  "by the next REFRESH"))
    return rows
