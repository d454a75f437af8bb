#!/usr/bin/env bash
# Set up, then run the whole test suite (compiler, JVM extension, Spark oracle tests, demo).
# Batches run on every target: the whole suite with every batch on the local target (DuckDB
# in the driver, the test session's spark.viewlet.engine), then the random oracle suite
# with every batch on Spark (VIEWLET_TEST_ENGINE=spark), and the random oracle
# suite's depth variants with every batch distributed (executors write, the driver commits).
# The TPC-H oracle module runs in a pytest process (one Spark driver) of its own: after the
# rest of the suite, the wide joins' query plans kept a shared driver's heap in full GC.
# tests/delta runs in a session with delta-spark (its jar fetched from Maven Central by
# Spark, as a user's session does), also a pytest process of its own: a JVM's extensions and
# catalog are fixed when it starts.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
TPCH=tests/spark/test_tpch_nested.py
status=0
run() { "$@" || status=$?; }
run .venv/bin/python -m pytest tests integration --ignore="$TPCH" "$@"
run .venv/bin/python -m pytest "$TPCH" "$@"
run env VIEWLET_TEST_DELTA_SPARK=1 .venv/bin/python -m pytest tests/delta "$@"
ORACLE=tests/spark/test_random_oracle.py
run env VIEWLET_TEST_ENGINE=spark .venv/bin/python -m pytest "$ORACLE" "$@"
run env VIEWLET_TEST_ENGINE=distributed .venv/bin/python -m pytest "$ORACLE" \
  -k "depth0 or depth1 or depth2" "$@"
exit $status
