#!/usr/bin/env bash
# Set up, then run the whole test suite (compiler, JVM extension, Spark oracle tests, demo).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest tests integration "$@"
