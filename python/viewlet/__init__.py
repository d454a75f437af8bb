"""Viewlet: higher-order incremental view maintenance for Apache Spark over Delta Lake.

    builder = viewlet.configure_spark(SparkSession.builder, warehouse="/data/wh")
    spark = builder.getOrCreate()
    vl = viewlet.enable(spark)
    spark.sql("CREATE INCREMENTAL VIEW v AS SELECT ... FROM delta.`/data/t` ...")
    spark.sql("REFRESH INCREMENTAL VIEW v")
    spark.sql("SELECT * FROM v")
"""
from .errors import (NotEnabledError, TableNotFound, UnsupportedSQL, ViewletError,
                     ViewletParseError, ViewNotFound)
from .session import configure_spark, context, enable, register_table

__version__ = "0.1.0"
__all__ = ["configure_spark", "enable", "context", "register_table", "ViewletError",
           "UnsupportedSQL", "ViewletParseError", "TableNotFound", "ViewNotFound",
           "NotEnabledError"]
