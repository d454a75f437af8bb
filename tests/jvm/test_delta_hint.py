"""Delta statements in a session without delta-spark (ViewletDeltaHint.scala): Spark's own
errors (DATA_SOURCE_NOT_FOUND, TABLE_OR_VIEW_NOT_FOUND for `delta`.`/path`, a syntax error)
become one that names what is missing and both remedies; reads of delta.`/path` keep working
through Viewlet, and every other statement is Spark's as before.

The test session has Viewlet's extension and no delta-spark (tests/delta runs the same kind
of statements in a session with it, where they are Delta's).
"""
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from pyspark.errors import AnalysisException, ParseException

HINT = "io.viewlet.spark.ViewletDeltaHint"
DOCS = Path(__file__).resolve().parents[2] / "docs"


def hint(spark):
    return getattr(spark._jvm, HINT)


def first_part(error) -> str:
    return str(error).split("\n\nJVM stacktrace:")[0]


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    base = tmp_path_factory.mktemp("delta-hint")
    table = str(base / "orders")
    write_deltalake(table, pa.table({"k": pa.array([1, 2], pa.int64()),
                                     "v": pa.array([10, 20], pa.int64())}))
    return {"base": base, "table": table}


@pytest.fixture
def session(jvm_spark, vl):
    """The run's session, Viewlet enabled (its handler resolves delta.`/path` reads)."""
    assert not hint(jvm_spark).deltaSparkIn(jvm_spark._jsparkSession)
    return jvm_spark


def statements(table, base):
    t = f"delta.`{table}`"
    analysis = [
        ("CREATE TABLE hint_t (a INT) USING delta", "CREATE TABLE hint_t ... USING delta"),
        ("create table hint_t using DELTA as select 1 as a",
         "CREATE TABLE hint_t ... USING delta AS SELECT ..."),
        ("CREATE OR REPLACE TABLE hint_t (a INT) USING delta",
         "CREATE OR REPLACE TABLE hint_t ... USING delta"),
        (f"CREATE TABLE hint_t USING delta LOCATION '{table}'",
         "CREATE TABLE hint_t ... USING delta"),
        ("CREATE TABLE hint_t LIKE hint_parquet USING delta",
         "CREATE TABLE ... LIKE ... USING delta"),
        (f"INSERT INTO {t} VALUES (3, 30)", f"INSERT INTO {t} (a Delta table)"),
        (f"INSERT OVERWRITE {t} SELECT 3, 30", f"INSERT OVERWRITE {t} (a Delta table)"),
        # Spark 4.0 parses REPLACE WHERE as an overwrite by expression, 4.3 as an INSERT
        # OVERWRITE with a condition
        (f"WITH n AS (SELECT 3 AS k, 30 AS v) INSERT INTO {t} REPLACE WHERE k = 3 "
         "SELECT * FROM n", (f"INSERT INTO {t} (a Delta table)",
                             f"INSERT OVERWRITE {t} (a Delta table)")),
        (f"UPDATE {t} SET v = v + 1 WHERE k = 1", f"UPDATE {t} (a Delta table)"),
        (f"DELETE FROM {t} WHERE k = 1", f"DELETE FROM {t} (a Delta table)"),
        (f"MERGE INTO {t} AS o USING (SELECT 1 AS k) s ON o.k = s.k WHEN MATCHED THEN DELETE",
         f"MERGE INTO {t} (a Delta table)"),
        (f"DESCRIBE DETAIL {t}", "DESCRIBE DETAIL (Delta Lake's SQL)"),
        # Viewlet answers DESCRIBE HISTORY for a Delta table it finds (below), not for this
        (f"DESCRIBE HISTORY delta.`{base}/no_table`", "DESCRIBE HISTORY (Delta Lake's SQL)"),
    ]
    syntax = [
        (f"CONVERT TO DELTA parquet.`{base}/parquet`", "CONVERT TO DELTA (Delta Lake's SQL)"),
        (f"VACUUM {t} RETAIN 168 HOURS", "VACUUM (Delta Lake's SQL)"),
        (f"OPTIMIZE {t} ZORDER BY (k)", "OPTIMIZE (Delta Lake's SQL)"),
        (f"RESTORE TABLE {t} TO VERSION AS OF 0", "RESTORE (Delta Lake's SQL)"),
        (f"DESCRIBE HISTORY {t} LIMIT 1", "DESCRIBE HISTORY (Delta Lake's SQL)"),
        (f"CREATE TABLE hint_t SHALLOW CLONE {t}",
         "CREATE TABLE ... SHALLOW CLONE (Delta Lake's SQL)"),
    ]
    return [(sql, what, False) for sql, what in analysis] + \
        [(sql, what, True) for sql, what in syntax]


