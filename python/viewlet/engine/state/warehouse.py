"""Where things live in a warehouse. Paths are built from generated ids, never from user
names, so no view or table name can reach outside the warehouse."""
from __future__ import annotations

import os
import re
from urllib.parse import urlparse

_ID = re.compile(r"^[0-9a-f]{32}$")


def normalize_location(location: str) -> str:
    """An absolute local path, or a URI left as it is (s3://, abfss://, file://...)."""
    parsed = urlparse(location)
    if parsed.scheme and len(parsed.scheme) > 1:
        return location.rstrip("/")
    return os.path.abspath(os.path.expanduser(location))


def join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/")] + [p.strip("/") for p in parts])


class WarehouseLayout:
    def __init__(self, root: str):
        self.root = normalize_location(root)

    def owned_prefixes(self):
        """Where only Viewlet writes (tables never replaced by others at the same path)."""
        return [join(self.root, "_viewlet"), join(self.root, "views")]

    @property
    def catalog(self) -> str:
        return join(self.root, "_viewlet", "catalog")

    def view_dir(self, view_id: str) -> str:
        if not _ID.match(view_id):
            raise ValueError(f"invalid view id {view_id!r}")
        return join(self.root, "views", view_id)

    def map_table(self, view_id: str, map_name: str) -> str:
        if not re.match(r"^[A-Za-z0-9_]+$", map_name):
            raise ValueError(f"invalid map name {map_name!r}")
        return join(self.view_dir(view_id), "maps", map_name)

    def result_table(self, view_id: str) -> str:
        return join(self.view_dir(view_id), "result")

    def ordered_table(self, view_id: str) -> str:
        """A top-N view's first rows in its order (maintain/topn.py)."""
        return join(self.view_dir(view_id), "ordered")

    def manifest_table(self, view_id: str) -> str:
        return join(self.view_dir(view_id), "batches")

    def lease_dir(self, view_id: str) -> str:
        """Refresh leases of the view's batches (lease.py)."""
        return join(self.view_dir(view_id), "_leases")

    def scratch_dir(self, view_id: str, attempt: str) -> str:
        if not re.match(r"^[A-Za-z0-9_-]+$", attempt):
            raise ValueError(f"invalid scratch name {attempt!r}")
        return join(self.view_dir(view_id), "_scratch", attempt)
