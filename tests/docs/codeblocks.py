"""The fenced code blocks of a Markdown page, and the markers the docs test honours.

A block is ```python, ```sql or ```bash (other fences, ```text or none, show output or
grammar and are not code). Markers are HTML comments, visible in the Markdown:

  <!-- docs-test: not run: REASON -->     on the line before a block: the block is not run
                                          (the test reports it as skipped, with REASON)
  <!-- docs-test: after the quick start -->
                                          anywhere in a page: the page's blocks run after the
                                          quick start's setup (see test_code_blocks.PRELUDE)
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

CODE = ("python", "sql", "bash")
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)\s*$")
_MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$")
NOT_RUN = "not run:"
AFTER_QUICKSTART = "after the quick start"


@dataclass
class Block:
    page: str
    line: int                  # 1-based line of the opening fence
    lang: str
    text: str
    not_run: Optional[str]     # the reason, for a block marked not to run

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


@dataclass
class Page:
    name: str
    blocks: List[Block]
    after_quickstart: bool
    bad_markers: List[str]     # markers that mean nothing (a typo must not skip silently)

    @property
    def code(self) -> List[Block]:
        return [b for b in self.blocks if b.lang in CODE]


def read_page(path: Path, name: str) -> Page:
    lines = path.read_text(encoding="utf-8").split("\n")
    blocks, bad, after = [], [], False
    pending = None             # (line, text) of a not-run marker waiting for its block
    i = 0
    while i < len(lines):
        marker = _MARKER.match(lines[i])
        fence = _FENCE.match(lines[i])
        if marker:
            text = marker.group(1)
            if text == AFTER_QUICKSTART:
                after = True
            elif text.startswith(NOT_RUN) and text[len(NOT_RUN):].strip():
                pending = (i + 1, text[len(NOT_RUN):].strip())
            else:
                bad.append(f"{name}:{i + 1}: unknown docs-test marker {text!r}")
        elif fence:
            indent, mark, lang = fence.groups()
            end = i + 1
            while end < len(lines) and not (lines[end].strip().startswith(mark[0] * len(mark))
                                            and not lines[end].strip().strip(mark[0])):
                end += 1
            body = [line[len(indent):] if line.startswith(indent) else line.lstrip()
                    for line in lines[i + 1:end]]
            reason = pending[1] if pending and pending[0] == _previous_text_line(lines, i) else None
            if pending and reason is None:
                bad.append(f"{name}:{pending[0]}: a not-run marker must be the line before a block")
            blocks.append(Block(name, i + 1, lang.lower(), "\n".join(body), reason))
            pending = None
            i = end
        elif lines[i].strip() and pending:
            bad.append(f"{name}:{pending[0]}: a not-run marker must be the line before a block")
            pending = None
        i += 1
    if pending:
        bad.append(f"{name}:{pending[0]}: a not-run marker must be the line before a block")
    for b in blocks:
        if b.not_run and b.lang not in CODE:
            bad.append(f"{b.where}: a not-run marker on a block that is not code ({b.lang or 'text'})")
    return Page(name, blocks, after, bad)


def _previous_text_line(lines, i) -> int:
    """1-based number of the last non-blank line before line index i."""
    j = i - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    return j + 1


_PROMPT = re.compile(r"^\s*spark-sql(?: \([^)]*\))?>\s?")
_CONTINUATION = re.compile(r"^\s*>\s?")


def sql_statements(text: str) -> List[str]:
    """The statements of a sql block: a `spark-sql>` transcript loses its prompts; split at
    semicolons outside strings, quoted names and comments; comment-only pieces dropped."""
    lines = text.split("\n")
    if any(_PROMPT.match(line) for line in lines):
        lines = [_PROMPT.sub("", line) if _PROMPT.match(line) else _CONTINUATION.sub("", line)
                 for line in lines]
    text = "\n".join(lines)
    from viewlet.frontend.lexical import strip_comments
    code = strip_comments(text)          # comments blanked, positions kept
    out, start, i, n = [], 0, 0, len(code)
    while i < n:
        c = code[i]
        if c in "'\"`":
            j = i + 1
            while j < n and code[j] != c:
                j += 2 if code[j] == "\\" and c != "`" else 1
            i = j + 1
        elif c == ";":
            out.append(text[start:i])
            start = i = i + 1
        else:
            i += 1
    out.append(text[start:])
    return [s.strip() for s in out if _code_of(s)]


def _code_of(statement: str) -> str:
    from viewlet.frontend.lexical import strip_comments
    return strip_comments(statement).strip()
