"""Each claim's result at each scale: the chapters' records (else the measurement committed to the repository,
:mod:`.committed`) and the results store, read seed by seed."""
from __future__ import annotations

import functools
import os
import re
import statistics
from pathlib import Path
from dataclasses import dataclass, field, replace
from typing import Mapping, Sequence

from ..resources import find_config
from ..results.numbers import runs_by_point, seeds_text
from ..results.reading import NotEnoughEvaluations, plateau_of, still_rising, stored, training_failure
from ..train.config import PROFILES
from ..train import store as S
from ..train.store import DEFAULT_STORE
from ..train.recheck import trained_bf16_softmax
from ..train.sweep import DIVERGED, divergence_error, read_diverged
from .claim import Chapter, Claim, NotRun, Runs, as_planned
from .claims import CLAIMS, rule_check
from .committed import committed_record
from .onsets import did_not_last, never_step, onset_step
from .records import load_records
from . import budget
from .verdicts import (DEFAULT_CPU_SCALE, DISAGREES, EXTRA_SEEDS, GPU_SCALE, INCONCLUSIVE, LAYERS_4_SCALE,
                       NOT_COMPARABLE, NOT_RUN, NOT_YET, NO_RESULT, PLATEAU, PLATEAU_EVALS, RISING, SCALES, SEEDS_MIN,
                       STALE, TRAINED, Seeds, Undecided, judge)

# ------------------------------------------------------------------------------------- the results store
def store_lookup(config: str, profile: str, point: str, seed: int, store: str = DEFAULT_STORE) \
        -> tuple[dict | None, str]:
    """A sweep point's stored run for the listing: (payload, status) with status "found", "missing", STALE or
    DIVERGED (then the payload is the divergence record: its "error" says at which step), read through the one
    loop over the store (:func:`sinkpaper.results.reading.stored`); a stale run is never read as a current
    result."""
    try:   # a family's file is found whatever the working directory (./configs, then the shipped configs)
        [run] = stored(find_config(config), profile, [point], [seed], store)
    except (ValueError, KeyError, FileNotFoundError):
        return None, "missing"          # e.g. a profile ("text") the config does not define yet
    if run.found:
        return run.payload, "found"
    if run.status == S.STALE:
        return None, STALE
    diverged = read_diverged(store, run.cfg)
    return (diverged, DIVERGED) if diverged else (None, "missing")


PROFILE_OF = {"real text (CPU)": "text", LAYERS_4_SCALE: "text", DEFAULT_CPU_SCALE: "text", GPU_SCALE: "gpu",
              "miniature": "cpu"}


def scale_rule(c: Claim, scale: str):
    """The rule a claim is judged by at a scale: the claim's, or the same rule over the fewer labels run there
    (``Runs.rule``)."""
    m = c.measure.get(scale)
    return m.rule if isinstance(m, Runs) and m.rule is not None else c.rule


PAPER_WD = 0.1   # the paper's default weight decay, said beside a scale that trains with another
ONSET = "onset: "   # a metric "onset: <quantity>" reads a run's onset of that quantity (sinkpaper.paper.onsets)
STEPS = "steps"     # the metric "steps" reads the number of steps a run trained (where an onset past it never came)


def onset_of(payload: Mapping, metric: str) -> dict | None:
    """A stored run's onset of the quantity a metric "onset: <quantity>" names, as a plateau-shaped reading
    (sinkpaper.paper.onsets); None when the run does not record the quantity."""
    step = onset_step(payload, metric.removeprefix(ONSET))
    if step is None:
        return None
    return {"mean": step, "min": step, "max": step, "n": 1, "from_step": None, "to_step": None, "rise": 0.0}


def _reading(payload: Mapping, metric: str) -> dict | None:
    if metric.startswith(ONSET):
        return onset_of(payload, metric)
    if metric == STEPS:
        n = float(payload["config"]["optim"]["steps"])
        return {"mean": n, "min": n, "max": n, "n": 1, "from_step": None, "to_step": None, "rise": 0.0}
    return plateau_of(payload, metric, PLATEAU, PLATEAU_EVALS)