CASES = statements("/T", "/B")


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c[0].split(" (")[0][:40] for c in CASES])
def test_delta_statement_names_delta_spark_and_the_remedies(session, place, index):
    sql, what, syntax = statements(place["table"], place["base"])[index]
    session.sql(f"CREATE TABLE IF NOT EXISTS hint_parquet (a INT) USING parquet "
                f"LOCATION '{place['base']}/parquet'")
    before = DeltaTable(place["table"]).version()
    with pytest.raises(AnalysisException) as err:
        session.sql(sql).collect()
    assert isinstance(err.value, ParseException) == syntax
    if syntax:                      # Spark's category for syntax it does not know
        assert err.value.getCondition() == "PARSE_SYNTAX_ERROR"
    message = first_part(err.value)
    assert message in [hint(session).message(w) for w in
                       (what if isinstance(what, tuple) else (what,))]
    for remedy in ("needs Delta Lake's Spark extension (delta-spark), which this Spark session "
                   "does not have", "'viewlet sql --delta'", "delta_spark=True",
                   "configure_spark_with_delta_pip", "deltalake.write_deltalake"):
        assert remedy in message
    assert DeltaTable(place["table"]).version() == before
    assert not session.catalog.tableExists("hint_t")


def test_reads_of_delta_paths_still_work(session, place):
    t = f"delta.`{place['table']}`"
    assert sorted(tuple(r) for r in session.sql(f"SELECT k, v FROM {t}").collect()) == \
        [(1, 10), (2, 20)]
    assert session.sql(f"SELECT COUNT(*) AS n FROM {t} VERSION AS OF 0").first().n == 2
    history = session.sql(f"DESCRIBE HISTORY {t}").collect()        # Viewlet's answer
    assert [h.version for h in history] == [0]
    assert session.sql(f"DESCRIBE TABLE {t}").collect()[0].col_name == "k"


def _make_catalog_delta_table(spark, name, location):
    """A catalog entry whose provider is delta, as a Delta session sharing the metastore
    leaves it (this session cannot create one: that is the point)."""
    spark.sql(f"CREATE TABLE {name} (k BIGINT, v BIGINT) USING parquet LOCATION '{location}'")
    return _set_provider(spark, name, "delta")


def _set_provider(spark, name, provider):
    jvm = spark._jvm
    catalog = spark._jsparkSession.sessionState().catalog()
    ident = jvm.org.apache.spark.sql.catalyst.TableIdentifier.apply(
        name, jvm.scala.Some.apply("default"))
    meta = catalog.getTableMetadata(ident)
    count = [m.getParameterCount() for m in meta.getClass().getMethods()
             if m.getName() == "copy"][0]
    args = [getattr(meta, f"copy$default${i}")() for i in range(1, count + 1)]
    args[4] = jvm.scala.Some.apply(provider)          # CatalogTable's 5th field: provider
    catalog.externalCatalog().alterTable(meta.copy(*args))
    assert catalog.getTableMetadata(ident).provider().get() == provider


def test_writes_to_a_catalog_delta_table(session, place):
    _make_catalog_delta_table(session, "hint_sales", f"{place['base']}/sales")
    try:
        for sql, what in [
            ("INSERT INTO hint_sales VALUES (1, 2)", "INSERT INTO hint_sales"),
            ("UPDATE default.hint_sales SET v = 1", "UPDATE default.hint_sales"),
            ("DELETE FROM spark_catalog.default.hint_sales WHERE k = 1",
             "DELETE FROM spark_catalog.default.hint_sales"),
            ("MERGE INTO hint_sales t USING (SELECT 1 AS k) s ON t.k = s.k "
             "WHEN MATCHED THEN DELETE", "MERGE INTO hint_sales"),
        ]:
            with pytest.raises(AnalysisException) as err:
                session.sql(sql).collect()
            assert first_part(err.value) == hint(session).message(
                f"{what} (a Delta table of the catalog)"), sql
        # a temporary view of that name shadows the table, as in Spark
        session.sql("CREATE TEMP VIEW hint_sales AS SELECT 1 AS k")
        with pytest.raises(AnalysisException) as err:
            session.sql("INSERT INTO hint_sales VALUES (1)").collect()
        assert "delta-spark" not in first_part(err.value)
    finally:
        session.sql("DROP VIEW IF EXISTS hint_sales")
        _set_provider(session, "hint_sales", "parquet")
        session.sql("DROP TABLE hint_sales")


