"""`viewlet connect-server --print-command`, configure_spark's handling of Connect builders
and the Connect handle's refusals: no Spark started."""
from __future__ import annotations

import shlex
import sys

import pytest

from viewlet.api import connect as api_connect
from viewlet.jvm import EXTENSIONS_CLASS
from viewlet.tools import cli, connect


def printed(capsys, *args):
    assert cli.main(["connect-server", "--print-command", *args]) == cli.EXIT_OK
    return shlex.split(capsys.readouterr().out.replace("\\\n", " "))


def confs(words):
    return [words[i + 1] for i, w in enumerate(words) if w == "--conf"]


def test_command_runs_spark_connect_server_with_viewlet(capsys, tmp_path):
    out = printed(capsys, "--warehouse", str(tmp_path / "wh"), "--port", "15123")
    assert out[0].startswith("SPARK_HOME=") and out[1].endswith("/bin/spark-submit")
    assert out[out.index("--class") + 1] == connect.SERVER_CLASS
    assert out[out.index("--jars") + 1].endswith("viewlet-spark.jar")
    c = confs(out)
    for setting in (f"spark.sql.extensions={EXTENSIONS_CLASS}",
                    f"spark.viewlet.warehouse={tmp_path / 'wh'}",
                    f"spark.viewlet.python={sys.executable}",
                    "spark.viewlet.attach=true",
                    "spark.connect.grpc.binding.address=127.0.0.1",
                    "spark.connect.grpc.binding.port=15123",
                    "spark.sql.connect.serverStacktrace.enabled=false",
                    f"spark.sql.warehouse.dir={tmp_path / 'wh' / 'spark' / 'spark-warehouse'}"):
        assert setting in c


def test_spark_submit_arguments_come_last_and_a_port_there_is_the_url(tmp_path):
    argv, env, url = connect.connect_server_command(
        str(tmp_path), 15002, "127.0.0.1",
        ["--conf", "spark.connect.grpc.binding.port=16000", "--driver-memory", "2g",
         "--conf", "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension"],
        jar=str(tmp_path / "v.jar"))
    assert url == "sc://127.0.0.1:16000"
    assert argv[-2:] == ["--driver-memory", "2g"]
    assert "spark.connect.grpc.binding.port=16000" in argv
    assert "spark.connect.grpc.binding.port=15002" not in argv
    # the user's extensions first, then Viewlet's, in one setting
    assert f"spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension,{EXTENSIONS_CLASS}" \
        in argv
    assert env["SPARK_HOME"]


def test_every_interface_is_reached_on_loopback():
    assert connect.client_url("0.0.0.0", 15002) == "sc://localhost:15002"


def test_a_pyspark_without_server_classes_is_refused_with_the_remedy(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "spark-submit").write_text("")
    (tmp_path / "jars").mkdir()
    with pytest.raises(connect.ConnectUnavailable) as err:
        connect.checked_home(tmp_path, "4.9.0")
    assert "pyspark 4.9.0 has no Spark Connect server classes" in str(err.value)
    assert "pip install 'pyspark[connect]>=4.0.1,<4.4'" in str(err.value)


def test_configure_spark_refuses_a_running_connect_server():
    from pyspark.sql import SparkSession

    import viewlet
    with pytest.raises(viewlet.ViewletError) as err:
        viewlet.configure_spark(SparkSession.builder.remote("sc://example.invalid:15002"))
    assert "cannot configure the Spark Connect server at sc://example.invalid:15002" in \
        str(err.value)
    assert "viewlet connect-server" in str(err.value)


@pytest.mark.parametrize("options, env, url", [
    ({"spark.remote": "local[2]"}, {}, "local[2]"),
    ({}, {"SPARK_REMOTE": "sc://h:1"}, "sc://h:1"),
    ({"spark.api.mode": "connect", "spark.master": "local[3]"}, {}, "local[3]"),
    ({"spark.master": "local[3]"}, {}, None),
])
def test_remote_url_follows_pysparks_rule(monkeypatch, options, env, url):
    for key in ("SPARK_REMOTE", "SPARK_API_MODE"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert api_connect.remote_url(options) == url


def test_handle_refuses_what_needs_the_engine_here():
    import viewlet
    vl = api_connect.ConnectViewlet(spark=object(), warehouse="/wh")
    with pytest.raises(viewlet.ViewletError, match="register_table is not available from a "
                                                   "Spark Connect client"):
        vl.register_table("t", "/data/t")
    assert not hasattr(vl, "_repr_html_")     # notebooks probe attributes: a plain miss
    with pytest.raises(AttributeError):
        vl.no_such_method