def unequal_budgets(rule, steps: Mapping[str, Sequence[int]]) -> str:
    """The pairs a rule compares that were stored at different numbers of steps, as a reason ("" when none)."""
    bad = [f"{a} at {'/'.join(map(str, steps[a]))} steps, {b} at {'/'.join(map(str, steps[b]))}"
           for a, b in (rule.pairs() if rule else []) if a in steps and b in steps and steps[a] != steps[b]]
    return ("unequal budgets, not compared: " + "; ".join(bad)) if bad else ""


def _reason(rule, seed_values: Mapping[str, Sequence[float]]) -> str:
    try:
        return rule.reason({k: Seeds(k, v) for k, v in seed_values.items()})
    except Undecided:
        return ""


@dataclass
class _Read:
    """What a claim's stored runs gave at one profile, run by run: each label's plateau per seed and what was
    left out on the way (stale, missing, not trained, no plateau), with the provenance the listing reports."""
    got: dict[str, dict[int, float]] = field(default_factory=dict)
    plateaus: dict[str, dict[int, dict]] = field(default_factory=dict)
    excluded: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    prov: list[str] = field(default_factory=list)
    computed: list = field(default_factory=list)
    rising: list[tuple[str, int, str]] = field(default_factory=list)   # (point, seed, "Sink_1 +23.2")
    dirty: list[tuple[str, int, str]] = field(default_factory=list)    # (point, seed, "")
    steps: dict[str, set[int]] = field(default_factory=dict)
    wds: set[float] = field(default_factory=set)
    transient: list[dict] = field(default_factory=list)   # onsets that did not last (paper.onsets.did_not_last)
    missing_required: bool = False
    payloads: dict[str, dict[int, dict]] = field(default_factory=dict)   # the runs of Sink % labels, for the guard
    dtypes: dict[str, set[str]] = field(default_factory=dict)            # the dtype each point's counted runs trained


def _read_runs(m: Runs, profile: str, store: str) -> _Read:
    """Every run a claim names at one profile, each read on its plateau (or its onset), seed by seed."""
    r = _Read()
    for label, spec in m.points.items():
        point, metric = spec[0], spec[1]
        config = spec[2] if len(spec) > 2 and spec[2] else m.config
        steps = spec[3] if len(spec) > 3 else None   # read a longer run at this budget (its prefix)
        r.got[label], r.plateaus[label] = {}, {}
        for seed in (*m.seeds, *EXTRA_SEEDS):
            payload, st = store_lookup(config, profile, point, seed, store)
            if st == STALE:
                if seed in m.seeds and f"{point} seed {seed}" not in r.stale:   # one run read under several labels
                    r.stale.append(f"{point} seed {seed}")
                continue
            if payload is None or st == DIVERGED:
                r.missing_required |= seed in m.seeds and label not in m.beside
                if st == DIVERGED:   # a result (the paper's "-"), named, never read as a value
                    r.excluded.append(f"{point} seed {seed}: diverged, {divergence_error(payload)}")
                continue
            if steps is not None:
                try:
                    payload = budget.at_budget(payload, steps)
                except budget.BudgetError as e:
                    r.excluded.append(str(e))
                    r.missing_required |= seed in m.seeds and label not in m.beside
                    continue
            if trained_bf16_softmax(payload) and payload["name"] not in standing_points(str(store)):
                # the faulty bf16 softmax: read like a spiked run, named and not counted until its rerun lands
                # (or the rule fixed before the reruns finds its point's seeds stand beside its seed-0 rerun)
                r.excluded.append(f"{point} seed {seed}: trained through the old bf16 softmax: not counted until its "
                                  "rerun lands")
                continue
            r.prov.append(payload["hash"])
            if str(payload["result"].get("provenance", {}).get("code_version", "")).endswith(".dirty"):
                r.dirty.append((point, seed, ""))
            r.computed.append(payload["result"].get("provenance", {}).get("computed_at"))
            why = training_failure(payload, TRAINED, PLATEAU)
            if why:
                r.excluded.append(f"{point} seed {seed}: {why}")
                continue
            r.steps.setdefault(label, set()).add(payload["config"]["optim"]["steps"])
            r.dtypes.setdefault(point, set()).add(str(payload["result"].get("provenance", {}).get("dtype")
                                                      or payload["config"]["run"].get("dtype") or "fp32"))
            try:
                p = _reading(payload, metric)
            except NotEnoughEvaluations as e:
                r.excluded.append(str(e))
                continue
            if p is not None:
                r.got[label][seed] = p["mean"]
                r.plateaus[label][seed] = p
                if budget.is_sink_metric(metric):
                    r.payloads.setdefault(label, {})[seed] = payload
                r.wds.add(payload["config"]["optim"]["weight_decay"])
                if still_rising(p, metric, RISING):
                    r.rising.append((point, seed, f"{metric} +{p['rise']:.1f}"))
                if metric.startswith(ONSET) and (gone := did_not_last(payload, metric.removeprefix(ONSET))):
                    r.transient.append({"label": label, "seed": seed, "never": never_step(payload), **gone})
    r.excluded = list(dict.fromkeys(r.excluded))   # a run two labels read is listed once
    return r


