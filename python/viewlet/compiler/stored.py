"""A trigger program as durable state: the format a view's catalog entry keeps it in.

A view is created in one process and refreshed in others. Each of them must run the program
whose maps the view's tables hold, so CREATE stores the program it compiled and every later
load reads it back instead of compiling again (a newer or differently seeded compile could
name or define maps otherwise; the map tables would not say so). Format 1, a JSON object:

    format       1
    view_map     the view state's map name
    depth        the maintenance depth (null: unlimited)
    tables       relation name -> table identity (a Delta table's location, an upstream
                 view's result table)
    maps         in program order, each {name, keys, level, cache, group_keys, support,
                 values: [[column, query]...], fingerprint}
    triggers     in program order, each {relation, statements: [{target, column,
                 strategy, rhs}]}
    fingerprint  sha256 of everything above (the stored text is verified when read)

Queries are the calculus in its JSON form (calculus/serial.py). A map's fingerprint is a
sha256 of what its table holds: its value columns' definitions in keyed form (variables
named by structure, keys by position, relations by table identity: calculus/canonical.py
`keyed_form`), its key count and the columns that decide when a row is gone. Two compiles
that define a map alike give it the same fingerprint whatever they named it, which is how
CREATE OR REPLACE keeps the maps a new query still needs (engine/ops/replace.py).
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Dict, Mapping

from ..calculus.canonical import keyed_form
from ..calculus.serial import SerialError, decode, encode
from ..errors import StoredProgramError
from .program import MapDef, Program, Statement

PROGRAM_FORMAT = 1


def map_fingerprint(m: MapDef, tables: Mapping[str, str]) -> str:
    """The content fingerprint of map `m` (`tables`: relation -> table identity)."""
    payload = {"keys": len(m.keys), "support": m.support, "group_keys": m.group_keys,
               "values": [[column, encode(keyed_form(q, tables))] for column, q in m.values.items()]}
    return _digest(payload)


def encode_program(program: Program, tables: Mapping[str, str]) -> Dict[str, Any]:
    """`program` in format 1; `tables` maps each relation it reads to its table identity.
    Raises StoredProgramError if the encoding would not read back as `program` (then the
    program cannot be kept, and CREATE fails before anything is written)."""
    body: Dict[str, Any] = {
        "format": PROGRAM_FORMAT,
        "view_map": program.view_map,
        "depth": program.depth,
        "tables": {rel: tables[rel] for rel in program.relations()},
        "maps": [{"name": m.name, "keys": list(m.keys), "level": m.level, "cache": m.cache,
                  "group_keys": m.group_keys, "support": m.support,
                  "values": [[column, encode(q)] for column, q in m.values.items()],
                  "fingerprint": map_fingerprint(m, tables)}
                 for m in program.maps.values()],
        "triggers": [{"relation": rel,
                      "statements": [{"target": s.target, "column": s.column,
                                      "strategy": s.strategy, "rhs": encode(s.rhs)}
                                     for s in statements]}
                     for rel, statements in program.triggers.items()],
    }
    body["fingerprint"] = _digest(body)
    if not same_program(decode_program(body), program):
        raise StoredProgramError(
            "Viewlet internal error: the compiled trigger program does not read back from its "
            "stored form, so it cannot be kept with the view; nothing was created. Please "
            "report the view's query.")
    return body


def decode_program(stored: Mapping[str, Any], view: str = "the view") -> Program:
    """The program stored in format 1. Raises StoredProgramError (naming the remedy) for a
    format this version does not read or a stored text that fails its fingerprint."""
    remedy = (f"REFRESH INCREMENTAL VIEW {view} FULL rebuilds its maps from the base tables "
              "with this version's program")
    fmt = stored.get("format") if isinstance(stored, Mapping) else None
    if fmt != PROGRAM_FORMAT:
        raise StoredProgramError(
            f"Incremental view {view} keeps its trigger program in format {fmt!r}, which this "
            f"version of Viewlet does not read (it reads format {PROGRAM_FORMAT}); it will not "
            f"be run against maps it cannot read. {remedy}.")
    body = {k: v for k, v in stored.items() if k != "fingerprint"}
    if _digest(body) != stored.get("fingerprint"):
        raise StoredProgramError(
            f"Incremental view {view}: its stored trigger program does not match its "
            f"fingerprint (the catalog entry was changed outside Viewlet). {remedy}.")
    try:
        program = Program(stored["view_map"], stored["depth"])
        for m in stored["maps"]:
            program.maps[m["name"]] = MapDef(
                m["name"], tuple(m["keys"]), {column: decode(q) for column, q in m["values"]},
                m["level"], m["cache"], m["group_keys"], m["support"])
        for trigger in stored["triggers"]:
            for s in trigger["statements"]:
                program.add_statement(trigger["relation"], Statement(
                    s["target"], s["column"], decode(s["rhs"]), s["strategy"]))
    except (KeyError, TypeError, SerialError) as e:
        raise StoredProgramError(
            f"Incremental view {view}: its stored trigger program is malformed ({e}). "
            f"{remedy}.") from e
    return program


def fingerprints(stored: Mapping[str, Any]) -> Dict[str, str]:
    """{map name: content fingerprint} of a stored program."""
    return {m["name"]: m["fingerprint"] for m in stored["maps"]}


def same_program(a: Program, b: Program) -> bool:
    """Equal programs, map and statement order included (dict equality ignores order)."""
    return a == b and list(a.maps) == list(b.maps) and list(a.triggers) == list(b.triggers) \
        and all(list(a.maps[n].values) == list(b.maps[n].values) for n in a.maps)


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
