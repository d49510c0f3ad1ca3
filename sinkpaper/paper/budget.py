"""Sink or not yet: a "no sink" reading counts against the paper only where its run learned as far as the base had
when the base's sink formed. Fixed before the long runs it judges (configs/budget.yaml).

The paper reads its tables after ~20B tokens; the text recipe reads at 10.24M, where the base's own sink has just
formed, and a change that slows learning can read "no sink" only because it has not got there yet. So:

- **Warm-up flickers are not onsets.** An evaluation can be a sink's onset only once the run has left the unigram
  regime (:func:`sinkpaper.paper.onsets.left_unigram`: its held-out or training loss at least 10 % below the
  unigram loss of its data, and why 10 %).
- **The base's onset loss** is the held-out loss at which every one of its seeds had formed its sink: for each
  seed, the mean held-out loss over its onset evaluation and the one on either side (``SMOOTH`` evaluations); the
  lowest over the seeds. A base with a seed whose sink never formed sets no onset loss.
- **A run is ripe** where its held-out loss (the same running mean) reached the base's onset loss no later than
  the first step of the window it is read on (its plateau, the last 20 % of its steps): then the whole window is
  read past the loss at which the base had its sink.
- **Not yet.** A verdict that disagrees with the paper reads NOT_YET where it rests on "no sink" readings of runs
  that are not ripe: the rule read again with those readings replaced by a sink they could still grow (``SINK`` to
  100 %) agrees. Where no such sink makes it agree but one undoes the disagreement, the ripe runs alone do not
  decide: INCONCLUSIVE. A real suppressor (ripe, no sink) keeps its disagreement; so does a disagreement that a
  sink could not undo.
"""
from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass
from typing import Mapping, Sequence

from ..results.numbers import seeds_text
from ..results.reading import PLATEAU, evaluations, logged, plateau_of
from .onsets import onset_record
from .verdicts import AGREES, DISAGREES, INCONCLUSIVE, NO_SINK, NOT_YET, SINK

SMOOTH = 3            # evaluations in the running mean of the held-out loss (the onset's and one on either side)
FILL = tuple(float(v) for v in range(int(SINK), 101, 5))   # the sinks an unripe run could still grow, in %


def smoothed_losses(payload: Mapping) -> list[tuple[int, float]]:
    """(step, held-out loss averaged over SMOOTH evaluations centred on it) for every evaluation with a loss."""
    evals = [(c["step"], c["val_loss"]) for c in evaluations(payload) if c.get("val_loss") is not None]
    half = SMOOTH // 2
    return [(step, statistics.fmean(v for _, v in evals[max(0, i - half): i + half + 1]))
            for i, (step, _) in enumerate(evals)]


def onset_loss(payload: Mapping) -> float | None:
    """One run's smoothed held-out loss at its sink's onset; None where no sink formed."""
    hit = onset_record(payload, "sink")
    if hit is None:
        return None
    return dict(smoothed_losses(payload)).get(hit["step"])


@dataclass(frozen=True)
class OnsetLoss:
    """The base's onset loss (``loss``: the lowest of its seeds') and each seed's, or why there is none; ``layers``:
    the base's depth (a loss guards only runs of the same depth)."""
    loss: float | None
    per_seed: Mapping[int, float | None]
    why: str = ""
    layers: int | None = None


def base_onset_loss(payloads: Sequence[Mapping]) -> OnsetLoss:
    """The held-out loss at which every seed of the base had formed its sink (see the module's text)."""
    per_seed = {int(p["config"]["run"]["seed"]): onset_loss(p) for p in payloads}
    if not per_seed:
        return OnsetLoss(None, {}, "no run of the base is stored")
    depths = {p["config"]["model"]["n_layers"] for p in payloads}
    layers = depths.pop() if len(depths) == 1 else None
    never = [s for s, v in per_seed.items() if v is None]
    if never:
        return OnsetLoss(None, per_seed, f"the base's sink never formed in seed{'s' if len(never) > 1 else ''} "
                                          f"{', '.join(map(str, never))}", layers)
    return OnsetLoss(min(per_seed.values()), per_seed, layers=layers)


@dataclass(frozen=True)
class Ripeness:
    """Whether a run is read past the base's onset loss: ``reached`` (the step its smoothed held-out loss first got
    there, None if never), ``window`` (the first step of its read window), ``final`` (its smoothed loss there)."""
    ripe: bool
    reached: int | None
    window: float
    final: float | None


