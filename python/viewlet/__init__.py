"""Viewlet: higher-order incremental view maintenance for Apache Spark over Delta Lake.

    builder = viewlet.configure_spark(SparkSession.builder, warehouse="/data/wh")
    spark = builder.getOrCreate()
    vl = viewlet.enable(spark)
    spark.sql("CREATE INCREMENTAL VIEW v AS SELECT ... FROM delta.`/data/t` ...")
    spark.sql("REFRESH INCREMENTAL VIEW v")
    spark.sql("SELECT * FROM v")
"""
from .errors import (BaseTableChanged, Cancelled, ChangeFeedError, ConcurrentUpdate,
                     NotEnabledError, StatementInterrupted, StoredProgramError, TableNotFound,
                     UnsupportedSQL, UpstreamViewChanged, ViewAlreadyExists, ViewletError,
                     ViewletParseError, ViewNotFound)
from .api.session import configure_spark, context, enable, register_table

__version__ = "0.1.0"
# Subpackages reachable as viewlet.<name> after `import viewlet` (imported on first use: the
# workload generators pull in numpy and tpchgen-cli, which most sessions never need).
_SUBPACKAGES = ("workloads",)


def __getattr__(name):
    if name in _SUBPACKAGES:
        import importlib
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'viewlet' has no attribute '{name}'")
__all__ = ["configure_spark", "enable", "context", "register_table", "ViewletError",
           "UnsupportedSQL", "ViewletParseError", "TableNotFound", "ViewNotFound",
           "NotEnabledError", "ViewAlreadyExists", "ChangeFeedError", "ConcurrentUpdate",
           "StoredProgramError", "StatementInterrupted", "BaseTableChanged",
           "UpstreamViewChanged", "Cancelled", "workloads"]
