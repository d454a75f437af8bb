"""Maps a view keeps when its query is replaced (CREATE OR REPLACE, ALTER ... AS).

The replaced view's stored program gives each of its maps a content fingerprint
(compiler/stored.py). A map of the new program with the same fingerprint and the same
physical columns holds the same rows over the same tables, so the new view reads that table
where it is instead of loading it again; its other maps are loaded at the base-table versions
the kept maps hold. Where the maps live: a view's own maps under its directory, a kept map
where its first view created it (the catalog entry records its `location`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional

from ...errors import ConcurrentUpdate
from .definition import MapSchema
from .warehouse import join

@dataclass(frozen=True)
class KeptMap:
    name: str                 # its name in the replaced view's program
    location: str             # its Delta table
    schema: MapSchema         # its entry in the replaced view's catalog `maps`
    version: int              # its table's version when the replace read it


@dataclass
class Kept:
    """What a replaced view offers the new program: its maps by content fingerprint, and the
    base-table versions (by table identity) every one of them holds."""
    maps: Dict[str, KeptMap]
    versions: Dict[str, int]
    #: filled as the new view is built: new map name -> the map it keeps
    used: Dict[str, KeptMap] = field(default_factory=dict)

    def take(self, new_name: str, fingerprint: str, schema: MapSchema) -> Optional[KeptMap]:
        """The replaced view's map that `new_name` can keep (same content, same physical
        columns), or None; a map is kept by one new map at most."""
        self.used.pop(new_name, None)      # planned again (typed by Spark): decided anew
        old = self.maps.get(fingerprint)
        if old is None or old in self.used.values() or not old.schema.same_columns(schema):
            return None
        self.used[new_name] = old
        return old

    def check_unchanged(self, store) -> None:
        """Raise ConcurrentUpdate when a kept map's table moved since it was read (a REFRESH
        of the replaced view ran meanwhile): the new view would hold two versions."""
        moved = [m.name for m in self.used.values() if store.version(m.location) != m.version]
        if moved:
            raise ConcurrentUpdate(
                f"The view was refreshed while its query was replaced (maps {', '.join(moved)} "
                "changed); nothing was replaced. Run the statement again.")


def map_location(view_dir: str, name: str, recorded: MapSchema) -> str:
    """Where map `name` of a view lives: its recorded location (a kept map), else under
    the view's directory (state/warehouse.py map_table)."""
    return recorded.location or join(view_dir, "maps", name)


def owning_dir(location: str) -> str:
    """The view directory a map table was created under."""
    return location.rsplit("/maps/", 1)[0]


def released_paths(old_dir: str, old_maps: Dict[str, MapSchema], new_maps: Dict[str, MapSchema],
                   new_dir: str) -> List[str]:
    """What to drop once a view's entry points at `new_dir` and `new_maps`: the replaced
    view's maps the new one does not keep, and of every directory the replaced view's maps
    lived in, everything but the kept maps (the whole directory when it keeps none)."""
    kept = {map_location(new_dir, n, m) for n, m in new_maps.items()}
    old = {map_location(old_dir, n, m) for n, m in old_maps.items()}
    out = sorted(old - kept)
    for d in sorted({old_dir} | {owning_dir(p) for p in old}):
        if any(owning_dir(p) == d for p in kept):
            out += [join(d, part) for part in ("result", "ordered", "batches", "_leases",
                                               "_scratch")]
        else:
            out.append(d)
    return out


def outside_dirs(view_dir: str, maps: Dict[str, MapSchema]) -> Iterable[str]:
    """The directories of other (replaced) views that hold maps of this one."""
    return sorted({owning_dir(m.location) for m in maps.values()
                   if m.location and owning_dir(m.location) != view_dir})
