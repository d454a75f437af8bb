"""Incremental views as tables of Spark's catalog, in sessions with delta-spark.

The view's result table is registered as an external Delta table at its location, so SHOW
TABLES, DESCRIBE TABLE [EXTENDED], DESCRIBE HISTORY and time travel (VERSION AS OF, TIMESTAMP
AS OF) work on it as on any Delta table. Its Delta properties say it is an incremental view
(RESULT_PROPERTIES); the extension's check rule refuses writes to such a table (only Viewlet
writes it, through the store). Without delta-spark the catalog has no Delta source, and views
are read through Viewlet's own resolution as before."""
from __future__ import annotations

import logging
from typing import Dict, List, Sequence

from pyspark.sql import SparkSession

from .catalog_tables import catalog_table, quote_parts

VIEW_PROPERTY = "viewlet.incrementalView"
log = logging.getLogger("viewlet")


def result_properties(name: str, definition: str) -> Dict[str, str]:
    """Delta properties of a view's result table: what it is and where its definition lives."""
    return {VIEW_PROPERTY: "true", "viewlet.view": name, "viewlet.definition": definition}


def catalog_name(spark: SparkSession, name: str) -> List[str]:
    """The catalog identifier a new view gets: its name in the session's current database."""
    return [spark.catalog.currentCatalog(), spark.catalog.currentDatabase(), name]


def register(spark: SparkSession, parts: Sequence[str], location: str) -> None:
    """Register (or re-point, after a full rebuild) the view's result table."""
    name = quote_parts(parts)
    found = catalog_table(spark, parts)
    if found is not None and found[0] == location:
        return
    if found is not None:
        spark.sql(f"DROP TABLE {name}")       # external: drops the entry, not the data
    spark.sql(f"CREATE TABLE {name} USING delta LOCATION '{_sql_string(location)}'")


def unregister(spark: SparkSession, parts: Sequence[str], location: str) -> None:
    """Drop the catalog entry if it is still this view's result table (never another table)."""
    found = catalog_table(spark, parts)
    if found is not None and found[0] == location:
        spark.sql(f"DROP TABLE {quote_parts(parts)}")


def register_temporary(spark: SparkSession, name: str, location: str,
                       columns: Sequence[tuple]) -> None:
    """The view as a temporary view over its result table (`columns`: physical name, name):
    SHOW TABLES and DESCRIBE see it, every read resolves the table's latest version."""
    items = ", ".join(f"{quote_parts([physical])} AS {quote_parts([logical])}"
                      for physical, logical in columns)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {quote_parts([name])} AS SELECT {items} "
              f"FROM delta.{quote_parts([location])}")


def unregister_temporary(spark: SparkSession, name: str) -> None:
    spark.sql(f"DROP VIEW IF EXISTS {quote_parts([name])}")


def temporary_exists(spark: SparkSession, name: str) -> bool:
    try:
        return bool(spark._jsparkSession.sessionState().catalog().getTempView(name).isDefined())
    except Exception:  # noqa: BLE001 - no such view
        return False


def _sql_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")
