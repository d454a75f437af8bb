"""Refusing non-deterministic views by asking Spark.

The front end refuses the built-in non-deterministic functions by name (no Spark needed for
EXPLAIN of a file). At CREATE, Spark analyzes the defining query anyway; Catalyst marks
every expression `deterministic` or not, which covers what no name list can: user-defined
functions (a Python or Scala UDF is deterministic unless registered with
asNondeterministic()) and functions added by extensions. The error names the innermost
offending expression and, found by its name, its position in the query.
"""
from __future__ import annotations

from typing import Optional

import sqlglot
from sqlglot import exp

from ..errors import UnsupportedSQL
from ..sql.checks import position_of

_DETAIL = ("A view must be a deterministic function of its tables. A UDF is deterministic "
           "unless registered with asNondeterministic(); register it without, if it is one.")


def reject_nondeterministic(df, sql: str) -> None:
    """Raise UnsupportedSQL if Spark's analyzed plan of `df` (the defining query over the
    base tables) is not deterministic."""
    plan = df._jdf.queryExecution().analyzed()
    if plan.deterministic():
        return
    found = _in_plan(plan)
    name = _name(found) if found is not None else None
    what = f"the non-deterministic function {name}()" if name else "a non-deterministic expression"
    raise UnsupportedSQL(what, _DETAIL, _position(sql, name), sql)


def _seq(s):
    return [s.apply(i) for i in range(s.length())]


def _in_plan(plan):
    for e in _seq(plan.expressions()):
        if not e.deterministic():
            return _innermost(e)
    for child in _seq(plan.children()):
        if not child.deterministic():
            return _in_plan(child)
    return None


def _innermost(e):
    for child in _seq(e.children()):
        if not child.deterministic():
            return _innermost(child)
    if hasattr(e, "plan"):                     # a subquery expression: look inside it
        try:
            inner = _in_plan(e.plan())
        except Exception:                      # py4j: not a subquery after all
            inner = None
        if inner is not None:
            return inner
    return e


def _name(e) -> Optional[str]:
    kind = e.getClass().getSimpleName()
    try:
        if kind == "PythonUDF":
            return e.name()
        if kind == "ScalaUDF" and e.udfName().isDefined():
            return e.udfName().get()
        return e.prettyName()
    except Exception:                          # py4j: an expression without these
        return None


def _position(sql: str, name: Optional[str]) -> Optional[int]:
    if not name:
        return None
    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except Exception:
        return None
    low = name.lower()
    for node in tree.walk():
        if isinstance(node, exp.Func):
            text = node.name if isinstance(node, exp.Anonymous) else node.sql_name()
            if (text or "").lower() == low:
                return position_of(node)
    return None
