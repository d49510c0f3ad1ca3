#!/usr/bin/env bash
# The GPU work of one lease (15 minutes of device time, starts included; 10 minutes at most per call), in
# ../shared/gpu-queue.md's order, as device-tool calls each under 9 minutes, each returning under $OUT what
# finished even if it is cut:
#
#   call 1  bash scripts/lease.sh calibrate   the gpu-profile calibration grid (configs/calibration.yaml; seed 0 of
#                                             GRID_POINTS, then seeds 1 and 2; WORKERS runs side by side) and,
#                                             beside it on the same GPU, TEXT_WORKERS text-profile runs still
#                                             missing (launch-bound, they leave most of the GPU to the grid)
#   call 2  bash scripts/lease.sh text        only the text-profile runs (scripts/sweep_text.sh's queue)
#   call 3  bash scripts/lease.sh bench       benchmarks: ours vs transformers' Llama, the Triton kernels vs SDPA
#                                             flash (BENCH_SECONDS each); worth the warm machine's last minutes
#
# Run each from the repository root with the device tool (timeout_s 560), carrying .devgpu (see below):
#   run(command="bash scripts/lease.sh calibrate", carry=[".devgpu"], timeout_s=560)
# Before the lease, from a clean committed checkout, record the code version the runs will name:
#   mkdir -p .devgpu && printf '__version__ = version = "%s"\n' \
#     "$(python -m sinkpaper.provenance 2>/dev/null || python -c 'from sinkpaper.provenance import code_version; print(code_version())')" \
#     > .devgpu/_version.py
# Rehearse on the CPU at tiny shapes first (seconds; nothing is stored in results/store):
#   REHEARSE=1 OUT=/tmp/lease LEASE_SECONDS=90 bash scripts/lease.sh calibrate
#
# What comes back: $OUT/store.tgz (every store entry finished so far, rewritten every 30 s and at the end, so a
# call cut at its limit still returns the runs it finished; the run in flight is lost, never half-written),
# $OUT/bench-*.json, $OUT/lease.log. Bring the runs into the store here (never overwriting a stored run), then
# regenerate the generated blocks and commit with the provenance the runs carry:
#   bash scripts/lease.sh import <files_at>        # untars into results/store, then `sinkpaper report --write`
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PYTHONPATH=${PYTHONPATH:-.}
if [ "${1:-}" = import ]; then OUT=${OUT:-/tmp}; fi
OUT=${OUT:?the device tool sets OUT: where results must be written}
BUDGET=${LEASE_SECONDS:-500}        # seconds of work in this call; the rest of the 9 minutes is margin
WORKERS=${WORKERS:-3}
TEXT_WORKERS=${TEXT_WORKERS:-0}
GRID_SETS=()
GRID_TAG=""   # in the grid's log names: the eager retry keeps the compiled runs' logs (and their errors)
# The grid's points this lease trains. A run cannot outlive its call (the machine is bare at each start and a
# checkpoint is too large to come back), so the default is the 4-layer points, which fit beside each other in
# one call; the 6- and 8-layer ones wait for a measured speed (GRID_POINTS="L6_d384_lr2e-3 ..."). A call trains
# seed 0 of its points, then seeds 1 and 2 of those that can still clear the bar (no stored seed below it);
# what is stored is skipped. A larger point's seed 0 is best given a call of its own.
GRID_POINTS=${GRID_POINTS:-"L4_d256_lr2e-3 L4_d256_lr4e-3 L4_d256_lr2e-3_wd0.1"}
BENCH_SECONDS=${BENCH_SECONDS:-120}
LEASE_DIR=${LEASE_DIR:-runs/lease}   # this call's run directories and store (a rehearsal may put them elsewhere)
STORE=$LEASE_DIR/store
mkdir -p "$OUT" "$STORE" "$LEASE_DIR"
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
  BENCH=(--profile cpu --steps 1 --no-compile)
  : "${TEXT_RUN_SECONDS:=10}" "${GRID_RUN_SECONDS:=10}"   # a rehearsal's runs take seconds
  [ "${1:-}" = import ] || touch "$OUT/REHEARSAL"   # its runs have tiny shapes: never for results/store