def _run_of(m: Runs, label: str) -> tuple[str, str]:
    """The run a label reads: (its config, its point)."""
    spec = m.points[label]
    return (spec[2] if len(spec) > 2 else m.config), spec[0]


def _per_run(m: Runs, got: Mapping[str, Mapping[int, float]]) -> dict[str, list[int]]:
    """The seeds each label is read on when the rule reads per run (``Rule.per_run``): a judged label, the seeds
    every judged label of its run has (the run's trained seeds); a label shown beside, its own."""
    judged = [k for k in got if k not in m.beside]
    out = {}
    for k in got:
        if k in m.beside:
            out[k] = sorted(got[k])
        else:
            out[k] = sorted(set.intersection(*(set(got[j]) for j in judged if _run_of(m, j) == _run_of(m, k))))
    return out


def _paired(m: Runs, got: Mapping[str, Mapping[int, float]], per_run: bool = False) \
        -> tuple[list[int], dict, dict, dict]:
    """(the paired seeds, each label's value per paired seed, each label's mean over them, each label's seeds).
    Seeds are paired across the claim's labels: those every label the rule may read has (a seed such a label lacks
    drops out for all). A label shown beside holds no verdict back: with every paired seed it is read like the
    others; lacking some of them its mean is over the seeds of it that trained (:func:`_beside_short`; the result's
    note names them) and it has no per-seed values. Fewer than SEEDS_MIN paired seeds give no values. With ``per_run`` (a rule read
    per run) no seed is paired across runs: each label is read on its run's own seeds (:func:`_per_run`), each
    judged run needs SEEDS_MIN of them, and the paired seeds are then all the seeds read."""
    judged = [k for k in got if k not in m.beside]
    if per_run:
        seeds_of = _per_run(m, got)
        if not judged or any(len(seeds_of[k]) < SEEDS_MIN for k in judged):
            return sorted({s for k in judged for s in seeds_of[k]}), {}, {k: None for k in m.points}, {}
        seed_values = {k: [got[k][s] for s in seeds_of[k]] for k in got
                       if k in judged or len(seeds_of[k]) >= SEEDS_MIN}
        return (sorted({s for k in judged for s in seeds_of[k]}), seed_values,
                {k: statistics.fmean(got[k][s] for s in seeds_of[k]) if seeds_of.get(k) else None
                 for k in m.points},
                {k: v for k, v in seeds_of.items() if v})
    paired = sorted(set.intersection(*(set(got[k]) for k in judged))) if judged else []
    if len(paired) < SEEDS_MIN:
        return paired, {}, {k: None for k in m.points}, {}
    seed_values = {k: [got[k][s] for s in paired] for k in got if k in judged or all(s in got[k] for s in paired)}
    short = _beside_short(m, got, paired)
    return paired, seed_values, {k: (statistics.fmean(seed_values[k]) if seed_values.get(k)
                                     else statistics.fmean(got[k][s] for s in short[k]) if k in short else None)
                                 for k in m.points}, \
        {k: (paired if k in seed_values else short[k]) for k in got if k in seed_values or k in short}


def _beside_short(m: Runs, got: Mapping[str, Mapping[int, float]], paired: Sequence[int]) -> dict[str, list[int]]:
    """The labels shown beside that lack some of the paired seeds: {label: the seeds of it that trained}, all of
    them (an extra seed stored for it is read and named, though the verdict's runs lack it)."""
    return {k: sorted(got[k]) for k in m.beside if got.get(k) and not all(s in got[k] for s in paired)}


