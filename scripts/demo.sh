#!/usr/bin/env bash
# Set up, then run the demo: TPC-H as Delta tables, incremental views, a stream of batches,
# every view checked against Spark's recompute after every batch.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/viewlet demo "$@"
