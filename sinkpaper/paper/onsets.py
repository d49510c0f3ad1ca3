"""When each quantity forms in a run: its onset, defined once, before the runs that measure it (configs/onsets.yaml).

The onset of a quantity is the first evaluation step at which it reaches its threshold; a run in which it never
does reads one evaluation past its end. The thresholds, and why:
- sink: Sink_1 >= SINK (10 %), the registry's "has a sink";
- induction: some head puts >= 0.3 of its attention on the induction target (the sink metric's epsilon; a uniform
  head puts about 1/T = 0.016 there at T = 64);
- previous token: some head puts >= 0.3 of its attention on the token just before (the same epsilon);
- in-context gain: the second copy of a repeated random sequence is predicted >= 0.5 nats better than the first
  (a tenth of the ~5 nats per token of a model that has not learned to copy, on random tokens);
- massive activation: token 1's hidden-state norm >= MASSIVE (10) times the others' mean in some layer.
"""
from __future__ import annotations

from typing import Mapping

from .verdicts import MASSIVE, SINK

# quantity -> (what an evaluation records, threshold)
ONSETS: dict[str, tuple[str, float]] = {
    "sink": ("Sink_1", SINK),
    "induction": ("induction_max", 0.3),
    "previous token": ("previous_token_max", 0.3),
    "in-context gain": ("in_context_gain", 0.5),
    "massive activation": ("massive_activation_max", MASSIVE),
}


def _value(c: Mapping, key: str) -> float | None:
    if key == "Sink_1":
        return c["sink_k"]["1"] if "sink_k" in c else None
    if key == "massive_activation_max":
        by_layer = c.get("massive_activation_ratio_by_layer")
        return max(by_layer) if by_layer else None
    return c.get(key)


def onset_step(payload: Mapping, quantity: str) -> float | None:
    """A stored run's onset of ``quantity`` (a key of :data:`ONSETS`): the first evaluation step at which it reaches
    its threshold; one evaluation past the end when it never does; None when the run does not record it."""
    if quantity not in ONSETS:
        raise ValueError(f"unknown onset {quantity!r}; valid: {', '.join(ONSETS)}")
    key, threshold = ONSETS[quantity]
    evals = [c for c in payload.get("curve", []) if "sink_k" in c]
    values = [(c["step"], _value(c, key)) for c in evals]
    if not any(v is not None for _, v in values):
        return None
    hit = next((step for step, v in values if v is not None and v >= threshold), None)
    if hit is None:
        return float(payload["config"]["optim"]["steps"] + payload["config"]["eval"]["every"])
    return float(hit)
