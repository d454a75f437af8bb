"""mkdocs hook: the Notebook page shows the committed notebook, rendered with nbconvert.

A page containing ``<!-- notebook: notebooks/x.ipynb -->`` gets that marker replaced by the
notebook as Markdown: Markdown cells as they are, code cells as fenced Python, outputs as
text, HTML tables or inline PNG images (data URIs, so the page needs no extra files). Output
on stderr (Spark's start-up log lines) is left out. Nothing is executed at build time; the
notebook test (tests/docs/test_notebook.py) executes it.
"""
from __future__ import annotations

import base64
import os
import re

MARKER = re.compile(r"<!--\s*notebook:\s*(\S+?\.ipynb)\s*-->")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def rebase_links(markdown: str, notebook_dir: str, page_dir: str) -> str:
    """Relative Markdown links are written for the notebook's folder; the page lives in
    another one."""
    def fix(match):
        url = match.group(1)
        if re.match(r"^([a-z][a-z0-9+.-]*:|#|/)", url, re.I):
            return match.group(0)
        target = os.path.normpath(os.path.join(notebook_dir, url))
        return f"]({os.path.relpath(target, page_dir).replace(os.sep, '/')})"
    return LINK.sub(fix, markdown)


def render(path: str) -> str:
    import nbformat
    from nbconvert import MarkdownExporter

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs
                            if not (o.get("output_type") == "stream" and o.get("name") == "stderr")]
    body, resources = MarkdownExporter().from_notebook_node(nb)
    for name, data in (resources.get("outputs") or {}).items():
        mime = "image/png" if name.endswith(".png") else \
            "image/svg+xml" if name.endswith(".svg") else "image/jpeg"
        if isinstance(data, str):
            data = data.encode()
        uri = f"data:{mime};base64,{base64.b64encode(data).decode()}"
        body = body.replace(f"]({name})", f"]({uri})")
    return body


def on_page_markdown(markdown, page, config, files, **kwargs):
    def replace(match):
        page_dir = os.path.dirname(page.file.abs_src_path)
        path = os.path.join(page_dir, match.group(1))
        return rebase_links(render(path), os.path.dirname(path), page_dir)
    return MARKER.sub(replace, markdown)
