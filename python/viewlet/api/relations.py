"""Spark's table statements on the names Viewlet owns (the JVM side: ViewletRelations.scala).

Spark's catalog answers for tables it holds: with delta-spark an incremental view's result
table is one (engine/state/published.py). Where it cannot, Viewlet answers the same SQL:

  * an incremental view that is no catalog table (every view without delta-spark, where it
    is a temporary view over its result table; a view whose columns Delta cannot name);
  * without delta-spark, `delta.`/path`` and names given with register_table.

`DESCRIBE [TABLE] [EXTENDED|FORMATTED] name` and `DESCRIBE HISTORY name` get Spark's and
Delta's columns; `ALTER TABLE name SET TBLPROPERTIES (...)` on a base table sets Delta
properties (so the change-feed error's remedy runs without delta-spark too); `VERSION AS OF`
/ `TIMESTAMP AS OF` read the version asked for; a write to a view (INSERT, UPDATE, DELETE,
MERGE) is refused with what to do instead.
"""
from __future__ import annotations

import datetime
import json
import re
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from ..errors import ViewletError, ViewletParseError
from ..engine.state.settings import Settings

DESCRIBE_COLUMNS = [("col_name", "string"), ("data_type", "string"), ("comment", "string")]
#: DESCRIBE HISTORY's columns, as delta-spark gives them (job, notebook: NULL here)
HISTORY_COLUMNS = [("version", "bigint"), ("timestamp", "timestamp"), ("userId", "string"),
                   ("userName", "string"), ("operation", "string"),
                   ("operationParameters", "map<string,string>"), ("job", "string"),
                   ("notebook", "string"), ("clusterId", "string"), ("readVersion", "bigint"),
                   ("isolationLevel", "string"), ("isBlindAppend", "boolean"),
                   ("operationMetrics", "map<string,string>"), ("userMetadata", "string"),
                   ("engineInfo", "string")]

_ALTER = re.compile(r"(?is)^\s*ALTER\s+TABLE\s+(?P<name>.+?)\s+SET\s+TBLPROPERTIES\s*"
                    r"\((?P<items>.*)\)\s*$")
_PROPERTY = re.compile(r"""\s*(?:'(?P<qk>(?:[^']|'')*)'|(?P<k>[A-Za-z0-9_.]+))\s*=?\s*"""
                       r"""(?:'(?P<qv>(?:[^']|'')*)'|(?P<v>[^,\s]+))\s*(?:,|$)""")
_DESCRIBE = re.compile(r"(?is)^\s*(?:DESC|DESCRIBE)\s+(?P<words>(?:(?:HISTORY|TABLE|EXTENDED|"
                       r"FORMATTED)\s+)*)(?P<name>.+?)\s*$")


@dataclass(frozen=True)
class TableStatement:
    kind: str                  # "describe" | "history" | "properties"
    parts: Tuple[str, ...]
    extended: bool = False
    properties: Tuple[Tuple[str, str], ...] = ()


def parse(text: str) -> Optional[TableStatement]:
    """A DESCRIBE of one table or an ALTER TABLE ... SET TBLPROPERTIES, or None (not
    this shape: Spark's to parse)."""
    alter = _ALTER.match(text)
    if alter is not None:
        parts = name_parts(alter.group("name"))
        properties = _properties(alter.group("items"))
        return TableStatement("properties", parts, properties=properties) \
            if parts and properties else None
    m = _DESCRIBE.match(text)
    if m is None:
        return None
    words = [w.upper() for w in m.group("words").split()]
    parts = name_parts(m.group("name"))
    if parts is None:
        return None
    if "HISTORY" in words:
        return TableStatement("history", parts) if words == ["HISTORY"] else None
    extended = any(w in ("EXTENDED", "FORMATTED") for w in words)
    return TableStatement("describe", parts, extended)