def _status(r: _Read, enough: bool) -> str:
    if r.stale:
        return STALE
    if all(not v for v in r.got.values()) and not r.excluded:
        return "missing"
    if r.missing_required:
        return "incomplete"
    return "found" if enough else "too few seeds"


_RUN_WHY = re.compile(r"^(\S+) seed (\d+): (.+)$", re.S)


def grouped_runs(entries: Sequence[str]) -> list[str]:
    """Runs not counted ("<point> seed <n>: <why>") with one reason said once: "a seeds 3, 4 and b seed 3: <why>",
    in the order the reasons first come; an entry of another form stays as it is."""
    by_why: dict[str, dict[str, list[str]]] = {}
    for x in entries:
        m = _RUN_WHY.match(x)
        point, seed, why = m.groups() if m else (None, None, x)
        seeds = by_why.setdefault(why, {})
        if point is not None:
            seeds.setdefault(point, []).append(seed)
    out = []
    for why, points in by_why.items():
        runs = " and ".join(f"{pt} seed{'s' if len(sd) > 1 else ''} {', '.join(sd)}" for pt, sd in points.items())
        out.append(f"{runs}: {why}" if runs else why)
    return out


def _notes(r: _Read, m: Runs, profile: str, paired: Sequence[int], enough: bool,
           seeds_of: Mapping[str, Sequence[int]] | None = None) -> list[str]:
    """What a reader of the result should know besides its values: the runs not counted, the seeds read, code
    versions with uncommitted changes, plateaus still rising, a weight decay other than the paper's. With
    ``seeds_of`` (a rule read per run) the seeds are said per run, each as the store has them."""

    notes = [] if profile in PROFILES else [f"the configs define no `{profile}` profile yet: nothing stored"]
    if r.excluded:
        notes.append(f"{len(r.excluded)} run(s) not counted: " + "; ".join(grouped_runs(r.excluded)))
    short: Mapping[str, Sequence[int]] = {}
    if seeds_of is not None:
        runs = {}   # each run read on other seeds than the claim's, once
        for k, have in seeds_of.items():
            if k not in m.beside and list(have) != list(m.seeds):
                runs.setdefault(_run_of(m, k)[1], have)
        if enough and runs:
            notes.append("; ".join(f"{pt}: {seeds_text(have)}" for pt, have in runs.items()))
        short = {k: have for k, have in seeds_of.items() if k in m.beside and len(have) < SEEDS_MIN}
    else:
        if enough and len(paired) != len(m.seeds):
            notes.append(f"seeds {', '.join(map(str, paired))}")
        short = _beside_short(m, r.got, paired)
    if enough:   # a reading shown beside on other seeds than the verdict's names them, as the store has them
        for k, have in short.items():
            notes.append(f"{k}: the mean of {seeds_text(have)} only (the {seeds_text(have).split()[0]} of it "
                         f"that trained)")
    if len({d for ds in r.dtypes.values() for d in ds}) > 1:   # a comparison across dtypes, said as such
        notes.append("dtypes differ: " + ", ".join(f"{pt} {'/'.join(sorted(ds))}" for pt, ds in r.dtypes.items())
                     + " (bf16 and fp32 agree within the routes check's floor at 2 layers)")
    if r.dirty:
        notes.append("trained from uncommitted changes (the diff was not recorded): " + runs_by_point(r.dirty))
    if r.rising:
        notes.append("still rising at the end (the plateau is a lower bound): " + runs_by_point(r.rising))
    if profile == "gpu" and r.wds and r.wds != {PAPER_WD}:
        notes.append(f"weight decay {', '.join(f'{w:g}' for w in sorted(r.wds))} (the paper's default: {PAPER_WD:g})")
    return notes


