"""Parser for Viewlet's DDL statements (the query itself is parsed by the SQL front end).

  CREATE [OR REPLACE | OR REFRESH] INCREMENTAL VIEW [IF NOT EXISTS] name
      [WITH (option = value, ...)] [SCHEDULE [REFRESH] EVERY n <unit>]
      [REFRESH POLICY AUTO | INCREMENTAL | INCREMENTAL STRICT | FULL] AS query
      options: depth = n | unlimited, refresh = '<interval>' | manual, caches = true | false,
               map_writes = 'append' | 'merge', engine = 'auto' | 'local' | 'spark' | 'distributed',
               enable_change_data_feed = true | false
  DROP INCREMENTAL VIEW [IF EXISTS] name
  REFRESH INCREMENTAL VIEW name [FULL]
  ALTER INCREMENTAL VIEW name [WITH (option = value, ...)] AS query   (a new query; the
      view's settings where WITH names none; maps the new query still needs are kept)
  ALTER INCREMENTAL VIEW name SET REFRESH EVERY '<interval>' | SET REFRESH MANUAL
  ALTER INCREMENTAL VIEW name {ADD | ALTER} SCHEDULE [REFRESH] EVERY n <unit> | DROP SCHEDULE
  SHOW INCREMENTAL VIEWS
  DESCRIBE | DESC INCREMENTAL VIEW name [HISTORY [LIMIT n]]
  EXPLAIN INCREMENTAL VIEW name
  EXPLAIN CREATE ... (as above): the trigger program the definition compiles to; nothing created

MATERIALIZED may be written for INCREMENTAL everywhere (Databricks' spelling). Names follow
Spark: unquoted ASCII letters, digits and underscores, not a reserved word; or `quoted`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from ..errors import ViewletParseError
from ..frontend.lexical import PLAIN_NAME, SPARK_RESERVED, strip_comments
from ..engine.state.history import COLUMNS as HISTORY_COLUMNS
from ..engine.state.settings import ENGINES, MAP_WRITES, REFRESH_POLICIES
from ..engine.state.settings import parse_interval

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

_TOKEN = re.compile(r"\s*(?:(`(?:[^`]|``)*`?)|(\w+)|('(?:[^']|'')*'?)|(\S))")
# `CREATE ... MATERIALIZED VIEW` (Databricks) is a synonym of `... INCREMENTAL VIEW`.
_KIND_WORDS = ("INCREMENTAL", "MATERIALIZED")
# Spark's EXPLAIN modes, refused before a Viewlet CREATE (they name Spark's plans).
_EXPLAIN_MODES = ("LOGICAL", "FORMATTED", "EXTENDED", "CODEGEN", "COST")
# SCHEDULE EVERY n <unit>: Databricks' units, plus seconds and minutes.
_SCHEDULE_UNITS = {"SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400, "WEEK": 604800}


@dataclass
class Statement:
    kind: str
    name: Optional[str] = None
    if_exists: bool = False
    if_not_exists: bool = False
    or_replace: bool = False
    must_exist: bool = False       # ALTER ... AS: replace the query of an existing view
    or_refresh: bool = False       # CREATE OR REFRESH (Databricks): create, or refresh if it exists
    options: Dict[str, object] = field(default_factory=dict)
    query: Optional[str] = None    # CREATE, and EXPLAIN CREATE (kind explain)
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

    def accept_any(self, *words: str) -> Optional[str]:
        """The one of `words` that comes next (consumed), or None."""
        tok, _ = self.peek()
        if tok is not None and tok.upper() in words:
            self.next()
            return tok.upper()
        return None

    def expect(self, *words: str):
        for w in words:
            tok, start = self.next()
            if tok is None or tok.upper() != w:
                raise ViewletParseError(f"Expected {w} but found {_found(tok)} at position {start}.",
                                        start)

    def expect_view(self, plural: bool = False):
        """INCREMENTAL VIEW or MATERIALIZED VIEW (VIEWS for SHOW)."""
        tok, start = self.next()
        if tok is None or tok.upper() not in _KIND_WORDS:
            raise ViewletParseError(f"Expected INCREMENTAL or MATERIALIZED but found {_found(tok)} "
                                    f"at position {start}.", start)
        self.expect("VIEWS" if plural else "VIEW")

    def name(self, what: str = "a view name") -> str:
        tok, start = self.next()
        return identifier(tok, start, what)

    def end(self):
        tok, start = self.next()
        if tok == ";":
            tok, start = self.next()
        if tok is not None:
            raise ViewletParseError(f"Unexpected '{tok}' at position {start}.", start)


def _found(tok: Optional[str]) -> str:
    return "end of statement" if tok is None else f"'{tok}'"


def identifier(tok: Optional[str], start: int = 0, what: str = "a view name") -> str:
    """A name as Spark reads it: `quoted` (any characters, `` for a backtick; the same name
    as unquoted) or unquoted (ASCII letters, digits and underscores, not a reserved word)."""
    if tok is None:
        raise ViewletParseError(f"Expected {what} at position {start}.", start)
    if tok.startswith("`"):
        if len(tok) < 2 or not tok.endswith("`"):
            raise ViewletParseError(f"Unclosed backtick in {what} at position {start}.", start)
        name = tok[1:-1].replace("``", "`")
        if not name.strip():
            raise ViewletParseError(f"Expected {what} but found an empty quoted name at position "
                                    f"{start}.", start)
        return name
    if re.match(r"^\w+$", tok) and not tok.isascii():
        raise ViewletParseError(
            f"The unquoted identifier {tok} is invalid and must be back quoted as: `{tok}` "
            "(unquoted names are ASCII letters, digits and underscores), at position "
            f"{start}.", start)
    if not PLAIN_NAME.match(tok):
        raise ViewletParseError(f"Expected {what} but found '{tok}' at position {start}.", start)
    if tok.upper() in SPARK_RESERVED:
        raise ViewletParseError(
            f"'{tok}' is a reserved word of Spark SQL: to use it as a name, quote it as `{tok}` "
            f"(position {start}).", start)
    return tok


def parse(text: str) -> Statement:
    t = _Tokens(strip_comments(text))
    tok, start = t.next()
    verb = (tok or "").upper()
    if verb == "CREATE":
        return _create(t, text, start)
    if verb == "SHOW":
        t.expect_view(plural=True)
        t.end()
        return Statement("show")
    kinds = {"DROP": "drop", "REFRESH": "refresh", "DESCRIBE": "describe", "DESC": "describe",
             "EXPLAIN": "explain", "ALTER": "alter"}
    if verb not in kinds:
        raise ViewletParseError(f"Not a Viewlet statement: it starts with '{tok}'.", start)
    if verb == "EXPLAIN":
        explained = _explain_create(t, text)
        if explained is not None:
            return explained
    st = Statement(kinds[verb])
    t.expect_view()
    if st.kind == "drop":
        st.if_exists = t.accept("IF", "EXISTS")
    st.name = t.name()
    if st.kind == "alter" and (t.peek()[0] or "").upper() in ("AS", "WITH"):
        # ALTER ... [WITH (...)] AS <query>: a new query for an existing view
        st = Statement("create", name=st.name, or_replace=True, must_exist=True)
        return _definition(t, text, st, start)
    if st.kind == "refresh" and t.accept("FULL"):
        st.options["full"] = True
    elif st.kind == "describe" and t.accept("HISTORY"):
        st.kind = "history"
        if t.accept("LIMIT"):
            value, vstart = t.next()
            if value is None or not value.isdigit():
                raise ViewletParseError(f"Expected a number of batches after LIMIT but found "
                                        f"{_found(value)} at position {vstart}.", vstart)
            st.options["limit"] = int(value)
    elif st.kind == "alter":
        _alter(t, st)
    t.end()
    return st


def _explain_create(t: _Tokens, text: str) -> Optional[Statement]:
    """EXPLAIN CREATE ...: the CREATE statement as kind `explain` (its query set), or None
    when no CREATE follows (EXPLAIN INCREMENTAL VIEW name)."""
    tok, start = t.peek()
    word = (tok or "").upper()
    if word in _EXPLAIN_MODES:
        raise ViewletParseError(
            f"EXPLAIN {word} is Spark's, for Spark's plans (position {start}): EXPLAIN CREATE "
            "INCREMENTAL VIEW prints the trigger program the view would compile to and takes no "
            "mode; write EXPLAIN CREATE ... without it.", start)
    if word != "CREATE":
        return None
    t.next()
    st = _create(t, text, start)
    st.kind = "explain"
    return st


def _create(t: _Tokens, text: str, start: int) -> Statement:
    st = Statement("create")
    if t.accept("OR", "REPLACE"):
        st.or_replace = True
    elif t.accept("OR", "REFRESH"):
        st.or_refresh = True
    t.expect_view()
    st.if_not_exists = t.accept("IF", "NOT", "EXISTS")
    st.name = t.name()
    return _definition(t, text, st, start)


def _definition(t: _Tokens, text: str, st: Statement, start: int) -> Statement:
    """The clauses before AS (WITH (...), SCHEDULE ..., REFRESH POLICY ...), then AS and the
    query."""
    with_given = schedule_given = policy_given = False
    while True:                       # view clauses, in any order, before AS
        tok, cstart = t.peek()
        word = (tok or "").upper()
        if word == "WITH" and not with_given:
            t.next()
            with_given = True
            st.options.update(_options(t))
        elif word == "REFRESH" and not policy_given:
            t.next()
            policy_given = True
            t.expect("POLICY")
            st.options["refresh_policy"] = _policy(t)
        elif word == "SCHEDULE" and not schedule_given:
            t.next()
            schedule_given = True
            t.accept("REFRESH")
            st.options["schedule"] = _schedule(t)
        elif word == "AS":
            break
        else:
            hint = (" (the clauses before AS are WITH (...), SCHEDULE [REFRESH] EVERY n <unit> "
                    "and REFRESH POLICY ...)") \
                if word in ("COMMENT", "TBLPROPERTIES", "PARTITIONED", "CLUSTER", "MASK", "ROW",
                            "TRIGGER", "(", "WITH", "SCHEDULE") else ""
            raise ViewletParseError(f"Expected AS but found {_found(tok)} at position "
                                    f"{cstart}{hint}.", cstart)
    if "schedule" in st.options:
        if "refresh" in st.options:
            raise ViewletParseError("A view has one refresh schedule: give SCHEDULE or WITH "
                                    "(refresh = ...), not both.", start)
        st.options["refresh"] = st.options.pop("schedule")
    t.expect("AS")
    st.query_offset = t.pos
    st.query = text[t.pos:].strip().rstrip(";").strip()
    st.query_offset += len(text[t.pos:]) - len(text[t.pos:].lstrip())
    if not st.query:
        raise ViewletParseError(f"Expected the view's query after AS at position {t.pos}.", t.pos)
    if st.if_not_exists and (st.or_replace or st.or_refresh):
        kind = "OR REPLACE" if st.or_replace else "OR REFRESH"
        raise ViewletParseError(f"{kind} and IF NOT EXISTS cannot be used together.", start)
    return st


def _policy(t: _Tokens) -> str:
    """AUTO | INCREMENTAL [STRICT] | FULL (after REFRESH POLICY)."""
    word, wstart = t.next()
    policy = (word or "").upper()
    if policy == "INCREMENTAL" and t.accept("STRICT"):
        policy = "INCREMENTAL STRICT"
    if policy not in REFRESH_POLICIES:
        raise ViewletParseError(f"Expected a refresh policy ({', '.join(REFRESH_POLICIES)}) after "
                                f"REFRESH POLICY but found {_found(word)} at position {wstart}.",
                                wstart)
    return policy


def _alter(t: _Tokens, st: Statement):
    """SET REFRESH EVERY '<interval>' | SET REFRESH MANUAL, or Databricks' schedule clauses:
    ADD | ALTER SCHEDULE [REFRESH] EVERY n <unit>, DROP SCHEDULE."""
    action = t.accept_any("ADD", "ALTER", "DROP")
    if action is not None:
        t.expect("SCHEDULE")
        st.options["schedule"] = action.lower()
        if action == "DROP":
            st.options["refresh"] = None
        else:
            t.accept("REFRESH")
            st.options["refresh"] = _schedule(t)
        return
    tok, tstart = t.peek()
    if tok is None or tok.upper() != "SET":
        raise ViewletParseError(f"Expected SET REFRESH, ADD SCHEDULE, ALTER SCHEDULE or DROP "
                                f"SCHEDULE but found {_found(tok)} at position {tstart}.", tstart)
    t.expect("SET", "REFRESH")
    if t.accept("MANUAL"):
        st.options["refresh"] = None
        return
    t.expect("EVERY")
    value, vstart = t.next()
    if value is None or not value.startswith("'"):
        raise ViewletParseError(f"Expected an interval such as '10 seconds' after EVERY but "
                                f"found {_found(value)} at position {vstart}.", vstart)
    st.options["refresh"] = _interval(value[1:-1].replace("''", "'"), vstart)


def _schedule(t: _Tokens) -> float:
    """EVERY n <unit> (after SCHEDULE [REFRESH]): the interval in seconds."""
    tok, start = t.next()
    if tok is not None and tok.upper() == "CRON":
        raise ViewletParseError(
            f"SCHEDULE CRON is not supported (position {start}): Viewlet refreshes at a fixed "
            "interval, e.g. SCHEDULE EVERY 1 HOUR; for a cron schedule, run REFRESH "
            "MATERIALIZED VIEW from your scheduler.", start)
    if tok is None or tok.upper() != "EVERY":
        raise ViewletParseError(f"Expected EVERY after SCHEDULE but found {_found(tok)} at "
                                f"position {start}.", start)
    number, nstart = t.next()
    if number is None or not number.isdigit() or int(number) == 0:
        raise ViewletParseError(f"Expected a positive whole number after EVERY but found "
                                f"{_found(number)} at position {nstart}.", nstart)
    unit, ustart = t.next()
    word = (unit or "").upper()
    word = word[:-1] if word.endswith("S") and word[:-1] in _SCHEDULE_UNITS else word
    if word not in _SCHEDULE_UNITS:
        raise ViewletParseError(f"Expected a unit (SECONDS, MINUTES, HOURS, DAYS or WEEKS) after "
                                f"EVERY {number} but found {_found(unit)} at position {ustart}.",
                                ustart)
    return float(int(number) * _SCHEDULE_UNITS[word])


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
    if key == "enable_change_data_feed":
        if raw.lower() in ("true", "on"):
            return True
        if raw.lower() in ("false", "off"):
            return False
        raise ViewletParseError(f"enable_change_data_feed must be true or false, not '{raw}' "
                                f"(position {pos}).", pos)
    raise ViewletParseError(f"Unknown view option '{key}' at position {pos}. Known options: depth, "
                            "refresh, caches, map_writes, engine, enable_change_data_feed.", pos)
