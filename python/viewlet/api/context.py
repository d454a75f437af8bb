"""The handle ``viewlet.enable(spark)`` returns: the engine's context, the default Delta store
(delta-rs) and renderings of EXPLAIN and DESCRIBE for notebooks."""
from __future__ import annotations

from typing import Optional

from pyspark.sql import SparkSession

from ..engine.context import EngineContext
from ..storage.base import TableStore
from ..storage.deltars import DeltaRsStore
from .display import Description, Explanation


class Viewlet(EngineContext):
    """Viewlet on one Spark session and one warehouse.

    Args:
        spark: the session whose SQL runs the views' batches.
        warehouse: directory or URI holding the views' tables and catalog.
        store: the Delta implementation (default: delta-rs, no JVM jars needed).
        auto_enable_change_feed: turn on base tables' change data feed at CREATE
            (None: the session's ``spark.viewlet.enableChangeDataFeed``, off by default).
    """

    def __init__(self, spark: SparkSession, warehouse: str, store: Optional[TableStore] = None,
                 auto_enable_change_feed: Optional[bool] = None):
        super().__init__(spark, warehouse, store or DeltaRsStore(), auto_enable_change_feed)

    # -- notebook renderings (HTML in Jupyter, text as repr) ----------------------------------
    def explain(self, name: str) -> Explanation:
        """EXPLAIN INCREMENTAL VIEW `name` as an object Jupyter shows as HTML tables.

        Raises:
            ViewNotFound: no incremental view of that name.
        """
        return Explanation.of(self.load(name))

    def describe(self, name: str) -> Description:
        """DESCRIBE INCREMENTAL VIEW `name` as an object Jupyter shows as an HTML table.

        Raises:
            ViewNotFound: no incremental view of that name.
        """
        return Description.of(self.load(name))
