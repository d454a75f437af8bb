"""Map and statement counts of the shipped views, as docs/internals.md quotes them.

Each view of sql/tpch (and sql/orderbook) is compiled the way CREATE INCREMENTAL VIEW does
(engine/state/program.py compile_definition, in a fresh_names block), against the workloads'
schemas (nullable columns, as the generated Delta tables have them), with no Spark:

    PYTHONPATH=python python integration/map_counts.py [q3 q5 ...]

Columns: maps (all maps, the view state and multisets included) without fusion (`fused =
false`, a map per definition as the papers draw it, what views created before fusion keep)
and with it (the default), the statements of the fused program, and its maps by level (0 =
the view's own state and multisets).

The unfused counts depend on the order fresh variables are numbered in, which follows
Python's string hashing (calculus/normalize.py `expand` renames a set of private variables):
ties in the older canonical order then hide a different number of duplicates. The script runs
itself with PYTHONHASHSEED=0 so that its numbers repeat; the fused counts do not vary.
"""
from __future__ import annotations

import os
import sys
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _views(names):
    for workload, schema_set in (("tpch", "tpch"), ("orderbook", "orderbook")):
        folder = os.path.join(ROOT, "sql", workload)
        for f in sorted(os.listdir(folder), key=lambda f: (len(f), f)):
            name = f[:-4]
            if f.endswith(".sql") and (not names or name in names):
                text = open(os.path.join(folder, f)).read()
                sql = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("--"))
                yield workload, name, sql.strip().rstrip(";"), schema_set


def counts(names=()):
    from viewlet.engine.state.program import compile_definition
    from viewlet.tools.offline import OfflineResolver
    rows = []
    for workload, name, sql, schema_set in _views(set(names)):
        if not sql.lstrip().upper().startswith(("SELECT", "WITH")):
            continue                      # a CREATE statement (vwap_cached), not a query
        resolver = OfflineResolver(schema_set=schema_set)
        fused = compile_definition(sql, resolver, None).program
        plain = compile_definition(sql, resolver, None, fused=False).program
        levels = Counter(m.level for m in fused.maps.values())
        rows.append((workload, name, len(plain.maps), len(fused.maps),
                     sum(map(len, fused.triggers.values())),
                     " ".join(f"{lv}:{n}" for lv, n in sorted(levels.items()))))
    return rows


def main(argv):
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.execve(sys.executable, [sys.executable] + sys.argv,
                  dict(os.environ, PYTHONHASHSEED="0"))
    print(f"{'view':<18} {'unfused':>7} {'maps':>5} {'stmts':>5}  maps by level")
    for workload, name, plain, fused, stmts, levels in counts(argv):
        print(f"{workload + '/' + name:<18} {plain:>7} {fused:>5} {stmts:>5}  {levels}")


if __name__ == "__main__":
    main(sys.argv[1:])