def _store_result(m: Runs, profile: str, store: str, per_run: bool = False) -> dict:
    """A claim's runs at one profile, each read on its plateau: {"values" (mean over the paired seeds),
    "seed_values" (one value per seed, the seeds in "seeds", or each label's in "seeds_of"), "plateaus" (each
    run's window), "status", "excluded" (runs that did not train or cannot give a plateau, each with why), ...}:
    the runs read (:func:`_read_runs`), their seeds paired (:func:`_paired`; per run with ``per_run``), then what
    the result says."""
    r = _read_runs(m, profile, store)
    paired, seed_values, values, seeds_of = _paired(m, r.got, per_run)
    enough = bool(seed_values) if per_run else len(paired) >= SEEDS_MIN
    status = _status(r, enough)
    pts = ", ".join(f"{k}={sp[0]}" + ("" if sp[1] == "Sink_1" else f" {sp[1]}")
                    + (f" ({sp[2]})" if len(sp) > 2 else "") for k, sp in m.points.items())
    return {"measurement": f"store {m.config} @{profile}, seeds {','.join(map(str, paired or m.seeds))}, each run "
                           f"on its plateau (last {100 * PLATEAU:g} % of its steps): {pts}",
            "values": values if status != STALE else {}, "seed_values": seed_values if status != STALE else {},
            "seeds": paired, "seeds_of": seeds_of if status != STALE else {}, "plateaus": {k: {str(s): p for s, p in v.items()} for k, v in r.plateaus.items()},
            "status": status, "stale": r.stale, "excluded": r.excluded, "runs": sorted(set(r.prov)),
            "steps": {k: sorted(v) for k, v in r.steps.items()},
            "computed_at": sorted(c for c in r.computed if c),   # each run's "YYYY-MM-DD HH:MM UTC"
            "transient": [t for t in r.transient if t["seed"] in paired],
            "_payloads": r.payloads,
            "note": "; ".join(_notes(r, m, profile, paired, enough, seeds_of if per_run else None))}


def result(c: Claim, scale: str, records: Mapping | None = None, store: str = DEFAULT_STORE) -> dict:
    """One claim at one scale: {"measurement", "values", "verdict", "status", "note", ...}."""
    m, plan_note = as_planned(c.measure.get(scale, NotRun("not listed")), scale, store)
    if isinstance(m, NotRun):
        return {"measurement": NOT_RUN, "values": {}, "verdict": NO_RESULT, "status": NOT_RUN, "note": m.reason}
    if isinstance(m, Chapter):
        rec = (records if records is not None else load_records()).get(c.id, {}).get(scale)
        # no chapter record (a fresh clone: the book has not run): the measurement committed to the repository
        committed = committed_record(c.id, scale) if rec is None else None
        if rec is None and committed is None:
            return {"measurement": f"chapter {m.chapter}", "values": {}, "verdict": NO_RESULT, "status": "missing",
                    "note": f"no record: run the chapter (python -m sinkpaper.site run --only {m.chapter})"}
        if committed is not None:
            rec = committed
            where = f"committed {committed['provenance']['read_from']} (no record of chapter {m.chapter})"
        else:
            where = f"chapter {m.chapter}"
        out = {"measurement": f"{where}: {rec['measurement']}", "values": rec["values"],
               "status": "found", "note": rec.get("note", ""), "setting": rec.get("setting", ""),
               "provenance": rec.get("provenance", {})}
        if committed is not None:
            out["read_from"] = committed["provenance"]["read_from"]
    rule = scale_rule(c, scale)
    if isinstance(m, Runs):
        out = _store_result(m, PROFILE_OF[scale], store, rule is not None and rule.per_run)
        if rule is not c.rule and rule is not None:
            out["rule"] = rule.sentence
        if out["status"] in ("missing", "incomplete"):   # which runs, and the command that makes them
            out["_store_note"] = out["note"]
            out["note"] = plan_note or "; ".join(x for x in (_not_stored(m, out, PROFILE_OF[scale]), out["note"]) if x)
    if out["status"] == STALE:
        out["verdict"] = NO_RESULT
        out["note"] = _stale_note(m, out["stale"], PROFILE_OF[scale])
    else:
        out["verdict"], why = _verdict(rule, out)
        if why is not None:
            out["why"] = why
        if isinstance(m, Runs) and out["verdict"] == DISAGREES:
            _budget_guard(m, rule, scale, out, store)
        elif isinstance(m, Runs) and m.budget_plan and out["status"] == "incomplete":
            out = _plan_stopped(m, rule, scale, out, store)
    for scratch in ("_payloads", "_store_note"):
        out.pop(scratch, None)
    if rule is not None and out.get("transient") and out["verdict"] != NO_RESULT:
        out["did_not_last"] = _unlasting(rule, out)
    if isinstance(m, Runs) and m.readings and rule is not None:
        out["second_readings"] = [_second_reading(rule, what, sub, PROFILE_OF[scale], store, out.get("why"))
                                  for what, sub in m.readings.items()]
    return out


