#!/usr/bin/env bash
# The benchmark's one documented command (see integration/bench/README.md).
#
#   integration/bench/run.sh [LABEL] [viewlet bench options...]
#
# Runs `python -m viewlet bench` from this checkout and writes the results (results.json,
# results.md, PNG plots) to integration/bench/results/<UTC date>-<LABEL>/. Without options it
# runs the issue's full grid: SF 0.1 and 1, batches of 1k, 10k and 100k tuples, 5 measured
# batches each (the checks sample every 2nd batch and the last one), every view of
# q1,q3,q6,q10,q17a,q18a,q22a,vwap that has a definition file, at depths ho, 1 and 0.
# Set PYTHON to use another interpreter than the checkout's .venv (or /work/main/.venv).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
label="${1:-full}"
shift || true
python="${PYTHON:-}"
if [ -z "$python" ]; then
  for p in "$root/.venv/bin/python" /work/main/.venv/bin/python; do
    if [ -x "$p" ]; then python="$p"; break; fi
  done
fi
python="${python:-python3}"
out="$here/results/$(date -u +%Y-%m-%d)-$label"
if [ $# -eq 0 ]; then
  set -- --scale 0.1,1 --batch-sizes 1000,10000,100000 --batches 5 --check sample:2
fi
cd "$root"
PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" exec "$python" -m viewlet bench \
  --label "$label" --out "$out" "$@"
