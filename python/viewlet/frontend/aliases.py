"""Lateral column aliases: a SELECT item may use the alias of an earlier item
(`SELECT a + 1 AS x, x * 2 AS y`), as Spark resolves it: only a name that no column of the
FROM items has, and only outside subqueries. The alias stands for the earlier item's
expression, so the item is translated with that expression in its place (an aggregate alias
in an aggregate query, `SUM(c) AS t, t / 2`, is the same aggregate)."""
from __future__ import annotations

from typing import Callable, Dict, List

from sqlglot import exp


def inline_lateral_aliases(items: List[exp.Expression],
                           is_column: Callable[[str], bool]) -> List[exp.Expression]:
    """The SELECT items with each use of an earlier item's alias replaced by its expression."""
    known: Dict[str, exp.Expression] = {}
    out = []
    for item in items:
        new = _replace(item.copy(), known, is_column) if known else item
        out.append(new)
        if isinstance(new, exp.Alias):
            known.setdefault(new.alias.lower(), new.this)
    return out


def _replace(node: exp.Expression, known: Dict[str, exp.Expression], is_column):
    if isinstance(node, (exp.Subquery, exp.Select, exp.Exists)):
        return node
    if isinstance(node, exp.Column) and not node.table and not isinstance(node.this, exp.Star) \
            and node.name.lower() in known and not is_column(node.name):
        return exp.Paren(this=known[node.name.lower()].copy())
    for key, value in list(node.args.items()):
        if isinstance(value, exp.Expression):
            node.set(key, _replace(value, known, is_column))
        elif isinstance(value, list):
            node.set(key, [_replace(v, known, is_column) if isinstance(v, exp.Expression) else v
                           for v in value])
    return node
