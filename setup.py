"""Build hook: compile viewlet-spark.jar against the pyspark of the installing environment.

Metadata lives in pyproject.toml. Install with `pip install --no-build-isolation .` so the
jar is compiled against *your* pyspark. Without pyspark or Java at build time the jar is
skipped with a warning; viewlet.jvm.jar_path() then builds it on first use from the Scala
sources shipped as package data (viewlet/jvm/src/).
"""

import importlib.util
import shutil
import warnings
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py as _build_py

ROOT = Path(__file__).resolve().parent
JVM_SOURCES = ROOT / "jvm-ext" / "src" / "main"


def _load_jar_builder():
    # By path: importing the viewlet package itself would need its runtime dependencies.
    spec = importlib.util.spec_from_file_location(
        "_viewlet_jar_build", ROOT / "python" / "viewlet" / "jvm" / "build.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class build_py(_build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return  # editable installs build on demand from jvm-ext/
        target = Path(self.build_lib) / "viewlet" / "jvm"
        self._ship_sources(target / "src")
        self._ship_examples(Path(self.build_lib) / "viewlet" / "examples")
        self._build_jar(target)

    def _ship_examples(self, dest: Path) -> None:
        """The repository's sql/ view definitions, for the demo of an installed package."""
        source = Path(__file__).resolve().parent / "sql"
        if dest.exists():
            shutil.rmtree(dest)
        for f in source.rglob("*.sql"):
            out = dest / f.relative_to(source)
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, out)

    def _ship_sources(self, dest: Path) -> None:
        builder = _load_jar_builder()
        if dest.exists():
            shutil.rmtree(dest)
        for f in builder.source_files(JVM_SOURCES):
            out = dest / f.relative_to(JVM_SOURCES)
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, out)

    def _build_jar(self, target: Path) -> None:
        builder = _load_jar_builder()
        try:
            jar = builder.build_jar(target / builder.JAR_NAME, sources=JVM_SOURCES)
        except builder.ViewletBuildError as e:
            warnings.warn(
                f"viewlet-spark.jar not built ({e}); it will be built on first use",
                stacklevel=1,
            )
            return
        print(f"built {jar}")


setup(cmdclass={"build_py": build_py})
