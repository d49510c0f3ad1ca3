"""Run a config's sweep (points x seeds) into the results store, skipping every run the store already holds,
and summarize each point over its seeds (mean, min, max: the spread the book shows)."""
from __future__ import annotations

import statistics
from pathlib import Path

from .config import load, sweep_points
from .store import read_result
from .trainer import latest_checkpoint, train


def sweep_configs(config: str | Path, profile: str, points: list[str] | None, seeds: list[int],
                  overrides: dict | None = None) -> list[tuple[str, int, object]]:
    """[(point, seed, TrainConfig)] for every point x seed, all validated before anything runs."""
    available = sweep_points(config)
    points = points or available or [None]
    unknown = [p for p in points if p is not None and p not in available]
    if unknown:
        raise ValueError(f"unknown sweep point(s) {', '.join(unknown)}; valid: {', '.join(available) or '(none)'}")
    return [(p, s, load(config, profile, {**(overrides or {}), "run.seed": s}, p)) for p in points for s in seeds]


def run_sweep(config: str | Path, profile: str, out: str | Path, store: str | Path, *, points=None, seeds=(0,),
              overrides=None, progress: bool = True) -> list[dict]:
    """Train every (point, seed) the store does not hold yet; returns the stored payloads, in order."""
    runs = sweep_configs(config, profile, points, list(seeds), overrides)
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=len(runs), desc=f"sweep {Path(config).stem}", unit="run")
    payloads = []
    for point, seed, cfg in runs:
        stored = read_result(store, cfg)
        if stored is None:
            run_dir = Path(out) / (point or "base") / f"seed-{seed}"
            train(cfg, run_dir, resume=latest_checkpoint(run_dir) is not None, store=store, progress=False)
            stored = read_result(store, cfg)
        payloads.append(stored)
        if bar is not None:
            bar.set_postfix(point=point, seed=seed, sink1=f"{stored['result']['sink_k']['1']:.1f}%")
            bar.update(1)
    if bar is not None:
        bar.close()
    return payloads


def summarize(payloads: list[dict], k: int = 1) -> list[dict]:
    """One row per sweep point: Sink_k over seeds (mean, min, max), alpha_1 and final loss means, tokens."""
    groups: dict[str, list[dict]] = {}
    for p in payloads:
        groups.setdefault(p["name"], []).append(p)
    rows = []
    for name, ps in groups.items():
        sink = [p["result"]["sink_k"][str(k)] for p in ps]
        rows.append({"name": name, "point": name.split("/", 1)[-1], "seeds": sorted(p["config"]["run"]["seed"] for p in ps),
                     f"sink_{k}_mean": statistics.fmean(sink), f"sink_{k}_min": min(sink), f"sink_{k}_max": max(sink),
                     "alpha_1_mean": statistics.fmean(p["result"]["alpha_1_mean"] for p in ps),
                     "sink_star_mean": None if ps[0]["result"].get("sink_star") is None
                     else statistics.fmean(p["result"]["sink_star"] for p in ps),
                     "final_loss_mean": statistics.fmean(p["result"]["final_loss"] for p in ps),
                     "tokens_seen": ps[0]["result"]["tokens_seen"],
                     "wall_seconds_mean": statistics.fmean(p["result"]["provenance"]["wall_seconds"] for p in ps),
                     "hardware": ps[0]["result"]["provenance"]["hardware"],
                     "code_version": ps[0]["result"]["provenance"]["code_version"]})
    return rows


def format_summary(rows: list[dict], k: int = 1) -> str:
    lines = [f"{'point':<24}{'seeds':<12}{f'Sink_{k} % mean [min, max]':<30}{'alpha_1':>8}{'loss':>8}{'s/run':>8}"]
    for r in rows:
        spread = f"{r[f'sink_{k}_mean']:6.1f} [{r[f'sink_{k}_min']:.1f}, {r[f'sink_{k}_max']:.1f}]"
        lines.append(f"{r['point']:<24}{','.join(map(str, r['seeds'])):<12}{spread:<30}{r['alpha_1_mean']:8.3f}"
                     f"{r['final_loss_mean']:8.3f}{r['wall_seconds_mean']:8.0f}")
    return "\n".join(lines)
