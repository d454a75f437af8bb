"""CTEs of a batch query: in dependency order, and how often each is read.

Lowering names every subquery once per distinct text (plan/lower.py `LeafBuilder`), so a
subquery that several monomials read is one CTE read several times. The local target
materializes the CTEs read more than once (DuckDB `AS MATERIALIZED`; it would inline them);
Spark reuses the repeated exchanges it finds.
"""
from __future__ import annotations

from collections import Counter
from typing import List

from sqlglot import exp


def ordered_ctes(ctes: List[exp.CTE]) -> List[exp.CTE]:
    """CTEs so that each comes after the ones it reads (otherwise in the given order)."""
    by_name = {c.alias_or_name: c for c in ctes}
    reads = {name: {t.name for t in c.this.find_all(exp.Table) if t.name in by_name and t.name != name}
             for name, c in by_name.items()}
    out, done = [], set()
    for c in ctes:                       # depth first, with an explicit stack
        stack = [(c.alias_or_name, iter(sorted(reads[c.alias_or_name])))]
        while stack:
            name, deps = stack[-1]
            if name in done:
                stack.pop()
                continue
            dep = next((d for d in deps if d not in done), None)
            if dep is not None and all(dep != n for n, _ in stack):
                stack.append((dep, iter(sorted(reads[dep]))))
                continue
            if dep is None:
                done.add(name)
                out.append(by_name[name])
                stack.pop()
    return out


def reference_counts(tree: exp.Expression) -> Counter:
    """How often each table name is read in `tree`."""
    return Counter(t.name for t in tree.find_all(exp.Table))
