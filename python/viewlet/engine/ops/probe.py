"""What CREATE asks Spark about a view's query: the types of its outputs, aggregates and
subqueries (Spark decides them, from the base tables at their load versions); and refusals:
non-deterministic views, and queries Spark cannot plan.

The front end refuses the built-in non-deterministic functions by name (no Spark needed for
EXPLAIN of a file). At CREATE, Spark analyzes the defining query anyway; Catalyst marks
every expression `deterministic` or not, which covers what no name list can: user-defined
functions (a Python or Scala UDF is deterministic unless registered with
asNondeterministic()) and functions added by extensions. The error names the innermost
offending expression and, found by its name, its position in the query.
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

import sqlglot
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.errors.exceptions.captured import convert_exception
from sqlglot import exp

from ...errors import UnsupportedSQL, ViewletError
from ...frontend.checks import position_of
from ...frontend.multisets import AVG_DISTINCT
from ...plan.lower import q
from ..state.definition import AggType
from ..state.tables import bind_tables

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


def reject_unplannable(df, sql: str) -> None:
    """Raise ViewletError if Spark's optimizer fails on the defining query. Spark evaluates
    some expressions while planning (a correlated scalar subquery's value over no rows, to
    handle groups without rows; constant folding), so a query can fail before it reads a
    row: `x > (SELECT COALESCE(SUM(y), 0) / COALESCE(SUM(1), 0) ... WHERE corr)` divides by
    zero under ANSI mode whatever the data. Such a view would fail at its first batch that
    evaluates that value; it is refused at CREATE with Spark's error instead."""
    try:
        df._jdf.queryExecution().optimizedPlan()
    except (Py4JJavaError, PySparkException) as e:   # PySpark converts most Java errors
        if isinstance(e, Py4JJavaError):
            e = convert_exception(e.java_exception)
        message = str(e).splitlines()[0]
        raise ViewletError(
            f"Spark cannot run the defining query: {message} Spark raises this for the query "
            f"itself, before reading any row (it evaluates a subquery's value over no rows while "
            f"planning): change the query so that Spark runs it, e.g. NULLIF(divisor, 0) or "
            f"try_divide for a divisor that is 0 over no rows.") from None


def output_types(ctx, sql, frames, location_of) -> List[Tuple[str, str]]:
    """(name, Spark's type) of each output of `sql` over `frames`; refuses non-deterministic
    and unplannable queries."""
    text, params = bind_tables(sql, frames, location_of)
    df = ctx.spark.sql(text, **params)
    reject_nondeterministic(df, sql)         # UDFs: what the front end cannot know
    reject_unplannable(df, sql)              # errors Spark raises while planning
    return [(f.name, f.dataType.simpleString()) for f in df.schema.fields]


def aggregate_types(ctx, compiled, frames, location_of) -> Dict[str, AggType]:
    """Spark's type of each aggregate of the view (and of its sum, for AVG)."""
    spec = compiled.spec
    if not spec.aggregates:
        return {}
    items = []
    for a in spec.aggregates:
        items.append(f"{a.sql} AS {q(a.placeholder)}")
        if a.kind in ("avg", AVG_DISTINCT):
            items.append(f"{re.sub('^AVG', 'SUM', a.sql, flags=re.I)} AS {q(a.placeholder + '_sum')}")
    text, params = bind_tables(f"SELECT {', '.join(items)} {spec.from_sql}", frames, location_of)
    fields = {f.name: f.dataType.simpleString() for f in ctx.spark.sql(text, **params).schema.fields}
    return {a.placeholder: AggType(fields[a.placeholder],
                                   fields.get(a.placeholder + "_sum", fields[a.placeholder]))
            for a in spec.aggregates}


def subquery_types(ctx, compiled, frames, location_of) -> Dict[str, AggType]:
    """Spark's type of each subquery in the view's SELECT / HAVING."""
    probe = compiled.spec.subquery_probe
    if probe is None:
        return {}
    text, params = bind_tables(probe, frames, location_of)
    return {f.name: AggType(f.dataType.simpleString())
            for f in ctx.spark.sql(text, **params).schema.fields}
