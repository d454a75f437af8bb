#!/usr/bin/env bash
# Create .venv with Viewlet and its dependencies (idempotent). The Spark extension jar is
# compiled during the package install, against the jars of the pyspark installed here.
set -euo pipefail
cd "$(dirname "$0")/.."

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
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip "setuptools>=77" wheel
.venv/bin/python -m pip install --quiet -r requirements.txt
# --no-build-isolation: the jar must compile against the pyspark installed above.
.venv/bin/python -m pip install --quiet --no-build-isolation --no-deps .
