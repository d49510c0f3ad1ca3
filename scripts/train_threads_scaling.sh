#!/bin/bash
# Thread scaling of training runs: one `python -m sinkpaper train` at 1 thread alone, two side by side
# at 1 thread each, and one at 2 threads, on the text-profile shapes. Run on a quiet machine from the repo root:
#   scripts/train_threads_scaling.sh [DTYPE=bf16] [COMPILE=false] [STEPS=60] [OUT=runs/threads] [JSON]
# Prints each run's median tokens/s (after 3 warm-up steps; 30 with COMPILE=true, past inductor's compile) and,
# with JSON (e.g. results/bench/thread-scaling-text.json), writes them with provenance (atomically).
set -euo pipefail
DTYPE=${1:-bf16}; COMPILE=${2:-false}; STEPS=${3:-60}; OUT=${4:-runs/threads}; JSON=${5:-}
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
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
"$PY" - "$OUT" "$JSON" "$LOAD_BEFORE" "$DTYPE" "$COMPILE" "$STEPS" <<'PY'
import json, os, statistics, sys
from pathlib import Path
from sinkpaper import provenance
from sinkpaper.files import atomic_write_text
out, path, load_before, dtype, compiled, steps = sys.argv[1:7]
skip = 30 if compiled == "true" else 3    # steps past warm-up (and inductor's compile)
runs = {}
for name in ("alone", "pairA", "pairB", "two"):
    log = [json.loads(x) for x in Path(out, name, "log.jsonl").read_text().splitlines() if x]
    pv = json.loads(Path(out, name, "metrics.json").read_text())["provenance"]
    tps = statistics.median([r["tokens_per_s"] for r in log if "tokens_per_s" in r][skip:])
    runs[name] = {"tokens_per_s": round(tps, 1), "threads": pv["threads"], "dtype": pv["dtype"], "compiled": pv["compiled"]}
    print(f"{name}: {tps:,.0f} tokens/s, {pv['threads']} thread(s), {pv['dtype']}, compiled {pv['compiled']}")
pair = (runs["pairA"]["tokens_per_s"] + runs["pairB"]["tokens_per_s"]) / runs["alone"]["tokens_per_s"]
two = runs["two"]["tokens_per_s"] / runs["alone"]["tokens_per_s"]
print(f"two runs side by side at 1 thread each: {pair:.2f}x one run alone; one run at 2 threads: {two:.2f}x")
if path:
    doc = {"provenance": {**provenance.stamp("cpu", cpu=provenance.cpu_model(), cores=os.cpu_count()),
                          "load_before": load_before, "load_after": " ".join(open("/proc/loadavg").read().split()[:3]),
                          "note": os.environ.get("NOTE", "")},
           "settings": {"dtype": dtype, "compiled": compiled == "true", "steps": int(steps), "median_after_step": skip,
                        "shapes": "text profile: 2 layers x 4 heads, d 128, FFN 512, vocab 8192, batch 64 x 64"},
           "runs": runs, "ratio_pair_vs_alone": round(pair, 3), "ratio_two_threads_vs_alone": round(two, 3)}
    atomic_write_text(path, json.dumps(doc, indent=1) + "\n")
    print(f"wrote {path}")
PY
