"""Trajectories, not single steps: a training point trained for a few hundred steps on every CPU route, the same
seed and batches, beside an fp32 run, with the loss and the gradient norm at every step and any spike.

    python -m sinkpaper routes-check [--steps 300] [--json results/routes/routes-check.json]

A route passes when it has no spike (:mod:`sinkpaper.train.spikes`) and its loss at the last step is within its
bar of the eager fp32 run's (:data:`TOLERANCE` nats, or the floor below where that is larger). The check passes
when no route spikes and every point trains, as configured, at a dtype and on a route that pass at every seed.
Rerun before any change to what a training step computes lands.

A route that fails at a point does not train: the trainer's choice for that shape goes to a route that passes
(plain softmax through SDPA, the CPU route before the reference operator took short contexts). A seed checked
beyond the points' own is read by the same rule, and a route must pass at every seed checked to keep its place.

Where no bf16 route passed (the 4-layer point: each failed at one seed of three, +0.083 and +0.059 nats, with no
spike), the rule below was committed before the run it judges. Two exact computations of one trajectory drift
apart too, so the check also trains the point in fp32, compiled (SDPA; every step's gradients exact to fp32's
rounding, a different order of operations from the eager run): its gap to the eager fp32 run at a seed is that
seed's floor. A route passes at a seed with no spike and a gap within the larger of TOLERANCE and the floor.
The fp32 compiled run is judged by its spikes alone (it sets the floor). At a point where no bf16 route passes
at every seed, the bf16 gap is bf16's own, which no route removes: that shape trains in fp32 (run.dtype fp32 in
its configs), its stored bf16 runs stay in the store under their own configs and are not read in its place.
"""
from __future__ import annotations

import contextlib
import json
import tempfile
import time
from pathlib import Path

# (family, point, seed): the base point, and the 4-layer point and seed whose blow-up the bf16 softmax caused, with
# two more of its seeds: at 4 layers one seed's gap at step 300 does not tell the routes apart
POINTS = (("configs/optimization.yaml", "default", 1),
          *(("configs/data.yaml", "fixed_pos3_layers_4_steps_x2", s) for s in (1, 0, 2)))
# route name -> (run.dtype, run.compile, attention on the CPU for plain softmax)
ROUTES = {
    "fp32, eager (the reference trajectory)": ("fp32", False, "SDPA"),
    "fp32, compiled, SDPA (the floor)": ("fp32", True, "SDPA"),
    "bf16, compiled, reference operator": ("bf16", True, "reference"),
    "bf16, compiled, SDPA": ("bf16", True, "SDPA"),
}
TOLERANCE = 0.05
FLOOR = "fp32, compiled, SDPA (the floor)"
DEFAULT_JSON = "results/routes/routes-check.json"


@contextlib.contextmanager
def _plain_softmax_route(route: str):
    """Plain causal softmax on the CPU through ``route`` ("reference" or "SDPA") for the duration."""
    from ..models import model as M
    before = M.CPU_REFERENCE_MAX_T
    M.CPU_REFERENCE_MAX_T = 1 << 30 if route == "reference" else 0
    try:
        yield
    finally:
        M.CPU_REFERENCE_MAX_T = before


def _one(config: str, point: str, seed: int, steps: int, route: tuple) -> dict:
    import torch

    from .config import load
    from .spikes import find_spikes
    from .trainer import read_log, train
    dtype, compile_, attention = route
    # steps_scale 1: `steps` is what every point trains (a _steps_x2 point would double it; the schedule is
    # constant after warm-up, so its first steps are the same run)
    cfg = load(config, "text", {"optim.steps": steps, "optim.steps_scale": 1.0, "eval.every": 10 ** 9,
                                "run.log_every": 1,
                                "run.checkpoint_every": 10 ** 9, "run.dtype": dtype, "run.compile": compile_,
                                "seed": seed}, sweep_point=point)
    torch._dynamo.reset()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d, _plain_softmax_route(attention):
        result = train(cfg, d, progress=False)
        log = [r for r in read_log(Path(d) / "log.jsonl") if "grad_norm_max" in r]
    return {"route": result["provenance"]["route"], "dtype": dtype, "compiled": compile_,
            "code": result["provenance"]["code_version"],
            "wall_seconds": round(time.perf_counter() - t0, 1),
            "loss": [round(r["loss"], 4) for r in log], "grad_norm": [round(r["grad_norm_max"], 4) for r in log],
            "spikes": find_spikes(log, cfg.optim.warmup)}


