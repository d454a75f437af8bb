#!/usr/bin/env bash
# Set up, then run the test suite in the worlds users run Viewlet in (CI runs this).
#
#   scripts/test.sh [--full] [pytest options]
#
# Parts, in order (each prints its time; the run fails if any part fails):
#   main          the whole suite on the pinned environment (.venv: pyspark 4.0.1 with
#                 delta-spark 4.0.1, the lowest end of the supported range), every batch on
#                 the local target; it records the views it creates (the corpus below)
#   tpch          the TPC-H oracle, in a Spark driver of its own with Spark's default
#                 memory (1g): CREATE and every REFRESH of every TPC-H view
#   delta         tests/delta in a session with delta-spark 4.0.1 (its jar from Maven Central
#                 through Spark, as a user's session gets it)
#   spark, distributed   the random oracle with every batch on Spark, its depth variants and
#                 star shapes with every batch distributed (executors write); Spark's
#                 default driver memory (1g)
#   restart       the oracle modules' first case each and TPC-H Q5, Q8, Q21, Q22a, every
#                 REFRESH run by another Python process with another PYTHONHASHSEED
#   seeds         every view the main part created, and every view of sql/, compiled under
#                 other hash seeds: the same programs
#   newest        the newest end: pyspark 4.3 with the embedded Delta (.venv-newest), the
#                 representative part (the oracle modules' first two cases each, DDL, JVM
#                 and shell tests, TPC-H's smallest views)
#   delta-newest  tests/delta on the newest pair delta-spark supports (pyspark 4.2, delta-spark
#                 4.4: .venv-delta-newest)
#   installed     the wheel in a clean virtual environment with only its declared
#                 dependencies, Spark's default settings (scripts/test-installed.sh)
# --full also runs the whole suite, not only the representative part, on the newest end.
# A test JVM that dies is reported last, with its exit status and last words (conftest.py).
set -uo pipefail
cd "$(dirname "$0")/.."
FULL=0
if [ "${1:-}" = "--full" ]; then FULL=1; shift; fi
bash scripts/setup.sh || exit 1
TPCH=tests/spark/test_tpch_nested.py
ORACLE=tests/spark/test_random_oracle.py
export VIEWLET_TEST_JVM_REPORT=$(mktemp)   # conftest.py: why a test JVM died, if one did
CORPUS=$(mktemp)                            # the views the main part creates

status=0
failed=()
run() {   # run NAME COMMAND...: time it, remember a failure
  local name=$1 t0=$SECONDS
  shift
  echo "==== $name"
  "$@" || { status=1; failed+=("$name"); }
  echo "==== $name: $((SECONDS - t0)) s"
}
LOW=(.venv/bin/python -m pytest)
NEWEST=(.venv-newest/bin/python -m pytest)
DELTA_NEWEST=(.venv-delta-newest/bin/python -m pytest)

run main env VIEWLET_RECORD_VIEWS="$CORPUS" \
  "${LOW[@]}" tests integration --ignore="$TPCH" --ignore=tests/installed "$@"
run tpch env VIEWLET_TEST_DRIVER_MEMORY=default "${LOW[@]}" "$TPCH" "$@"
run delta env VIEWLET_TEST_DELTA_SPARK=1 "${LOW[@]}" tests/delta "$@"
run spark env VIEWLET_TEST_ENGINE=spark VIEWLET_TEST_DRIVER_MEMORY=default \
  "${LOW[@]}" "$ORACLE" "$@"
run distributed env VIEWLET_TEST_ENGINE=distributed VIEWLET_TEST_DRIVER_MEMORY=default \
  "${LOW[@]}" "$ORACLE" -k "depth0 or depth1 or depth2 or star" "$@"
run restart env VIEWLET_TEST_RESTART=1 VIEWLET_TEST_SUBSET=restart "${LOW[@]}" tests/spark "$@"
run seeds env VIEWLET_VIEW_CORPUS="$CORPUS" "${LOW[@]}" tests/compiler/test_deterministic.py "$@"

if bash scripts/setup.sh newest; then
  if [ "$FULL" = 1 ]; then
    run newest "${NEWEST[@]}" tests integration --ignore=tests/installed "$@"
  else
    run newest env VIEWLET_TEST_SUBSET=representative "${NEWEST[@]}" tests integration \
      --ignore=tests/installed "$@"
  fi
else
  status=1; failed+=("setup newest")
fi
if bash scripts/setup.sh delta-newest; then
  run delta-newest env VIEWLET_TEST_DELTA_SPARK=1 "${DELTA_NEWEST[@]}" tests/delta "$@"
else
  status=1; failed+=("setup delta-newest")
fi
run installed bash scripts/test-installed.sh "$@"

if [ -s "$VIEWLET_TEST_JVM_REPORT" ]; then
  echo "---- a test JVM died ----"
  cat "$VIEWLET_TEST_JVM_REPORT"
fi
rm -f "$VIEWLET_TEST_JVM_REPORT" "$CORPUS"
[ "$status" = 0 ] || echo "FAILED parts: ${failed[*]}"
exit $status
