"""The example's base tables: Delta tables (change data feed on) in data/, registered under
the names the pipeline's queries use, in the Viewlet warehouse spark-pipeline.yml names.

    python make_tables.py          # then: viewlet pipelines run
"""
import os
from decimal import Decimal

import deltalake
import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
ORDERS = pa.schema([("order_id", pa.int64()), ("customer_id", pa.int64()),
                    ("amount", pa.decimal128(10, 2)), ("status", pa.string())])
CUSTOMERS = pa.schema([("customer_id", pa.int64()), ("region", pa.string())])


def create(data_dir):
    """Write the two tables; returns {name: path}."""
    orders = [(1, 1, "120.00", "shipped"), (2, 1, "35.50", "open"), (3, 2, "80.00", "shipped"),
              (4, 3, "15.25", "cancelled"), (5, 3, "99.99", "open"), (6, 4, "250.00", "open")]
    customers = [(1, "north"), (2, "north"), (3, "south"), (4, "west")]
    tables = {
        "orders": pa.Table.from_pylist(
            [dict(zip(ORDERS.names, (o, c, Decimal(a), s))) for o, c, a, s in orders], ORDERS),
        "customers": pa.Table.from_pylist(
            [dict(zip(CUSTOMERS.names, row)) for row in customers], CUSTOMERS),
    }
    paths = {}
    for name, table in tables.items():
        paths[name] = os.path.join(data_dir, name)
        deltalake.write_deltalake(paths[name], table, mode="overwrite",
                                  configuration={"delta.enableChangeDataFeed": "true"})
    return paths


if __name__ == "__main__":
    import viewlet
    from pyspark.sql import SparkSession

    warehouse = os.path.join(HERE, "warehouse")
    spark = viewlet.configure_spark(SparkSession.builder, warehouse=warehouse).getOrCreate()
    viewlet.enable(spark)
    for name, path in create(os.path.join(HERE, "data")).items():
        viewlet.register_table(spark, name, path, replace=True)
        print(f"{name}: {path}")
    spark.stop()