def claim_metric(name: str) -> str:
    """The Sink metric the claims read of a stored point ("family/point"): "Sink*" where a claim reads its Sink*
    (the bias and sink-logit designs put their sink on a token of their own), else "Sink_1". The recheck rule
    compares a rerun with its stored seeds on it."""
    return "Sink*" if name in _sink_star_points() else "Sink_1"


@functools.lru_cache(maxsize=1)
def _sink_star_points() -> frozenset[str]:
    out = set()
    for c in CLAIMS:
        for m in c.measure.values():
            for runs in ([m, *m.readings.values()] if isinstance(m, Runs) else []):
                for spec in runs.points.values():
                    if spec[1] == "Sink*":
                        config = spec[2] if len(spec) > 2 and spec[2] else runs.config
                        out.add(f"{Path(config).stem}/{spec[0]}")
    return frozenset(out)


@functools.lru_cache(maxsize=8)
def _standing(store: str, signature: tuple) -> frozenset[str]:
    from ..results.recheck import recheck_table
    return frozenset(row["point"] for row in recheck_table(store, metric_of=claim_metric)
                     if row["action"] == "stands")


def standing_points(store: str) -> frozenset[str]:
    """The points whose bf16-softmax seeds the recheck rule lets stand beside their seed-0 rerun
    (sinkpaper.results.recheck), read once per state of the two stores."""
    from ..train.recheck import RECHECK_STORE
    sig = tuple((p, len(list(Path(p).glob("*.json*"))), max((f.stat().st_mtime for f in Path(p).glob("*.json*")),
                                                             default=0.0)) for p in (store, RECHECK_STORE))
    return _standing(store, sig)


# the base whose sink's onset loss guards a scale's "no sink" readings (Runs.base names another for a claim)
GUARD_BASE = {"real text (CPU)": ("configs/optimization.yaml", "default"),
              LAYERS_4_SCALE: ("configs/data.yaml", "fixed_pos1_layers_4")}


def onset_loss_of(base: tuple[str, str], scale: str, store: str = DEFAULT_STORE) -> budget.OnsetLoss | None:
    """The onset loss of a base ("config", "point") at a scale, from its stored seeds that trained; None where its
    config or profile cannot be read."""
    config, point = base
    try:
        found = [s.payload for s in stored(find_config(config), PROFILE_OF[scale], [point], (0, 1, 2), store)
                 if s.found and not training_failure(s.payload, TRAINED, PLATEAU)]
    except (ValueError, KeyError, FileNotFoundError):
        return None
    return budget.base_onset_loss(found)


def guard_onset_loss(m: Runs, scale: str, store: str) -> tuple[budget.OnsetLoss | None, str]:
    """The onset loss that guards a claim's readings at a scale, and the base it came from ("config point")."""
    base = m.base or GUARD_BASE.get(scale)
    if base is None:
        return None, ""
    return onset_loss_of(base, scale, store), base[1]


def _judged(m: Runs) -> dict[str, str]:
    """{label: point} of the labels a rule reads (not those shown beside)."""
    return {label: spec[0] for label, spec in m.points.items() if label not in m.beside}


def _budget_guard(m: Runs, rule, scale: str, out: dict, store: str) -> None:
    """A disagreement that rests on "no sink" readings of runs that never got as far as the base's onset loss
    reads NOT_YET, with the runs named (sinkpaper.paper.budget); the result keeps what decided it in "budget"."""
    if not out.get("seed_values") or rule is None:
        return
    onset, base = guard_onset_loss(m, scale, store)
    if onset is None or onset.loss is None:
        if onset is not None and onset.why:
            out["budget"] = {"base": base, "why": onset.why}
        return
    unripe, said = budget.unripe_of(out, _judged(m), onset.loss)
    out["budget"] = {"base": base, "onset_loss": onset.loss, "per_seed": dict(onset.per_seed), "unripe": said}
    guarded = budget.not_yet(lambda values: judge(rule, values)[0], out["seed_values"], unripe)
    if guarded is not None:
        out["verdict"] = guarded
        out["why"] = "; ".join(said) if guarded == NOT_YET else "the ripe runs alone do not decide: " + "; ".join(said)


