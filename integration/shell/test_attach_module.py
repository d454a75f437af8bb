"""viewlet.api.attach on its own: the refusals that need no Spark JVM."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from viewlet.api import attach

ROOT = Path(__file__).resolve().parents[2]


def test_without_a_gateway_it_says_how_to_start_the_shell():
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY")}
    env["PYTHONPATH"] = str(ROOT / "python")
    res = subprocess.run([sys.executable, "-m", "viewlet.api.attach"], env=env,
                         stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == attach.EXIT_FAILED
    assert res.stderr.startswith("viewlet.api.attach: no Spark JVM to attach to")
    assert "`viewlet sql`" in res.stderr


@pytest.mark.parametrize("python_side, jvm_side", [("4.0.1", "4.0.0"), ("4.1.0", "4.1.2-SNAPSHOT")])
def test_same_spark_minor_version_is_accepted(python_side, jvm_side):
    attach.check_spark_version(python_side, jvm_side)


def test_other_spark_minor_version_is_refused_naming_both():
    with pytest.raises(attach.AttachError) as err:
        attach.check_spark_version("4.0.1", "4.1.0")
    assert "PySpark 4.0.1" in str(err.value) and "Spark 4.1.0" in str(err.value)
    assert "pyspark==4.1.0" in str(err.value)
