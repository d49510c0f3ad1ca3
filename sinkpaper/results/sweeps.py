"""A family's sweep as the chapters read it: the stored runs of a config's points x seeds (what is missing said
plainly), the real-text sweep of a chapter (read from the store at the cpu profile, trained at gpu / paper), one
metric vocabulary over a stored run, and the summaries over seeds.

A payload (stored or live) has the results store's shape: ``{"name", "hash", "profile", "config", "result",
"curve"}``; ``result["provenance"]`` says where its numbers came from. No plotting here: the book draws these
(:mod:`sinkpaper.book.figures`, :mod:`sinkpaper.book.tables`).

**Metrics** (:func:`metric_of`), one name each, the names the paper registry's claims use: ``Sink_k`` (k =
1..10, in %; the |w| / sum |w| proxy Sink*_k for an operator without normalization), ``Sink*`` (the sink on a
bias or extra position, %), ``alpha_1`` (mean over layers and heads), ``loss`` (the last training loss),
``val_loss`` (the held-out loss), ``first Sink_1`` (at the first evaluation), ``prefix length`` (the config's
prefix_lm) and ``excess alpha_1`` ((alpha_1 - u) / (1 - u), u the uniform floor under the run's mask).
:func:`metric_of` reads the final evaluation; :func:`plateau_of` the mean over the last evaluations (what the
paper registry judges, and what the chapters show: :func:`shown_values`), and :func:`training_failure` says whether
a run trained at all.
"""
from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from ..data.sources import DEFAULT_CORPUS
from ..files import atomic_write_text
from ..metrics import excess_alpha, uniform_alpha
from ..train.store import DEFAULT_STORE, FOUND, STALE, get, result_path
from ..train.sweep import sweep_configs

STORE = DEFAULT_STORE
TEXT_PROFILE = "text"   # the real-text CPU sweeps (the scorecard's "real text (CPU)" scale)
TEXT_SEEDS = (0, 1, 2)  # the seeds scripts/sweep_text.sh trains at that profile


def point_of(payload: Mapping) -> str:
    """The sweep point of a payload (its name after the family: "miniature/recipe" -> "recipe")."""
    return payload["name"].split("/", 1)[-1]


# --------------------------------------------------------------------------------------------- stored sweeps
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
        return by_point(self.payloads)

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


