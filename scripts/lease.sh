#!/usr/bin/env bash
# The GPU work of one lease (15 minutes of device time, starts included; 10 minutes at most per call), in
# ../shared/gpu-queue.md's order, as device-tool calls that each return under $OUT what finished, even if cut:
#
#   bash scripts/lease.sh gpu      one queue (scripts/gpu_queue.txt): the calibration's open seeds, then the points
#                                  after it; every slot refilled as soon as its run ends; no run begun that the
#                                  time left cannot finish (python -m sinkpaper lease run; sinkpaper/train/lease.py)
#   bash scripts/lease.sh bench    the width (1, 2, 3, 4, 6 gpu-profile runs side by side, ~30 s each) into
#                                  $OUT/side-by-side-gpu.json, then ours vs transformers' Llama and the Triton
#                                  kernels vs SDPA flash (BENCH_SECONDS each): at most ~3 minutes
#   bash scripts/lease.sh text     text-profile runs only (scripts/sweep_text.sh's queue), for a lease whose gpu
#                                  queue is empty: beside gpu-profile runs they halved those runs' speed
#
# LEASE_SECONDS is this call's time for runs: the device time actually left (the device tool's status:
# budget_left_s) or the call's limit, whichever is less, minus ~40 s to return the files. From the repository root:
#   run(command="LEASE_SECONDS=500 bash scripts/lease.sh gpu", carry=[".devgpu"], timeout_s=560)
# Before the lease, from a clean committed checkout, record the code version the runs will name:
#   mkdir -p .devgpu && printf '__version__ = version = "%s"\n' \
#     "$(python -c 'from sinkpaper.provenance import code_version; print(code_version())')" > .devgpu/_version.py
# Rehearse on the CPU at tiny shapes first (seconds; its files are marked and never imported into results/store):
#   REHEARSE=1 OUT=/tmp/lease LEASE_SECONDS=90 bash scripts/lease.sh gpu
#
# What comes back: $OUT/store.tgz (the store entries and divergence records written in the call, rewritten every
# 20 s, so a call cut at its limit returns every run it finished; a run in flight is lost, never half-written),
# $OUT/lease.json (the queue, the device, every run's start, wall time and state, runs per minute), $OUT/lease.log,
# $OUT/logs.tgz (each run's own log), $OUT/*.json (benchmarks). Bring the runs into the store here (never
# overwriting a stored run; an entry whose code version or profile is not the lease's is refused, named), then
# regenerate the generated blocks, and commit with the provenance the runs carry:
#   bash scripts/lease.sh import <files_at>
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PYTHONPATH=${PYTHONPATH:-.}
BENCH_SECONDS=${BENCH_SECONDS:-60}
LEASE_DIR=${LEASE_DIR:-runs/lease}   # this call's run directories and store (a rehearsal may put them elsewhere)

