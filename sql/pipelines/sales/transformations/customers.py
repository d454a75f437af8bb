from pyspark import pipelines as dp
from pyspark.sql import DataFrame


@dp.materialized_view(comment="customers with more than 100 in revenue")
def big_customers() -> DataFrame:
    # A query given as SQL: Viewlet maintains it incrementally, over customer_revenue.
    return spark.sql("""
        SELECT customer_id, region, revenue FROM customer_revenue WHERE revenue > 100
    """)


@dp.materialized_view
def active_regions() -> DataFrame:
    # Built with the DataFrame API: Viewlet maintains SQL queries, so this one is
    # recomputed in full by Spark on every run (the run's output says so).
    return spark.table("region_revenue").where("customers >= 2").select("region", "revenue")
