"""Refusals: constructs a view may not use (yet), each named with its position."""
from __future__ import annotations

from typing import Optional

from sqlglot import exp

from ..errors import UnsupportedSQL

# Functions whose value changes between evaluations (Spark marks the time and session ones
# deterministic within one query, but a view is re-evaluated over time). Spark's own
# determinism flags are checked again at CREATE (engine/ops/probe.py: UDFs).
_NONDETERMINISTIC = {"rand", "random", "randn", "uuid", "shuffle", "current_timestamp", "now",
                     "current_date", "curdate", "localtimestamp", "monotonically_increasing_id",
                     "spark_partition_id", "input_file_name", "current_timezone", "current_user",
                     "user", "session_user", "current_database", "current_schema",
                     "current_catalog", "try_reflect", "reflect", "java_method"}
_NONDETERMINISTIC_WITHOUT_ARGS = {"unix_timestamp"}       # unix_timestamp(x) is a conversion


_NESTED_ORDER = ("ORDER BY ... LIMIT is maintained on the view's own query only (top-N): move it "
                 "there, or drop it from the subquery.")


def position_of(node: Optional[exp.Expression]) -> Optional[int]:
    if node is None:
        return None
    for n in node.walk():
        meta = getattr(n, "_meta", None) or {}
        if "start" in meta:
            return meta["start"]
    return None


def reject_unsupported(tree: exp.Select, sql: str) -> None:
    def fail(construct, node, detail=""):
        raise UnsupportedSQL(construct, detail, position_of(node), sql)

    # the view's own ORDER BY / LIMIT are taken off before (frontend/ordering.py): these are nested
    if tree.args.get("order") is not None:
        fail("ORDER BY in a subquery", tree.args["order"], _NESTED_ORDER)
    if tree.args.get("limit") is not None or tree.args.get("offset") is not None:
        fail("LIMIT/OFFSET in a subquery", tree.args.get("limit") or tree.args.get("offset"),
             _NESTED_ORDER)
    allowed = [tree.args.get("where"), tree.args.get("from_") or tree.args.get("from"),
               tree.args.get("having"), tree.args.get("group")] + \
        list(tree.args.get("joins") or []) + list(tree.expressions)
    for node in _outside_subqueries(tree):
        if node is tree:
            continue
        if isinstance(node, (exp.Select, exp.Subquery, exp.Exists)):
            if not any(a is not None and _within(node, a) for a in allowed):
                fail("a subquery in this clause", node,
                     "Subqueries are supported in SELECT, FROM, WHERE, GROUP BY and HAVING.")
            continue
        if isinstance(node, exp.Filter):
            fail("FILTER (WHERE ...) on an aggregate", node,
                 "Use SUM(CASE WHEN ... THEN x END) instead.")
        if isinstance(node, exp.Window):
            fail("a window function (OVER) here", node,
                 "Window functions are maintained in the view's own SELECT list, or in a "
                 "subquery in FROM that the view's query projects and filters; make a query "
                 "that reads them otherwise a view over an incremental view with them.")
        if isinstance(node, (exp.Union, exp.Intersect, exp.Except)):
            fail(node.key.upper(), node)
        if isinstance(node, exp.Lateral) and not node.args.get("view") \
                and isinstance(node.this, exp.Subquery):
            continue                  # LATERAL (SELECT ...): frontend/lateral.py
        if isinstance(node, (exp.Lateral, exp.Unnest, exp.Explode, exp.Pivot, exp.TableSample)):
            fail(node.key.upper(), node)
        if isinstance(node, exp.Func):
            name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
            no_args = not any(True for _ in node.iter_expressions())
            if name in _NONDETERMINISTIC or isinstance(node, (exp.Rand, exp.Randn)) or (
                    name in _NONDETERMINISTIC_WITHOUT_ARGS and no_args):
                fail(f"the non-deterministic function {name}()", node,
                     "A view must be a deterministic function of its tables.")


def _outside_subqueries(tree):
    """tree's nodes, entering no subquery below it (each is checked when translated)."""
    yield tree
    for child in tree.iter_expressions():
        if isinstance(child, (exp.Select, exp.Subquery, exp.Exists)):
            yield child
            continue
        yield from _outside_subqueries(child)


def _within(node, ancestor) -> bool:
    while node is not None:
        if node is ancestor:
            return True
        node = node.parent
    return False