def ripeness(payload: Mapping, loss: float) -> Ripeness:
    """A run against an onset loss (see the module's text)."""
    curve = smoothed_losses(payload)
    evals = evaluations(payload)
    last = evals[-1]["step"] if evals else payload["config"]["optim"]["steps"]
    window = (1 - PLATEAU) * last
    reached = next((step for step, v in curve if v <= loss), None)
    final = next((v for step, v in curve if step >= window), curve[-1][1] if curve else None)
    return Ripeness(reached is not None and reached <= window, reached, window, final)


def unripe_text(point: str, runs: Sequence[tuple[int, Ripeness]], loss: float, tokens: float | None = None) -> str:
    """One point's unripe runs in a line: "pos_nope (seeds 0, 1, 2) never reached the base's onset loss 5.140 in
    10.2M tokens (5.26-5.27 where read)", or "... reached it only at steps 2,100 / 2,300, inside the window read"
    (a step all its seeds share said once)."""
    never = [(s, r) for s, r in runs if r.reached is None]
    late = [(s, r) for s, r in runs if r.reached is not None]
    seeds = lambda rs: seeds_text([s for s, _ in rs])  # noqa: E731
    budget = f" in {tokens / 1e6:.1f}M tokens" if tokens else ""
    parts = []
    if never:
        finals = sorted(r.final for _, r in never if r.final is not None)
        where = (f" ({finals[0]:.3f}" + (f"-{finals[-1]:.3f}" if finals[-1] != finals[0] else "") + " where read)"
                 if finals else "")
        parts.append(f"{point} ({seeds(never)}) never reached the base's onset loss {loss:.3f}{budget}{where}")
    if late:
        at = [f"{r.reached:,}" for _, r in late]
        at = f"step {at[0]}" if len(set(at)) == 1 else f"steps {' / '.join(at)}"    # one step said once
        parts.append(f"{point} ({seeds(late)}) reached the base's onset loss {loss:.3f} only at {at}, inside the "
                     f"window read (from step {late[0][1].window:,.0f})")
    return "; ".join(parts)


UNKNOWN = (0.0, NO_SINK, *FILL)   # what a seed never trained could read: no sink, a small one, any sink


def not_yet(judge_fn, seed_values: Mapping[str, Sequence[float]], unripe: Mapping[str, Sequence[int]],
            unknown: Mapping[str, int] | None = None) -> str | None:
    """What a disagreement reads once its unripe "no sink" readings are set aside. ``unripe`` maps a label to the
    positions (in its seed values) of its no-sink readings on unripe runs; the rule (``judge_fn(values) ->
    verdict``) is read again with each of them replaced by every sink in FILL. NOT_YET where some sink they could
    still grow makes the claim agree; INCONCLUSIVE where none does but some undoes the disagreement (the ripe seeds
    alone do not decide); None where every sink leaves it a disagreement (it stands on ripe runs).

    ``unknown``: labels the plan ran no further than an unripe seed 0 (:func:`stopped_points`), {label: the
    number of seeds}, absent from ``seed_values``; each is read as every value in UNKNOWN (all its seeds alike,
    and every such label alike), with the unripe readings as they are and as every FILL. Then a verdict is always
    returned: the one every reading gives where they all give one (the point does not decide the claim)."""
    unknown = dict(unknown or {})
    if not any(unripe.values()) and not unknown:
        return None
    fills = ((None,) if unknown else ()) + (FILL if any(unripe.values()) else ())
    got = set()
    for fill in fills:
        values = {k: [fill if fill is not None and i in unripe.get(k, ()) else v for i, v in enumerate(vs)]
                  for k, vs in seed_values.items()}
        for u in UNKNOWN if unknown else (None,):
            got.add(judge_fn({**values, **{k: [u] * n for k, n in unknown.items()}}))
    if unknown and len(got) == 1:
        return got.pop()
    if AGREES in got:
        return NOT_YET
    return INCONCLUSIVE if got - {DISAGREES} else (DISAGREES if unknown else None)


def unripe_of(out: Mapping, judged: Mapping[str, str], loss: float) -> tuple[dict[str, list[int]], list[str]]:
    """A claim's result's "no sink" readings on runs not ripe against ``loss``: ({label: their positions in its
    seed values}, one line per point (:func:`unripe_text`)); ``judged``: {label: point} of the labels a rule
    reads. ``out`` holds "seed_values", "seeds" (or each label's "seeds_of") and "_payloads" ({label: {seed:
    the run}})."""
    unripe: dict[str, list[int]] = {}
    runs: dict[str, dict[int, Ripeness]] = {}
    tokens: dict[str, float | None] = {}
    for label, values in out["seed_values"].items():
        if label not in judged:
            continue
        seeds = out["seeds_of"].get(label, out["seeds"]) if out.get("seeds_of") else out["seeds"]
        for i, (seed, v) in enumerate(zip(seeds, values)):
            payload = out["_payloads"].get(label, {}).get(seed)
            if payload is None or v >= SINK:
                continue
            ripe = ripeness(payload, loss)
            if not ripe.ripe:
                unripe.setdefault(label, []).append(i)
                runs.setdefault(judged[label], {})[seed] = ripe
                tokens[judged[label]] = tokens_of(payload)
    return unripe, [unripe_text(pt, sorted(rs.items()), loss, tokens[pt]) for pt, rs in runs.items()]


