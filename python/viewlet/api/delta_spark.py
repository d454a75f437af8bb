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
# The newest delta-spark release built for each Spark line (Delta's compatibility table),
# used when the delta-spark Python package is not installed to name its version. Spark 4.3
# has none yet.
FOR_SPARK = {"4.0": "4.0.1", "4.1": "4.4.0", "4.2": "4.4.0"}


def package() -> str:
    """Maven coordinate of the delta-spark jar for this pyspark: the delta-spark Python
    package's version when it is installed (as configure_spark_with_delta_pip does), else
    the release for this Spark line. From delta-spark 4.1 on, one release is built for
    several Spark lines and its artifact names the line (delta-spark_4.2_2.13)."""
    import pyspark
    line = ".".join(pyspark.__version__.split(".")[:2])
    try:
        from importlib.metadata import version
        delta = version("delta-spark")
    except Exception:  # noqa: BLE001 - not installed: the release for this Spark line
        if line not in FOR_SPARK:
            raise ViewletError(
                f"No known delta-spark release for Spark {pyspark.__version__}: delta-spark "
                f"supports Spark {', '.join(sorted(FOR_SPARK))}. Use one of those pyspark "
                "versions with the matching delta-spark (pip install delta-spark==<version>, "
                "see Delta Lake's compatibility table), or run without delta-spark "
                "(Viewlet reads and writes Delta tables with delta-rs).") from None
        delta = FOR_SPARK[line]
    return f"io.delta:{artifact_name(delta, line)}:{delta}"


def artifact_name(delta_version: str, spark_line: str) -> str:
    """delta-spark's artifact for a release and a Spark line (major.minor)."""
    major, minor = (int(x) for x in delta_version.split(".")[:2])
    if (major, minor) >= (4, 1):
        return f"delta-spark_{spark_line}_{SCALA_VERSION}"
    return f"delta-spark_{SCALA_VERSION}"


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