def test_other_statements_are_sparks(session, place):
    base = place["base"]
    session.sql(f"CREATE TABLE hint_pq (a INT) USING parquet LOCATION '{base}/pq'")
    # a database named delta: delta.t is its table, not a path
    session.sql("CREATE DATABASE IF NOT EXISTS delta")
    try:
        session.sql("INSERT INTO hint_pq VALUES (1)")
        assert session.table("hint_pq").count() == 1
        session.sql(f"CREATE TABLE delta.hint_t (a INT) USING parquet LOCATION '{base}/dt'")
        session.sql("INSERT INTO delta.hint_t VALUES (2)")
        assert session.sql("SELECT a FROM delta.hint_t").first().a == 2
        # DESCRIBE HISTORY x is Spark's DESCRIBE of column x when a relation `history` exists
        session.sql("CREATE OR REPLACE TEMP VIEW history AS SELECT 1 AS id")
        rows = session.sql("DESCRIBE history id").collect()
        assert ("col_name", "id") in [tuple(r) for r in rows]
        with pytest.raises(AnalysisException) as err:
            session.sql("INSERT INTO hint_nosuch VALUES (1)")
        assert err.value.getCondition() == "TABLE_OR_VIEW_NOT_FOUND"
        with pytest.raises(ParseException) as err:
            session.sql("VACUUMM x")                  # not Delta's: Spark's syntax error
        assert "Syntax error at or near 'VACUUMM'" in str(err.value)
    finally:
        session.sql("DROP VIEW IF EXISTS history")
        session.sql("DROP DATABASE IF EXISTS delta CASCADE")
        session.sql("DROP TABLE IF EXISTS hint_pq")


@pytest.mark.parametrize("extensions, catalog, has", [
    ("io.viewlet.spark.ViewletExtensions", "", False),
    ("", "", False),
    ("io.delta.sql.DeltaSparkSessionExtension,io.viewlet.spark.ViewletExtensions", "", True),
    (" io.viewlet.spark.ViewletExtensions , io.delta.sql.DeltaSparkSessionExtension", "", True),
    ("io.viewlet.spark.ViewletExtensions", "org.apache.spark.sql.delta.catalog.DeltaCatalog",
     True),
])
def test_a_session_with_delta_spark_is_left_alone(jvm_spark, extensions, catalog, has):
    """Either of delta-spark's settings makes the session Delta's (tests/delta runs the
    statements above in such a session)."""
    assert hint(jvm_spark).configured(extensions, catalog) == has


def test_deltastatement_only_for_deltas_words(jvm_spark):
    words = hint(jvm_spark).deltaStatement
    assert words("-- c\n convert /* x */ to delta parquet.`/p`").get() == "CONVERT TO DELTA"
    assert words("ALTER TABLE t DROP FEATURE deletionVectors").get() == \
        "ALTER TABLE ... DROP FEATURE"
    assert words("CONVERT TO PARQUET x").isEmpty()
    assert words("SELECT 'VACUUM'").isEmpty()
    assert words("DESCRIBE TABLE history").isEmpty()


@pytest.mark.parametrize("page", ["delta-sessions.md", "shell.md"])
def test_docs_show_the_message(jvm_spark, page):
    """Each page quotes the message (a ```text block) as the extension writes it."""
    from tests.docs.codeblocks import read_page
    blocks = [b.text for b in read_page(DOCS / page, page).blocks
              if b.lang == "text" and "needs Delta Lake's Spark extension" in b.text]
    # a shell transcript's prompt line is not part of the message
    quoted = [" ".join(" ".join(line for line in text.split("\n")
                                if not line.startswith("spark-sql")).split())
              for text in blocks]
    assert quoted, f"{page} quotes no message"
    for text in quoted:
        what = text.split(" needs Delta Lake's Spark extension")[0]
        assert text == " ".join(hint(jvm_spark).message(what).split())
