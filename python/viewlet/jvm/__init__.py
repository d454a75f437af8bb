"""Viewlet's JVM side: locating (or building) the Spark extension jar.

The jar holds io.viewlet.spark.ViewletExtensions (for ``spark.sql.extensions``) and the
ViewletBridge/ViewletHandler pair through which the Python side serves Viewlet statements.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

JAR_NAME = "viewlet-spark.jar"
EXTENSIONS_CLASS = "io.viewlet.spark.ViewletExtensions"
BRIDGE_CLASS = "io.viewlet.spark.ViewletBridge"
HANDLER_INTERFACE = "io.viewlet.spark.ViewletHandler"

__all__ = [
    "JAR_NAME", "EXTENSIONS_CLASS", "BRIDGE_CLASS", "HANDLER_INTERFACE",
    "jar_path", "cached_jar", "build_jar", "cache_dir",
]


def jar_path() -> str:
    """Path of a viewlet-spark.jar matching the current sources.

    The jar packaged next to this module wins when it was built from the same sources (hash
    embedded in the jar; an older jar without a hash must not be older than the sources).
    Otherwise the jar is built once into ``cache_dir()/<spark_version>-<source hash>/``.
    Raises viewlet.jvm.build.ViewletBuildError (e.g. no Java 17) when a build is needed and fails.
    """
    from . import build

    packaged = Path(__file__).resolve().parent / JAR_NAME
    sources = build.find_sources()
    if packaged.is_file() and (sources is None or _up_to_date(packaged, sources)):
        return str(packaged)
    if sources is None:
        raise build.ViewletBuildError(
            f"no {JAR_NAME} next to {__file__} and no Scala sources to build it from"
        )
    return cached_jar(sources)


def cached_jar(sources: str | os.PathLike | None = None) -> str:
    """The jar built from `sources` (default: found ones) in the cache, built once if missing.

    Safe across processes: one builds under a file lock, the others wait and reuse it.
    """
    from . import build

    root = Path(sources) if sources is not None else build.find_sources()
    if root is None:
        raise build.ViewletBuildError("Viewlet's Scala sources were not found")
    digest = build.source_hash(root)
    target = cache_dir() / f"{build.pyspark_version()}-{digest[:16]}" / JAR_NAME
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        with _locked(target.parent / ".lock"):
            if not target.is_file():  # another process may have built it meanwhile
                build.build_jar(target, root)
    return str(target)


def build_jar(out_path: str | os.PathLike) -> str:
    """Compile the jar against the installed pyspark into out_path; returns the path."""
    from . import build

    return build.build_jar(out_path)


def cache_dir() -> Path:
    """Where on-demand builds go: $VIEWLET_CACHE_DIR, else ~/.cache/viewlet/jars."""
    if os.environ.get("VIEWLET_CACHE_DIR"):
        return Path(os.environ["VIEWLET_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "viewlet" / "jars"


def _up_to_date(jar: Path, sources: Path) -> bool:
    from . import build

    built_from = build.read_build_info(jar).get("source_hash")
    if built_from:
        return built_from == build.source_hash(sources)
    newest = max(p.stat().st_mtime for p in build.source_files(sources))
    return jar.stat().st_mtime >= newest


@contextlib.contextmanager
def _locked(lock_file: Path):
    """An exclusive inter-process lock (POSIX flock); builds are also renamed atomically."""
    with open(lock_file, "a+") as f:
        try:
            import fcntl
        except ImportError:  # no flock (Windows): the atomic rename alone keeps the jar whole
            yield
            return
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
