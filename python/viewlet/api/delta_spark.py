"""Sessions with Delta Lake's own Spark extension (delta-spark) next to Viewlet's.

delta-spark is optional: Viewlet reads and writes Delta with delta-rs either way. With it, the
session's catalog is Delta's (`CREATE TABLE t USING delta`, UPDATE/DELETE/MERGE/ALTER on Delta
tables), base tables can be named by catalog name and views appear in the catalog."""
from __future__ import annotations

from typing import Dict, List

from ..errors import ViewletError

EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
SCALA_VERSION = "2.13"
# The delta-spark release built for each Spark line (Delta's compatibility table), used when
# the delta-spark Python package is not installed to name its version.
FOR_SPARK = {"4.0": "4.0.1"}


def package() -> str:
    """Maven coordinate of the delta-spark jar for this pyspark: the delta-spark Python
    package's version when it is installed (as configure_spark_with_delta_pip does)."""
    try:
        from importlib.metadata import version
        return f"io.delta:delta-spark_{SCALA_VERSION}:{version('delta-spark')}"
    except Exception:  # noqa: BLE001 - not installed: the release for this Spark line
        import pyspark
        line = ".".join(pyspark.__version__.split(".")[:2])
        if line not in FOR_SPARK:
            raise ViewletError(
                f"No known delta-spark release for Spark {pyspark.__version__}. Install the "
                "matching one (pip install delta-spark==<version>, see Delta Lake's "
                "compatibility table) and configure it with "
                "delta.pip_utils.configure_spark_with_delta_pip.") from None
        return f"io.delta:delta-spark_{SCALA_VERSION}:{FOR_SPARK[line]}"


def settings(existing: Dict[str, str]) -> Dict[str, str]:
    """The Spark settings that add delta-spark to a session whose settings are `existing`:
    its jar (spark.jars.packages, resolved by Spark through Ivy/Maven), its extension appended
    to spark.sql.extensions and DeltaCatalog as spark_catalog."""
    return {
        "spark.jars.packages": ",".join(_with(existing.get("spark.jars.packages", ""),
                                              package(), same=_artifact)),
        "spark.sql.extensions": ",".join(_with(existing.get("spark.sql.extensions", ""),
                                               EXTENSION)),
        "spark.sql.catalog.spark_catalog": CATALOG,
    }


def _with(csv: str, item: str, same=lambda x: x) -> List[str]:
    items = [i.strip() for i in str(csv or "").split(",") if i.strip()]
    if not any(same(i) == same(item) for i in items):
        items.append(item)
    return items


def _artifact(coordinate: str) -> str:
    """group:artifact of a Maven coordinate (a version the user chose is kept)."""
    return ":".join(coordinate.split(":")[:2])
