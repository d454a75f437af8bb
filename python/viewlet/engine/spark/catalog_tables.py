"""Tables of Spark's own catalog (`t`, `db.t`, `spark_catalog.db.t`) as Delta locations.

In a session with delta-spark's DeltaCatalog, `CREATE TABLE t USING delta` puts a Delta table
in the session catalog; a view over `t` reads it, like every base table, by its location."""
from __future__ import annotations

from typing import Optional, Sequence, Tuple
from urllib.parse import unquote, urlparse

from pyspark.sql import SparkSession

from ...errors import TableNotFound


def quote_parts(parts: Sequence[str]) -> str:
    return ".".join("`" + p.replace("`", "``") + "`" for p in parts)


def catalog_table(spark: SparkSession, parts: Sequence[str]) -> Optional[Tuple[str, str]]:
    """(location, provider) of a table Spark's catalog knows by these name parts, or None
    when it knows none (a temporary view has no location: it is no table)."""
    name = quote_parts(parts)
    try:
        if not spark.catalog.tableExists(name):
            return None
        rows = spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    except Exception:  # noqa: BLE001 - an unknown catalog or namespace: no such table
        return None
    info = {str(r[0]).strip(): str(r[1]).strip() for r in rows if r[0] is not None and r[1] is not None}
    if info.get("Type", "").upper().endswith("VIEW") or "Location" not in info:
        return None
    return local_path(info["Location"]), info.get("Provider", "").lower()


def delta_location(spark: SparkSession, parts: Sequence[str]) -> Optional[str]:
    """The location of the catalog's Delta table of this name; None if the catalog has no
    such table; an error naming the remedy if it is a table of another format."""
    found = catalog_table(spark, parts)
    if found is None:
        return None
    location, provider = found
    if provider != "delta":
        raise TableNotFound(
            f"Table '{'.'.join(parts)}' is a {provider or 'non-Delta'} table; base tables of an "
            f"incremental view must be Delta tables (its change data feed is what a refresh "
            f"reads). Convert it with: CONVERT TO DELTA {quote_parts(parts)}, or create a Delta "
            "copy with CREATE TABLE ... USING delta AS SELECT ...")
    return location


def local_path(location: str) -> str:
    """`file:/x` and `file:///x` as the path /x (the form Viewlet records for local tables);
    other URIs as they are."""
    parsed = urlparse(location)
    if parsed.scheme == "file":
        return unquote(parsed.path).rstrip("/") or "/"
    return location.rstrip("/")
