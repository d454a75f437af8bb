#!/usr/bin/env bash
# Create a virtual environment with Viewlet and its dependencies (idempotent). The Spark
# extension jar is compiled during the package install, against the pyspark installed there.
#
#   scripts/setup.sh                .venv: requirements.txt, the pinned development
#                                   environment (the lowest end of the supported range)
#   scripts/setup.sh newest         .venv-newest: requirements-newest.txt (the newest pyspark)
#   scripts/setup.sh delta-newest   .venv-delta-newest: requirements-delta-newest.txt (the
#                                   newest pyspark delta-spark supports, with delta-spark)
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  "") VENV=.venv; REQUIREMENTS=requirements.txt ;;
  newest|delta-newest) VENV=.venv-$1; REQUIREMENTS=requirements-$1.txt ;;
  *) echo "usage: scripts/setup.sh [newest | delta-newest]" >&2; exit 2 ;;
esac

if ! command -v java >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ]; then
  echo "Viewlet needs Java 17 or newer (Spark runs on the JVM), and none was found." >&2
  echo "Install one, e.g. 'sudo apt-get install openjdk-17-jre-headless', or set JAVA_HOME." >&2
  exit 2
fi
JAVA_BIN="${JAVA_HOME:+$JAVA_HOME/bin/}java"
JAVA_MAJOR=$("$JAVA_BIN" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
if [ -n "$JAVA_MAJOR" ] && [ "$JAVA_MAJOR" -lt 17 ]; then
  echo "Viewlet needs Java 17 or newer; found Java $JAVA_MAJOR ($JAVA_BIN)." >&2
  exit 2
fi

PYTHON="${PYTHON:-python3}"
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip "setuptools>=77" wheel
"$VENV/bin/python" -m pip install --quiet -r "$REQUIREMENTS"
# --no-build-isolation: the jar must compile against the pyspark installed above.
"$VENV/bin/python" -m pip install --quiet --no-build-isolation --no-deps .
