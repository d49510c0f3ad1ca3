"""The paper's default packing on a CPU (configs/default_cpu.yaml: no fixed first token, no BOS): its runs, stored
or still running (the curve a run keeps in the store's partial/ folder at each checkpoint, ``run.partial``), each
read as the gpu calibration reads its runs, beside the one GPU seed that grew this sink."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..train import store as S
from ..train.store import DEFAULT_STORE
from . import calibration
from .reading import NotEnoughEvaluations, evaluations, plateau_of, stored, training_failure

CONFIG = "configs/default_cpu.yaml"
PROFILE = "text"
POINTS = ("default_cpu_d128", "default_cpu_d256")   # the plan's first configuration, then its second
SEEDS = (0, 1, 2)
BAR = calibration.BAR       # the plan's bar is the gpu calibration's: Sink_1 >= 20 % on the plateau
SINK_LAYER = 10.0           # a layer "holds the sink" when its own Sink_1 reaches the registry's SINK (10 %)


@dataclass
class DefaultRun:
    """One run of the plan: stored whole (``finished``) or the curve it has written so far (``progress``: step,
    steps, tokens, elapsed and projected seconds, routes)."""
    point: str
    seed: int
    payload: dict
    finished: bool
    progress: dict | None = None


def runs(store: str | Path = DEFAULT_STORE, root: str | Path = ".") -> list[DefaultRun]:
    """Every run of the plan the store holds, whole or in progress, in the plan's order."""
    out = []
    for s in stored(Path(root) / CONFIG, PROFILE, POINTS, SEEDS, store):
        if s.found:
            out.append(DefaultRun(s.point, s.seed, s.payload, True))
            continue
        path = S.partial_path(store, s.cfg.hash())
        if path.is_file():
            part = S.read_entry(path)
            out.append(DefaultRun(s.point, s.seed, part, False, part.get("progress")))
    return out


def planned_hours(root: str | Path = ".") -> float | None:
    """Hours of one thread the plan's first run trains, evaluations aside: its steps at the step time measured for
    its shape, dtype and route (scripts/bench_cpu_routes.py's row for the paper's default), scaled from the
    measured batch to the plan's; None where that row is not measured."""
    from ..train.sweep import sweep_configs
    from .measured import CPU_ROUTES, load_stored
    [(_, _, plan)] = sweep_configs(str(Path(root) / CONFIG), PROFILE, [POINTS[0]], [0])
    measured = load_stored(CPU_ROUTES, root) or {}
    dtype = "bf16" if plan.run.dtype == "bf16" else "fp32"
    row = next((r for r in measured.get("profile_steps", ()) if r["profile"].startswith("paper's default")
                and r["T"] == plan.data.context and r["dtype"] == dtype), None)
    if row is None:
        return None
    step_ms = row["sdpa_ms" if row["route_taken"] == "SDPA" else "reference_ms"]
    return plan.optim.steps * (plan.optim.batch_size / row["batch"]) * step_ms / 3.6e6


def gpu_seed(store: str | Path = DEFAULT_STORE, root: str | Path = ".") -> dict | None:
    """The gpu calibration's run with the largest Sink_1 plateau among those that are results (the one seed that
    grew a sink without a fixed first token), or None."""
    best = None
    for p in calibration.calibration_runs(store, root):
        value, _, failure = calibration._reading(p)
        if value is not None and failure is None and (best is None or value > best[0]):
            best = (value, p)
    return None if best is None else best[1]


def sink_layers(payload: dict) -> list[int]:
    """The layers (1-based) whose own Sink_1 reaches SINK_LAYER at the run's last evaluation."""
    evals = [c for c in evaluations(payload) if c.get("per_layer_sink_1") is not None]
    if not evals:
        return []
    return [i + 1 for i, v in enumerate(evals[-1]["per_layer_sink_1"]) if v is not None and v >= SINK_LAYER]


def facts(payload: dict, finished: bool = True) -> dict:
    """What the chapter says of a run: tokens seen, its last Sink_1, its plateau (a whole run only, and only if it
    is a result), where alpha_1 leaves uniform, and the layers that hold the sink."""
    evals = [c for c in evaluations(payload) if "sink_k" in c]
    last = evals[-1] if evals else None
    out = {"tokens": last.get("tokens") if last else None, "step": last["step"] if last else None,
           "last_sink_1": last["sink_k"]["1"] if last else None, "plateau": None, "failure": None,
           "leaves_uniform": calibration.leaves_uniform(payload) if evals else None,
           "sink_layers": sink_layers(payload)}
    if finished:
        out["failure"] = training_failure(payload)
        try:
            out["plateau"] = plateau_of(payload, "Sink_1")["mean"]
        except NotEnoughEvaluations:
            pass
    return out


@dataclass
class NextRuns:
    """What the plan trains next, decided from the store as configs/default_cpu.yaml wrote it before its first run:
    ``point`` and ``seeds`` (None and () once the plan is done); ``cleared``: the configuration whose seed 0 cleared
    the bar (the one the registry's scale reads), None while none has; ``read``: what the stored seed 0s read,
    ``decision``: what follows, each in a clause."""
    point: str | None
    seeds: tuple[int, ...]
    read: tuple[str, ...]
    decision: str
    cleared: str | None = None

    @property
    def why(self) -> str:
        return "; ".join([*self.read, self.decision])


def next_runs(store: str | Path = DEFAULT_STORE, root: str | Path = ".") -> NextRuns:
    """Seed 0 of each configuration in turn; seeds 1 and 2 of the first whose seed 0 clears :data:`BAR` on its
    plateau (a run that is not a result does not clear it); if neither does, nothing more (a third configuration is
    not tried before that decision is written)."""
    every = runs(store, root)
    whole = {(r.point, r.seed): r for r in every if r.finished}
    begun = {(r.point, r.seed): r.progress or {} for r in every if not r.finished}
    said: list[str] = []
    for point in POINTS:
        seed0 = whole.get((point, 0))
        if seed0 is None:
            p = begun.get((point, 0))
            so_far = f" (its curve so far: step {p['step']:,} of {p['steps']:,})" if p and "step" in p else ""
            return NextRuns(point, (0,), tuple(said), f"{point} seed 0 is the plan's next run{so_far}")
        f = facts(seed0.payload)
        if f["failure"] or f["plateau"] is None or f["plateau"] < BAR:
            reading = (f"is not a result ({f['failure']})" if f["failure"] else "has no plateau"
                       if f["plateau"] is None else f"read Sink_1 {f['plateau']:.1f} % on its plateau")
            said.append(f"{point} seed 0 {reading}, below the {BAR:g} % bar")
            continue
        left = tuple(s for s in SEEDS[1:] if (point, s) not in whole)
        said.append(f"{point} seed 0 cleared the {BAR:g} % bar ({f['plateau']:.1f} %)")
        if left:
            return NextRuns(point, left, tuple(said), f"seeds 1 and 2 of {point} are the plan's next runs", point)
        return NextRuns(None, (), tuple(said), "its seeds 1 and 2 are stored: the plan is done", point)
    return NextRuns(None, (), tuple(said), "no configuration cleared the bar: the plan is done, reported as measured "
                                           "(no third configuration)")
