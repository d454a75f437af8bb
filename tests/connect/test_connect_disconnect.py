"""A Connect client that disconnects mid-REFRESH leaves nothing half-applied.

The server of this module holds its attached Python at its first batch's first map write
(VIEWLET_PAUSE, engine/runtime/faults.py: only while the pause file exists), so the test knows the
REFRESH is mid-batch when it kills the client process. Readers meanwhile see the view as it
was before the batch; the server finishes the statement the client left (the Connect
operation outlives its client), and a later REFRESH from another client finds the batch
committed once: the manifest makes batches exactly-once whoever is connected.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from chispa import assert_df_equality

from .server import WAIT, paused_server, server_env, totals_with_a_pending_batch, wait_for


@pytest.fixture(scope="module")
def held_server(tmp_path_factory):
    yield from paused_server(tmp_path_factory, "connect-disconnect")


def test_client_killed_mid_refresh_leaves_the_batch_whole(held_server):
    server = held_server
    spark = server.client()
    try:
        query, before = totals_with_a_pending_batch(server, spark)   # batch 0 shown

        server.pause.touch()
        client = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(f"""
                from pyspark.sql.connect.session import SparkSession
                spark = SparkSession.builder.remote({server.url!r}).create()
                spark.sql("REFRESH INCREMENTAL VIEW totals").collect()
                """)], env=server_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        reached = server.base / "pause.reached"
        wait_for(lambda: reached.exists() or client.poll() is not None, "the REFRESH to pause")
        assert reached.exists(), "the client ended before its REFRESH reached the batch"
        client.kill()                                   # the client goes away mid-batch
        client.wait(WAIT)

        # mid-batch, from another client: the view is the batch-0 view; the batch is running
        assert_df_equality(spark.sql("SELECT * FROM totals"), before, ignore_row_order=True,
                           ignore_nullable=True)
        assert [r.status for r in spark.sql(
            "SELECT status FROM viewlet_history('totals')").collect()][0].startswith("running")

        server.pause.unlink()                           # the server goes on without the client
        row = spark.sql("REFRESH INCREMENTAL VIEW totals").first()
        assert row.changes == 0 and row.status in ("waited for a concurrent refresh",
                                                   "up to date"), row
        history = [(r.batch, r.status, r.changes) for r in spark.sql(
            "SELECT batch, status, changes FROM viewlet_history('totals')").collect()]
        assert history == [(1, "committed", 2), (0, "created", 0)]
        assert_df_equality(spark.sql("SELECT * FROM totals"), spark.sql(query),
                           ignore_row_order=True, ignore_nullable=True)
    finally:
        spark.stop()
