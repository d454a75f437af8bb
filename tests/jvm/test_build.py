"""Building and locating viewlet-spark.jar without Gradle."""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import viewlet.jvm as vj
from viewlet.jvm import build


@pytest.mark.parametrize(
    "text, major",
    [('openjdk version "17.0.15" 2025-04-15', 17), ('java version "1.8.0_292"', 8),
     ('openjdk version "21" 2023-09-19', 21), ("garbage", None)],
)
def test_java_major_version(text, major):
    assert build.java_major_version(text) == major


def test_missing_java_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(build.ViewletBuildError, match=r"Java 17\+.*openjdk-17-jre-headless"):
        build.java_executable()


def test_old_java_is_a_clear_error(monkeypatch, tmp_path):
    fake = tmp_path / "bin" / "java"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\necho \'openjdk version "11.0.2" 2019-01-15\' >&2\n')
    fake.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(build.ViewletBuildError, match=r"Java 17\+ \(found 'openjdk version \"11"):
        build.java_executable()


def test_jar_matches_current_sources(viewlet_jar):
    sources = build.find_sources()
    assert sources is not None
    assert build.read_build_info(Path(viewlet_jar))["source_hash"] == build.source_hash(sources)
    names = zipfile.ZipFile(viewlet_jar).namelist()
    assert "io/viewlet/spark/ViewletExtensions.class" in names
    assert "io/viewlet/spark/ViewletHandler.class" in names


def test_stale_jar_is_not_up_to_date(tmp_path, viewlet_jar):
    stale = tmp_path / vj.JAR_NAME
    with zipfile.ZipFile(stale, "w") as z:
        z.writestr(build.BUILD_INFO, "source_hash=deadbeef\n")
    assert not vj._up_to_date(stale, build.find_sources())
    assert vj._up_to_date(Path(viewlet_jar), build.find_sources())


def test_concurrent_builds_share_one_jar(tmp_path):
    env = dict(os.environ, VIEWLET_CACHE_DIR=str(tmp_path / "cache"))
    env["PYTHONPATH"] = os.pathsep.join([str(Path(vj.__file__).parents[2])] + sys.path)
    code = "import viewlet.jvm as j; print(j.cached_jar())"
    procs = [
        subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=600)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert outs[0] == outs[1] and outs[0].startswith(str(tmp_path / "cache"))
    assert zipfile.ZipFile(outs[0]).testzip() is None
    assert list(Path(outs[0]).parent.glob("viewlet-build-*")) == []  # no leftovers
