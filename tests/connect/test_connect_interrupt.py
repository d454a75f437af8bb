"""A Connect client that interrupts its operation mid-REFRESH cancels the statement, which
stops at its next step as on Ctrl-C, leaving nothing half-applied.

The server holds its attached Python at its first batch's first map write (VIEWLET_PAUSE,
only while the pause file exists); the client interrupts while it is held, and the pause
ends because the statement was cancelled (the file is still there). The batch is planned,
not committed; the view stays as before; the next REFRESH completes the batch once.
"""
from __future__ import annotations

import threading

import pytest
from chispa import assert_df_equality

from .server import WAIT, paused_server, totals_with_a_pending_batch, wait_for


@pytest.fixture(scope="module")
def held_server(tmp_path_factory):
    yield from paused_server(tmp_path_factory, "connect-interrupt")


def test_interrupted_refresh_stops_and_the_next_one_completes_it(held_server):
    server = held_server
    spark = server.client()
    try:
        query, before = totals_with_a_pending_batch(server, spark)   # batch 0 shown

        server.pause.touch()
        outcome = {}

        def refresh():
            try:
                outcome["rows"] = spark.sql("REFRESH INCREMENTAL VIEW totals").collect()
            except Exception as e:  # noqa: BLE001 - the test reads it
                outcome["error"] = e

        caller = threading.Thread(target=refresh)
        caller.start()
        reached = server.base / "pause.reached"
        wait_for(lambda: reached.exists() or not caller.is_alive(), "the REFRESH to pause")
        assert reached.exists(), outcome
        assert spark.interruptAll()                     # the client's own operation
        caller.join(WAIT)
        assert not caller.is_alive(), "the interrupted REFRESH did not end"
        assert server.pause.exists()                    # it ended by being cancelled
        assert "error" in outcome, outcome
        assert "OPERATION_CANCELED" in str(outcome["error"]) or \
            "was cancelled (its Spark Connect operation was interrupted)" in str(outcome["error"])

        other = server.client()
        try:
            history = [(r.batch, r.status) for r in other.sql(
                "SELECT batch, status FROM viewlet_history('totals')").collect()]
            assert (0, "created") in history and (1, "committed") not in history, history
            assert_df_equality(other.sql("SELECT * FROM totals"), before,
                               ignore_row_order=True, ignore_nullable=True)
            server.pause.unlink()
            row = other.sql("REFRESH INCREMENTAL VIEW totals").first()
            assert row.batch == 1 and row.changes == 2, row
            assert row.status.startswith("recovered batch 1"), row
            history = [(r.batch, r.status) for r in other.sql(
                "SELECT batch, status FROM viewlet_history('totals')").collect()
                if r.status in ("committed", "created")]
            assert history == [(1, "committed"), (0, "created")]
            assert_df_equality(other.sql("SELECT * FROM totals"), other.sql(query),
                               ignore_row_order=True, ignore_nullable=True)
        finally:
            other.stop()
    finally:
        spark.stop()