PLAN = "configs/budget.yaml"


def stopped_points(out: Mapping, lacking: Mapping[str, Sequence[int]], judged: Mapping[str, str],
                   loss: float) -> dict[str, str]:
    """The points the budget plan (PLAN) runs no further than seed 0: its seeds 1 and 2 run only where seed 0
    forms a sink (>= SINK) or reaches the base's onset loss before its read window and stays without one. {label:
    one line}, for each judged label ({label: point}) whose point lacks exactly its seeds past 0 (``lacking``:
    {point: its seeds not stored}) while its seed 0 is stored with no sink, unripe."""
    out_of: dict[str, str] = {}
    for label, point in judged.items():
        payload = out["_payloads"].get(label, {}).get(0)
        mean = (out["plateaus"].get(label, {}).get("0") or {}).get("mean")
        if payload is None or mean is None or mean >= SINK or not lacking.get(point) or 0 in lacking[point]:
            continue
        ripe = ripeness(payload, loss)
        if not ripe.ripe:
            out_of[label] = (unripe_text(point, [(0, ripe)], loss, tokens_of(payload))
                             + f"; {PLAN} runs no further seed of it")
    return out_of


def is_sink_metric(metric: str) -> bool:
    """The readings the guard applies to: a Sink % of some token (Sink_1, Sink_k, Sink*), not a loss, a step or
    alpha."""
    return metric.startswith("Sink") and not metric.startswith("Sink_doc")


def tokens_of(payload: Mapping) -> float | None:
    """Tokens a run trained on (its last evaluation's count)."""
    evals = evaluations(payload)
    t = evals[-1].get("tokens") if evals else None
    return None if t is None or (isinstance(t, float) and math.isnan(t)) else float(t)


# ------------------------------------------------------------------------------- the sink against the loss
def loss_rows(payload: Mapping, label: str, role: str, tag: str = "") -> list[dict]:
    """One run's evaluations as (smoothed held-out loss, Sink_1) rows for the sink-against-loss chart; the last
    row marks where the run stopped. ``tag`` tells apart two runs of one seed drawn in one panel."""
    sink = {c["step"]: c["sink_k"].get("1", 0.0) for c in evaluations(payload)}
    seed = int(payload["config"]["run"]["seed"])
    run = f"{role} seed {seed}" + (f" ({tag})" if tag else "")
    rows = [{"change": label, "role": role, "run": run, "seed": seed, "step": step, "loss": v,
             "sink_1": sink[step], "last": False} for step, v in smoothed_losses(payload) if step in sink]
    # a run with fewer evaluations than the running mean spans (one just begun) gives each the same mean of them
    # all: drawn once, at the latest, as a line may pass each loss once
    rows = [r for r, after in zip(rows, rows[1:] + [None]) if after is None or after["loss"] != r["loss"]]
    if rows:
        rows[-1]["last"] = True
    return rows