def by_point(payloads: Sequence[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for p in payloads:
        out.setdefault(point_of(p), []).append(p)
    return out


def stored_sweep(config: str, profile: str, points: Sequence[str] | None = None, seeds: Sequence[int] = (0,),
                 store: str = DEFAULT_STORE) -> StoredSweep:
    """Every (point, seed) of ``config`` at ``profile`` that the store holds for exactly today's config (by hash);
    the others are ``missing``, and those of them the store holds only stale (:func:`sinkpaper.train.store.get`)
    also ``stale``."""
    out = StoredSweep(str(config), profile, store=str(store))
    for point, seed, cfg in sweep_configs(config, profile, list(points) if points else None, list(seeds)):
        got = get(store, cfg)
        if got.status != FOUND:
            out.missing.append((point, seed))
            if got.status == STALE:
                out.stale.append((point, seed))
        else:
            payload = dict(got.payload)
            payload["loaded_from"] = str(result_path(store, cfg.hash()))
            out.payloads.append(payload)
    return out


def payloads_provenance(payloads: Sequence[dict], loaded: bool) -> dict:
    """A provenance mapping (for :func:`sinkpaper.book.figures.provenance_line`) summarizing one or more runs."""
    if not payloads:
        return {"runs": 0}
    provs = [p["result"]["provenance"] for p in payloads]
    stamps = sorted(pv.get("computed_at", "") for pv in provs)
    hw = Counter(pv["hardware"] for pv in provs)   # a sweep may mix machines (CPU and a lent GPU): name each
    out = {"profile": payloads[0]["profile"],
           "hardware": "; ".join(f"{h} ({n} run{'s' if n > 1 else ''})" if len(hw) > 1 else h
                                 for h, n in sorted(hw.items())),
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


# ----------------------------------------------------------------------------------------- real-text sweeps
@dataclass
class LMSweep:
    """The real-text runs of a family at the profile a chapter reads or trains: ``payloads`` (found or trained),
    ``missing`` (the StoredSweep of what is still absent) and which of the payloads were computed now."""

    config: str
    profile: str                       # the profile of the runs (text when a cpu chapter reads the store)
    payloads: list[dict]
    missing: StoredSweep
    computed_now: set[str] = field(default_factory=set)   # hashes trained in this call
    note: str = ""                     # why nothing could be read (e.g. no such profile yet)

    def missing_text(self) -> str:
        return self.note or self.missing.missing_text()

    def provenance(self) -> dict:
        loaded = [p for p in self.payloads if p["hash"] not in self.computed_now]
        return payloads_provenance(self.payloads, loaded=bool(loaded))

    def by_point(self) -> dict[str, list[dict]]:
        return by_point(self.payloads)


def lm_sweep(config: str, profile: str, seeds: Sequence[int] = (0,), points: Sequence[str] | None = None,
             store: str = STORE) -> LMSweep:
    """A family's stored real-text runs, read, never trained: at ``cpu`` the real-text CPU runs (profile ``text``,
    seeds :data:`TEXT_SEEDS`), at ``gpu`` / ``paper`` that profile's runs of ``seeds``. What is missing is said
    with the command that trains it (a lent GPU trains the gpu profile's queue: scripts/lease.sh gpu), so a
    chapter run at any profile takes the time of its own live runs only."""
    from ..train.config import sweep_points
    read = TEXT_PROFILE if profile == "cpu" else profile
    seeds = TEXT_SEEDS if profile == "cpu" else seeds
    try:
        found = stored_sweep(config, read, points, seeds, store)
    except ValueError:   # the configs do not define this profile
        empty = StoredSweep(str(config), read, store=str(store),
                            missing=[(p, s) for p in (points or sweep_points(config)) for s in seeds])
        return LMSweep(config, read, [], empty,
                       note=f"**No `{read}`-profile run of `{config}` is stored**: the configs do not define that "
                            "profile for this family.")
    return LMSweep(config, read, found.payloads, found)


# ------------------------------------------------------------------------------------------------- metrics
def mask_of(config: Mapping) -> dict:
    """{"window": w or None, "prefix": p or None} of a stored payload's config (what the metric's divisor uses)."""
    m, d = config["model"], config["data"]
    return {"window": m.get("window") if m.get("mask") == "window" else None, "prefix": d.get("prefix_lm")}


def uniform_floor(config: Mapping) -> float:
    """alpha_1 of a head that attends uniformly to what each query may see, under a stored run's mask and
    evaluation length (:func:`sinkpaper.metrics.uniform_alpha`)."""
    return float(uniform_alpha(config["eval"]["seq_len"], **mask_of(config))[0])


def value(result: Mapping, name: str) -> float | None:
    """A metric of a result-shaped mapping: a payload's ``result`` or one evaluation of its ``curve`` (the names
    that need the config or the curve are :func:`metric_of`'s); None when it was not recorded."""
    if name == "Sink_first":   # Sink_1 at each query's first visible key (its document's first token)
        return result.get("sink_first_key")
    if name == "Sink_doc_start":   # ... at the documents that start inside held-out windows only
        return result.get("sink_doc_start")
    if name.startswith("Sink_"):
        return result["sink_k"].get(name[5:])
    if name == "Sink*":
        return result.get("sink_star")
    if name == "alpha_1":
        return result.get("alpha_1_mean")
    if name.startswith("alpha_") and name[6:].isdigit():   # alpha_k of position k, mean over heads
        return (result.get("alpha_k") or {}).get(name[6:])
    if name == "loss":
        return result.get("final_loss", result.get("loss"))
    if name == "val_loss":
        return result.get("val_loss")
    raise ValueError(f"unknown metric {name!r}; valid: Sink_k, Sink_first, Sink_doc_start, Sink*, alpha_1, alpha_k, loss, "
                     "val_loss, "
                     "first Sink_1, "
                     "prefix length, excess alpha_1")


def metric_of(payload: Mapping, name: str) -> float | None:
    """One metric of a stored run (the names in the module docstring); None when the run does not record it."""
    r = payload["result"]
    if name == "first Sink_1":
        first = next((c for c in payload.get("curve", []) if "sink_k" in c), None)
        return None if first is None else first["sink_k"]["1"]
    if name == "prefix length":
        return payload["config"]["data"].get("prefix_lm")
    if name == "excess alpha_1":
        return excess_alpha(r["alpha_1_mean"], uniform_floor(payload["config"]))
    return value(r, name)


class NotEnoughEvaluations(ValueError):
    """A stored run whose curve has fewer evaluations in its plateau window than a plateau needs."""


# metrics a single evaluation carries (the rest are of the run: its config, its first evaluation)
_FIXED = ("first Sink_1", "prefix length")


def logged(curve: Sequence[Mapping]) -> list[Mapping]:
    """A stored curve with one entry per step, in step order. A run restarted from scratch before its first
    checkpoint kept its first attempt's lines in the log (runs stored before the trainer dropped them); the later
    entry of a step is the one the finished run made."""
    by_step = {}
    for c in curve:
        by_step[c["step"]] = c
    return [by_step[s] for s in sorted(by_step)]


def evaluations(payload: Mapping) -> list[dict]:
    """The evaluations of a run's curve (the records that carry the sink metric), in step order."""
    return [c for c in logged(payload.get("curve", [])) if "sink_k" in c]


def _eval_value(payload: Mapping, record: Mapping, name: str) -> float | None:
    if name == "excess alpha_1":
        a = record.get("alpha_1_mean")
        return None if a is None else excess_alpha(a, uniform_floor(payload["config"]))
    return value(record, name)


def plateau_of(payload: Mapping, name: str, fraction: float, min_evals: int) -> dict:
    """A run's value on its plateau: the mean of ``name`` over the evaluations in the last ``fraction`` of its
    training steps (step >= (1 - fraction) x the last step), with that window's spread: {"mean", "min", "max",
    "n", "from_step", "to_step"}. Metrics of the run rather than of an evaluation ("first Sink_1", "prefix
    length") come back as themselves (n 1). Raises NotEnoughEvaluations, naming the run, when the window holds
    fewer than ``min_evals`` evaluations (a run stored without its curve has none); None-valued evaluations
    (a metric the run does not record) give None."""
    if name in _FIXED:
        v = metric_of(payload, name)
        return None if v is None else {"mean": float(v), "min": float(v), "max": float(v), "n": 1,
                                       "from_step": None, "to_step": None}
    evals = evaluations(payload)
    last = evals[-1]["step"] if evals else payload.get("result", {}).get("step", 0)
    window = [c for c in evals if c["step"] >= (1 - fraction) * last]
    if len(window) < min_evals:
        seed = payload.get("config", {}).get("run", {}).get("seed")
        raise NotEnoughEvaluations(
            f"not enough evaluations: {payload.get('name')} seed {seed} ({payload.get('hash')}) has {len(window)} in "
            f"the last {100 * fraction:g} % of its steps, a plateau needs {min_evals}")
    vals = [_eval_value(payload, c, name) for c in window]
    if any(v is None for v in vals):
        return None
    return {**spread(vals), "from_step": window[0]["step"], "to_step": window[-1]["step"],
            "rise": fitted_rise([c["step"] for c in window], vals)}


def still_rising(plateau: Mapping, metric: str, share: float) -> bool:
    """A Sink % plateau whose fitted line still climbs across its window by ``share`` of its mean and at least
    1 point (the registry's RISING): its value is then a lower bound."""
    return metric.startswith("Sink") and plateau.get("rise", 0.0) >= max(share * abs(plateau["mean"]), 1.0)


def fitted_rise(steps: Sequence[float], values: Sequence[float]) -> float:
    """How much a least-squares line through (step, value) rises from the first step to the last: a plateau whose
    values still climb has a rise near its spread, a flat one near 0 (evaluation noise cancels in the fit)."""
    n = len(steps)
    if n < 2 or steps[-1] == steps[0]:
        return 0.0
    ms, mv = statistics.fmean(steps), statistics.fmean(values)
    var = sum((x - ms) ** 2 for x in steps)
    slope = sum((x - ms) * (y - mv) for x, y in zip(steps, values)) / var
    return slope * (steps[-1] - steps[0])


UNIGRAM = "results/data/unigram_loss.json"
# the data fields that decide a run's token stream (the packing interventions act on windows, not the stream)
_STREAM_FIELDS = ("source", "path", "dataset", "tokenizer", "n_tokens", "vocab_size", "n_triggers", "concentration",
                  "data_seed", "doc_len")


def stream_key(config: Mapping) -> str:
    """The token stream a stored config trains on, as a short stable key."""
    d = config["data"]
    fields = {k: d.get(k) for k in _STREAM_FIELDS}
    if d.get("source") == "corpus":   # a corpus file is its path (none: the default one); the other fields do not apply
        fields = {"source": "corpus", "path": d.get("path") or DEFAULT_CORPUS}
    return json.dumps(fields, sort_keys=True)


def unigram_floor(config: Mapping, cache: str | Path = UNIGRAM) -> float:
    """The unigram loss (:func:`sinkpaper.data.sources.unigram_loss`) of a stored config's token stream. Read from
    the committed ``cache`` (so the registry needs no corpus), computed and added to it when missing."""
    key = stream_key(config)
    path = Path(cache)
    if not path.is_absolute() and not path.exists():   # a relative cache is the repository's, whatever the cwd
        in_repo = Path(__file__).resolve().parents[2] / path
        path = in_repo if in_repo.exists() else path
    known = json.loads(path.read_text()) if path.exists() else {}
    if key in known:
        return float(known[key]["loss"])
    from ..data.sources import unigram_loss
    from ..provenance import stamp
    from ..train.config import TrainConfig
    from ..train.trainer import load_data

    loss = unigram_loss(load_data(TrainConfig.from_dict(dict(config))))
    prov = stamp()
    known[key] = {"loss": loss, "code_version": prov["code_version"], "computed_at": prov["computed_at"],
                  "what": "held-out cross-entropy (nats) of add-one-smoothed training-stream "
                                                  "unigram frequencies"}
    atomic_write_text(path, json.dumps(known, indent=1, sort_keys=True) + "\n")
    return loss


def _window_mean(records: Sequence[Mapping], key: str, fraction: float) -> float | None:
    """The mean of ``key`` over the records in the last ``fraction`` of the steps; None without any."""
    if not records:
        return None
    last = records[-1]["step"]
    vals = [r[key] for r in records if r["step"] >= (1 - fraction) * last and r.get(key) is not None]
    return statistics.fmean(vals) if vals else None


def training_failure(payload: Mapping, margin: float, fraction: float, cache: str | Path = UNIGRAM) -> str | None:
    """Why a stored run is not a result, or None when it learned. It did not learn when a loss is not finite, or
    when neither its held-out loss nor its training loss, averaged over the last ``fraction`` of its steps, is at
    least ``margin`` nats below the unigram loss of its data (:func:`unigram_floor`): it predicts no better than
    token frequencies. (A run that memorises a small unique set learns: its training loss falls far below while
    its held-out loss rises.)"""
    evals = evaluations(payload)
    logs = sorted((c for c in payload.get("curve", []) if c.get("loss") is not None), key=lambda c: c["step"])
    if not evals:
        return None     # nothing to judge by: plateau_of says "not enough evaluations"
    losses = [c.get("val_loss") for c in evals] + [c["loss"] for c in logs]
    if not all(v is None or math.isfinite(v) for v in losses):
        return "a loss is not finite"
    floor = unigram_floor(payload["config"], cache)
    ends = {"held-out": _window_mean(evals, "val_loss", fraction), "training": _window_mean(logs, "loss", fraction)}
    ends = {k: v for k, v in ends.items() if v is not None}
    if ends and all(v > floor - margin for v in ends.values()):
        said = " and ".join(f"{k} loss {v:.2f}" for k, v in ends.items())
        return (f"{said} at the end against the unigram loss {floor:.2f} of its data: not {margin:g} nats below it, "
                "it did not learn")
    return None


# ------------------------------------------------------------------------------------- summaries over seeds
def shown_values(payloads: Sequence[Mapping], point: str, name: str, fraction: float,
                 min_evals: int) -> tuple[list[tuple[int, float]], int]:
    """What a chapter shows for one point: (seed, value) of every run that records ``name``, the value read as the
    verdicts read it (:func:`plateau_of`'s mean) where the run's curve holds a plateau, else its final evaluation;
    and how many runs fell back to the final evaluation (a curve too short, or none), for the table to say so."""
    out, final = [], 0
    for p in payloads:
        if point_of(p) != point:
            continue
        try:
            pl = plateau_of(p, name, fraction, min_evals)
            v = None if pl is None else pl["mean"]
        except NotEnoughEvaluations:
            v = metric_of(p, name)
            final += v is not None
        if v is not None:
            out.append((p["config"]["run"]["seed"], float(v)))
    return out, final


def values_of(payloads: Sequence[Mapping], point: str, name: str = "Sink_1") -> list[float]:
    """The metric of every run of one point that records it, in the order of ``payloads``."""
    return [float(v) for p in payloads if point_of(p) == point and (v := metric_of(p, name)) is not None]


def spread(values: Sequence[float]) -> dict:
    """THE spread summary: mean, min, max and n of a list of numbers (the book's "mean [min, max] over seeds";
    :func:`sinkpaper.results.numbers.fmt_spread` writes it)."""
    return {"mean": statistics.fmean(values), "min": min(values), "max": max(values), "n": len(values)}


def summary_rows(payloads: Sequence[Mapping], fraction: float, min_evals: int, name: str = "Sink_1") -> list[dict]:
    """One row per sweep point, as the verdicts read it: ``name`` on each run's plateau (the last ``fraction`` of
    its steps; :func:`plateau_of`) and its spread over the seeds, the seeds whose run has too few evaluations for
    a plateau, the held-out loss at the end and the wall seconds per run."""
    rows = []
    for point, ps in by_point(list(payloads)).items():
        values, short = [], []
        for p in ps:
            try:
                v = plateau_of(p, name, fraction, min_evals)
            except NotEnoughEvaluations:
                short.append(p["config"]["run"]["seed"])
                continue
            if v is not None:
                values.append(v["mean"])
        rows.append({"point": point, "seeds": sorted(p["config"]["run"]["seed"] for p in ps),
                     name: spread(values) if values else None, "too few evaluations": sorted(short),
                     "val_loss": spread([p["result"]["val_loss"] for p in ps]),
                     "wall_seconds": spread([p["result"]["provenance"]["wall_seconds"] for p in ps])})
    return rows


def format_summary(rows: Sequence[Mapping], name: str = "Sink_1") -> str:
    """The rows of :func:`summary_rows` as a plain-text table (the sweep command prints it)."""
    from .numbers import fmt_spread
    lines = [f"{'point':<26}{'seeds':<12}{f'{name} % on the plateau: mean [min, max]':<42}{'val loss':>10}{'s/run':>8}"]
    for r in rows:
        value = (fmt_spread(r[name]) if r[name] is not None else "—") + (
            f" (seeds {','.join(map(str, r['too few evaluations']))}: too few evaluations)"
            if r["too few evaluations"] else "")
        lines.append(f"{r['point']:<26}{','.join(map(str, r['seeds'])):<12}{value:<42}{r['val_loss']['mean']:10.3f}"
                     f"{r['wall_seconds']['mean']:8.0f}")
    return "\n".join(lines)


