"""WITH clauses (common table expressions), inlined.

A non-recursive CTE is a named subquery: every reference to it (in FROM, in a JOIN, in a
subquery of WHERE) becomes a copy of its query as a subquery in FROM, under the reference's
alias (or the CTE's name), with the CTE's column list (`WITH x (a, b) AS (...)`) as the
subquery's column aliases. A CTE sees the CTEs defined before it; a WITH inside a subquery
sees the enclosing ones and shadows them; a CTE name shadows a table of the same name, as in
Spark. Copies of one CTE compile to the same maps (duplicate-map elimination), so a CTE read
twice (TPC-H Q15's revenue0) is maintained once.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

from sqlglot import exp


def inline_ctes(tree: exp.Expression, fail) -> Tuple[exp.Expression, Optional[exp.With]]:
    """The query with every WITH inlined, and the first WITH clause (None without one).
    `fail(construct, node, detail)` refuses WITH RECURSIVE and duplicate CTE names."""
    found = next(iter(tree.find_all(exp.With)), None)
    if found is None:
        return tree, None
    return _inline(tree.copy(), {}, fail), found


def _inline(node: exp.Expression, scope: Dict[str, Tuple[exp.Expression, list]], fail):
    if isinstance(node, exp.Table) and node.name.lower() in scope and not node.args.get("db") \
            and not node.args.get("catalog"):
        body, columns = scope[node.name.lower()]
        alias = node.args.get("alias")
        names = list(alias.args.get("columns") or []) if alias is not None else []
        return exp.Subquery(this=body.copy(), alias=exp.TableAlias(
            this=exp.to_identifier(node.alias_or_name),
            columns=[c.copy() for c in (names or columns)]))
    with_ = node.args.get("with_") or node.args.get("with")
    if isinstance(with_, exp.With):
        if with_.args.get("recursive"):
            fail("WITH RECURSIVE", with_,
                 "A recursive query has no incremental form here; materialize the closure "
                 "in a table, or write a fixed number of joins.")
        scope = dict(scope)
        defined = set()
        for cte in with_.expressions:
            name = cte.alias_or_name.lower()
            if name in defined:
                fail(f"the common table expression '{cte.alias_or_name}' defined twice", cte)
            defined.add(name)
            alias = cte.args.get("alias")
            columns = list(alias.args.get("columns") or []) if alias is not None else []
            scope[name] = (_inline(cte.this, scope, fail), columns)
        node.set("with_" if "with_" in node.args else "with", None)
    for key, value in list(node.args.items()):
        if isinstance(value, exp.Expression):
            node.set(key, _inline(value, scope, fail))
        elif isinstance(value, list):
            node.set(key, [_inline(v, scope, fail) if isinstance(v, exp.Expression) else v
                           for v in value])
    return node


__all__ = ["inline_ctes"]
