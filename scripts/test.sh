#!/usr/bin/env bash
# Set up, then run the test suite in the worlds users run Viewlet in (CI runs this).
#
#   scripts/test.sh [--full] [pytest options]
#
# Parts (each prints its output and time when it ends; the run fails if any part fails). They
# run in two streams side by side, each test JVM of its own (most tests wait on JVM start-up,
# child processes and Delta commits as much as they compute):
#   stream 1: main, seeds, restart
#   stream 2: killed, tpch, delta, spark, distributed, newest, delta-newest, installed,
#             installed-lowest
# (the two installed parts share ./build, so they run in one stream; the two ends' local Spark
# Connect tests take turns on pyspark's fixed port through a lock, tests/connect)
# The newest end's environments are set up in the background meanwhile.
#   main          the whole suite on the pinned environment (.venv: pyspark 4.0.1 with
#                 delta-spark 4.0.1, the lowest end of the supported range), every batch on
#                 the local target; it records the views it creates (the corpus below); the
#                 hash-seed test runs once, in the seeds part, and two tests/ops modules
#                 in the killed part
#   killed        the main part's tests of refreshes killed mid-batch and of a batch larger
#                 than the driver's heap (child drivers, minutes of them: in the other stream
#                 so that the two streams take about as long)
#   tpch          the TPC-H oracle, in a Spark driver of its own with Spark's default
#                 memory (1g): CREATE and every REFRESH of every TPC-H view
#   delta         tests/delta in a session with delta-spark 4.0.1 (its jar from Maven Central
#                 through Spark, as a user's session gets it)
#   spark, distributed   the random oracle (higher-order, and the star shapes) with every
#                 batch on Spark, its depth variants and three star shapes (a NATURAL FULL
#                 join, USING with the sides swapped, a star under UNION: which columns a
#                 star names is the front end's, checked whole on the other targets) with
#                 every batch distributed (executors write); Spark's default driver memory (1g)
#   restart       the oracle modules' first case each and TPC-H Q5, Q21, Q22a, every
#                 REFRESH run by another Python process with another PYTHONHASHSEED
#   seeds         every view the main part created, and every view of sql/, compiled under
#                 other hash seeds: the same programs
#   newest        the newest end: pyspark 4.3 with the embedded Delta (.venv-newest), the
#                 representative part (each oracle test function's first case, DDL, JVM
#                 and shell tests, TPC-H's smallest views)
#   delta-newest  tests/delta on the newest pair delta-spark supports (pyspark 4.2, delta-spark
#                 4.4: .venv-delta-newest)
#   installed     the wheel in a clean virtual environment with only its declared
#                 dependencies, Spark's default settings (scripts/test-installed.sh): pip's
#                 choice, the newest pyspark the package admits
#   installed-lowest   the same with the lowest pyspark the package admits
# --full also runs the whole suite, not only the representative part, on the newest end.
# The main, spark, distributed and newest parts' sessions evaluate without Spark's code
# generation (VIEWLET_TEST_INTERPRETED=1, conftest.py: tiny tables, nearly every query new, so
# compiling Java for each costs more than it saves); tpch, restart, delta and the installed
# parts keep Spark's defaults, codegen on.
# Test JVMs (every Spark driver, shell and child process) compile with the JIT's first tier
# only: they are short-lived, and on two cores the optimizing compiler's threads cost more
# CPU than its code saves (measured: 15-31% less CPU per part, the same results). The
# installed parts too: what they keep as a user has it is Spark's settings (a 1g driver), and
# the JIT's tier changes no result and no heap.
# A test JVM that dies is reported last, with its exit status and last words (conftest.py).
set -uo pipefail
cd "$(dirname "$0")/.."
FULL=0
if [ "${1:-}" = "--full" ]; then FULL=1; shift; fi
bash scripts/setup.sh || exit 1
LOGS=$(mktemp -d)
export JDK_JAVA_OPTIONS="${JDK_JAVA_OPTIONS:+$JDK_JAVA_OPTIONS }-XX:TieredStopAtLevel=1"
export VIEWLET_TEST_JVM_REPORT=$LOGS/jvm-report   # conftest.py: why a test JVM died, if one did
CORPUS=$LOGS/corpus                               # the views the main part creates
touch "$VIEWLET_TEST_JVM_REPORT" "$CORPUS"
# One after the other (both build the package in ./build): the newest end's environments,
# holding a lock that ready() waits for.
exec 8> "$LOGS/setup.lock"
flock 8
( for end in newest delta-newest; do
    bash scripts/setup.sh "$end" > "$LOGS/setup-$end.log" 2>&1
    echo $? > "$LOGS/setup-$end.rc"
  done ) &
