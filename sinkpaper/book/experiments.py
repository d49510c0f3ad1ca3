"""What the Sections 4-7 chapters do with training runs: read a config's sweep from the results store (with
what is missing said plainly), train a point live, smoke-train every variant of a family, and load a trained
model back. All training goes through :mod:`sinkpaper.train`; this module only chooses and arranges.

A payload (stored or live) has the results store's shape: ``{"name", "hash", "profile", "config", "result",
"curve"}``; ``result["provenance"]`` says where its numbers came from.
"""
from __future__ import annotations

import shutil
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from ..train import config as train_config
from ..train.store import DEFAULT_STORE, read_result, result_path, stale_results
from ..train.sweep import sweep_configs
from ..train.trainer import read_log, train
from .figures import Table

LIVE_ROOT = "runs/book"  # live runs' directories (git-ignored); each live run starts from scratch


@dataclass
class StoredSweep:
    """The stored runs of a config's sweep at one profile: found payloads and the (point, seed) pairs missing."""

    config: str
    profile: str
    payloads: list[dict] = field(default_factory=list)
    missing: list[tuple[str, int]] = field(default_factory=list)
    store: str = DEFAULT_STORE
    stale: list[tuple[str, int]] = field(default_factory=list)  # missing pairs stored under an older definition

    def by_point(self) -> dict[str, list[dict]]:
        out: dict[str, list[dict]] = {}
        for p in self.payloads:
            out.setdefault(point_of(p), []).append(p)
        return out

    def missing_text(self) -> str:
        """One Markdown sentence on what is not in the store and the command that would produce it."""
        if not self.missing:
            return ""
        points = sorted({p for p, _ in self.missing})
        seeds = sorted({s for _, s in self.missing})
        stale = (f" {len(self.stale)} of them are stored under an older definition of a model variant "
                 f"({', '.join(sorted({p for p, _ in self.stale}))}): stale, not shown; rerun them."
                 if self.stale else "")
        return (f"**Not in the results store** at the `{self.profile}` profile: {len(self.missing)} run(s) of "
                f"`{self.config}` ({', '.join(points)}; seeds {', '.join(map(str, seeds))}).{stale} Produce them with "
                f"`python -m sinkpaper sweep --config {self.config} --profile {self.profile} --seeds "
                f"{' '.join(map(str, seeds))} --points {' '.join(points)} --out runs/{Path(self.config).stem}`.")


def point_of(payload: Mapping) -> str:
    return payload["name"].split("/", 1)[-1]


def stored_sweep(config: str, profile: str, points: Sequence[str] | None = None, seeds: Sequence[int] = (0,),
                 store: str = DEFAULT_STORE) -> StoredSweep:
    """Every (point, seed) of ``config`` at ``profile`` that the store holds for exactly today's config (by hash);
    the others are ``missing``, and those of them stored under an older definition also ``stale``."""
    out = StoredSweep(str(config), profile, store=str(store))
    stale_now = {e["current_key"] for e in stale_results(store)} if Path(store).is_dir() else set()
    for point, seed, cfg in sweep_configs(config, profile, list(points) if points else None, list(seeds)):
        payload = read_result(store, cfg)  # never a stale run (one stored under an older definition)
        if payload is None:
            out.missing.append((point, seed))
            if cfg.hash() in stale_now:
                out.stale.append((point, seed))
        else:
            payload = dict(payload)
            payload["loaded_from"] = str(result_path(store, cfg.hash()))
            out.payloads.append(payload)
    return out


@dataclass
class LiveRun:
    payload: dict
    run_dir: Path


def live_run(config: str, profile: str = "cpu", point: str | None = None, seed: int = 0,
             overrides: Mapping | None = None, out_root: str = LIVE_ROOT) -> LiveRun:
    """Train one point now (from scratch, nothing read from the store) and return it as a payload."""
    cfg = train_config.load(config, profile, {**(overrides or {}), "run.seed": seed}, point)
    run_dir = Path(out_root) / Path(config).stem / f"{point or 'base'}-seed{seed}-{cfg.hash()}"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    result = train(cfg, run_dir, progress=False)
    payload = {"hash": cfg.hash(), "name": cfg.name, "profile": cfg.profile, "config": cfg.to_dict(),
               "result": result, "curve": read_log(run_dir / "log.jsonl")}
    return LiveRun(payload, run_dir)


