#!/usr/bin/env bash
# The Sections 4-7 sweeps at the text profile (real text on the CPU), in the book's order of importance.
# Start it in the background; it runs for hours and survives nothing but itself:
#   nohup bash scripts/sweep_text.sh > runs/text/sweep.log 2>&1 &
# WORKERS (default 2) processes share one results store: each run is claimed before it trains, so no run is
# trained twice, a killed worker's run is taken over (from its last checkpoint) by the next sweep, and stored
# runs are skipped. The checkpoints live under runs/, which is not committed: on a new machine (a new session's
# checkout) the runs that were in flight start over. So a session that ends at a known time starts no run it
# cannot finish: SWEEP_ARGS="--start-before 2026-11-25T20:05" (UTC), one run's length before the end.
# Where it stands (the families mapped onto the text profile):
#   python -m sinkpaper sweep --status --profile text \
#     --config configs/{optimization,loss,data,biases,attention,packing,architecture}.yaml
# One thread per run (the text profile's run.threads), so WORKERS runs use WORKERS cores.
# The reruns of runs that trained the old bf16 softmax (sinkpaper.train.recheck): the seed-0 rechecks go to their own
# store, where the committed rule judges them beside the stored seeds; the retrains replace the stored runs:
#   QUEUE=scripts/recheck_seed0_queue.txt PENDING_ONLY=1 FALLBACK=0 OUT_DIR=runs/recheck \
#     SWEEP_ARGS="--store results/recheck" bash scripts/sweep_text.sh
#   QUEUE=scripts/recheck_queue.txt PENDING_ONLY=1 FALLBACK=0 SWEEP_ARGS=--retrain-bf16-softmax \
#     bash scripts/sweep_text.sh
# SWEEP_ARGS adds arguments to every sweep; on a lent GPU machine (scripts/device_text_sweep.sh):
#   SWEEP_ARGS="--set run.device=cuda --set run.compile=false --keep-going"
# run.device and run.compile are bookkeeping: the runs keep the text profile's config hashes, and each stored
# run's provenance names the hardware it ran on.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
WORKERS=${WORKERS:-2}
STAGGER=${STAGGER:-20}   # seconds between worker starts
read -r -a EXTRA <<< "${SWEEP_ARGS:-}"
SEEDS=${SEEDS:-"0 1 2"}
mkdir -p "${OUT_DIR:-runs/text}"
# The base run (the emergence curve) and the paper's main directions first, then the rest of each family.
FAMILIES="configs/optimization.yaml configs/loss.yaml configs/data.yaml configs/biases.yaml configs/attention.yaml
          configs/packing.yaml configs/architecture.yaml configs/after_paper.yaml configs/onsets.yaml
          configs/layers_4.yaml configs/budget.yaml"
# FIRST runs point by point in the order given (a single sweep would go family by family), and the environment
# can set it. After the base and the main directions come the points that complete a claim in the fewest runs
# (post-norm, softpick; then document masks, heads, the swish/ReGLU FFNs (6 runs complete a claim), softmax sums,
# kernels, the other FFNs, positional encodings (15 runs for one claim)).
FIRST=${FIRST:-"default dtype_fp32 lr_x2 lr_x0.5 lr_x0.5_steps_x2 wd_0 wd_0.1 wd_1 wd_2 fixed_pos2 fixed_pos3
       no_fixed_token random_first kv_bias k_bias sink_token v_bias sigmoid sigmoid_norm elu kernel_elu causal bos
       post_norm softpick doc_mask bos_doc_mask heads_8 heads_2 heads_1 heads_add ffn_swish ffn_reglu softmax_sum_2
       softmax_sum_0.1 softmax_sum_0.05 kernel_identity_z1 kernel_mlp_maxabs kernel_mlp_z1 ffn_relu ffn_gelu ffn_geglu
       pos_nope pos_absolute pos_learnable pos_relative pos_alibi"}
# QUEUE (a file of point names, default scripts/text_queue.txt: the points that decide a verdict first) replaces
# FIRST and is read again before each point, so points can be appended while the workers run (PENDING_ONLY=1:
# only its entries with a run left, found once at the start); QUEUE= (empty) uses FIRST. An entry POINT@3,4
# trains those seeds of the point instead of SEEDS (the seeds added to settle a claim whose seeds split: the
# registry reads seeds 3 and 4 where every point of the claim has them).
QUEUE=${QUEUE-scripts/text_queue.txt}
OUT_DIR=${OUT_DIR:-runs/text}
if [ -n "$QUEUE" ] && [ "${PENDING_ONLY:-0}" = 1 ]; then
  # one process finds the entries that still have a run to train, so each worker starts training at once
  # instead of starting a process per stored point to find it done (minutes of a lent GPU's call); entries
  # appended to QUEUE after this are not seen
  # shellcheck disable=SC2086
  "$PY" -m sinkpaper sweep --profile text --config $FAMILIES --seeds $SEEDS --pending "$QUEUE" "${EXTRA[@]}" \
    > "$OUT_DIR/queue.pending"
  QUEUE=$OUT_DIR/queue.pending
fi
nth_point() {  # the n-th point (1-based) of the queue file, or of FIRST
  if [ -n "$QUEUE" ]; then tr -s ' \t\n' '\n' < "$QUEUE" | grep -v '^$' | sed -n "${1}p"
  else echo $FIRST | tr -s ' ' '\n' | sed -n "${1}p"; fi
}
for i in $(seq 1 "$WORKERS"); do
  # shellcheck disable=SC2086  # word splitting of the lists is intended
  (
    n=1
    while item=$(nth_point "$n") && [ -n "$item" ]; do
      point=${item%@*}; seeds=$SEEDS
      [ "$item" = "$point" ] || seeds=${item#*@}; seeds=${seeds//,/ }
      "$PY" -m sinkpaper sweep --profile text --config $FAMILIES --points "$point" --seeds $seeds --out "$OUT_DIR" \
        "${EXTRA[@]}" || true
      n=$((n + 1))
    done
    # then every point left (FALLBACK=0: the queue only, e.g. a queue of reruns)
    [ "${FALLBACK:-1}" = 0 ] || "$PY" -m sinkpaper sweep --profile text --config $FAMILIES --seeds $SEEDS \
      --out "$OUT_DIR" "${EXTRA[@]}"
  ) > "$OUT_DIR/worker-$i.log" 2>&1 &
  sleep "$STAGGER"   # let each worker claim its run before the next one looks
done
wait