def _plan_stopped(m: Runs, rule, scale: str, out: dict, store: str) -> dict:
    """A claim read at the budget plan's runs (``m.budget_plan``) that lacks seeds the plan never trains
    (:func:`budget.stopped_points`): those points are named as such, not as runs to train; where nothing else is
    missing, it is read on its other points' seeds, each such point as every value its seeds could take
    (:func:`budget.not_yet`), its seed 0 shown."""
    onset, base = guard_onset_loss(m, scale, store)
    if rule is None or onset is None or onset.loss is None:
        return out
    stopped = budget.stopped_points(out, _lacking(m, out), _judged(m), onset.loss)
    rest = replace(m, points={k: v for k, v in m.points.items() if k not in stopped})
    r = _store_result(rest, PROFILE_OF[scale], store) if stopped else {}
    if not stopped or r["status"] != "found" or not r["seed_values"]:
        said = [_not_stored(rest, out, PROFILE_OF[scale]), *stopped.values(), out["_store_note"]]
        return {**out, "note": "; ".join(x for x in said if x)} if stopped else out
    unripe, said = budget.unripe_of(r, _judged(rest), onset.loss)
    verdict = budget.not_yet(lambda values: judge(rule, values)[0], r["seed_values"], unripe,
                             {k: len(r["seeds"]) for k in stopped})
    lines = [*said, *stopped.values()]
    why = ("; ".join(lines) if verdict == NOT_YET else "the ripe runs alone do not decide: " + "; ".join(lines)
           if verdict == INCONCLUSIVE else "whatever " + ", ".join(m.points[k][0] for k in stopped)
           + " could still grow")
    return {**out, "values": {**r["values"], **{k: out["plateaus"][k]["0"]["mean"] for k in stopped}},
            "seed_values": r["seed_values"], "seeds": r["seeds"], "status": "found", "verdict": verdict, "why": why,
            "budget": {"base": base, "onset_loss": onset.loss, "per_seed": dict(onset.per_seed), "unripe": lines},
            "note": r["note"]}


def _lacking(m: Runs, out: Mapping) -> dict[str, list[int]]:
    """{point: its seeds the result has no value of and no exclusion explains}, for the runs a rule reads."""
    lacking: dict[str, list[int]] = {}
    for label, (point, *_) in m.points.items():
        if label in m.beside:
            continue
        for seed in m.seeds:
            if (str(seed) not in out["plateaus"].get(label, {}) and seed not in lacking.setdefault(point, [])
                    and not any(x.startswith(f"{point} seed {seed}:") for x in out["excluded"])):
                lacking[point].append(seed)
    return {pt: sd for pt, sd in lacking.items() if sd}


def _not_stored(m: Runs, out: Mapping, profile: str) -> str:
    """"not stored: <point> seeds 0, 1 (run: python -m sinkpaper sweep ...)" for each config of the missing runs."""
    lacking = _lacking(m, out)
    if not lacking:
        return ""
    runs, command = _runs_and_command(m, lacking, profile)
    return f"not stored: {runs} (run: {command})"


def _stale_note(m: Runs, stale: Sequence[str], profile: str) -> str:
    """"stale, rerun: <point> seeds 0, 1 were stored under an older definition or settings of the point (run: ...)"
    for runs that exist but are not read (``stale``: "<point> seed <n>" each)."""
    runs: dict[str, list[int]] = {}
    for run in stale:
        point, seed = run.rsplit(" seed ", 1)
        runs.setdefault(point, []).append(int(seed))
    said, command = _runs_and_command(m, runs, profile)
    return f"{STALE}: {said} were stored under an older definition or settings of the point (run: {command})"


def _runs_and_command(m: Runs, lacking: Mapping[str, Sequence[int]], profile: str) -> tuple[str, str]:
    """("<point> seeds 0, 1, ...", "python -m sinkpaper sweep ..."): the runs, and the sweeps that train them."""
    by_config: dict[str, list[str]] = {}
    for label, (point, *rest) in m.points.items():
        if point in lacking and point not in by_config.setdefault(rest[1] if len(rest) > 1 else m.config, []):
            by_config[rest[1] if len(rest) > 1 else m.config].append(point)
    seeds = sorted({s for sd in lacking.values() for s in sd})
    runs = ", ".join(f"{pt} {seeds_text(sd)}" for pt, sd in lacking.items())
    cmds = "; ".join(f"python -m sinkpaper sweep --profile {profile} --config {cfg} --points {' '.join(pts)} "
                     f"--seeds {' '.join(map(str, seeds))}" for cfg, pts in by_config.items() if pts)
    return runs, cmds