def sink_against_loss(changes: Mapping[str, tuple[str, str] | list[tuple[str, str]]], base: tuple[str, str],
                      profile: str = "text", seeds: Sequence[int] = (0, 1, 2), store=None,
                      running: bool = False) -> dict:
    """What the sink-against-loss chart draws for ``changes`` ({label: (config, point)}, or a list of them: the
    same change at several budgets, each run tagged with its point) beside ``base`` ((config, point)): {"rows":
    every evaluation of every stored run, the base's repeated under each change's label, "onset": the base's
    :class:`OnsetLoss`, "missing": the changes with no stored run, "running": {label: the step each run in
    training has reached}}. With ``running``, a run in training is drawn from its partial curve (role "running"),
    never read as a result. Runs that did not learn or spiked are left out, as every reading leaves them out, and
    named in "left_out" ("<point> seed <n>: <why>"). A change's extra seeds (EXTRA_SEEDS: added to settle a claim,
    or in place of one that spiked) are drawn too; the base's onset loss is read on ``seeds``, as the guard reads it."""
    from ..resources import find_config
    from ..results.reading import TRAINED, stored, training_failure
    from ..train.store import DEFAULT_STORE, partial_path, read_entry
    from .verdicts import EXTRA_SEEDS
    store = store or DEFAULT_STORE
    left_out: list[str] = []

    def runs_of(config: str, point: str, seeds: Sequence[int]) -> list[tuple[dict, str]]:
        out = []
        for s in stored(find_config(config), profile, [point], seeds, store):
            why = training_failure(s.payload, TRAINED, PLATEAU) if s.found else None
            if s.found and not why:
                out.append((s.payload, "change"))
            elif s.found and f"{point} seed {s.cfg.run.seed}: {why}" not in left_out:
                left_out.append(f"{point} seed {s.cfg.run.seed}: {why}")
            elif not s.found and running and (part := partial_path(store, s.cfg.hash())).is_file():
                out.append((read_entry(part), "running"))
        return out

    base_runs = [p for p, role in runs_of(*base, seeds) if role == "change"]
    onset = base_onset_loss(base_runs)
    rows, missing, in_training, readings = [], [], {}, []
    for label, where in changes.items():
        points = where if isinstance(where, list) else [where]
        got = [(p, role, point if len(points) > 1 else "") for config, point in points
               for p, role in runs_of(config, point, (*seeds, *EXTRA_SEEDS))]
        if not got:
            missing.append(label)
            continue
        for p in base_runs:
            rows += loss_rows(p, label, "base")
        for p, role, tag in got:
            rows += loss_rows(p, label, role, tag)
            if role == "running":
                in_training.setdefault(label, []).append(int((p.get("progress") or {}).get("step", 0)))
            elif onset.loss is not None:
                readings.append(Reading(tag or label, int(p["config"]["run"]["seed"]),
                                        plateau_of(p, "Sink_1")["mean"], ripeness(p, onset.loss).ripe))
    return {"rows": rows, "onset": onset, "missing": missing, "running": in_training, "readings": readings,
            "left_out": left_out}


# what a run of the sink-against-loss chart reads, suppressions first: what the chart is for
STATES = ("no sink past the base's onset loss", "not yet", f"between {NO_SINK:g} and {SINK:g} %", "a sink")


@dataclass(frozen=True)
class Reading:
    """One stored run of the sink-against-loss chart as the guard reads it: its plateau Sink_1 and ripeness."""
    name: str            # the change, or its point where one change is drawn at several budgets
    seed: int
    sink_1: float
    ripe: bool

    @property
    def state(self) -> str:
        """One of STATES."""
        if self.sink_1 >= SINK:
            return STATES[3]
        if self.sink_1 >= NO_SINK:
            return STATES[2]
        return STATES[0] if self.ripe else STATES[1]


def budget_finding(readings: Sequence[Reading]) -> str:
    """What the sink-against-loss chart shows, in one sentence read from its stored runs: each state of
    :class:`Reading` with the changes in it. Where every change has the same one seed, it is said once; where
    most have the same several seeds, those go unsaid; any other change is named with its seeds in each state."""
    by: dict[str, dict[str, list[int]]] = {}
    for r in readings:
        by.setdefault(r.state, {}).setdefault(r.name, []).append(r.seed)
    seeds_of = {r.name: tuple(sorted(x.seed for x in readings if x.name == r.name)) for r in readings}
    sets = Counter(seeds_of.values())
    one = next(iter(sets)) if len(sets) == 1 and len(next(iter(sets))) == 1 else None
    usual = max(sets, key=lambda k: (sets[k], len(k))) if sets else ()
    usual = usual if len(usual) > 1 else None
    named = lambda name, seeds: name + (  # noqa: E731
        "" if one or tuple(sorted(seeds)) == usual else f" ({seeds_text(sorted(seeds))})")
    said = [f"{state}: " + ", ".join(named(name, seeds) for name, seeds in names.items())
            for state, names in sorted(by.items(), key=lambda kv: STATES.index(kv[0]))]
    if not said:
        return ""
    return f"On each run's plateau{f' (seed {one[0]} of each)' if one else ''}, " + "; ".join(said) + "."


# ---------------------------------------------------------------------------------- one run, every budget
class BudgetError(ValueError):
    """A run read at a budget it cannot give (inside its warm-up, or past its end): one line, naming the run."""


