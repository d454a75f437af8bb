#!/usr/bin/env bash
# Set up, then run the whole test suite (compiler, JVM extension, Spark oracle tests, demo).
# Batches run on every target: the whole suite with every batch on the local target (DuckDB
# in the driver, the test session's spark.viewlet.engine), then the random oracle suite
# with every batch on Spark (VIEWLET_TEST_ENGINE=spark), and the random oracle suite's
# depth variants with every batch distributed (executors write, the driver commits).
# The TPC-H oracle module runs in a pytest process (one Spark driver) of its own: after the
# rest of the suite, the wide joins' query plans kept a shared driver's heap in full GC.
# tests/delta runs in a session with delta-spark (its jar fetched from Maven Central by
# Spark, as a user's session does), also a pytest process of its own: a JVM's extensions and
# catalog are fixed when it starts.
#
# Two streams run at once, one per core of a 2-core machine (a pytest stream leaves part of
# both idle while its driver waits): the main suite, then the oracle suite on the other
# targets; beside it tests/ops (subprocess-driven: crashes, clusters, scale-out), TPC-H and
# tests/delta. The second stream's output is printed when both are done.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
TPCH=tests/spark/test_tpch_nested.py
ORACLE=tests/spark/test_random_oracle.py
PYTEST=(.venv/bin/python -m pytest)

side_log=$(mktemp)
side_status=$(mktemp)
(
  status=0
  run() { "$@" || status=$?; }
  run "${PYTEST[@]}" tests/ops "$@"
  run "${PYTEST[@]}" "$TPCH" "$@"
  run env VIEWLET_TEST_DELTA_SPARK=1 "${PYTEST[@]}" tests/delta "$@"
  echo "$status" > "$side_status"
) > "$side_log" 2>&1 &
side=$!

status=0
run() { "$@" || status=$?; }
run "${PYTEST[@]}" tests integration --ignore="$TPCH" --ignore=tests/ops "$@"
run env VIEWLET_TEST_ENGINE=spark "${PYTEST[@]}" "$ORACLE" "$@"
run env VIEWLET_TEST_ENGINE=distributed "${PYTEST[@]}" "$ORACLE" -k "depth0 or depth1 or depth2" "$@"

wait "$side"
echo "---- tests/ops, TPC-H and tests/delta (run beside the above) ----"
cat "$side_log"
side_result=$(cat "$side_status" 2>/dev/null)   # empty: the side stream did not finish
rm -f "$side_log" "$side_status"
[ "${side_result:-1}" = 0 ] || status=${side_result:-1}
exit $status
