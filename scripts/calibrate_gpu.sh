#!/usr/bin/env bash
# One command for the gpu-profile calibration on a lent H100 (no network there; run from the repo root with
# the offline corpus carried in data/corpus/). Each run writes its metrics.json under runs/calibration/ and
# its result into results/store/; commit both with the log of this script.
#   bash scripts/calibrate_gpu.sh            # the candidate sizes, then the paper's direction checks
#   bash scripts/calibrate_gpu.sh checks     # only the direction checks (after the gpu profile is updated)
set -euo pipefail
PY=${PYTHON:-python3}
export PYTHONPATH=${PYTHONPATH:-.}
run() { "$PY" -m sinkpaper train --profile gpu --out "runs/calibration/$1" --config "configs/$2.yaml" --sweep "${@:3}"; }
if [[ "${1:-all}" != checks ]]; then
  run sizes calibration
fi
# The paper's main directions at the calibrated profile: LR and steps, weight decay, fixed token position,
# K biases, sigmoid without normalization.
run optimization optimization default lr_x2 lr_x0.5
run loss loss wd_0.1 wd_0.5
run data data fixed_pos1 fixed_pos2
run biases biases none k_bias kv_bias
run attention attention softmax sigmoid
"$PY" -m sinkpaper bench training --profile gpu --json runs/calibration/bench-training.json
