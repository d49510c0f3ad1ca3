"""The stored runs that trained through the reference operator's softmax in bf16, and the rule, fixed before their
reruns, that decides whether a point's stored seeds stand.

Until the reference operator computed its core in fp32 (sinkpaper.attention.operators), CPU bf16 autocast left its
`logsumexp` and `exp` in bf16: at the logits training reaches its gradients were 10-20 % off and more, and a run
could blow up. Every CPU bf16 run whose attention took the reference route trained through it: every softmax
variant SDPA does not compute, always, and plain causal softmax from the CPU route change on (its provenance
names the route). A run trained since the fix names the fp32 core in its provenance
(``route.numerics``, :data:`sinkpaper.models.model.ATTENTION_NUMERICS`).

Two lists (the sweep's ``--retrain-bf16-softmax`` trains a listed point's affected runs again, replacing them):
- the runs stored since the route change spiked in 23 of 40: all are trained again;
- every earlier point: its first affected seed is trained again into :data:`RECHECK_STORE` first, and :func:`judge`
  decides whether its stored seeds stand (``python -m sinkpaper store recheck`` lists where each point is:
  :mod:`sinkpaper.results.recheck`).
"""
from __future__ import annotations

from typing import Mapping

RECHECK_STORE = "results/recheck"
# the point whose seeds give the spread a rerun may move by: the base run, the text profile's most-seeded point
SPREAD_POINT = "optimization/default"
# the Sink_1 margin a rerun may move by beyond the stored seeds' range is at least this many points (inside one
# run Sink_1 moves by ~5 points between evaluations: reading.py)
MIN_MARGIN = 5.0


def trained_bf16_softmax(payload: Mapping) -> bool:
    """True when a stored run (or a divergence record) trained the reference operator's softmax in bf16: a CPU
    run under bf16 autocast whose attention took the reference route, before the fp32 core."""
    config = payload.get("config", {})
    pv = payload.get("result", {}).get("provenance") or payload.get("provenance") or {}
    route = pv.get("route") or {}
    if route.get("numerics"):
        return False
    if "cpu" not in str(pv.get("hardware", "cpu")).lower():
        return False
    dtype = pv.get("dtype") or (config.get("run") or {}).get("dtype", "fp32")
    if dtype != "bf16":
        return False
    if route.get("attention"):
        return route["attention"] == "reference"
    if "error" in payload:      # a divergence record names no route: a CPU bf16 blow-up is suspect whatever it took
        return True
    return _reference_before_route_change(config)


def _reference_before_route_change(config: Mapping) -> bool:
    """The route a config's attention took on the CPU before plain softmax moved to the reference operator (runs
    stored before their provenance named it): SDPA for plain causal softmax, the reference for everything else.
    Read from the model itself, so a variant is classed as the model routes it."""
    from ..models import SinkModel
    from .config import TrainConfig
    cfg = TrainConfig.from_dict(dict(config))
    model = SinkModel(cfg.model_config(16))   # the route depends on the design, not on the vocabulary
    return model.training_route(cfg.data.context, "cpu", "fp32", compiled=False)["attention"] == "reference"


def margin(base_plateaus: list[float]) -> float:
    """How far a rerun's plateau Sink_1 may sit outside the stored seeds' range: the base's seed spread (max - min
    of its seeds' plateaus), at least :data:`MIN_MARGIN` points."""
    return max(MIN_MARGIN, max(base_plateaus) - min(base_plateaus)) if base_plateaus else MIN_MARGIN


def judge(stored: list[dict], rerun: dict, base_margin: float) -> dict:
    """Whether a point's stored seeds stand beside its seed-0 rerun on the fixed route. ``stored`` and ``rerun``:
    {"sink": plateau Sink_1 (or the point's Sink* proxy), "learned": bool, "spiked": bool} per run. They stand
    when the rerun learned as the stored seeds did (all learned, or none) with no spike, and its plateau lies
    inside [min - margin, max + margin] of the stored seeds that learned. Returns {"stands": bool, "why": str}."""
    if rerun["spiked"]:
        return {"stands": False, "why": "the rerun spiked on the fixed route"}
    learned = [s for s in stored if s["learned"]]
    if rerun["learned"] != bool(learned) or (learned and len(learned) != len(stored)):
        return {"stands": False, "why": (f"the rerun {'learned' if rerun['learned'] else 'did not learn'}; "
                                         f"{len(learned)} of {len(stored)} stored seeds did")}
    if not learned:
        return {"stands": True, "why": "neither the rerun nor any stored seed learned"}
    lo, hi = min(s["sink"] for s in learned), max(s["sink"] for s in learned)
    inside = lo - base_margin <= rerun["sink"] <= hi + base_margin
    return {"stands": inside,
            "why": (f"rerun {rerun['sink']:.1f} % {'inside' if inside else 'outside'} the stored seeds' "
                    f"[{lo:.1f}, {hi:.1f}] widened by {base_margin:.1f} points")}

