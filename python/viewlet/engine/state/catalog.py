"""The warehouse catalog: incremental views and named Delta tables, kept in a Delta table."""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import pyarrow as pa

from ...errors import ConcurrentUpdate, ViewAlreadyExists, ViewletError, ViewNotFound
from ...storage.base import TableStore
from .definition import ViewDefinition
from .warehouse import WarehouseLayout

_SCHEMA = pa.schema([
    ("id", pa.string()), ("kind", pa.string()), ("name", pa.string()),
    ("location", pa.string()), ("spec", pa.string()), ("created_at", pa.timestamp("us", tz="UTC")),
])


@dataclass
class Entry:
    """A row of the catalog: a view (its directory and definition) or a named table."""
    id: str
    kind: str          # "view" | "table"
    name: str
    location: str
    spec: Dict         # the JSON as stored (a table's: empty)
    _definition: Optional[ViewDefinition] = field(default=None, repr=False, compare=False)

    @property
    def definition(self) -> ViewDefinition:
        """A view's `spec`, read once."""
        if self._definition is None:
            self._definition = ViewDefinition.from_json(self.spec)
        return self._definition

    @classmethod
    def of_view(cls, view_id: str, name: str, location: str,
                definition: ViewDefinition) -> "Entry":
        return cls(view_id, "view", name, location, definition.to_json(), definition)

    def to_row(self):
        return {"id": self.id, "kind": self.kind, "name": self.name, "location": self.location,
                "spec": json.dumps(self.spec), "created_at": dt.datetime.now(dt.timezone.utc)}


class Catalog:
    def __init__(self, store: TableStore, layout: WarehouseLayout):
        self.store = store
        self.layout = layout
        self._cached: Optional[tuple] = None      # (version, entries): read once per version

    def _entries(self, version: Optional[int] = None) -> List[Entry]:
        path = self.layout.catalog
        if version is None:
            if not self.store.exists(path):
                return []
            version = self.store.version(path)
        cached = self._cached
        if cached is not None and cached[0] == version:
            return list(cached[1])
        rows = self.store.read_arrow(path, version).to_pylist()
        entries = [Entry(r["id"], r["kind"], r["name"], r["location"], json.loads(r["spec"]))
                   for r in rows]
        self._cached = (version, entries)
        return list(entries)

    def entries(self, kind: Optional[str] = None) -> List[Entry]:
        return sorted((e for e in self._entries() if kind is None or e.kind == kind),
                      key=lambda e: e.name.lower())

    def find(self, name: str, kind: Optional[str] = None) -> Optional[Entry]:
        low = name.lower()
        for e in self._entries():
            if e.name.lower() == low and (kind is None or e.kind == kind):
                return e
        return None

    def add(self, entry: Entry) -> None:
        """Add an entry whose name is free. Every entry commit carries the Delta transaction
        app id `viewlet-name:<name>` and is checked against the snapshot it read the names
        from, so of two processes adding the same name at once exactly one succeeds."""
        data = pa.Table.from_pylist([entry.to_row()], schema=_SCHEMA)
        path = self.layout.catalog
        app = f"viewlet-name:{entry.name.lower()}"
        if not self.store.exists(path):
            try:
                self.store.create(path, data, txn=(app, 1))
                return
            except Exception:  # noqa: BLE001 - created concurrently: take the append path
                if not self.store.exists(path):
                    raise
        version = self.store.version(path)
        taken = ViewAlreadyExists(f"'{entry.name}' already exists in the Viewlet catalog. Drop "
                                  "it first, or choose another name.")
        if any(e.name.lower() == entry.name.lower() for e in self._entries(version)):
            raise taken
        try:
            self.store.append_once(path, data, (app, version + 1), read_version=version)
        except ConcurrentUpdate:
            if self.find(entry.name) is not None:
                raise taken from None
            raise

    def replace(self, old: Entry, new: Entry) -> None:
        """Swap an entry in one Delta commit (readers see the old entry or the new one);
        new may keep old's id (a spec update) or bring its own (a rebuilt view)."""
        rows = [dict(old.to_row(), op="del"), dict(new.to_row(), op="ins")]
        schema = _SCHEMA.append(pa.field("op", pa.string()))
        self.store.merge_replace(self.layout.catalog, pa.Table.from_pylist(rows, schema=schema),
                                 ["id"], "op")

    def remove(self, entry_id: str) -> None:
        self.store.delete_where_equal(self.layout.catalog, "id", entry_id)


def missing_view(name: str) -> ViewNotFound:
    """The error for a view that is not in the catalog."""
    return ViewNotFound(f"Incremental view '{name}' does not exist. SHOW INCREMENTAL VIEWS "
                        "lists the views of this warehouse.")


def validate_name(name: str) -> str:
    """Any name Spark can write (quoted when it is not plain ASCII letters, digits and
    underscores): names live in the catalog only, never in paths or generated SQL."""
    if not isinstance(name, str) or not name.strip() or any(ord(c) < 32 for c in name):
        raise ViewletError(f"Invalid name {name!r}: a name needs at least one visible character "
                           "and no control characters.")
    return name
