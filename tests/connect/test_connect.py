"""Viewlet from Spark Connect clients: a real `viewlet connect-server` (one for the module) and
pyspark's Connect client. Every view is compared with Spark's own evaluation of its query,
run by the same server, after batches of inserts, deletes and updates written to the Delta
base tables with delta-rs (another writer, as in production)."""
from __future__ import annotations

import threading

import pyarrow as pa
import pytest
from chispa import assert_approx_df_equality, assert_df_equality
from deltalake import DeltaTable, write_deltalake

from .server import Server, connect_client_or_skip, server_or_skip

DOUBLE_TOLERANCE = 1e-6


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    connect_client_or_skip()
    server_or_skip()
    base = tmp_path_factory.mktemp("connect")
    s = Server(base, str(base / "wh"))
    s.base = base
    yield s
    s.stop()


@pytest.fixture(scope="module")
def spark(server):
    session = server.client()
    yield session
    session.stop()


def table(server, name, data, cdf=True):
    path = str(server.base / name)
    write_deltalake(path, pa.table(data),
                    configuration={"delta.enableChangeDataFeed": "true"} if cdf else None)
    return path


def assert_matches(spark, view: str, query: str):
    """The view, read as a table by the client, equals Spark's evaluation of its query:
    the same columns in the same order, the same rows (doubles within 1e-6)."""
    for actual in (spark.sql(f"SELECT * FROM {view}"), spark.table(view)):
        expected = spark.sql(query)
        assert actual.columns == expected.columns
        if any(f.dataType.typeName() == "double" for f in expected.schema.fields):
            assert_approx_df_equality(actual, expected, DOUBLE_TOLERANCE, ignore_nullable=True,
                                      ignore_row_order=True)
        else:
            assert_df_equality(actual, expected, ignore_nullable=True, ignore_row_order=True,
                               ignore_metadata=True)


@pytest.fixture(scope="module")
def tables(server):
    orders = table(server, "orders", {
        "o_id": pa.array([1, 2, 3, 4, 5], pa.int64()),
        "cust": pa.array([10, 10, 20, 30, 30], pa.int64()),
        "amount": pa.array([5.5, 7.25, -1.0, 12.0, 3.0], pa.float64()),
        "qty": pa.array([1, 2, 3, 4, None], pa.int64())})
    customers = table(server, "customers", {
        "cust": pa.array([10, 20, 30, 40], pa.int64()),
        "region": pa.array(["north", "south", "north", None], pa.string())})
    return orders, customers


def queries(orders, customers):
    return {
        "per_region": f"SELECT c.region, SUM(o.amount) AS total, COUNT(*) AS n, AVG(o.qty) AS q "
                      f"FROM delta.`{orders}` o JOIN delta.`{customers}` c ON o.cust = c.cust "
                      f"WHERE o.amount > 0 GROUP BY c.region",
        "big_orders": f"SELECT o_id, cust, qty FROM delta.`{orders}` WHERE qty >= 2",
    }


@pytest.fixture(scope="module")
def created(spark, tables):
    views = queries(*tables)
    rows = {name: spark.sql(f"CREATE INCREMENTAL VIEW {name} AS {q}").collect()
            for name, q in views.items()}
    return views, rows


def test_create_then_batches_match_spark(spark, server, tables, created):
    orders, customers = tables
    views, rows = created
    assert [r.status for r in rows["per_region"]] == ["created"]
    for name, q in views.items():
        assert_matches(spark, name, q)
    batches = [
        lambda: write_deltalake(orders, pa.table({
            "o_id": pa.array([6, 7, 8], pa.int64()), "cust": pa.array([20, 40, 10], pa.int64()),
            "amount": pa.array([8.0, 2.5, 1.0], pa.float64()),
            "qty": pa.array([2, 7, None], pa.int64())}), mode="append"),
        lambda: DeltaTable(orders).delete("o_id = 1 OR o_id = 7"),
        lambda: (DeltaTable(orders).update({"qty": "qty + 3", "amount": "amount * 2"},
                                           predicate="cust = 30"),
                 DeltaTable(customers).update({"region": "'east'"}, predicate="cust = 20")),
    ]
    for i, apply_batch in enumerate(batches, start=1):
        apply_batch()
        for name, q in views.items():
            row = spark.sql(f"REFRESH INCREMENTAL VIEW {name}").first()
            assert (row.view, row.batch, row.status) == (name, i, "refreshed"), row
            assert row.changes > 0
            assert_matches(spark, name, q)


def test_show_describe_explain_history(spark, created):
    views, _ = created
    shown = {r.view: r for r in spark.sql("SHOW INCREMENTAL VIEWS").collect()}
    assert set(views) <= set(shown)
    assert " ".join(views["big_orders"].split()) == shown["big_orders"].query
    sections = {r.section for r in spark.sql("DESCRIBE INCREMENTAL VIEW per_region").collect()}
    assert {"view", "table", "map", "last batch"} <= sections, sections
    plan = "\n".join(r.plan for r in spark.sql("EXPLAIN INCREMENTAL VIEW per_region").collect())
    assert plan.startswith("Incremental view per_region") and "ON BATCH" in plan
    # the batches the statement and the table function list are the manifest's, newest first
    described = [(r.batch, r.status) for r in
                 spark.sql("DESCRIBE INCREMENTAL VIEW per_region HISTORY").collect()]
    function = [(r.batch, r.status) for r in
                spark.sql("SELECT batch, status FROM viewlet_history('per_region')").collect()]
    assert described == function
    assert function[-1] == (0, "created")
    assert [b for b, _ in function] == sorted({b for b, _ in function}, reverse=True)
    assert shown["per_region"].batch == function[0][0]


