"""Compile Viewlet's Spark extension jar with the Scala compiler shipped inside pyspark.

No Gradle, Maven or network: scalac runs from pyspark's own jars/ directory against the
*installed* pyspark, and the jar is written with zipfile (a JRE has no `jar` or `javac`).

Standalone on purpose (no imports from the viewlet package): setup.py loads it by path.

    python -m viewlet.jvm.build [--out PATH]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

JAR_NAME = "viewlet-spark.jar"
BUILD_INFO = "META-INF/viewlet-build.properties"
SOURCE_SUFFIXES = (".scala", ".java")
JAVA_HINT = (
    "install e.g. 'apt-get install openjdk-17-jre-headless' and set JAVA_HOME"
)


class ViewletBuildError(RuntimeError):
    """The extension jar could not be built (no Java 17, no pyspark, compile error...)."""


# ---------------------------------------------------------------- sources


def source_roots() -> list[Path]:
    """Candidate source roots, best first: the repo checkout, then sources shipped as package data.

    Each root holds scala/... (and optionally java/...) trees like jvm-ext/src/main.
    """
    here = Path(__file__).resolve().parent  # .../python/viewlet/jvm
    return [here.parents[2] / "jvm-ext" / "src" / "main", here / "src"]


def find_sources() -> Path | None:
    """The first source root that holds Scala/Java files, or None."""
    for root in source_roots():
        if root.is_dir() and source_files(root):
            return root
    return None


def source_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in SOURCE_SUFFIXES)


def source_hash(root: Path) -> str:
    """Hash of the relative paths and contents: the same for repo and packaged copies."""
    h = hashlib.sha256()
    for p in source_files(root):
        h.update(p.relative_to(root).as_posix().encode())
        h.update(b"\0")
        h.update(p.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def read_build_info(jar: Path) -> dict[str, str]:
    """key=value pairs embedded in a jar built here ({} for foreign or unreadable jars)."""
    try:
        with zipfile.ZipFile(jar) as z:
            text = z.read(BUILD_INFO).decode()
    except (OSError, KeyError, zipfile.BadZipFile):
        return {}
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


# ---------------------------------------------------------------- toolchain


def java_executable() -> str:
    """Path of a Java 17+ `java`; raises ViewletBuildError with install advice otherwise."""
    java_home = os.environ.get("JAVA_HOME")
    candidate = None
    if java_home and (Path(java_home) / "bin" / "java").exists():
        candidate = str(Path(java_home) / "bin" / "java")
    else:
        candidate = shutil.which("java")
    if candidate is None:
        raise ViewletBuildError(f"Viewlet needs Java 17+ but found no 'java': {JAVA_HINT}.")
    try:
        out = subprocess.run(
            [candidate, "-version"], capture_output=True, text=True, timeout=60
        )
        version_text = out.stderr + out.stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise ViewletBuildError(
            f"Viewlet needs Java 17+ but '{candidate} -version' failed ({e}): {JAVA_HINT}."
        ) from None
    major = java_major_version(version_text)
    if major is None or major < 17:
        found = version_text.strip().splitlines()[0] if version_text.strip() else "unknown"
        raise ViewletBuildError(
            f"Viewlet needs Java 17+ (found {found!r} at {candidate}): {JAVA_HINT}."
        )
    return candidate


def java_major_version(version_text: str) -> int | None:
    m = re.search(r'version "(\d+)(?:\.(\d+))?', version_text)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major  # "1.8.0" is Java 8


def pyspark_jars_dir() -> Path:
    try:
        import pyspark
    except ImportError:
        raise ViewletBuildError(
            "pyspark is not installed: the Viewlet jar is compiled against pyspark's jars"
        ) from None
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    if not jars.is_dir():
        raise ViewletBuildError(f"pyspark has no jars directory at {jars}")
    return jars


def pyspark_version() -> str:
    import pyspark

    return getattr(pyspark, "__version__", "unknown")


def _one_jar(jars: Path, prefix: str) -> Path:
    found = sorted(jars.glob(f"{prefix}-2.*.jar"))
    if not found:
        raise ViewletBuildError(f"no {prefix}-*.jar in {jars}: is this a Scala 2.13 pyspark?")
    return found[-1]


# ---------------------------------------------------------------- build


def build_jar(out_path: str | os.PathLike, sources: str | os.PathLike | None = None) -> str:
    """Compile the extension against the installed pyspark's jars; write the jar atomically.

    Returns the jar path. Raises ViewletBuildError on a missing toolchain or a compile error.
    """
    out = Path(out_path).resolve()
    root = Path(sources).resolve() if sources is not None else find_sources()
    if root is None or not source_files(root):
        raise ViewletBuildError(
            "Viewlet's Scala sources were not found (looked in "
            + ", ".join(str(r) for r in source_roots())
            + ")"
        )
    java = java_executable()
    jars = pyspark_jars_dir()
    files = source_files(root)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="viewlet-build-", dir=out.parent) as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        _compile(java, jars, files, classes)
        tmp_jar = Path(tmp) / JAR_NAME
        _write_jar(classes, tmp_jar, source_hash(root), pyspark_version())
        os.replace(tmp_jar, out)  # atomic: readers never see a half-written jar
    return str(out)


def _compile(java: str, jars: Path, files: list[Path], classes: Path) -> None:
    classpath = os.pathsep.join(str(p) for p in sorted(jars.glob("*.jar")))
    compiler_cp = os.pathsep.join(
        str(_one_jar(jars, n)) for n in ("scala-compiler", "scala-library", "scala-reflect")
    )
    # scalac reads Java sources for their signatures; javac then compiles them, if any.
    scalac = [java, "-Xss4m", "-cp", compiler_cp, "scala.tools.nsc.Main", "-usejavacp",
              "-nowarn", "-d", str(classes), "-classpath", classpath]
    _run(scalac + [str(f) for f in files], "scalac")
    java_files = [str(f) for f in files if f.suffix == ".java"]
    if java_files:
        javac = str(Path(java).with_name("javac"))
        if not Path(javac).exists():
            javac = shutil.which("javac") or ""
        if not javac:
            raise ViewletBuildError("Java sources need a JDK (javac); only a JRE was found")
        _run([javac, "-nowarn", "-d", str(classes), "-cp",
              str(classes) + os.pathsep + classpath] + java_files, "javac")


def _run(cmd: list[str], what: str) -> None:
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.SubprocessError) as e:
        raise ViewletBuildError(f"{what} could not run: {e}") from None
    if res.returncode != 0:
        raise ViewletBuildError(f"{what} failed:\n{res.stdout}{res.stderr}")


def _write_jar(classes: Path, jar: Path, src_hash: str, spark_version: str) -> None:
    manifest = "Manifest-Version: 1.0\nCreated-By: viewlet.jvm.build\n\n"
    info = f"source_hash={src_hash}\nspark_version={spark_version}\n"
    with zipfile.ZipFile(jar, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("META-INF/MANIFEST.MF", manifest)
        z.writestr(BUILD_INFO, info)
        for f in sorted(classes.rglob("*")):
            if f.is_file():
                z.write(f, f.relative_to(classes).as_posix())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m viewlet.jvm.build",
        description="Compile Viewlet's Spark extension jar against the installed pyspark.",
    )
    parser.add_argument(
        "--out",
        default=str(Path(__file__).resolve().parent / JAR_NAME),
        help="where to write the jar (default: next to this module)",
    )
    args = parser.parse_args(argv)
    try:
        print(build_jar(args.out))
    except ViewletBuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
