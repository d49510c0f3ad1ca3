"""The `gpu` profile's calibration (configs/calibration.yaml) as the results store holds it: for each point and
seed, Sink_1 on its plateau (as the verdicts read a run), the tokens at which alpha_1 first leaves the uniform
level, how many passes over the corpus's unique training tokens the run made, and whether the point clears the
bar the grid was written for: Sink_1^0.3 >= 20 % on the plateau in each of 3 seeds, without a fixed first token
(the paper's default run: 18.18 %)."""
from __future__ import annotations

import json
from pathlib import Path

from ..metrics import excess_alpha
from ..train.store import DEFAULT_STORE
from .curves import first_reaching
from .measured import CORPUS_SIDECAR
from .numbers import fmt_spread, markdown_line, runs_by_point
from .reading import (PLATEAU, NotEnoughEvaluations, evaluations, plateau_of, still_rising, stored, training_failure,
                      uniform_floor)
from .text_runs import where

CALIBRATION = "configs/calibration.yaml"
PROFILE = "gpu"
# Fixed with the grid, before any of its runs existed:
BAR = 20.0            # Sink_1 % on the plateau that each seed must reach (the paper's default run: 18.18 %)
SEEDS = (0, 1, 2)     # ... in all of these seeds
# alpha_1 "leaves the uniform level" at the first evaluation whose excess alpha_1, (alpha_1 - u) / (1 - u) with u
# the uniform head's alpha_1 (0.074 at T = 64), reaches 0.05 (alpha_1 about 0.12): no run of the text profile's
# no-fixed-token search ever went above alpha_1 0.067, and its runs with a sink end at 0.2-0.3.
LEAVES_UNIFORM = 0.05


def leaves_uniform(payload: dict, threshold: float = LEAVES_UNIFORM) -> dict | None:
    """The first evaluation of a run at which its excess alpha_1 reaches ``threshold`` ({"step", "tokens",
    "alpha_1"}), or None when none does."""
    u = uniform_floor(payload["config"])
    hit = first_reaching(evaluations(payload), threshold=threshold,
                         metric=lambda c: None if c.get("alpha_1_mean") is None else excess_alpha(c["alpha_1_mean"], u))
    return None if hit is None else {"step": hit["step"], "tokens": hit.get("tokens"), "alpha_1": hit["alpha_1_mean"]}


def unique_train_tokens(root: str | Path = ".") -> int | None:
    """The unique training tokens of the committed offline corpus (its sidecar's n_train), or None without it."""
    path = Path(root) / CORPUS_SIDECAR
    return json.loads(path.read_text())["n_train"] if path.is_file() else None


def _shape(cfg: dict) -> str:
    m, d, o = cfg["model"], cfg["data"], cfg["optim"]
    return (f"{m['n_layers']} x d {m['d_model']}, context {d['context']}, LR {o['lr']:g}, WD {o['weight_decay']:g}, "
            f"{o['steps']:,} x {o['batch_size']}")


def _reading(payload: dict) -> tuple[float | None, dict | str, str | None]:
    """A stored grid run read as the bar reads it: (its Sink_1 plateau mean, or None where it is not a result;
    the plateau, or why there is none; why the run is not a result, or None)."""
    failure = training_failure(payload)
    try:
        pl = plateau_of(payload, "Sink_1")
    except NotEnoughEvaluations as e:
        return None, str(e), failure
    return (None if failure else pl["mean"]), pl, failure


def still_open(points: list[str], store: str | Path = DEFAULT_STORE, root: str | Path = ".",
               config: str = CALIBRATION) -> list[str]:
    """The points of ``points`` that can still clear the bar: every stored seed's plateau at or above it. The bar
    asks it of each seed, so one seed below it (or a run that is not a result) decides the point, and training
    its other seeds would not change the answer."""
    closed = {run.point for run in stored(Path(root) / config, PROFILE, points, SEEDS, store)
              if run.found and ((v := _reading(run.payload)[0]) is None or v < BAR)}
    return [p for p in points if p not in closed]


def calibrated_point(store: str | Path = DEFAULT_STORE, root: str | Path = ".", config: str = CALIBRATION) \
        -> str | None:
    """The calibrated point, by the rule registered with the grid: the first point in the grid's order whose
    seeds :data:`SEEDS` are all stored and all on or above :data:`BAR`; None while no point has."""
    per_point: dict[str, list] = {}
    for run in stored(Path(root) / config, PROFILE, None, SEEDS, store):
        per_point.setdefault(run.point, []).append(_reading(run.payload)[0] if run.found else None)
    return next((p for p, vs in per_point.items() if all(v is not None and v >= BAR for v in vs)), None)


