"""Stored runs as typed records: what a reader needs from a stored run, without reaching into the payload's
nesting, a family's stored runs, and Sink_1 over training across seeds."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..train.store import DEFAULT_STORE, FOUND, get
from ..train.sweep import sweep_configs
from .sweeps import spread


@dataclass
class RunRecord:
    """One stored run: what a reader needs, without reaching into the payload's nesting."""
    point: str | None
    seed: int
    sink: dict[int, float]              # Sink_k^eps in %, k = 1..k_max, final evaluation
    alpha_1: float                      # mean alpha_1 over (layer, head), final evaluation
    val_loss: float
    sink_star: float | None
    curve: list[dict]                   # every evaluation: step, tokens, sink_1, alpha_1, val_loss
    provenance: dict
    config: dict
    key: str
    per_layer_sink_1: list = field(default_factory=list)
    alpha_1_matrix: list = field(default_factory=list)

    @classmethod
    def from_payload(cls, payload: dict, point: str | None = None) -> "RunRecord":
        r = payload["result"]
        curve = [{"step": c["step"], "tokens": c.get("tokens"), "sink_1": c["sink_k"]["1"],
                  "alpha_1": c.get("alpha_1_mean"), "val_loss": c.get("val_loss"),
                  "wall_seconds": c.get("wall_seconds")}
                 for c in payload.get("curve", []) if "sink_k" in c]
        return cls(point=point, seed=int(payload["config"]["run"]["seed"]),
                   sink={int(k): float(v) for k, v in r["sink_k"].items()}, alpha_1=float(r["alpha_1_mean"]),
                   val_loss=float(r["val_loss"]), sink_star=r.get("sink_star"), curve=curve,
                   provenance=dict(r.get("provenance", {})), config=payload["config"], key=payload["hash"],
                   per_layer_sink_1=list(r.get("per_layer_sink_1") or []),
                   alpha_1_matrix=list(r.get("alpha_1_matrix") or []))


def runs(config: str | Path, profile: str, points: list[str] | None = None, seeds=(0, 1, 2),
         store: str | Path = DEFAULT_STORE) -> list[RunRecord]:
    """The stored (current, never stale) runs of a family's points x seeds; runs not stored are left out."""
    out = []
    for point, _seed, cfg in sweep_configs(config, profile, points, list(seeds)):
        got = get(store, cfg)
        if got.status == FOUND:
            out.append(RunRecord.from_payload(got.payload, point))
    return out


def emergence(records: list[RunRecord]) -> list[dict]:
    """Sink_1 over training, over seeds: one row per evaluation step every record has."""
    steps = sorted(set.intersection(*(set(c["step"] for c in r.curve) for r in records))) if records else []
    rows = []
    for step in steps:
        at = [next(c for c in r.curve if c["step"] == step) for r in records]
        rows.append({"step": step, "tokens": at[0]["tokens"], "sink_1": spread([c["sink_1"] for c in at]),
                     "alpha_1": spread([c["alpha_1"] for c in at])})
    return rows
