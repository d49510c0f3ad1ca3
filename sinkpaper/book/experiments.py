"""What the Sections 4-7 chapters train now: one point live (from scratch, nothing read from the store), and
every variant of a family smoke-trained for a few steps. All training goes through :mod:`sinkpaper.train`; this
module only chooses and arranges. A live run is returned as a payload of the results store's shape
(a stored sweep is read by :mod:`sinkpaper.results.sweeps`)."""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from ..train import config as train_config
from ..train.sweep import sweep_configs
from ..train.trainer import read_log, train

LIVE_ROOT = "runs/book"  # live runs' directories (git-ignored); each live run starts from scratch


@dataclass
class LiveRun:
    payload: dict
    run_dir: Path


def steps_overrides(steps: int | None) -> dict:
    """The config overrides of a live run cut to ``steps`` steps (a chapter's ``live_steps``; None: the point's
    own): evaluated every min(100, steps) steps and checkpointed at the end."""
    if steps is None:
        return {}
    return {"optim.steps": steps, "eval.every": min(100, steps), "run.checkpoint_every": steps}


def live_run(config: str, profile: str = "cpu", point: str | None = None, seed: int = 0,
             overrides: Mapping | None = None, out_root: str = LIVE_ROOT, steps: int | None = None) -> LiveRun:
    """Train one point now (from scratch, nothing read from the store) and return it as a payload; ``steps``
    (None: the point's own) cuts it short, :func:`steps_overrides`."""
    overrides = {**steps_overrides(steps), **(overrides or {})}
    cfg = train_config.load(config, profile, {**overrides, "run.seed": seed}, point)
    run_dir = own_dir(Path(out_root) / Path(config).stem / f"{point or 'base'}-seed{seed}-{cfg.hash()}")
    result = train(cfg, run_dir, progress=False)
    payload = {"hash": cfg.hash(), "name": cfg.name, "profile": cfg.profile, "config": cfg.to_dict(),
               "result": result, "curve": read_log(run_dir / "log.jsonl")}
    return LiveRun(payload, run_dir)


def own_dir(parent: Path) -> Path:
    """``parent/pid<this process>``, empty: this process's live run of a point. Two chapters run side by side
    (``python -m sinkpaper.site run --jobs 2``) may train the same point, and must not delete each other's run
    while it trains or is read. The directories of processes that have ended are removed here, so reruns do
    not pile up."""
    parent.mkdir(parents=True, exist_ok=True)
    for d in parent.glob("pid*"):
        pid = d.name[3:]
        if pid.isdigit() and (int(pid) == os.getpid() or not _alive(int(pid))):
            shutil.rmtree(d, ignore_errors=True)
    return parent / f"pid{os.getpid()}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


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
        if not any(run.run_dir.parent.iterdir()):
            run.run_dir.parent.rmdir()
    return rows