def _properties(text: str) -> Tuple[Tuple[str, str], ...]:
    out, pos = [], 0
    while pos < len(text):
        m = _PROPERTY.match(text, pos)
        if m is None or m.end() == pos:
            return ()
        key = m.group("qk").replace("''", "'") if m.group("qk") is not None else m.group("k")
        value = m.group("qv").replace("''", "'") if m.group("qv") is not None else m.group("v")
        out.append((key, value))
        pos = m.end()
    return tuple(out)


def name_parts(text: str) -> Optional[Tuple[str, ...]]:
    """`a.b`, `` `x y`.z ``, ``delta.`/p` ``: the name's parts; None when the text is more
    than one name (a column or partition spec follows)."""
    parts, i = [], 0
    while i < len(text):
        if text[i] == "`":
            j, part = i + 1, []
            while j < len(text):
                if text[j] == "`" and text[j + 1:j + 2] == "`":
                    part.append("`")
                    j += 2
                elif text[j] == "`":
                    break
                else:
                    part.append(text[j])
                    j += 1
            else:
                return None
            parts.append("".join(part))
            i = j + 1
        else:
            m = re.match(r"[A-Za-z0-9_]+", text[i:])
            if m is None:
                return None
            parts.append(m.group(0))
            i += m.end()
        if i < len(text):
            if text[i] != ".":
                return None
            i += 1
    return tuple(parts) if parts else None


# -- whose is a name ---------------------------------------------------------------------
def _view(ctx, parts: Sequence[str]):
    return ctx.catalog.find(parts[0], "view") if len(parts) == 1 else None


def _in_catalog(ctx, entry) -> bool:
    """The view is a Delta table of Spark's catalog (Spark answers for it)."""
    from ..engine.state import published
    return published.catalog_parts(ctx, entry) is not None


def _table_location(ctx, parts: Sequence[str]) -> Optional[str]:
    """A base table Viewlet resolves itself (no delta-spark): delta.`path` or registered."""
    if Settings(ctx.spark).delta_catalog:
        return None
    from ..engine.state.warehouse import normalize_location
    if len(parts) == 2 and parts[0].lower() == "delta":
        location = normalize_location(parts[1])
        return location if ctx.store.exists(location) else None
    entry = ctx.catalog.find(parts[0], "table") if len(parts) == 1 else None
    return entry.location if entry is not None else None


def claims(ctx, st: TableStatement) -> bool:
    if st.kind == "properties":          # base tables only: a view's table is Viewlet's
        return _view(ctx, st.parts) is None and _table_location(ctx, st.parts) is not None
    view = _view(ctx, st.parts)
    if view is not None:
        return not _in_catalog(ctx, view)
    return _table_location(ctx, st.parts) is not None


def kinds(ctx, names: Sequence[Sequence[str]]) -> List[dict]:
    """Per name: whether Viewlet resolves its time travel, and why writing to it is
    refused (None: it is not)."""
    out = []
    for parts in names:
        view = _view(ctx, parts)
        if view is not None:
            out.append({"travel": not _in_catalog(ctx, view), "write": (
                f"{view.name} is an incremental view: only Viewlet writes its result table, one "
                f"batch at a time. Change its base tables and run REFRESH INCREMENTAL VIEW "
                f"{view.name} (or REFRESH INCREMENTAL VIEW {view.name} FULL to rebuild it).")})
        else:
            out.append({"travel": _table_location(ctx, parts) is not None, "write": None})
    return out


# -- answers -----------------------------------------------------------------------------
def outputs(st: TableStatement):
    return {"history": HISTORY_COLUMNS, "properties": []}.get(st.kind, DESCRIBE_COLUMNS)


def run(ctx, st: TableStatement) -> List[Sequence]:
    view = _view(ctx, st.parts)
    location = ctx.load(view.name).result_path if view is not None else \
        _table_location(ctx, st.parts)
    if location is None:
        raise ViewletError(f"{'.'.join(st.parts)} is no longer a table Viewlet knows.")
    if st.kind == "history":
        return _history(ctx, location)
    if st.kind == "properties":
        ctx.store.set_properties(location, dict(st.properties))
        return []
    return _describe(ctx, st, view, location)


