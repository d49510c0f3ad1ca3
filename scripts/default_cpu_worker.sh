#!/usr/bin/env bash
# One worker on the paper's default on a CPU (configs/default_cpu.yaml), from run to run as its plan decides:
# each run trains to its end (resuming from its last checkpoint, or from the copy `store restore` brings back),
# then the store says what the plan trains next (python -m sinkpaper default-plan), until the plan is done.
#   nohup bash scripts/default_cpu_worker.sh >> runs/default_cpu/worker.log 2>&1 &
# A sweep that ends without storing what it was asked for (killed, or another worker holds the run) stops the
# loop: the same runs are never started twice in a row.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
previous=""
while next=$("$PY" -m sinkpaper default-plan --args) && [ -n "$next" ]; do
  if [ "$next" = "$previous" ]; then
    echo "default_cpu_worker: the last sweep did not store its runs ($next); stopping" >&2
    exit 1
  fi
  "$PY" -m sinkpaper default-plan
  # shellcheck disable=SC2086  # the sweep's arguments, one word each
  "$PY" -m sinkpaper sweep $next --out runs/default_cpu
  previous=$next
done
"$PY" -m sinkpaper default-plan