def _unlasting(rule, out: Mapping) -> str:
    """The onsets of a result that did not last (:func:`did_not_last`), named, and the rule's verdict with each read
    as never formed: said beside the verdict, which keeps the onset as it was defined before the runs."""
    n = len(out["transient"])
    gone = "; ".join(f"{t['label']} of seed {t['seed']} (step {t['step']:,.0f}; {t['plateau']:.3g} on its plateau, "
                     f"{t['last']:.3g} at its end, below {t['threshold']:g})" for t in out["transient"])
    seeds = list(out["seeds"])
    values = {k: list(v) for k, v in out["seed_values"].items()}
    for t in out["transient"]:
        if t["label"] in values:
            values[t["label"]][seeds.index(t["seed"])] = t["never"]
    verdict, why = judge(rule, values)
    # the verdict first: a card cuts this sentence after a line or two
    return (f"with the {n} onset{'s' if n > 1 else ''} that did not last read as never formed, the same rule reads "
            f"{verdict}: {gone}" + (f"; {why}" if why else ""))


def _verdict(rule, out: Mapping) -> tuple[str, str | None]:
    """(verdict, why or None) of a rule on one measurement's result (its status, steps and values)."""
    if out["status"] in (STALE, "missing", "incomplete", "too few seeds"):
        # a rule judges the whole set of runs it was fixed for, never the part stored so far: one failing point
        # would otherwise read "disagrees" before the points that could change the picture are in
        return NO_RESULT, None
    if rule is None:
        return NO_RESULT, None
    if (budgets := unequal_budgets(rule, out.get("steps", {}))):
        return NOT_COMPARABLE, budgets
    if out.get("seed_values"):
        verdict, why = judge(rule, out["seed_values"])
        return verdict, (why if verdict == INCONCLUSIVE else _reason(rule, out["seed_values"]))
    return rule.apply(out["values"]), None


def _second_reading(rule, what: str, m: Runs, profile: str, store: str, said: str | None = None) -> str:
    """The claim's rule judged on a second reading's runs, as the sentence shown beside the verdict (its reason
    left out where it is the verdict's own, ``said``); where a run is missing it says which, never a value."""
    out = _store_result(m, profile, store, rule.per_run)
    verdict, why = _verdict(rule, out)
    if out["status"] == STALE:
        why = f"{STALE}: {', '.join(out['stale'])}"
    elif out["status"] in ("missing", "incomplete", "too few seeds"):
        missing = [f"{pt} {seeds_text(sd)}" for pt, sd in _lacking(m, out).items()]
        why = "; ".join([*out["excluded"], *([f"not stored: {', '.join(missing)}"] if missing else [])])
    text = f"the same rule at {what}: {verdict}" + (f" ({why})" if why and why != said else "")
    if out.get("transient") and verdict != NO_RESULT:
        text += f"; there, {_unlasting(rule, out)}"
    return text


def entry(c: Claim, records: Mapping | None = None, store: str = DEFAULT_STORE) -> dict:
    """The claim as the listing gives it (every field a chapter, the scorecard and `claims --json` read)."""
    records = load_records() if records is None else records
    return {"id": c.id, "section": c.section, "chapter": c.chapter, "claim": c.claim, "kind": c.kind,
            "paper": {"source": c.paper_source(), "values": c.paper_values()},
            "rule": c.rule.sentence if c.rule else None,
            "no_effect_means": c.rule.null_sentence if c.rule else None,
            "bos": c.bos, "bos_why": c.bos_why or None,
            "results": {s: result(c, s, records, store) for s in SCALES},
            "rule_check": rule_check(c), "note": c.note, "chart_with": c.chart_with or None}


def listing(directory: str | os.PathLike | None = None, store: str = DEFAULT_STORE) -> list[dict]:
    """Every claim, in the paper's order, with its results at every scale."""
    records = load_records(directory)
    return [entry(c, records, store) for c in CLAIMS]
