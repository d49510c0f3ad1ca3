#!/usr/bin/env bash
# The text profile's sweeps on a lent GPU machine (the device tool of this workplace; ../shared/gpu-queue.md).
# A text-profile run is a small model (2.6M parameters, 4,096 tokens a step) that takes ~20 minutes on one CPU
# thread; on a GPU it is launch-bound, so one machine trains many of them side by side, one process each.
# The recipe is the text profile's, unchanged: run.device, run.compile and run.threads are bookkeeping
# (sinkpaper.train.config.BOOKKEEPING), so the runs keep their config hashes, and each stored run's
# provenance names the GPU in `hardware`. Eager, not compiled: inductor's compile would outlast the run.
#
#   scripts/device_text_sweep.sh start      launch the workers in their own process session, return at once
#   scripts/device_text_sweep.sh collect D  tar the store entries written since `start` into D/store-<time>.tgz
#   scripts/device_text_sweep.sh stop       end the workers (a run in flight is lost; its checkpoint stays)
# Provenance: the device's copy of the repository carries a stale .git, so the workers run with GIT_DIR unset
# to a path that does not exist, and the code version comes from sinkpaper/_version.py. Write that file here
# from a clean, committed checkout and carry it (device tool: carry [".devgpu"]; .devgpu is git-ignored locally):
#   mkdir -p .devgpu && printf '__version__ = version = "%s"\n' \
#     "$(python -c 'from sinkpaper.provenance import code_version; print(code_version())')" > .devgpu/_version.py
# Without it the runs say "+commit-unknown" rather than name a wrong commit.
# Back here, with the tarballs the tool returned (never overwriting a stored run), then regenerate and commit:
#   for t in store-*.tgz; do tar xzf "$t" -C /tmp/device; done
#   cp -n /tmp/device/runs/device/store/*.json.gz results/store/ && python -m sinkpaper report --write
#
# Workers: WORKERS (default 12) on the mapped families in scripts/sweep_text.sh's order; NOBOS (default 0) on
# the no-fixed-token search (configs/text_nobos.yaml, seed 0; complete since the first lease); with CHECK=1,
# one that trains the base run's seeds 0-2 into a separate store (runs/gpu-check/store) to compare with the
# same seeds trained on the CPU (results/device/gpu-check holds the first lease's).
# The workers write to a copy of the store under runs/ (git-ignored): the device tool copies the working tree
# again at every call, which removes files the last call added to results/store, and a sweep that no longer
# sees a run it stored trains it again (the first lease, 2026-11-25, lost 54 runs' time that way).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
STORE=runs/device/store
ARGS="--set run.device=cuda --set run.compile=false --keep-going --store $STORE"
case "${1:-}" in
  start)
    mkdir -p runs/text runs/gpu-check "$STORE"
    cp -n results/store/*.json.gz "$STORE"/ 2>/dev/null || true  # what is stored already is skipped
    if [ -d results/store/diverged ]; then
      mkdir -p "$STORE/diverged" && cp -n results/store/diverged/*.json "$STORE/diverged/" 2>/dev/null || true
    fi
    export GIT_DIR=/nonexistent                                      # see "Provenance" above
    if [ -f .devgpu/_version.py ]; then cp .devgpu/_version.py sinkpaper/_version.py; fi
    touch runs/.device-start
    # shellcheck disable=SC2086  # word splitting of ARGS is intended
    [ "${CHECK:-0}" = 1 ] && setsid nohup "$PY" -m sinkpaper sweep --profile text --config configs/optimization.yaml --points default \
      --seeds 0 1 2 --out runs/gpu-check $ARGS --store runs/gpu-check/store > runs/gpu-check/worker.log 2>&1 &
    for i in $(seq 1 "${NOBOS:-0}"); do
      # shellcheck disable=SC2086
      setsid nohup "$PY" -m sinkpaper sweep --profile text --config configs/text_nobos.yaml --seeds 0 \
        --out runs/text $ARGS > "runs/text/nobos-$i.log" 2>&1 &
      sleep 1
    done
    SWEEP_ARGS="$ARGS" WORKERS=${WORKERS:-12} STAGGER=1 PYTHON="$PY" \
      setsid nohup bash scripts/sweep_text.sh > runs/text/sweep.log 2>&1 &
    echo "started: $(date -u +%H:%M:%S)" ;;
  collect)
    out=${2:?collect needs a directory}
    name="$out/store-$(date -u +%H%M%S).tgz"
    find "$STORE" runs/gpu-check/store -name '*.json.gz' -newer runs/.device-start -not -path '*/.claims/*' \
      -print0 2>/dev/null | tar czf "$name" --null -T -
    echo "$(tar tzf "$name" | wc -l) store files in $name" ;;
  stop)
    pkill -f "sinkpaper sweep" || true
    pkill -f "sweep_text.sh" || true ;;
  *)
    echo "usage: $0 start | collect DIR | stop" >&2; exit 2 ;;
esac