def _describe(ctx, st: TableStatement, view, location: str) -> List[Sequence]:
    from ..engine.spark.io import spark_schema
    if view is not None:
        loaded = ctx.load(view.name)
        columns = [(c.name, c.type) for c in loaded.definition.result.columns]
    else:
        columns = [(f.name, f.dataType.simpleString())
                   for f in spark_schema(ctx.store.snapshot(location).schema).fields]
    rows: List[Sequence] = [(name, typ, None) for name, typ in columns]
    if not st.extended:
        return rows
    state = ctx.store.observe(location)
    properties = ctx.store.properties(location)
    rows += [("", "", ""), ("# Detailed Table Information", "", "")]
    if view is not None:
        rows += [("Name", view.name, ""), ("Type", "INCREMENTAL VIEW", ""),
                 ("View Text", ctx.load(view.name).definition.sql, "")]
    else:
        rows += [("Name", ".".join(st.parts), ""), ("Type", "EXTERNAL", "")]
    rows += [("Provider", "delta", ""), ("Location", location, ""),
             ("Version", str(state.version), ""),
             ("Table Properties", "[" + ", ".join(f"{k}={v}" for k, v in sorted(properties.items()))
              + "]", "")]
    return rows


def _history(ctx, location: str) -> List[Sequence]:
    rows = []
    for h in ctx.store.history(location):
        stamp = datetime.datetime.fromtimestamp(h.get("timestamp", 0) / 1000,
                                                tz=datetime.timezone.utc)
        rows.append((h.get("version"), stamp.isoformat(), h.get("userId"), h.get("userName"),
                     h.get("operation"), _strings(h.get("operationParameters")), None, None,
                     h.get("clusterId"), h.get("readVersion"), h.get("isolationLevel"),
                     h.get("isBlindAppend"), _strings(h.get("operationMetrics")),
                     h.get("userMetadata"), h.get("engineInfo") or h.get("clientVersion")))
    return rows


def _strings(mapping) -> Optional[dict]:
    if mapping is None:
        return None
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in mapping.items()}


# -- time travel -------------------------------------------------------------------------
def read_at(ctx, parts: Sequence[str], version: Optional[str], micros: Optional[int]):
    """A DataFrame of the name's rows at `version` (or the last version committed at or
    before `micros`), or None when the name is not Viewlet's."""
    from ..engine.spark.io import read_table
    view = _view(ctx, parts)
    location = ctx.load(view.name).result_path if view is not None else \
        _table_location(ctx, parts)
    if location is None:
        return None
    shown = view.name if view is not None else ".".join(parts)
    if version is not None:
        try:
            wanted = int(version)
        except ValueError:
            raise ViewletParseError(f"VERSION AS OF {version}: a version is a number") from None
    else:
        wanted = version_at(ctx, location, micros, shown)
    latest = ctx.store.version(location)
    if not 0 <= wanted <= latest:
        raise ViewletError(f"{shown} has no version {wanted}: its versions are 0 to {latest} "
                           f"(DESCRIBE HISTORY {shown} lists them).")
    if view is not None:
        return ctx.read_view(view.name, wanted)
    return read_table(ctx.spark, ctx.store, location, wanted)


def version_at(ctx, location: str, micros: int, shown: str) -> int:
    """The last version committed at or before the timestamp (microseconds since 1970)."""
    history = sorted(ctx.store.history(location), key=lambda h: h["version"])
    before = [h["version"] for h in history if h.get("timestamp", 0) * 1000 <= micros]
    if not before:
        first = datetime.datetime.fromtimestamp(history[0]["timestamp"] / 1000,
                                                tz=datetime.timezone.utc) if history else None
        raise ViewletError(f"{shown} did not exist yet at that time: its first version was "
                           f"committed at {first.isoformat() if first else 'an unknown time'} "
                           f"(DESCRIBE HISTORY {shown} lists its versions).")
    return max(before)