def at_budget(payload: Mapping, steps: int) -> dict:
    """A stored run read as if it had stopped after ``steps``: its curve up to that step and its config's steps
    set to it, so its plateau, onsets and ripeness are those of the shorter run. With the constant schedule a
    longer run holds the shorter one as its prefix (checked bit for bit by :func:`prefix_difference`). Refused
    (BudgetError) inside the warm-up, where the LR differs from the shorter run's no longer, but the read window
    would hold nothing past it, or past the run's end: a budget it never reached is no result, never an
    extrapolation."""
    cfg = payload["config"]
    name, seed, end = payload.get("name"), cfg["run"]["seed"], int(cfg["optim"]["steps"])
    if cfg["optim"].get("schedule", "constant") != "constant":
        raise BudgetError(f"{name} seed {seed} trained a {cfg['optim']['schedule']} schedule: its prefix is not a "
                          "shorter run (the LR depends on the total steps)")
    if steps <= int(cfg["optim"].get("warmup", 0)):
        raise BudgetError(f"{name} seed {seed}: a budget of {steps:,} steps lies inside its {cfg['optim']['warmup']}-"
                          "step warm-up")
    if steps > end:
        raise BudgetError(f"{name} seed {seed} trained {end:,} steps, not {steps:,}: no result at that budget "
                          f"(train the point with optim.steps_scale x{steps / end:g} to read it)")
    curve = [c for c in payload.get("curve", []) if c["step"] <= steps]
    last = next((c for c in reversed(curve) if "sink_k" in c and c["step"] == steps), None)
    if last is None:
        raise BudgetError(f"{name} seed {seed} has no evaluation at step {steps:,} (it evaluates every "
                          f"{cfg['eval']['every']} steps)")
    out = {**payload, "config": {**cfg, "optim": {**cfg["optim"], "steps": steps}}, "curve": curve,
           "read_at": {"steps": steps, "of": end}}
    out["result"] = {**payload.get("result", {}), "sink_k": last["sink_k"], "step": steps,
                     "val_loss": last.get("val_loss"), "alpha_1_mean": last.get("alpha_1_mean"),
                     "tokens_seen": last.get("tokens")}
    return out


def prefix_difference(short: Mapping, long: Mapping) -> str | None:
    """Where a shorter run's log differs from the start of a longer one (same seed and recipe), or None when every
    record of the shorter run, its training losses and every evaluation, is the same bit for bit. The records past
    the shorter run's last step, and timings, are not compared."""
    steps = int(short["config"]["optim"]["steps"])
    timing = {"tokens_per_s", "wall_seconds", "eval_seconds", "eval_cpu_seconds"}

    def records(p):
        return {(c["step"], "sink_k" in c): {k: v for k, v in c.items() if k not in timing}
                for c in logged(p.get("curve", [])) if c["step"] <= steps} | {
            (c["step"], True): {k: v for k, v in c.items() if k not in timing}
            for c in evaluations(p) if c["step"] <= steps}

    a, b = records(short), records(long)
    for key in sorted(a):
        if key not in b:
            return f"step {key[0]}: the longer run has no {'evaluation' if key[1] else 'log line'} there"
        for field, value in a[key].items():
            if b[key].get(field) != value:
                return f"step {key[0]}: {field} {value!r} against {b[key].get(field)!r}"
    return None


def route_of(payload: Mapping) -> tuple:
    """What a run's numbers depend on besides its config and seed: the hardware, torch, the dtype, compiled or not,
    and the attention route where recorded."""
    pv = payload.get("result", {}).get("provenance", {})
    return (pv.get("hardware"), pv.get("torch"), pv.get("dtype"), pv.get("compiled"), pv.get("routes"))


@dataclass(frozen=True)
class PrefixPair:
    longer: str          # "family/point_steps_xN seed s"
    shorter: str
    same_route: bool
    difference: str | None


def stored_prefix_pairs(store: str = "results/store", profile: str = "text") -> list[PrefixPair]:
    """Every stored longer run (a point ``X_steps_xN``) beside the stored run of its point ``X`` with the same seed,
    and whether the shorter one is its prefix bit for bit (:func:`prefix_difference`)."""
    import re

    from ..train.store import entries
    runs: dict[tuple[str, int], list[dict]] = {}
    for _, d in entries(store):
        if "result" in d and d.get("profile") == profile:
            runs.setdefault((d["name"], int(d["config"]["run"]["seed"])), []).append(d)
    out = []
    for (name, seed), longs in sorted(runs.items()):
        m = re.fullmatch(r"(.*)_steps_x\d+(?:\.\d+)?", name)
        for short in runs.get((m.group(1), seed), []) if m else []:
            for long in longs:
                out.append(PrefixPair(f"{name} seed {seed}", f"{short['name']} seed {seed}",
                                      route_of(short) == route_of(long), prefix_difference(short, long)))
    return out
