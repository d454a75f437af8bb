"""The compiler is deterministic: the same query over the same tables gives the same trigger
program (map names, definitions, keys, columns, statements and their order) in every
process, whatever its PYTHONHASHSEED. Programs are compared by their stored form's
fingerprint (compiler/stored.py), which covers all of that.

The corpus: every view of sql/ (the workloads' schemas), and every view a test run created
when VIEWLET_VIEW_CORPUS names the file that run recorded (conftest.py,
VIEWLET_RECORD_VIEWS; scripts/test.sh records the suite's CREATEs and runs this module
after it)."""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.view_corpus import compile_entry, read

ROOT = Path(__file__).resolve().parents[2]
SEEDS = (1, 2)        # and this process's own (random unless PYTHONHASHSEED is set)
CHILD = """
import json, sys
sys.path[:0] = [sys.argv[2], sys.argv[3]]
from tests.view_corpus import compile_entry
for line in open(sys.argv[1]):
    print(compile_entry(json.loads(line))["fingerprint"], flush=True)
"""


@functools.lru_cache(maxsize=None)
def shipped_views():
    """The views of sql/tpch and sql/orderbook as corpus entries (their tables as the
    workloads create them, resolved without Spark)."""
    sys.path.insert(0, str(ROOT / "integration"))
    from map_counts import _views
    from viewlet.engine.state.program import RecordingResolver, compile_definition
    from viewlet.tools.offline import OfflineResolver
    out = []
    for _, name, sql, schema_set in _views(set()):
        if not sql.lstrip().upper().startswith(("SELECT", "WITH")):
            continue                                   # a CREATE statement, not a query
        recorder = RecordingResolver(OfflineResolver(schema_set=schema_set))
        compile_definition(sql, recorder, None)
        out.append({"sql": sql, "refs": recorder.record(), "depth": None, "caches": False})
    return tuple(out)


def corpus():
    entries = list(shipped_views())
    recorded = os.environ.get("VIEWLET_VIEW_CORPUS")
    if recorded:
        entries += list(read(recorded))
    return entries


def test_programs_are_the_same_under_every_hash_seed(tmp_path):
    entries = corpus()
    listing = tmp_path / "corpus.jsonl"
    listing.write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in entries))
    here = [compile_entry(e)["fingerprint"] for e in entries]
    children = [subprocess.Popen([sys.executable, "-c", CHILD, str(listing), str(ROOT / "python"),
                                  str(ROOT)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, env=dict(os.environ, PYTHONHASHSEED=str(seed)))
                for seed in SEEDS]
    differ = []
    for seed, child in zip(SEEDS, children):
        out, err = child.communicate(timeout=1800)
        assert child.returncode == 0, err[-4000:]
        theirs = out.split()
        assert len(theirs) == len(entries)
        differ += [(seed, e["sql"]) for e, a, b in zip(entries, here, theirs) if a != b]
    assert not differ, f"{len(differ)} of {len(entries)} programs differ under another " \
                       f"PYTHONHASHSEED; the first: seed {differ[0][0]}: {differ[0][1]}"


def test_map_fingerprints_do_not_follow_variable_names():
    """A map's content fingerprint is the same whatever names a compile gave the variables
    of its definitions (every variable renamed, nested queries' private ones too), so a new
    query that needs the same map finds it (CREATE OR REPLACE keeps it)."""
    from viewlet.compiler.stored import decode_program, map_fingerprint
    entry = next(e for e in shipped_views() if "l_returnflag" in e["sql"] and "o_orderkey" in e["sql"])
    stored = compile_entry(entry)
    program = decode_program(stored)
    for m in program.maps.values():
        values = {c: _renamed(q) for c, q in m.values.items()}
        assert values != m.values
        renamed = type(m)(m.name, m.keys, values, m.level, m.cache, m.group_keys, m.support)
        assert map_fingerprint(renamed, stored["tables"]) == map_fingerprint(m, stored["tables"])


def _renamed(query):
    """`query` with every variable, at every depth, renamed (its encoded form rewritten:
    variable lists, assigned variables, and the backquoted names in SQL texts)."""
    from viewlet.calculus.serial import decode, encode

    def walk(node):
        if isinstance(node, dict):
            out = {}
            for k, v in node.items():
                if k in ("vars", "group"):
                    out[k] = [x + "_renamed" for x in v]
                elif k in ("nested", "lift"):
                    out[k] = v + "_renamed"
                elif k in ("value", "cond", "sql"):
                    out[k] = _quoted_renamed(v)
                else:
                    out[k] = walk(v)
            return out
        if isinstance(node, list):
            return [walk(x) for x in node]
        return node
    return decode(walk(encode(query)))


def _quoted_renamed(sql: str) -> str:
    import re
    return re.sub(r"`([^`]+)`", lambda m: f"`{m.group(1)}_renamed`", sql)


def test_a_map_defined_alike_in_two_views_has_one_fingerprint():
    """Q17 and Q17a both keep lineitem's quantities by part: the same map, whatever each
    compile named it, has the same content fingerprint."""
    by_name = {}
    for e in shipped_views():
        for path in (ROOT / "sql" / "tpch").glob("q17*.sql"):
            text = "\n".join(l for l in path.read_text().splitlines()
                             if not l.lstrip().startswith("--")).strip().rstrip(";")
            if text == e["sql"]:
                by_name[path.stem] = compile_entry(e)
    q17, q17a = ({m["fingerprint"] for m in by_name[n]["maps"]} for n in ("q17", "q17a"))
    assert q17 & q17a
