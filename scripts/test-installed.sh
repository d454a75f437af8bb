#!/usr/bin/env bash
# The package as a user installs it: build the wheel, install it into a new virtual
# environment with only its declared dependencies and the test extra (pytest, chispa), then
# run tests/installed there with Spark's default settings.
#
#   scripts/test-installed.sh [lowest] [pytest options]
#
# Without `lowest` pip resolves the newest pyspark the package admits (what `pip install
# viewlet` gives); with it, the lowest pyspark the package admits (a user whose environment
# pins it), everything else resolved by pip.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
VENV=.venv-installed
CONSTRAINTS=()
LOWEST=
if [ "${1:-}" = "lowest" ]; then
  shift
  VENV=.venv-installed-lowest
  LOWEST=$("$PYTHON" - <<'PY'
import re, tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
spec = next(d for d in deps if d.startswith("pyspark"))
print(re.search(r">=\s*([0-9.]+)", spec).group(1))
PY
)
  mkdir -p build
  echo "pyspark==$LOWEST" > build/lowest-constraints.txt
  CONSTRAINTS=(--constraint build/lowest-constraints.txt)
fi
rm -rf "$VENV" build/wheel
"$PYTHON" -m pip wheel --quiet --no-deps --wheel-dir build/wheel .
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
WHEEL=$(ls build/wheel/viewlet-*.whl)
"$VENV/bin/python" -m pip install --quiet "${CONSTRAINTS[@]}" "$WHEEL[test]"
"$VENV/bin/python" -m pip list 2>/dev/null | grep -iE "^(pyspark|duckdb|deltalake|sqlglot|pyarrow|pandas) "
VIEWLET_TEST_INSTALLED=1 VIEWLET_TEST_INSTALLED_PYSPARK=${LOWEST:+lowest} PATH="$PWD/$VENV/bin:$PATH" \
  "$VENV/bin/python" -m pytest tests/installed -p no:cacheprovider "$@"
