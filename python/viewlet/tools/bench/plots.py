"""PNG plots of the summary: refresh time vs batch size (one figure per scale factor) and
refresh time vs scale factor (one figure per batch size), a panel per view, a line per
method (median seconds, log scales)."""
from __future__ import annotations

import math
import os
from typing import Dict, List

from . import runner

_STYLE = {"viewlet-ho": ("tab:green", "o", "-"), "viewlet-d1": ("tab:blue", "s", "-"),
          "viewlet-ho-merge": ("tab:olive", "P", "-."),
          "viewlet-d0": ("tab:purple", "^", "--"), runner.SPARK: ("tab:red", "D", "--"),
          runner.DUCKDB: ("tab:orange", "v", ":")}


def write(summary: List[Dict], out_dir: str) -> List[str]:
    """Write the plots; returns their file names (relative to ``out_dir``)."""
    if not summary:
        return []
    import matplotlib
    matplotlib.use("Agg")
    files = []
    for scale in sorted({s["scale"] for s in summary}):
        rows = [s for s in summary if s["scale"] == scale]
        name = f"refresh_vs_batch_size_sf{scale:g}.png"
        _figure(rows, "batch_size", "tuples per batch",
                f"Per-batch seconds vs batch size, SF {scale:g}", os.path.join(out_dir, name))
        files.append(name)
    for batch in sorted({s["batch_size"] for s in summary}):
        rows = [s for s in summary if s["batch_size"] == batch]
        name = f"refresh_vs_scale_batch{batch}.png"
        _figure(rows, "scale", "TPC-H scale factor",
                f"Per-batch seconds vs scale factor, {batch:,} tuples per batch",
                os.path.join(out_dir, name))
        files.append(name)
    return files


def _figure(rows: List[Dict], x_key: str, x_label: str, title: str, path: str):
    import matplotlib.pyplot as plt
    from .report import _method_order, _view_order

    views = sorted({r["view"] for r in rows}, key=_view_order)
    cols = min(4, len(views))
    nrows = math.ceil(len(views) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4 * cols, 3.4 * nrows), squeeze=False)
    for ax, view in zip(axes.flat, views):
        mine = [r for r in rows if r["view"] == view]
        for method in sorted({r["method"] for r in mine}, key=_method_order):
            pts = sorted((r[x_key], r["median_seconds"]) for r in mine if r["method"] == method)
            color, marker, line = _STYLE.get(method, (None, "x", "-"))
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=method, color=color,
                    marker=marker, linestyle=line)
        ax.set_title(view)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(x_label)
        ax.set_ylabel("median seconds per batch")
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[len(views):]:
        ax.axis("off")
    handles, labels = [], []
    for ax in axes.flat:                 # methods can differ between views
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="lower center", ncol=len(labels) or 1)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.06, 1, 0.95))
    fig.savefig(path, dpi=100)
    plt.close(fig)
