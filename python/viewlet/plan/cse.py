"""Common subexpressions of a batch query, computed once.

Lowering works monomial by monomial, so the same subquery (a nested aggregate per input, a
domain of the batch's keys, a map read through its pending deltas) appears once per
monomial that reads it: TPC-H Q20's batch query repeated 80 subqueries, Q17a one of them
twelve times. Each subquery in FROM that occurs more than once becomes a CTE the query
reads by name; the local target materializes CTEs read more than once (DuckDB
`AS MATERIALIZED`), Spark reuses the repeated exchanges it finds. The plan's subqueries are
never correlated (nested aggregates are joins), so hoisting one keeps its meaning.
"""
from __future__ import annotations

from collections import Counter
from typing import Dict, List

from sqlglot import exp

PREFIX = "cse"


def _key(query: exp.Expression) -> str:
    return query.sql(dialect="spark")


def _from_subqueries(node: exp.Expression):
    for sub in node.find_all(exp.Subquery):
        if sub.alias and isinstance(sub.parent, (exp.From, exp.Join)):
            yield sub


def share_subqueries(tree: exp.Expression) -> exp.Expression:
    """`tree` (a query, maybe with a WITH) with every repeated FROM subquery read from a CTE
    of its own, CTEs in dependency order."""
    counts = Counter(_key(s.this) for s in _from_subqueries(tree))
    if not any(n > 1 for n in counts.values()):
        return tree
    names: Dict[str, str] = {}
    bodies: Dict[str, exp.Expression] = {}

    def hoist(node: exp.Expression):
        for sub in list(_from_subqueries(node)):
            if sub.parent is None or not _attached(sub, node):
                continue                       # inside a subquery hoisted meanwhile
            key = _key(sub.this)
            if counts[key] < 2:
                continue
            if key not in names:
                name = names[key] = f"{PREFIX}{len(names)}"
                body = sub.this.copy()
                bodies[name] = body
                hoist(body)
            sub.replace(exp.Table(this=exp.to_identifier(names[key]),
                                  alias=exp.TableAlias(this=exp.to_identifier(sub.alias))))

    with_ = tree.args.get("with_")
    existing: List[exp.CTE] = list(with_.expressions) if with_ is not None else []
    for cte in existing:
        hoist(cte.this)
    body = tree.copy()
    body.set("with_", None)
    hoist(body)
    ctes = existing + [exp.CTE(this=b, alias=exp.TableAlias(this=exp.to_identifier(n)))
                       for n, b in bodies.items()]
    body.set("with_", exp.With(expressions=_ordered(ctes)))
    return body


def _attached(node: exp.Expression, root: exp.Expression) -> bool:
    while node is not None:
        if node is root:
            return True
        node = node.parent
    return False


def _ordered(ctes: List[exp.CTE]) -> List[exp.CTE]:
    """CTEs so that each comes after the ones it reads."""
    by_name = {c.alias_or_name: c for c in ctes}
    reads = {name: {t.name for t in c.this.find_all(exp.Table) if t.name in by_name and t.name != name}
             for name, c in by_name.items()}
    out, done = [], set()

    def visit(name, stack=()):
        if name in done:
            return
        for dep in sorted(reads[name]):
            if dep not in stack:
                visit(dep, stack + (name,))
        done.add(name)
        out.append(by_name[name])

    for c in ctes:
        visit(c.alias_or_name)
    return out


def reference_counts(tree: exp.Expression) -> Counter:
    """How often each table name is read in `tree`."""
    return Counter(t.name for t in tree.find_all(exp.Table))
