"""Checks the links of a built static site: what ``mkdocs build --strict`` does not see
(links inside raw HTML, anchors into other pages, theme links, image sources).

Relative and site-absolute URLs must name a file of the site (a directory means its
index.html) and their #fragment an id of that page; http(s) URLs only need to be well-formed
(no network); ``data:`` URLs must be base64 images; any other scheme is an error."""
from __future__ import annotations

import os
import posixpath
import re
from typing import Dict, List, Set
from urllib.parse import unquote, urlsplit

from .htmltree import Page

_DATA_IMAGE = re.compile(r"^data:image/(png|jpeg|gif|svg\+xml);base64,[A-Za-z0-9+/=\s]+$")


def _pages(site: str) -> Dict[str, Page]:
    pages = {}
    for folder, _, names in os.walk(site):
        for name in names:
            if name.endswith(".html"):
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, site).replace(os.sep, "/")
                with open(path, encoding="utf-8") as f:
                    pages[rel] = Page(f.read())
    return pages


def _target(site: str, page: str, path: str) -> str:
    """The site-relative file a link's path names ('' if it leaves the site)."""
    base = "" if path.startswith("/") else posixpath.dirname(page)
    rel = posixpath.normpath(posixpath.join(base, unquote(path).lstrip("/")))
    if rel.startswith(".."):
        return ""
    if rel == ".":
        rel = ""
    if os.path.isdir(os.path.join(site, rel)):
        rel = posixpath.join(rel, "index.html") if rel else "index.html"
    return rel


def check_site(site: str) -> List[str]:
    """Problems found, one line each; [] when every link resolves."""
    pages = _pages(site)
    ids: Dict[str, Set[str]] = {p: set(page.ids) for p, page in pages.items()}
    problems: List[str] = []
    for name, page in sorted(pages.items()):
        for tag, attr, url in page.links:
            where = f"{name}: <{tag} {attr}={url[:80]!r}>"
            parts = urlsplit(url)
            if parts.scheme in ("http", "https"):
                if not parts.netloc or re.search(r"\s", url):
                    problems.append(f"{where}: malformed URL")
                continue
            if parts.scheme == "data":
                if not _DATA_IMAGE.match(url):
                    problems.append(f"{where}: data URL that is not a base64 image")
                continue
            if parts.scheme == "mailto":
                continue
            if parts.scheme or parts.netloc:
                problems.append(f"{where}: unexpected scheme {parts.scheme!r}")
                continue
            target = _target(site, name, parts.path) if parts.path else name
            if not target or not os.path.isfile(os.path.join(site, target)):
                problems.append(f"{where}: no file {target or parts.path!r} in the site")
                continue
            fragment = unquote(parts.fragment)
            if fragment and target.endswith(".html") and fragment not in ids.get(target, set()):
                problems.append(f"{where}: no id {fragment!r} in {target}")
    return problems
