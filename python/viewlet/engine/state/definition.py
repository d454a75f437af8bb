"""A view's catalog entry, typed: what CREATE decided once (the query, the tables it
resolved to, each map's physical columns, the result's layout, Spark's types of the
aggregates, the stored program) and the view's options.

The catalog keeps it as JSON (the entry's `spec`), with the keys below; `ViewDefinition`
reads it once per catalog version and writes it back with the same keys. Keys an entry
lacks (one written by an earlier version) stay absent, keys this version does not know
are kept.

    sql, depth, refs, maps, result, agg_types, view_map, inner, table_ids, caches, fused,
    in_filters, program, catalog_name, map_writes, engine, enable_change_data_feed, refresh,
    refresh_policy
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Dict, List, Mapping, Optional, Union

from pyspark.sql.types import StructType

from ...frontend.tables import ColumnInfo, TableInfo
from ...plan.lower import q
from .layout import ResultLayout
from .settings import ViewOptions


@dataclass(frozen=True)
class MapSchema:
    """A map's physical columns: key columns k0, k1, ... and value columns, with Spark's
    types (decided by Spark at CREATE); `cluster`: the key order its files are sorted by;
    `location`: its table, when the view keeps it from a view it replaced."""
    keys: List[str]
    key_types: List[str]
    values: Dict[str, str]
    cluster: Optional[List[int]] = None
    location: Optional[str] = None

    def ddl(self) -> str:
        cols = list(zip(self.keys, self.key_types)) + list(self.values.items())
        return ", ".join(f"{q(c)} {t}" for c, t in cols)

    def struct(self) -> StructType:
        return StructType.fromDDL(self.ddl())

    def same_columns(self, other: "MapSchema") -> bool:
        return (self.keys, self.key_types, self.values) == \
            (other.keys, other.key_types, other.values)

    def to_json(self) -> Dict:
        out = {"keys": list(self.keys), "key_types": list(self.key_types),
               "values": dict(self.values)}
        if self.cluster is not None:
            out["cluster"] = list(self.cluster)
        if self.location is not None:
            out["location"] = self.location
        return out

    @classmethod
    def from_json(cls, data: Dict) -> "MapSchema":
        return cls(list(data["keys"]), list(data["key_types"]), dict(data["values"]),
                   data.get("cluster"), data.get("location"))


@dataclass(frozen=True)
class AggType:
    """Spark's type of an aggregate of the view (and of its sum, for AVG) or of a subquery in
    its SELECT / HAVING."""
    type: str
    sum_type: Optional[str] = None

    def to_json(self) -> Dict:
        return {"type": self.type, **({"sum_type": self.sum_type} if self.sum_type else {})}


@dataclass(frozen=True)
class StoredProgram:
    """The trigger program kept with the view (compiler/stored.py writes and reads the
    format): its fingerprint, the table each relation is, each map's content fingerprint."""
    json: Dict

    @property
    def fingerprint(self) -> str:
        return self.json["fingerprint"]

    @property
    def tables(self) -> Dict[str, str]:
        return self.json["tables"]

    @property
    def map_fingerprints(self) -> Dict[str, str]:
        return {m["name"]: m["fingerprint"] for m in self.json["maps"]}


def table_ref(data: Union[Dict, TableInfo]) -> TableInfo:
    """A table reference as recorded (`refs`) read back."""
    if isinstance(data, TableInfo):
        return data
    return TableInfo(data["id"], data["display"], tuple(ColumnInfo(*c) for c in data["columns"]),
                     data.get("view"))


def table_ref_json(t: TableInfo) -> Dict:
    return dict({"id": t.id, "display": t.display,
                 "columns": [[c.name, c.type, c.nullable] for c in t.columns]},
                **({"view": t.view} if t.view else {}))


#: keys written even when None (a view's depth: None is unlimited)
_ALWAYS = ("depth",)


