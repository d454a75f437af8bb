#!/usr/bin/env bash
# Set up, then run the whole test suite (compiler, JVM extension, Spark oracle tests, demo).
# The TPC-H oracle module runs in a pytest process (one Spark driver) of its own: after the
# rest of the suite, the wide joins' query plans kept a shared driver's heap in full GC.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
TPCH=tests/spark/test_tpch_nested.py
.venv/bin/python -m pytest tests integration --ignore="$TPCH" "$@"; first=$?
.venv/bin/python -m pytest "$TPCH" "$@"; second=$?
exit $(( first != 0 ? first : second ))