exec 8>&-
ready() {   # ready END: wait for the setups; print END's; fail as it did
  flock "$LOGS/setup.lock" true
  echo "==== setup $1"
  cat "$LOGS/setup-$1.log"
  [ "$(cat "$LOGS/setup-$1.rc" 2>/dev/null)" = 0 ]
}
TPCH=tests/spark/test_tpch_nested.py
ORACLE=tests/spark/test_random_oracle.py
SEEDS=tests/compiler/test_deterministic.py   # run by the seeds part, with main's corpus
KILLED=(tests/ops/test_crash_safety.py tests/ops/test_scale_out.py)   # the killed part
DISTRIBUTED_STARS="star_natural_full_qualified or star_using_right_left_side or star_in_union"
LOW=(.venv/bin/python -m pytest)
NEWEST=(.venv-newest/bin/python -m pytest)
DELTA_NEWEST=(.venv-delta-newest/bin/python -m pytest)

run() {   # run NAME COMMAND...: its output, printed whole when it ends, its time, its status
  local name=$1 t0=$SECONDS
  shift
  "$@" > "$LOGS/$name.log" 2>&1
  echo $? > "$LOGS/$name.rc"
  ( flock 9
    echo "==== $name"
    cat "$LOGS/$name.log"
    echo "==== $name: $((SECONDS - t0)) s" ) 9> "$LOGS/print.lock"
}
skip() { echo 1 > "$LOGS/$1.rc"; echo "==== $1: not run ($2)"; }

stream1() {
  run main env VIEWLET_RECORD_VIEWS="$CORPUS" VIEWLET_TEST_INTERPRETED=1 \
    "${LOW[@]}" tests integration --ignore="$TPCH" --ignore=tests/installed \
    --ignore="$SEEDS" "${KILLED[@]/#/--ignore=}" --durations=15 "$@"
  run seeds env VIEWLET_VIEW_CORPUS="$CORPUS" "${LOW[@]}" "$SEEDS" "$@"
  run restart env VIEWLET_TEST_RESTART=1 VIEWLET_TEST_SUBSET=restart "${LOW[@]}" tests/spark "$@"
}

stream2() {
  run killed "${LOW[@]}" "${KILLED[@]}" "$@"     # child drivers only: no session of its own
  run tpch env VIEWLET_TEST_DRIVER_MEMORY=default "${LOW[@]}" "$TPCH" "$@"
  run delta env VIEWLET_TEST_DELTA_SPARK=1 "${LOW[@]}" tests/delta "$@"
  run spark env VIEWLET_TEST_ENGINE=spark VIEWLET_TEST_DRIVER_MEMORY=default \
    VIEWLET_TEST_INTERPRETED=1 "${LOW[@]}" "$ORACLE" -k "depthinf or star" "$@"
  run distributed env VIEWLET_TEST_ENGINE=distributed VIEWLET_TEST_DRIVER_MEMORY=default \
    VIEWLET_TEST_INTERPRETED=1 \
    "${LOW[@]}" "$ORACLE" -k "depth0 or depth1 or depth2 or $DISTRIBUTED_STARS" "$@"
  if ! ready newest; then
    skip newest "its setup failed"
  elif [ "$FULL" = 1 ]; then
    run newest env VIEWLET_TEST_INTERPRETED=1 "${NEWEST[@]}" tests integration \
      --ignore=tests/installed "$@"
  else
    run newest env VIEWLET_TEST_SUBSET=representative VIEWLET_TEST_INTERPRETED=1 \
      "${NEWEST[@]}" tests integration --ignore=tests/installed "$@"
  fi
  if ready delta-newest; then     # the setups are done: installed may build in ./build too
    run delta-newest env VIEWLET_TEST_DELTA_SPARK=1 "${DELTA_NEWEST[@]}" tests/delta "$@"
  else
    skip delta-newest "its setup failed"
  fi
  run installed bash scripts/test-installed.sh "$@"
  run installed-lowest bash scripts/test-installed.sh lowest "$@"
}

T0=$SECONDS
stream2 "$@" &
STREAM2=$!
stream1 "$@"
wait "$STREAM2"

failed=()
for name in main killed seeds delta-newest installed installed-lowest tpch delta spark distributed \
    restart newest; do
  [ "$(cat "$LOGS/$name.rc" 2>/dev/null)" = 0 ] || failed+=("$name")
done
if [ -s "$VIEWLET_TEST_JVM_REPORT" ]; then
  echo "---- a test JVM died ----"
  cat "$VIEWLET_TEST_JVM_REPORT"
fi
rm -rf "$LOGS"
echo "==== all parts: $((SECONDS - T0)) s"
[ "${#failed[@]}" = 0 ] || { echo "FAILED parts: ${failed[*]}"; exit 1; }