@dataclass(frozen=True)
class ViewDefinition:
    sql: str
    depth: Optional[int]
    refs: Dict[str, TableInfo]          # reference (parts_key) -> the table it resolved to
    maps: Dict[str, MapSchema]
    result: ResultLayout
    agg_types: Dict[str, AggType]
    view_map: str                       # the view state's map
    inner: Optional[ResultLayout] = None     # a view with window functions: its inner rows
    table_ids: Optional[Dict[str, str]] = None   # relation -> its Delta table's id at CREATE
    caches: Optional[bool] = None
    fused: Optional[bool] = None        # absent: created before map fusion
    in_filters: Optional[bool] = None   # absent: created before IN filters were match counts
    program: Optional[StoredProgram] = None      # absent: created before programs were stored
    catalog_name: Optional[List[str]] = None     # its name in Spark's catalog (delta-spark)
    map_writes: Optional[str] = None
    engine: Optional[str] = None
    enable_change_data_feed: Optional[bool] = None
    refresh: Optional[float] = None     # seconds between background refreshes (None: manual)
    refresh_policy: Optional[str] = None     # REFRESH POLICY (None: not given)
    #: the JSON as read (empty for a new view): keys of other versions, and keys set to null
    #: on purpose (`refresh`), are kept from it
    raw: Mapping = field(default_factory=dict, compare=False, repr=False)

    @property
    def options(self) -> ViewOptions:
        return ViewOptions(self.engine, self.map_writes, self.enable_change_data_feed,
                           self.refresh_policy)

    @property
    def state_layout(self) -> ResultLayout:
        """The layout of the state's rows: the inner query's for a view with window
        functions (whose result table holds the window layer's rows)."""
        return self.inner or self.result

    def upstreams(self) -> List[str]:
        """Names of the incremental views the view reads, as recorded."""
        return sorted({t.view for t in self.refs.values() if t.view}, key=str.lower)

    def with_refresh(self, every: Optional[float]) -> "ViewDefinition":
        """The view with a refresh interval (None: manual, recorded as such)."""
        return replace(self, refresh=every, raw=dict(self.raw, refresh=every))

    def to_json(self) -> Dict:
        """The entry's JSON: the keys above in that order (a key whose value is None only
        when it was read so, or is `depth`), then the keys of other versions as read."""
        out = {}
        for f in fields(self):
            if f.name == "raw":
                continue
            value = getattr(self, f.name)
            if value is None and f.name not in self.raw and f.name not in _ALWAYS:
                continue
            out[f.name] = _encode(value)
        out.update((k, v) for k, v in self.raw.items() if k not in out and k not in _FIELDS)
        return out

    @classmethod
    def from_json(cls, data: Mapping) -> "ViewDefinition":
        program = data.get("program")
        inner = data.get("inner")
        return cls(
            sql=data["sql"], depth=data["depth"],
            refs={k: table_ref(t) for k, t in data["refs"].items()},
            maps={n: MapSchema.from_json(m) for n, m in data["maps"].items()},
            result=ResultLayout.from_json(data["result"]),
            agg_types={k: AggType(t["type"], t.get("sum_type"))
                       for k, t in data.get("agg_types", {}).items()},
            view_map=data.get("view_map"), inner=ResultLayout.from_json(inner) if inner else None,
            table_ids=data.get("table_ids"), caches=data.get("caches"), fused=data.get("fused"),
            in_filters=data.get("in_filters"),
            program=StoredProgram(program) if program is not None else None,
            catalog_name=data.get("catalog_name"), map_writes=data.get("map_writes"),
            engine=data.get("engine"), enable_change_data_feed=data.get("enable_change_data_feed"),
            refresh=data.get("refresh"), refresh_policy=data.get("refresh_policy"),
            raw=dict(data))


_FIELDS = {f.name for f in fields(ViewDefinition)}


def _encode(value):
    if isinstance(value, (ResultLayout, MapSchema, AggType)):
        return value.to_json()
    if isinstance(value, StoredProgram):
        return value.json
    if isinstance(value, TableInfo):
        return table_ref_json(value)
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    return value