def smoke_variants(config: str, profile: str = "cpu", points: Sequence[str] | None = None, steps: int = 20,
                   seed: int = 0, overrides: Mapping | None = None) -> list[dict]:
    """Train every sweep point of ``config`` for a few steps now: proves each variant trains and is measured
    end to end. Says nothing about sinks (a few steps on CPU); rows carry loss first/last, Sink_1, seconds."""
    rows = []
    overrides = {"optim.steps": steps, "optim.warmup": min(10, steps), "eval.every": steps,
                 "run.checkpoint_every": steps, "run.log_every": max(1, steps // 4), "eval.n_samples": 20,
                 **(overrides or {})}
    for point, _, _cfg in sweep_configs(config, profile, list(points) if points else None, [seed], overrides):
        t0 = time.perf_counter()
        run = live_run(config, profile, point, seed, overrides, out_root=f"{LIVE_ROOT}/smoke")
        r, curve = run.payload["result"], run.payload["curve"]
        rows.append({"point": point, "steps": r["step"], "tokens": r["tokens_seen"],
                     "loss first": curve[0]["loss"] if curve else None, "loss last": r["final_loss"],
                     "Sink_1 %": r["sink_k"]["1"], "Sink* %": r.get("sink_star"),
                     "seconds": round(time.perf_counter() - t0, 1)})
        shutil.rmtree(run.run_dir, ignore_errors=True)
    return rows


# --------------------------------------------------------------------------------------------- arranging
def sink_at(payloads: Sequence[dict], point: str, k: int = 1) -> tuple[float, float, float] | None:
    """(mean, min, max) of Sink_k over the seeds of one point, or None when the point has no payload."""
    vals = [p["result"]["sink_k"][str(k)] for p in payloads if point_of(p) == point]
    return (statistics.fmean(vals), min(vals), max(vals)) if vals else None


def payloads_provenance(payloads: Sequence[dict], loaded: bool) -> dict:
    """A provenance mapping for figures.provenance_line summarizing one or more runs."""
    if not payloads:
        return {"runs": 0}
    provs = [p["result"]["provenance"] for p in payloads]
    stamps = sorted(pv.get("computed_at", "") for pv in provs)
    out = {"profile": payloads[0]["profile"], "hardware": provs[0]["hardware"],
           "code_version": ", ".join(sorted({pv["code_version"] for pv in provs})),
           "computed_now": not loaded,
           "dtype": ", ".join(sorted({str(pv.get("dtype", p["config"]["run"].get("dtype", "fp32")))
                                     for pv, p in zip(provs, payloads)})),
           "runs": len(payloads),
           "tokens seen per run": ", ".join(f"{t:,}" for t in sorted({p['result']['tokens_seen'] for p in payloads}))}
    if loaded:
        out["loaded_from"] = "results/store" if len(payloads) > 1 else payloads[0].get("loaded_from", "results/store")
        out["computed_at"] = stamps[0] if stamps[0] == stamps[-1] else f"{stamps[0]} to {stamps[-1]}"
    return out


def curve_rows(payload: Mapping, label: str | None = None) -> list[dict]:
    """The evaluated points of a run's curve: step, tokens, loss, val_loss, Sink_1, alpha_1 (for charts)."""
    label = label or point_of(payload)
    return [{"run": label, "step": c["step"], "tokens": c["tokens"], "loss": c.get("loss"),
             "val_loss": c.get("val_loss"), "Sink_1 %": c["sink_k"]["1"], "alpha_1": c.get("alpha_1_mean")}
            for c in payload["curve"] if "sink_k" in c]
