"""Notebook renderings of EXPLAIN and DESCRIBE INCREMENTAL VIEW.

``vl.explain(name)`` and ``vl.describe(name)`` return these objects. In Jupyter they render
as HTML tables (``_repr_html_``); ``repr()``/``str()`` give the same text as the SQL
statements, and ``_repr_markdown_`` that text in a code block. Every string that comes from
a user (view and column names, the query, paths) is HTML-escaped.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import List, Sequence, Tuple

from ..calculus.printer import show
from ..compiler.program import VALUE, Program
from .explain import _loop_vars, depth_text, explain_execution, explain_program

__all__ = ["Explanation", "Description", "MapInfo", "StatementInfo", "TriggerInfo"]

_STYLE = ("<style>.viewlet-display table{border-collapse:collapse;margin:0.3em 0 0.8em 0}"
          ".viewlet-display th,.viewlet-display td{border:1px solid #ccc;padding:2px 6px;"
          "text-align:left;vertical-align:top}"
          ".viewlet-display code{white-space:pre-wrap}</style>")


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _fenced(text: str) -> str:
    """``text`` as a Markdown code block whose fence no backtick run inside can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}\n"


@dataclass(frozen=True)
class MapInfo:
    name: str
    keys: Tuple[str, ...]
    role: str                                   # "view state" or "order-n delta map"
    values: Tuple[Tuple[str, str], ...]         # (value column, defining query)


@dataclass(frozen=True)
class StatementInfo:
    number: int
    loop_vars: Tuple[str, ...]                  # target keys that range over map entries
    target: str
    column: str                                 # "" for a single-valued map
    keys: Tuple[str, ...]
    op: str                                     # "+=" incremental, ":=" re-evaluation
    expression: str
    strategy: str

    @property
    def text(self) -> str:
        loop = f"foreach {', '.join(self.loop_vars)}: " if self.loop_vars else ""
        column = f".{self.column}" if self.column else ""
        return f"{loop}{self.target}{column}[{', '.join(self.keys)}] {self.op} {self.expression}"


@dataclass(frozen=True)
class TriggerInfo:
    relation: str
    statements: Tuple[StatementInfo, ...]
    merges: Tuple[str, ...]                     # the maps this trigger MERGEs into, in order


class Explanation:
    """A view's trigger program: maps with keys and definitions, then one trigger per base
    relation with its ordered statements."""

    def __init__(self, name: str, sql: str, program: Program, spec=None):
        self.name, self.sql = name, " ".join(sql.split())
        self.depth = depth_text(program.depth)
        self.maps: List[MapInfo] = [
            MapInfo(m.name, tuple(m.keys),
                    "view state" if m.name == program.view_map else f"order-{m.level} delta map",
                    tuple(("" if col == VALUE else col, show(q)) for col, q in m.values.items()))
            for m in program.maps.values()]
        self.triggers: List[TriggerInfo] = []
        for rel in program.relations():
            stmts = tuple(
                StatementInfo(i, tuple(_loop_vars(s)), s.target,
                              "" if s.column == VALUE else s.column, tuple(s.rhs.group),
                              ":=" if s.strategy == "reevaluate" else "+=", show(s.rhs), s.strategy)
                for i, s in enumerate(program.statements_for(rel), 1))
            self.triggers.append(TriggerInfo(rel, stmts, tuple(program.targets_for(rel))))
        self.text = explain_program(name, sql, program, spec)
        self.execution = ""             # where batches run (a view's, not a definition's)

    @classmethod
    def of(cls, view) -> "Explanation":
        """From a loaded view (``Viewlet.load``)."""
        out = cls(view.name, view.definition.sql, view.compiled.program, view.compiled.spec)
        out.execution = explain_execution(view)
        return out

    def __repr__(self) -> str:
        return f"{self.text}\n\n{self.execution}" if self.execution else self.text

    __str__ = __repr__

    def _repr_markdown_(self) -> str:
        return _fenced(self.text)

    def _repr_html_(self) -> str:
        out = [_STYLE, '<div class="viewlet-display viewlet-explain">',
               f"<p><strong>Incremental view {_e(self.name)}</strong>, depth {_e(self.depth)}</p>",
               f"<p><code>{_e(self.sql)}</code></p>",
               "<p><strong>Maps</strong></p>",
               "<table><thead><tr><th>map</th><th>keys</th><th>role</th><th>value</th>"
               "<th>definition</th></tr></thead><tbody>"]
        for m in self.maps:
            span = f' rowspan="{len(m.values)}"' if len(m.values) > 1 else ""
            for i, (column, definition) in enumerate(m.values):
                head = (f"<td{span}><code>{_e(m.name)}</code></td>"
                        f"<td{span}><code>{_e(', '.join(m.keys))}</code></td>"
                        f"<td{span}>{_e(m.role)}</td>") if i == 0 else ""
                out.append(f"<tr>{head}<td><code>{_e(column)}</code></td>"
                           f"<td><code>{_e(definition)}</code></td></tr>")
        out.append("</tbody></table>")
        out.append("<p><strong>Triggers</strong> (one per base relation; statements run in "
                   "order and read map versions from batch start)</p>")
        for t in self.triggers:
            out.append(f"<p>On a batch of <code>{_e(t.relation)}</code> "
                       f"(<code>d{_e(t.relation)}</code>): {len(t.merges)} MERGE(s) into "
                       f"{', '.join(f'<code>{_e(m)}</code>' for m in t.merges) or 'no map'}</p>")
            out.append("<table><thead><tr><th>#</th><th>statement</th><th>strategy</th></tr>"
                       "</thead><tbody>")
            for s in t.statements:
                out.append(f"<tr><td>{s.number:02d}</td><td><code>{_e(s.text)}</code></td>"
                           f"<td>{_e(s.strategy)}</td></tr>")
            out.append("</tbody></table>")
        if self.execution:
            out.append(f"<p><strong>Execution</strong></p><pre>{_e(self.execution)}</pre>")
        out.append("</div>")
        return "\n".join(out)


class Description:
    """DESCRIBE INCREMENTAL VIEW: (section, name, value) rows."""

    def __init__(self, name: str, rows: Sequence[Tuple[str, str, str]]):
        self.name = name
        self.rows: List[Tuple[str, str, str]] = [tuple(str(c) for c in r) for r in rows]

    @classmethod
    def of(cls, view) -> "Description":
        from .commands import view_description
        return cls(view.name, view_description(view.ctx, view))

    def value(self, section: str, name: str) -> str:
        for s, n, v in self.rows:
            if s == section and n == name:
                return v
        raise KeyError(f"No row ({section!r}, {name!r}) in the description of {self.name}")

    def __repr__(self) -> str:
        width_s = max((len(s) for s, _, _ in self.rows), default=0)
        width_n = max((len(n) for _, n, _ in self.rows), default=0)
        return "\n".join(f"{s:<{width_s}}  {n:<{width_n}}  {v}".rstrip() for s, n, v in self.rows)

    __str__ = __repr__

    def _repr_markdown_(self) -> str:
        return _fenced(repr(self))

    def _repr_html_(self) -> str:
        out = [_STYLE, '<div class="viewlet-display viewlet-describe">',
               f"<p><strong>Incremental view {_e(self.name)}</strong></p>",
               "<table><thead><tr><th>section</th><th>name</th><th>value</th></tr></thead><tbody>"]
        previous = None
        for s, n, v in self.rows:
            section = _e(s) if s != previous else ""
            previous = s
            out.append(f"<tr><td>{section}</td><td><code>{_e(n)}</code></td><td>{_e(v)}</td></tr>")
        out.append("</tbody></table></div>")
        return "\n".join(out)
