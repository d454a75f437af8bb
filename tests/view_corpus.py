"""The corpus of views a test run creates, for the compile-under-hash-seeds test.

`record_creates(path)` makes every CREATE (engine/ops/create.py) append the definition it compiled
to `path` as a JSON line: the query, the tables it resolved to (as the catalog records
them), the depth and the caches option. `read(path)` gives each distinct definition once;
`compile_entry` compiles one as CREATE does, from the recorded tables (no Spark, no Delta).
"""
from __future__ import annotations

import json
import threading
from typing import Dict, Iterator


def record_creates(path: str) -> None:
    from viewlet.engine.ops import create
    compile_definition = create.compile_definition
    lock = threading.Lock()

    def recording(sql, resolver, depth, caches=False, *args, **kwargs):
        compiled = compile_definition(sql, resolver, depth, caches, *args, **kwargs)
        if not hasattr(resolver, "record"):   # a test recompiling from stored tables, no CREATE
            return compiled
        line = json.dumps({"sql": sql, "refs": resolver.record(), "depth": depth,
                           "caches": caches}, sort_keys=True)
        with lock, open(path, "a") as out:
            out.write(line + "\n")
        return compiled

    create.compile_definition = recording


def read(path: str) -> Iterator[Dict]:
    seen = set()
    with open(path) as f:
        for line in f:
            if line.strip() and line not in seen:
                seen.add(line)
                yield json.loads(line)


def compile_entry(entry: Dict):
    """The stored program (compiler/stored.py) of a recorded definition."""
    from viewlet.engine.state.program import StoredTables, compile_definition, stored_form
    compiled = compile_definition(entry["sql"], StoredTables(entry["refs"]), entry["depth"],
                                  entry["caches"])
    return stored_form(compiled)
