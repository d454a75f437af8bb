"""A small HTML reader for the docs tests: balanced tags, element counts, links, ids."""
from __future__ import annotations

from html.parser import HTMLParser
from typing import Dict, List, Tuple

# Elements that never have a closing tag.
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}
# Elements whose end tag HTML lets authors omit (mkdocs themes and Markdown output use some).
OPTIONAL_END = {"p", "li", "dt", "dd", "tr", "td", "th", "thead", "tbody", "option"}


class Page(HTMLParser):
    """Parses a document; ``errors`` lists unbalanced tags (only for strict=True)."""

    def __init__(self, text: str, strict: bool = False):
        super().__init__(convert_charrefs=True)
        self.strict = strict
        self.stack: List[str] = []
        self.errors: List[str] = []
        self.counts: Dict[str, int] = {}
        self.ids: List[str] = []
        self.links: List[Tuple[str, str, str]] = []    # (tag, attribute, url)
        self.text_parts: List[str] = []
        self.feed(text)
        self.close()
        if strict and self.stack:
            self.errors.append(f"unclosed tags at the end: {self.stack}")

    def handle_starttag(self, tag, attrs):
        self.counts[tag] = self.counts.get(tag, 0) + 1
        for name, value in attrs:
            if name in ("id", "name") and value and (name == "id" or tag == "a"):
                self.ids.append(value)
            if name in ("href", "src") and value is not None:
                self.links.append((tag, name, value))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if tag in self.stack:
            while self.stack:
                top = self.stack.pop()
                if top == tag:
                    return
                if self.strict and top not in OPTIONAL_END:
                    self.errors.append(f"<{top}> closed by </{tag}>")
        elif self.strict:
            self.errors.append(f"</{tag}> without <{tag}>")

    def handle_data(self, data):
        self.text_parts.append(data)

    @property
    def text(self) -> str:
        return "".join(self.text_parts)