def calibration_lines(store: str | Path = DEFAULT_STORE, root: str | Path = ".", config: str = CALIBRATION) \
        -> list[str]:
    """One row per stored run of the calibration grid (``config``, under ``root``) and one verdict per point
    against :data:`BAR`; the best point reported whether or not it clears the bar; the runs not stored named."""
    unique = unique_train_tokens(root)
    rows, per_point, missing = [], {}, []
    for run in stored(Path(root) / config, PROFILE, None, SEEDS, store):
        point, seed, p = run.point, run.seed, run.payload
        if not run.found:
            missing.append((point, seed, ""))
            continue
        prov = p["result"].get("provenance", {})
        tokens = p["result"].get("tokens_seen", 0)
        passes = f" ({tokens / unique:.1f} passes)" if unique else ""
        value, pl, failure = _reading(p)
        sink = fmt_spread(pl, 1) if isinstance(pl, dict) else pl
        if isinstance(pl, dict) and still_rising(pl, "Sink_1"):
            sink += f", still rising (+{pl['rise']:.1f} across the plateau)"
        if failure:
            sink += f" (not a result: {failure})"
        leave = leaves_uniform(p)
        left = f"{leave['tokens']:,} tokens (step {leave['step']})" if leave else "never"
        rows.append(f"| {point} | {_shape(p['config'])} | {seed} | {tokens:,}{passes} | {sink} | {left} | "
                    f"{p['result']['val_loss']:.3f} | {prov.get('wall_seconds', 0) / 60:.1f} min, {where(prov)} |")
        per_point.setdefault(point, []).append(value)
    if not rows:
        return [f"No run of the calibration grid is stored yet: `scripts/lease.sh gpu` trains it on a lent GPU "
                f"({len(missing)} runs: every point of `{config}` x seeds {', '.join(map(str, SEEDS))})."]
    lines = ["| point | shape | seed | tokens (passes over the unique tokens) | Sink_1 % on the plateau [its min, max] "
             "| alpha_1 leaves uniform at | held-out loss | wall, where |", "|---|---|---|---|---|---|---|---|",
             *rows, ""]
    best = None
    for point, values in per_point.items():
        above = sum(v is not None and v >= BAR for v in values)
        clears = above == len(SEEDS)
        lines.append(f"{point}: Sink_1 >= {BAR:g} % on the plateau in {above} of {len(SEEDS)} seeds"
                     + (f" ({len(values)} stored)" if len(values) < len(SEEDS) else "")
                     + (": **clears the bar**." if clears else ": does not clear the bar."))
        scored = [v for v in values if v is not None]
        key = (clears, above, sum(scored) / len(scored) if scored else -1.0)
        if best is None or key > best[1]:
            best = (point, key)
    point, (clears, above, mean) = best
    chosen = calibrated_point(store, root, config)
    if chosen is not None:
        lines.append(f"Calibrated: {chosen}, the first point in the grid's order to clear the bar (the rule "
                     f"registered with the grid); the `gpu` profile trains its recipe.")
    lines.append(f"Best: {point} ({above} of {len(SEEDS)} seeds at or above {BAR:g} %"
                 + (f", mean {mean:.1f} %" if mean >= 0 else "") + ")"
                 + ("; it clears the bar." if clears else "; no point clears the bar yet.")
                 + (f" Not stored yet: {runs_by_point(missing)}." if missing else " Every run of the grid is stored."))
    lines.append(f"Fixed with the grid, before any run (`{config}`): the bar, Sink_1 >= {BAR:g} % on the plateau "
                 f"(the last {100 * PLATEAU:g} % of the steps; a plateau still rising is a lower bound) in every "
                 f"one of {len(SEEDS)} seeds; no fixed first token, no BOS; 100 held-out 64-token sequences, epsilon "
                 f"0.3; alpha_1 leaves uniform at the first evaluation whose excess reaches {LEAVES_UNIFORM:g}; weight "
                 f"decay 0.5, where the paper's sink peaks (its default: 0.1), except wd0.1. Passes count the "
                 + (f"corpus's {unique:,} unique training tokens." if unique else "corpus's unique training tokens "
                    "(no corpus here)."))
    return lines


def calibration_markdown(store: str | Path = DEFAULT_STORE, root: str | Path = ".") -> str:
    """The calibration block as the Measurements page shows it, for a chapter."""
    return "\n".join(markdown_line(line) for line in calibration_lines(store, root))


def calibration_runs(store: str | Path = DEFAULT_STORE, root: str | Path = ".") -> list[dict]:
    """Every stored run of the calibration grid (seeds :data:`SEEDS`), in the grid's order."""
    return [run.payload for run in stored(Path(root) / CALIBRATION, PROFILE, None, SEEDS, store) if run.found]


AFTER_CALIBRATION = ("cheaper",)   # exploratory families (configs/cheaper.yaml) that wait for the calibration


def lease_wants(q, store: str | Path, root: str | Path = ".") -> bool:
    """Whether a lease should still train a queued run (a :class:`sinkpaper.train.lease.QueuedRun`): a calibration
    run while its point can still clear the bar and no earlier point of the grid has cleared it; an exploratory
    run after the calibration only once it has passed; every other run while it is neither stored nor diverged."""
    from ..train.config import sweep_points
    from ..train.lease import not_done
    if not not_done(q, store):
        return False
    if q.run.family in AFTER_CALIBRATION:
        return calibrated_point(store, root) is not None
    if q.run.family != Path(CALIBRATION).stem:
        return True
    if not still_open([q.run.point], store, root):
        return False
    done = calibrated_point(store, root)
    if done is None:
        return True
    order = sweep_points(q.config)
    return order.index(q.run.point) < order.index(done)
