#!/usr/bin/env bash
# The package as a user installs it: build the wheel, install it into a new virtual
# environment with only its declared dependencies (pip resolves the newest pyspark the
# package admits, as `pip install viewlet` does) and the test extra (pytest, chispa), then
# run tests/installed there with Spark's default settings.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
VENV=.venv-installed
rm -rf "$VENV" build/wheel
"$PYTHON" -m pip wheel --quiet --no-deps --wheel-dir build/wheel .
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
WHEEL=$(ls build/wheel/viewlet-*.whl)
"$VENV/bin/python" -m pip install --quiet "$WHEEL[test]"
"$VENV/bin/python" -m pip list 2>/dev/null | grep -iE "^(pyspark|duckdb|deltalake|sqlglot|pyarrow|pandas) "
VIEWLET_TEST_INSTALLED=1 PATH="$PWD/$VENV/bin:$PATH" \
  "$VENV/bin/python" -m pytest tests/installed -p no:cacheprovider "$@"
