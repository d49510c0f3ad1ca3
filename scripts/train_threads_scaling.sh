#!/bin/bash
# Thread scaling of training runs (issue 14): one `python -m sinkpaper train` at 1 thread alone, two side by side
# at 1 thread each, and one at 2 threads, on the text-profile shapes. Run on a quiet machine from the repo root:
#   scripts/train_threads_scaling.sh [DTYPE=bf16] [COMPILE=false] [STEPS=60] [OUT=runs/threads]
# Prints each run's median tokens/s (after 3 warm-up steps) and its evaluation share.
set -euo pipefail
DTYPE=${1:-bf16}; COMPILE=${2:-false}; STEPS=${3:-60}; OUT=${4:-runs/threads}
PY=${PYTHON:-python}
S=(--config configs/optimization.yaml --profile cpu --no-store
   --set model.d_model=128 --set model.n_layers=2 --set model.n_heads=4 --set model.d_ff=512
   --set model.max_seq_len=64 --set data.context=64 --set optim.batch_size=64 --set optim.steps="$STEPS"
   --set eval.every=100000 --set run.log_every=1 --set run.checkpoint_every=100000
   --set run.dtype="$DTYPE" --set run.compile="$COMPILE")
rm -rf "$OUT"; mkdir -p "$OUT"
"$PY" -m sinkpaper train "${S[@]}" --set run.threads=1 --out "$OUT/alone" > "$OUT/alone.log" 2>&1
"$PY" -m sinkpaper train "${S[@]}" --set run.threads=1 --set seed=1 --out "$OUT/pairA" > "$OUT/pairA.log" 2>&1 &
"$PY" -m sinkpaper train "${S[@]}" --set run.threads=1 --set seed=2 --out "$OUT/pairB" > "$OUT/pairB.log" 2>&1
wait
"$PY" -m sinkpaper train "${S[@]}" --set run.threads=2 --out "$OUT/two" > "$OUT/two.log" 2>&1
"$PY" - "$OUT" <<'PY'
import json, statistics, sys
from pathlib import Path
out = Path(sys.argv[1])
tps = {}
for name in ("alone", "pairA", "pairB", "two"):
    log = [json.loads(x) for x in (out / name / "log.jsonl").read_text().splitlines() if x]
    tps[name] = statistics.median([r["tokens_per_s"] for r in log if "tokens_per_s" in r][3:])
    pv = json.loads((out / name / "metrics.json").read_text())["provenance"]
    print(f"{name}: {tps[name]:,.0f} tokens/s, {pv['threads']} thread(s), {pv['dtype']}, compiled {pv['compiled']}")
print(f"two runs side by side at 1 thread each: {(tps['pairA'] + tps['pairB']) / tps['alone']:.2f}x one run alone; "
      f"one run at 2 threads: {tps['two'] / tps['alone']:.2f}x")
PY