else
  SETS=()
  BENCH=(--profile gpu)
fi

collect() {   # every store entry written in this call, as one tarball written whole (atomic rename)
  local list
  tar czf "$OUT/.logs.tgz.tmp" "$LEASE_DIR"/*.log 2>/dev/null && mv "$OUT/.logs.tgz.tmp" "$OUT/logs.tgz" || true
  list=$(find "$STORE" -name '*.json.gz' -newer "$LEASE_DIR/.start" -not -path '*/.claims/*' 2>/dev/null | sort)
  [ -n "$list" ] || return 0
  tar czf "$OUT/.store.tgz.tmp" $list && mv "$OUT/.store.tgz.tmp" "$OUT/store.tgz"
}

sweep_until() {   # sweep_until END_EPOCH CONFIG SEEDS... : WORKERS sweeps share the store; none starts after END
  local end=$1 config=$2; shift 2
  local seed0=$1
  # a grid run takes minutes: none starts that cannot finish before END. A 4-layer point took 265 s on an H200,
  # compiled, three side by side beside six text workers (compile included); a 6- or 8-layer one, more
  local stop; stop=$(date -u -d "@$(( end - ${GRID_RUN_SECONDS:-300} ))" +%Y-%m-%dT%H:%M:%S)
  for i in $(seq 1 "$WORKERS"); do
    "$PY" -m sinkpaper sweep --profile "${PROFILE:-gpu}" --config "$config" --points $GRID_POINTS --seeds "$@" --out "$LEASE_DIR" \
      --store "$STORE" --keep-going --start-before "$stop" "${GRID_SETS[@]}" "${SETS[@]}" > "$LEASE_DIR/grid$GRID_TAG-$seed0-$i.log" 2>&1 &
    sleep 1
  done
}

TEXT_PGID=""
stop_text() { if [ -n "$TEXT_PGID" ]; then kill -TERM -- -"$TEXT_PGID" 2>/dev/null || true; fi; }
trap stop_text EXIT   # nothing of this call outlives it (a rehearsal's workers would go on burning the CPU)

collect_while() {   # collect_while END_EPOCH CMD... : collect every 30 s while CMD succeeds, until END
  local end=$1; shift
  while "$@" && [ "$(date +%s)" -lt "$end" ]; do sleep 5; [ $(( $(date +%s) % 30 )) -lt 5 ] && collect; done
  collect
}
has_jobs() { [ -n "$(jobs -pr)" ]; }
grid_running() { pgrep -f -- "--config configs/calibration.yaml" > /dev/null; }

wait_collecting() {   # wait_collecting END_EPOCH : collect until every worker ends; at END stop them (their runs are lost)
  collect_while "$1" has_jobs
  if has_jobs; then
    log "time is up: stopping the runs in flight"
    stop_text
    pkill -f -- "--out $LEASE_DIR" 2>/dev/null || true; kill $(jobs -pr) 2>/dev/null || true
    wait 2>/dev/null || true
    collect
  fi
}

wait_grid() { collect_while "$1" grid_running; }   # until the grid's sweeps end (text workers go on)

start_text() {   # start_text END_EPOCH N : N workers on the text-profile runs still missing, in the queue's order
  local end=$1 n=$2
  log "text-profile runs in scripts/text_queue.txt's order ($n workers), until $(date -u -d "@$end" +%H:%M:%S)"
  SWEEP_ARGS="--set run.device=cuda --set run.compile=false --keep-going --store $STORE \
    --start-before $(date -u -d "@$(( end - ${TEXT_RUN_SECONDS:-100} ))" +%Y-%m-%dT%H:%M:%S) ${SETS[*]}" \
    OUT_DIR="$LEASE_DIR" WORKERS=$n STAGGER=1 PENDING_ONLY=1 PYTHON="$PY" setsid bash scripts/sweep_text.sh > "$LEASE_DIR/text.log" 2>&1 &
  TEXT_PGID=$!   # its own process group: its workers loop over the queue, and stopping must reach every one
}

# what the store holds already is skipped (copied with its times, so only this call's runs are collected)
if [ "${1:-}" != import ]; then
  cp -np results/store/*.json.gz "$STORE"/ 2>/dev/null || true
  sleep 1
  touch "$LEASE_DIR/.start"
fi
case "${1:-}" in
  calibrate)
    end=$(( T0 + BUDGET ))
    if [ "$TEXT_WORKERS" -gt 0 ]; then start_text "$end" "$TEXT_WORKERS"; fi
    log "calibration grid, seed 0, until $(date -u -d "@$end" +%H:%M:%S)"
    GRID_SETS=()
    sweep_until "$end" configs/calibration.yaml 0
    wait_grid "$end"
    if grep -q "^\[.*\] failed calibration/" "$LEASE_DIR"/grid-0-*.log && [ "$(date +%s)" -lt $(( end - 200 )) ]; then
      # a compiled run that fails does so at its first step: the rest of the lease trains the grid eager
      # (run.compile is bookkeeping: the same runs, the same config hashes)
      log "compiled grid runs failed (see logs.tgz): the grid again, eager"
      GRID_SETS=(--set run.compile=false)
      GRID_TAG=-eager
      sweep_until "$end" configs/calibration.yaml 0
      wait_grid "$end"
    fi
    # seeds 1 and 2 only where they can change the answer: the bar asks it of every seed, so a point with a
    # stored seed below it is decided
    open=$("$PY" -c 'import sys; from sinkpaper.results.calibration import still_open
print(" ".join(still_open(sys.argv[2:], sys.argv[1])))' "$STORE" $GRID_POINTS) || open=$GRID_POINTS
    if [ -z "$open" ]; then
      log "no point of GRID_POINTS can still clear the bar: seeds 1 and 2 skipped"
    elif [ "$(date +%s)" -lt $(( end - 60 )) ]; then
      log "calibration grid, seeds 1 and 2 of $open"
      GRID_POINTS=$open sweep_until "$end" configs/calibration.yaml 1 2
    else
      log "no time left in this call for seeds 1 and 2 of $open"
    fi
    wait_collecting "$end" ;;
  bench)
    log "benchmarks"
    timeout "$BENCH_SECONDS" "$PY" -m sinkpaper bench training "${BENCH[@]}" --json "$OUT/bench-training.json" \
      >> "$OUT/lease.log" 2>&1 || log "training benchmark failed (see above)"
    if [ "${REHEARSE:-0}" = 1 ]; then
      TRITON_INTERPRET=1 timeout "$BENCH_SECONDS" "$PY" -m sinkpaper bench kernels --smoke --json "$OUT/bench-kernels.json" \
        >> "$OUT/lease.log" 2>&1 || log "kernel benchmark failed (see above)"
    else
      timeout "$BENCH_SECONDS" "$PY" -m sinkpaper bench kernels --json "$OUT/bench-kernels.json" >> "$OUT/lease.log" 2>&1 \
        || log "kernel benchmark failed (see above)"
    fi ;;
  text)
    end=$(( T0 + BUDGET ))
    start_text "$end" "$WORKERS"
    wait_collecting "$end" ;;
  import)
    src=${2:?import needs the folder the device tool returned}
    dest=${DEST:-results/store}
    if [ -e "$src/REHEARSAL" ] && [ "$dest" = results/store ]; then
      echo "$src holds a rehearsal's runs (tiny shapes, same names): they never go into results/store; set DEST" >&2
      exit 2
    fi
    tmp=$(mktemp -d)
    tar xzf "$src/store.tgz" -C "$tmp"
    n=0
    for f in $(find "$tmp" -name '*.json.gz'); do
      if [ -e "$dest/$(basename "$f")" ]; then continue; fi    # never overwrite a stored run
      cp "$f" "$dest"/ && n=$((n + 1))
    done
    rm -rf "$tmp"
    echo "$n new run(s) in $dest"
    if [ "$dest" = results/store ]; then "$PY" -m sinkpaper report --write > /dev/null; fi ;;
  *)
    echo "usage: $0 calibrate | text | bench | import DIR" >&2; exit 2 ;;
esac
log "done: $(( $(date +%s) - T0 )) s"