def test_drop(spark, server, tables):
    orders, _ = tables
    spark.sql(f"CREATE INCREMENTAL VIEW doomed AS SELECT cust, COUNT(*) AS n "
              f"FROM delta.`{orders}` GROUP BY cust").collect()
    assert spark.sql("DROP INCREMENTAL VIEW doomed").first().status == "dropped"
    assert "doomed" not in [r.view for r in spark.sql("SHOW INCREMENTAL VIEWS").collect()]
    with pytest.raises(Exception) as err:
        spark.sql("SELECT * FROM doomed").collect()
    assert "doomed" in str(err.value)


def test_errors_reach_the_client_with_message_and_position(spark):
    from pyspark.errors import AnalysisException, ParseException
    with pytest.raises(ParseException) as err:
        spark.sql("CREATE INCREMENTAL VIEW bad AS SELEC k FROM t")
    assert err.value.getCondition() == "PARSE_SYNTAX_ERROR"
    text = str(err.value)
    assert "Syntax error at or near 'SELEC'" in text and "(line 1, pos 31)" in text
    assert "-" * 31 + "^^^" in text
    with pytest.raises(AnalysisException) as err:
        spark.sql("CREATE INCREMENTAL VIEW bad AS SELECT k FROM delta.`/no/such/table`")
    assert "No Delta table at /no/such/table" in str(err.value)
    assert "Check the path, or create the table first." in str(err.value)
    # the server does not append its Java stack (viewlet connect-server's default)
    assert "JVM stacktrace" not in str(err.value)
    with pytest.raises(AnalysisException) as err:
        spark.sql("REFRESH INCREMENTAL VIEW no_such_view")
    assert "Incremental view 'no_such_view' does not exist" in str(err.value)


def test_enable_returns_a_handle_that_sends_sql(spark, server, tables, created):
    import viewlet
    from viewlet.api.connect import ConnectViewlet
    vl = viewlet.enable(spark)
    assert isinstance(vl, ConnectViewlet) and viewlet.context(spark) is vl
    assert vl.warehouse == str(server.base / "wh")
    assert set(created[0]) <= set(vl.view_names())
    assert vl.refresh("big_orders")["status"] == "up to date"
    assert vl.explain("big_orders").startswith("Incremental view big_orders")
    shown = spark.sql("SHOW INCREMENTAL VIEWS").where("view = 'big_orders'").first()
    assert vl.history("big_orders").first().batch == shown.batch
    assert vl.describe("big_orders").columns == ["section", "name", "value"]
    assert_df_equality(vl.read_view("big_orders"), spark.table("big_orders"),
                       ignore_row_order=True)
    with pytest.raises(viewlet.ViewletError, match="not available from a Spark Connect client"):
        vl.ctx.load("big_orders")
    with pytest.raises(viewlet.ViewletError, match="a client cannot switch it"):
        viewlet.enable(spark, warehouse=str(server.base / "elsewhere"))
    other = server.client()
    try:
        with pytest.raises(viewlet.NotEnabledError):
            viewlet.context(other)
    finally:
        other.stop()


def test_clients_each_with_a_session_do_not_interfere(server, tables):
    """Two clients create and refresh their own views at the same time, over their own
    tables; then both refresh one shared view at once: one batch, applied once."""
    clients = [server.client(), server.client()]
    try:
        assert clients[0].session_id != clients[1].session_id
        paths = [table(server, f"events{i}", {"k": pa.array([1, 2, 2], pa.int64()),
                                               "x": pa.array([i, 1, 2], pa.int64())})
                 for i in range(2)]
        query = "SELECT k, SUM(x) AS s, COUNT(*) AS n FROM delta.`{}` GROUP BY k"
        errors = []

        def run(i):
            try:
                c = clients[i]
                c.sql(f"CREATE INCREMENTAL VIEW mine{i} AS {query.format(paths[i])}").collect()
                write_deltalake(paths[i], pa.table({"k": pa.array([3, 1], pa.int64()),
                                                    "x": pa.array([10 + i, 5], pa.int64())}),
                                mode="append")
                c.sql(f"REFRESH INCREMENTAL VIEW mine{i}").collect()
            except BaseException as e:  # noqa: BLE001 - reported by the main thread
                errors.append(e)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        assert not errors, errors
        for i, c in enumerate(clients):
            assert_matches(c, f"mine{i}", query.format(paths[i]))
            # the warehouse is shared: each client reads the other's view too
            assert_matches(c, f"mine{1 - i}", query.format(paths[1 - i]))

        # both refresh one view at the same time: exactly one batch applies the changes
        write_deltalake(paths[0], pa.table({"k": pa.array([2], pa.int64()),
                                            "x": pa.array([100], pa.int64())}), mode="append")
        results = [None, None]

        def refresh(i):
            try:
                results[i] = clients[i].sql("REFRESH INCREMENTAL VIEW mine0").first()
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=refresh, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        assert not errors, errors
        assert sorted(r.changes for r in results) == [0, 1], results
        history = clients[1].sql("SELECT batch, status, changes FROM viewlet_history('mine0')")
        committed = [(r.batch, r.changes) for r in history.collect() if r.status == "committed"]
        assert committed == [(2, 1), (1, 2)]
        assert_matches(clients[1], "mine0", query.format(paths[0]))
    finally:
        for c in clients:
            c.stop()
