"""Parser for Viewlet's DDL statements (the query itself is parsed by the SQL front end).

  CREATE [OR REPLACE] INCREMENTAL VIEW [IF NOT EXISTS] name [WITH (option = value, ...)] AS query
      options: depth = n | unlimited, refresh = '<interval>' | manual, caches = true | false,
               map_writes = 'append' | 'merge', engine = 'auto' | 'local' | 'spark' | 'distributed'
  DROP INCREMENTAL VIEW [IF EXISTS] name
  REFRESH INCREMENTAL VIEW name [FULL]
  ALTER INCREMENTAL VIEW name SET REFRESH EVERY '<interval>' | SET REFRESH MANUAL
  SHOW INCREMENTAL VIEWS
  DESCRIBE | DESC INCREMENTAL VIEW name [HISTORY [LIMIT n]]
  EXPLAIN INCREMENTAL VIEW name
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from .errors import ViewletParseError
from .runtime.history import COLUMNS as HISTORY_COLUMNS
from .runtime.maps import MAP_WRITES
from .runtime.targets import ENGINES
from .runtime.schedule import parse_interval

OUTPUTS: Dict[str, List[Tuple[str, str]]] = {
    "create": [("view", "string"), ("status", "string"), ("maps", "int"), ("rows", "bigint"),
               ("seconds", "double")],
    "drop": [("view", "string"), ("status", "string")],
    "refresh": [("view", "string"), ("batch", "bigint"), ("changes", "bigint"),
                ("rows_changed", "bigint"), ("seconds", "double"), ("status", "string")],
    "show": [("view", "string"), ("depth", "string"), ("tables", "string"), ("batch", "bigint"),
             ("query", "string"), ("refresh", "string"), ("last_error", "string")],
    "describe": [("section", "string"), ("name", "string"), ("value", "string")],
    "history": HISTORY_COLUMNS,
    "explain": [("plan", "string")],
    "alter": [("view", "string"), ("refresh", "string"), ("status", "string")],
}

_RESERVED = {"AS", "WITH", "IF", "FULL", "SET"}     # write `as` to name a view so
_TOKEN = re.compile(r"\s*(?:(`(?:[^`]|``)*`)|([A-Za-z_][A-Za-z0-9_]*)|(\d+)|('(?:[^']|'')*')|(\S))")


@dataclass
class Statement:
    kind: str
    name: Optional[str] = None
    if_exists: bool = False
    if_not_exists: bool = False
    or_replace: bool = False
    options: Dict[str, object] = field(default_factory=dict)
    query: Optional[str] = None
    query_offset: int = 0


class _Tokens:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def peek(self) -> Tuple[Optional[str], int]:
        m = _TOKEN.match(self.text, self.pos)
        if not m or m.end() == m.start():
            return None, len(self.text)
        return m.group(0).strip(), m.start() + (len(m.group(0)) - len(m.group(0).lstrip()))

    def next(self) -> Tuple[Optional[str], int]:
        tok, start = self.peek()
        m = _TOKEN.match(self.text, self.pos)
        if m:
            self.pos = m.end()
        return tok, start

    def accept(self, *words: str) -> bool:
        save = self.pos
        for w in words:
            tok, _ = self.next()
            if tok is None or tok.upper() != w:
                self.pos = save
                return False
        return True

    def expect(self, *words: str):
        for w in words:
            tok, start = self.next()
            if tok is None or tok.upper() != w:
                found = "end of statement" if tok is None else f"'{tok}'"
                raise ViewletParseError(f"Expected {w} but found {found} at position {start}.", start)

    def name(self) -> str:
        tok, start = self.next()
        if tok is None:
            raise ViewletParseError(f"Expected a view name at position {start}.", start)
        if tok.startswith("`"):
            return tok[1:-1].replace("``", "`")
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", tok) or tok.upper() in _RESERVED:
            raise ViewletParseError(f"Expected a view name but found '{tok}' at position {start}.", start)
        return tok

    def end(self):
        tok, start = self.next()
        if tok == ";":
            tok, start = self.next()
        if tok is not None:
            raise ViewletParseError(f"Unexpected '{tok}' at position {start}.", start)


def strip_comments(text: str) -> str:
    """Blank out SQL comments, keeping positions."""
    out = re.sub(r"/\*.*?\*/", lambda m: " " * len(m.group(0)), text, flags=re.S)
    return re.sub(r"--[^\n]*", lambda m: " " * len(m.group(0)), out)


def parse(text: str) -> Statement:
    t = _Tokens(strip_comments(text))
    tok, start = t.next()
    verb = (tok or "").upper()
    if verb == "CREATE":
        st = Statement("create", or_replace=t.accept("OR", "REPLACE"))
        t.expect("INCREMENTAL", "VIEW")
        st.if_not_exists = t.accept("IF", "NOT", "EXISTS")
        st.name = t.name()
        if t.accept("WITH"):
            st.options = _options(t)
        t.expect("AS")
        st.query_offset = t.pos
        st.query = text[t.pos:].strip().rstrip(";").strip()
        st.query_offset += len(text[t.pos:]) - len(text[t.pos:].lstrip())
        if not st.query:
            raise ViewletParseError(f"Expected the view's query after AS at position {t.pos}.", t.pos)
        if st.or_replace and st.if_not_exists:
            raise ViewletParseError("OR REPLACE and IF NOT EXISTS cannot be used together.", start)
        return st
    if verb == "SHOW":
        t.expect("INCREMENTAL", "VIEWS")
        t.end()
        return Statement("show")
    kinds = {"DROP": "drop", "REFRESH": "refresh", "DESCRIBE": "describe", "DESC": "describe",
             "EXPLAIN": "explain", "ALTER": "alter"}
    if verb not in kinds:
        raise ViewletParseError(f"Not a Viewlet statement: it starts with '{tok}'.", start)
    st = Statement(kinds[verb])
    t.expect("INCREMENTAL", "VIEW")
    if st.kind == "drop":
        st.if_exists = t.accept("IF", "EXISTS")
    st.name = t.name()
    if st.kind == "refresh" and t.accept("FULL"):
        st.options["full"] = True
    elif st.kind == "describe" and t.accept("HISTORY"):
        st.kind = "history"
        if t.accept("LIMIT"):
            value, vstart = t.next()
            if value is None or not value.isdigit():
                found = "end of statement" if value is None else f"'{value}'"
                raise ViewletParseError(f"Expected a number of batches after LIMIT but found "
                                        f"{found} at position {vstart}.", vstart)
            st.options["limit"] = int(value)
    elif st.kind == "alter":
        t.expect("SET", "REFRESH")
        if t.accept("MANUAL"):
            st.options["refresh"] = None
        else:
            t.expect("EVERY")
            value, vstart = t.next()
            if value is None or not value.startswith("'"):
                found = "end of statement" if value is None else f"'{value}'"
                raise ViewletParseError(f"Expected an interval such as '10 seconds' after EVERY but "
                                        f"found {found} at position {vstart}.", vstart)
            st.options["refresh"] = _interval(value[1:-1].replace("''", "'"), vstart)
    t.end()
    return st


def _interval(text: str, pos: int) -> float:
    try:
        return parse_interval(text)
    except ValueError as e:
        raise ViewletParseError(f"{e} (position {pos}).", pos) from None


def _options(t: _Tokens) -> Dict[str, object]:
    t.expect("(")
    options: Dict[str, object] = {}
    while True:
        key, kstart = t.next()
        if key is None or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key):
            raise ViewletParseError(f"Expected an option name at position {kstart}.", kstart)
        t.expect("=")
        value, vstart = t.next()
        if value is None:
            raise ViewletParseError(f"Expected a value for option {key} at position {vstart}.", vstart)
        options[key.lower()] = _option_value(key.lower(), value, vstart)
        sep, sstart = t.next()
        if sep == ")":
            return options
        if sep != ",":
            raise ViewletParseError(f"Expected ',' or ')' at position {sstart}.", sstart)


def _option_value(key: str, value: str, pos: int):
    raw = value[1:-1].replace("''", "'") if value.startswith("'") else value
    if key == "depth":
        if raw.lower() in ("unlimited", "none", "higher_order"):
            return None
        if raw.isdigit():
            return int(raw)
        raise ViewletParseError(f"depth must be a number (0 = recompute, 1 = first-order IVM) or "
                                f"unlimited, not '{raw}' (position {pos}).", pos)
    if key == "refresh":
        return None if raw.lower() == "manual" else _interval(raw, pos)
    if key == "caches":
        if raw.lower() in ("true", "on"):
            return True
        if raw.lower() in ("false", "off"):
            return False
        raise ViewletParseError(f"caches must be true or false, not '{raw}' (position {pos}).", pos)
    if key == "map_writes":
        if raw.lower() in MAP_WRITES:
            return raw.lower()
        raise ViewletParseError(f"map_writes must be 'append' or 'merge', not '{raw}' "
                                f"(position {pos}).", pos)
    if key == "engine":
        if raw.lower() in ENGINES:
            return raw.lower()
        raise ViewletParseError(f"engine must be 'auto', 'local' or 'spark', not '{raw}' "
                                f"(position {pos}).", pos)
    raise ViewletParseError(f"Unknown view option '{key}' at position {pos}. Known options: depth, "
                            "refresh, caches, map_writes, engine.", pos)
