"""ORDER BY ... LIMIT n [OFFSET m] of a view's query (top-N).

The query's ORDER BY, LIMIT and OFFSET are taken off the top-level SELECT (or UNION); the
rest is translated as any view (its state, maps and triggers), and the view's result is the
first n rows after m of those rows in the view's order (engine/maintain/topn.py keeps them). Each
ORDER BY item must name an output column: by alias or name, by position, or as an expression
that is a SELECT item. Spark leaves rows tied on the ORDER BY keys in no particular order;
Viewlet breaks ties by all output columns (ascending, NULLs first), then by the view's group
keys, so the rows kept are a function of the data.

An ORDER BY without LIMIT orders nothing a table keeps: it is dropped (read the view with
ORDER BY). LIMIT without ORDER BY takes the first n rows in the tie order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from sqlglot import exp


@dataclass(frozen=True)
class SortItem:
    column: int              # index of the output column
    desc: bool
    nulls_first: bool

    def text(self, names: Sequence[str]) -> str:
        return (f"{names[self.column]} {'DESC' if self.desc else 'ASC'} "
                f"NULLS {'FIRST' if self.nulls_first else 'LAST'}")


@dataclass(frozen=True)
class TopN:
    items: Tuple[SortItem, ...]
    limit: int
    offset: int = 0

    @property
    def wanted(self) -> int:
        """Rows the view's order must know: the skipped ones and the limit."""
        return self.offset + self.limit

    def text(self, names: Sequence[str]) -> str:
        order = f"ORDER BY {', '.join(i.text(names) for i in self.items)} " if self.items else ""
        return f"{order}LIMIT {self.limit}" + (f" OFFSET {self.offset}" if self.offset else "")


@dataclass
class OrderClause:
    """ORDER BY / LIMIT / OFFSET as written, resolved once the outputs are known."""
    order: Optional[exp.Order]
    limit: int
    offset: int
    selects: List[exp.Expression]        # the top-level SELECT's items (empty for a UNION)


def split_order(tree: exp.Expression, fail) -> Tuple[exp.Expression, Optional[OrderClause]]:
    """The query without its top-level ORDER BY / LIMIT / OFFSET, and those (None when the
    query has no LIMIT: an ORDER BY alone is dropped)."""
    while isinstance(tree, exp.Subquery) and not tree.alias and isinstance(
            tree.this, (exp.Select, exp.Union)):
        tree = tree.this
    if not isinstance(tree, (exp.Select, exp.Union)):
        return tree, None
    order, limit, offset = (tree.args.get(k) for k in ("order", "limit", "offset"))
    if order is None and limit is None and offset is None:
        return tree, None
    tree = tree.copy()
    for key in ("order", "limit", "offset"):
        tree.set(key, None)
    if limit is None:
        if offset is not None:
            fail("OFFSET without LIMIT", offset,
                 "A view keeps a bounded number of ordered rows: add LIMIT n, or drop OFFSET "
                 "and skip rows when you read the view.")
        return tree, None
    count = _count(limit, "LIMIT", fail)
    skip = _count(offset, "OFFSET", fail) if offset is not None else 0
    selects = list(tree.expressions) if isinstance(tree, exp.Select) else []
    return tree, OrderClause(order, count, skip, selects)


def _count(node: exp.Expression, what: str, fail) -> int:
    value = node.args.get("expression") if isinstance(node, (exp.Limit, exp.Offset)) else node
    if isinstance(value, exp.Literal) and value.is_int and int(value.this) >= 0:
        return int(value.this)
    fail(f"{what} {value.sql(dialect='spark') if value is not None else ''}".strip(), node,
         f"{what} must be a non-negative integer literal.")


def resolve(clause: Optional[OrderClause], output_names: Sequence[str], fail) -> Optional[TopN]:
    """The ORDER BY items as output columns. `fail(construct, node, detail)` refuses an item
    that is not an output column."""
    if clause is None:
        return None
    items = []
    lower = [n.lower() for n in output_names]
    for ordered in (clause.order.expressions if clause.order is not None else []):
        node = ordered.this
        index = _output_index(node, lower, clause.selects)
        if index is None:
            fail(f"ORDER BY {node.sql(dialect='spark')}, which is not an output column", node,
                 "Viewlet orders a view by its output columns: add the expression to the SELECT "
                 "list (with an alias) and order by that.")
        if not 0 <= index < len(output_names):
            fail(f"ORDER BY position {index + 1}", node,
                 f"The SELECT list has {len(output_names)} columns.")
        desc = bool(ordered.args.get("desc"))
        nulls_first = ordered.args.get("nulls_first")
        if nulls_first is None:                   # Spark: ASC NULLS FIRST, DESC NULLS LAST
            nulls_first = not desc
        items.append(SortItem(index, desc, bool(nulls_first)))
    return TopN(tuple(items), clause.limit, clause.offset)


def _output_index(node: exp.Expression, names: List[str], selects) -> Optional[int]:
    if isinstance(node, exp.Literal) and node.is_int:
        return int(node.this) - 1
    if isinstance(node, exp.Column) and not node.table and node.name.lower() in names:
        return names.index(node.name.lower())
    text = node.sql(dialect="spark").lower()
    for i, item in enumerate(selects):
        inner = item.this if isinstance(item, exp.Alias) else item
        if inner.sql(dialect="spark").lower() == text:
            return i
        if isinstance(node, exp.Column) and isinstance(inner, exp.Column) \
                and inner.name.lower() == node.name.lower() \
                and (not inner.table or inner.table.lower() == node.table.lower()):
            return i
    return None