if [ "${1:-}" = import ]; then
  src=${2:?import needs the folder the device tool returned}
  dest=${DEST:-results/store}
  "$PY" -m sinkpaper lease import "$src" --store "$dest" ${ALLOW_REHEARSAL:+--rehearsal}
  if [ "$dest" = results/store ]; then "$PY" -m sinkpaper report --write > /dev/null; fi
  # the call's own record (queue, device, each run's wall time, runs per minute) and its benchmarks, committed
  # with its runs
  stamp=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["started"].replace(" ", "T").replace(":", "")[:15])' \
          "$src/lease.json" 2>/dev/null || date -u +%Y-%m-%dT%H%M%S)
  if [ "$dest" = results/store ] && [ -f "$src/lease.json" ]; then
    mkdir -p results/leases
    cp "$src/lease.json" "results/leases/$stamp.json"
    [ -f "$src/lease.log" ] && cp "$src/lease.log" "results/leases/$stamp.log"
  fi
  if [ "$dest" = results/store ]; then
    for f in "$src"/*-gpu.json; do [ -f "$f" ] && cp "$f" results/bench/; done
  fi
  exit 0
fi

OUT=${OUT:?the device tool sets OUT: where results must be written}
mkdir -p "$OUT" "$LEASE_DIR"
T0=$(date +%s)
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$OUT/lease.log"; }

# Provenance: the device's copy carries a stale .git; runs name the version written from a clean checkout here.
export GIT_DIR=/nonexistent
if [ -f .devgpu/_version.py ]; then cp .devgpu/_version.py sinkpaper/_version.py; fi

if [ "${REHEARSE:-0}" = 1 ]; then    # the same commands at tiny shapes on the CPU: seconds, not minutes
  SETS=(--set run.device=cpu --set run.compile=false --set model.d_model=32 --set model.n_layers=4
        --set model.n_heads=2 --set model.d_ff=64 --set data.context=32 --set model.max_seq_len=64
        --set optim.batch_size=4 --set optim.steps=6 --set eval.every=3 --set eval.n_samples=8
        --set run.checkpoint_every=3 --set run.log_every=3 --set model.backend=eager
        --set data.path=data/sample/tokens.u16.xz)
  REHEARSAL=(--rehearsal)
  BENCH=(--profile cpu --steps 1 --no-compile)
  : "${TEXT_RUN_SECONDS:=10}"
else
  SETS=()
  REHEARSAL=()
  BENCH=(--profile gpu)
fi

case "${1:-}" in
  gpu)
    if [ -z "${LEASE_SECONDS:-}" ]; then
      echo "LEASE_SECONDS: this call's time for runs (the device time left, or the call's limit, less ~40 s)" >&2
      exit 2
    fi
    "$PY" -m sinkpaper lease run --queue "${QUEUE:-scripts/gpu_queue.txt}" --seconds "$LEASE_SECONDS" --slots "${SLOTS:-auto}" \
      --width-json "${WIDTH_JSON:-results/bench/side-by-side-gpu.json}" --out "$OUT" --lease-dir "$LEASE_DIR" \
      "${REHEARSAL[@]}" "${SETS[@]}" ;;
  bench)
    log "benchmarks"
    [ "${REHEARSE:-0}" = 1 ] && touch "$OUT/REHEARSAL"
    "$PY" -m sinkpaper lease width --widths ${WIDTHS:-1 2 3 4 6} --width-seconds "${WIDTH_SECONDS:-30}" \
      --width-json "$OUT/side-by-side-gpu.json" --lease-dir "$LEASE_DIR" "${SETS[@]}" >> "$OUT/lease.log" 2>&1 \
      || log "side-by-side measurement failed (see above)"
    timeout "$BENCH_SECONDS" "$PY" -m sinkpaper bench training "${BENCH[@]}" --json "$OUT/training-gpu.json" \
      >> "$OUT/lease.log" 2>&1 || log "training benchmark failed (see above)"
    if [ "${REHEARSE:-0}" = 1 ]; then
      TRITON_INTERPRET=1 timeout "$BENCH_SECONDS" "$PY" -m sinkpaper bench kernels --smoke --json "$OUT/kernels-gpu.json" \
        >> "$OUT/lease.log" 2>&1 || log "kernel benchmark failed (see above)"
    else
      timeout "$BENCH_SECONDS" "$PY" -m sinkpaper bench kernels --json "$OUT/kernels-gpu.json" >> "$OUT/lease.log" 2>&1 \
        || log "kernel benchmark failed (see above)"
    fi ;;
  text)
    if [ -z "${LEASE_SECONDS:-}" ]; then echo "LEASE_SECONDS: this call's time for runs" >&2; exit 2; fi
    end=$(( T0 + LEASE_SECONDS ))
    STORE=$LEASE_DIR/store
    mkdir -p "$STORE"
    cp -np results/store/*.json.gz "$STORE"/ 2>/dev/null || true
    sleep 1
    touch "$LEASE_DIR/.start"
    [ "${REHEARSE:-0}" = 1 ] && touch "$OUT/REHEARSAL"
    # what the import checks each entry against: this call's code version and profile
    "$PY" -c 'import json; from sinkpaper.provenance import code_version
print(json.dumps({"code_version": code_version(), "profile": "text"}))' > "$OUT/lease.json"
    log "text-profile runs in scripts/text_queue.txt's order (${WORKERS:-6} workers), until $(date -u -d "@$end" +%H:%M:%S)"
    SWEEP_ARGS="--set run.device=cuda --set run.compile=false --keep-going --store $STORE \
      --start-before $(date -u -d "@$(( end - ${TEXT_RUN_SECONDS:-100} ))" +%Y-%m-%dT%H:%M:%S) ${SETS[*]}" \
      OUT_DIR="$LEASE_DIR" WORKERS=${WORKERS:-6} STAGGER=1 PENDING_ONLY=1 PYTHON="$PY" setsid bash scripts/sweep_text.sh \
      > "$LEASE_DIR/text.log" 2>&1 &
    pgid=$!
    trap 'kill -TERM -- -"$pgid" 2>/dev/null || true' EXIT   # nothing of this call outlives it
    collect() {
      local list
      list=$(find "$STORE" \( -name '*.json.gz' -o -path '*/diverged/*.json' \) -newer "$LEASE_DIR/.start" \
             -not -path '*/.claims/*' 2>/dev/null | sort)
      [ -n "$list" ] || return 0
      # shellcheck disable=SC2086  # one path a word
      tar czf "$OUT/.store.tgz.tmp" -C "$STORE" ${list//$STORE\//} && mv "$OUT/.store.tgz.tmp" "$OUT/store.tgz"
    }
    while kill -0 "$pgid" 2>/dev/null && [ "$(date +%s)" -lt "$end" ]; do sleep 5; collect; done
    collect ;;
  *)
    echo "usage: $0 gpu | bench | text | import DIR" >&2; exit 2 ;;
esac
log "done: $(( $(date +%s) - T0 )) s"
