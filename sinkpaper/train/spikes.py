"""Loss and gradient spikes in a run's log, by a rule fixed before the runs it judges.

A spike is a logged step after warm-up where
- the training loss is more than ``LOSS_JUMP`` nats above the lowest training loss logged before it, on at least
  ``LOSS_LINES`` consecutive log lines (one batch's loss is one line: at a quarter batch, 16 x 64 tokens, single
  lines reach 1.0-1.2 nats above the minimum in runs that train smoothly; the bf16-softmax blow-ups lasted
  40-300 steps, 2-15 lines), or
- the largest gradient norm since the previous log line is more than ``GRAD_RATIO`` times the median of those
  logged after warm-up before it (from ``GRAD_HISTORY`` of them on; runs stored before the trainer logged gradient
  norms are judged on the loss alone).
Consecutive flagged log lines are one spike. A batch's loss at the text recipe moves by about 0.1 nat between log
lines; 1 nat is the gap between a model that reads context and the unigram level, so a jump of it is never noise.
The trainer records the spikes in every run's result; the registry names a spiked run and does not count it.
"""
from __future__ import annotations

import statistics

LOSS_JUMP = 1.0
LOSS_LINES = 2
GRAD_RATIO = 20.0
GRAD_HISTORY = 5


def find_spikes(curve: list[dict], warmup: int) -> list[dict]:
    """The spikes of a logged curve (each line with "step" and "loss", optionally "grad_norm_max"): a list of
    {"step": first flagged step, "until": last, "kind": "loss" | "grad_norm" | "loss and grad_norm",
    "peak": the largest loss above its running minimum (nats), "grad_ratio": the largest gradient-norm ratio}."""
    spikes: list[dict] = []
    low = float("inf")
    grads: list[float] = []
    open_spike = None
    for row in sorted((r for r in curve if "loss" in r), key=lambda r: r["step"]):
        step, loss, grad = row["step"], float(row["loss"]), row.get("grad_norm_max")
        after = step > warmup
        jump = loss - low if after and low < float("inf") else 0.0
        ratio = (grad / statistics.median(grads) if after and grad is not None and len(grads) >= GRAD_HISTORY
                 and statistics.median(grads) > 0 else 0.0)
        kinds = [k for k, hit in (("loss", jump > LOSS_JUMP), ("grad_norm", ratio > GRAD_RATIO)) if hit]
        if kinds:
            if open_spike is None:
                open_spike = {"step": step, "until": step, "kind": set(), "peak": 0.0, "grad_ratio": 0.0, "lines": 0}
                spikes.append(open_spike)
            open_spike["until"] = step
            open_spike["lines"] += 1
            open_spike["kind"].update(kinds)
            open_spike["peak"] = round(max(open_spike["peak"], jump), 3)
            open_spike["grad_ratio"] = round(max(open_spike["grad_ratio"], ratio), 1)
        else:
            open_spike = None
            if after and grad is not None:
                grads.append(float(grad))   # the median a spike is judged against is of unflagged lines
        low = min(low, loss)
    kept = []
    for sp in spikes:
        if sp["kind"] == {"loss"} and sp["lines"] < LOSS_LINES:
            continue
        sp["kind"] = " and ".join(k for k in ("loss", "grad_norm") if k in sp["kind"])
        del sp["lines"]
        kept.append(sp)
    return kept


def spikes_of(payload: dict) -> list[dict]:
    """A stored run's spikes, found in its logged curve by today's rule (the result's own record, written by the
    code it trained with, only where no curve is stored)."""
    curve = payload.get("curve") or []
    if not curve:
        return list(payload.get("result", {}).get("spikes", []))
    warmup = int((payload.get("config", {}).get("optim") or {}).get("warmup", 0))
    return find_spikes(curve, warmup)