def routes_check(steps: int = 300, points=POINTS, routes=ROUTES, log=print, only: str | None = None,
                 previous: dict | None = None) -> dict:
    """Every route of ``routes`` at every point, and the verdict per route. ``only`` (a route's name): train that
    route alone and keep the other rows of ``previous`` (a routes check of the same steps), each row naming the
    code it ran."""
    from .. import provenance
    if only is not None and only not in routes:
        raise ValueError(f"unknown route {only!r}; valid: {', '.join(routes)}")
    if only is not None and (previous is None or previous.get("steps") != steps):
        raise ValueError(f"--only needs a previous routes check of {steps} steps to keep the other routes of")
    out = {"kind": "routes-check", "steps": steps, "tolerance_nats": TOLERANCE, "points": []}
    for i, (config, point, seed) in enumerate(points):
        rows = {}
        for name, route in routes.items():
            if only is not None and name != only:
                rows[name] = {"code": previous["provenance"]["code_version"], **previous["points"][i]["routes"][name]}
                continue
            rows[name] = _one(config, point, seed, steps, route)
            log(f"{point} seed {seed}, {name}: loss at step {steps} {rows[name]['loss'][-1]:.3f}, "
                f"{len(rows[name]['spikes'])} spike(s), {rows[name]['wall_seconds']:.0f} s")
        out["points"].append({"config": config, "point": point, "seed": seed, "routes": rows})
    out["provenance"] = provenance.stamp("cpu", threads=1, source_of_numbers="computed now")
    return conclude(out)


def conclude(out: dict) -> dict:
    """Judge every point's rows, the dtype each point's shape trains at, and the check's verdict: it passes with
    no spike on any route and every point's config (read now) training at the dtype its verdict names. Run again
    on a stored check (``routes-check --judge``) after the configs follow a verdict; updated in place."""
    from .config import load
    for p in out["points"]:
        judge(p["routes"])
    out["verdicts"] = verdicts(out["points"])
    for p in out["points"]:
        v = out["verdicts"][p["point"]]
        v["configured"], v["route_taken"] = _route_taken(load(p["config"], "text", sweep_point=p["point"]))
    out["passes"] = (not any(r["spikes"] for p in out["points"] for r in p["routes"].values())
                     and all(v["configured"] == v["trains_at"] and v["routes"].get(v["route_taken"], False)
                             for v in out["verdicts"].values()))
    return out


def _route_taken(cfg) -> tuple[str, str | None]:
    """The dtype a point's config trains at, and which of ROUTES the trainer takes for it on the CPU (None: a
    route the check does not train)."""
    from ..models.model import SinkModel
    attention = SinkModel(cfg.model_config(int(cfg.model.get("vocab_size", 8192)))).training_route(
        cfg.data.context, "cpu", cfg.run.dtype, cfg.run.compile)["attention"]
    if cfg.run.dtype == "fp32":     # the floor is the compiled fp32 route; eager fp32 is the reference itself
        return "fp32", next(iter(ROUTES)) if not cfg.run.compile else FLOOR
    return "bf16", next((name for name, (dt, comp, att) in ROUTES.items()
                         if (dt, comp, att) == ("bf16", cfg.run.compile, attention)), None)


def judge(rows: dict) -> dict:
    """Each route's gap to the first route's (fp32, eager) loss at the last step, its bar (the larger of
    TOLERANCE and the FLOOR route's gap, where that route was trained) and whether it passes: no spike and the gap
    within the bar (the FLOOR route: no spike). ``rows``: route name -> {"loss": [...], "spikes": [...]},
    updated in place."""
    ref = rows[next(iter(rows))]["loss"][-1]
    for row in rows.values():
        row["loss_gap_at_end"] = round(row["loss"][-1] - ref, 4)
    bar = max(TOLERANCE, abs(rows[FLOOR]["loss_gap_at_end"])) if FLOOR in rows else TOLERANCE
    for name, row in rows.items():
        row["bar_nats"] = round(bar, 4)
        row["passes"] = not row["spikes"] and (name == FLOOR or abs(row["loss_gap_at_end"]) <= bar)
    return rows


def verdicts(points: list[dict]) -> dict:
    """Per point: whether each route passes at every seed checked, and the dtype its shape trains at (bf16 where
    a bf16 route passes at every seed, else fp32)."""
    out: dict[str, dict] = {}
    for p in points:
        v = out.setdefault(p["point"], {"seeds": [], "routes": {}})
        v["seeds"].append(p["seed"])
        for name, row in p["routes"].items():
            v["routes"][name] = v["routes"].get(name, True) and row["passes"]
    for v in out.values():
        v["trains_at"] = "bf16" if any(ok for name, ok in v["routes"].items() if name.startswith("bf16")) \
            else "fp32"
    return out


def write(result: dict, path: str | Path = DEFAULT_JSON) -> Path:
    from ..files import atomic_write_text
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(result, indent=1))
    return path
