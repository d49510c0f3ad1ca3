"""How a stored run is read, in one place: which runs the store holds for a family's points x seeds (one
iterator, :func:`stored`), the metric vocabulary over a run (Sink_k, Sink_first, Sink_doc_start, Sink*, alpha_1,
alpha_k, excess alpha_1, the losses: :func:`metric_of`), the window its value is read on (its plateau:
:func:`plateau_of`), whether it trained at all (:func:`training_failure`) and whether it is still rising at its
end (:func:`still_rising`).

**Metrics** (:func:`metric_of`), one name each, the names the paper registry's claims use: ``Sink_k`` (k =
1..10, in %; the |w| / sum |w| proxy Sink*_k for an operator without normalization), ``Sink_first`` (at each
query's first visible key), ``Sink_doc_start`` (at documents that start inside held-out windows), ``Sink*`` (the
sink on a bias or extra position, %), ``alpha_1`` (mean over layers and heads), ``alpha_k``, ``token-1 norm ratio``
(token 1's hidden-state norm over the other tokens' mean, the largest over the layers, embeddings included: the
massive activation of Section 3, :data:`MASSIVE_RATIO`), ``loss`` (the last training loss), ``val_loss`` (the
held-out loss), ``first Sink_1`` (at the first evaluation), ``prefix length``
(the config's prefix_lm) and ``excess alpha_1`` ((alpha_1 - u) / (1 - u), u the uniform floor under the run's
mask). :func:`metric_of` reads the final evaluation, :func:`plateau_of` the mean over the last 20 % of the steps
(what the registry judges and the chapters show: :func:`shown_values`).

A run has one shape: the results store's payload, ``{"name", "hash", "profile", "config", "result", "curve"}``
(``result["provenance"]`` says where its numbers came from); :class:`RunRecord` is the same run with its
commonest fields named. Every other reader (the summaries over seeds in :mod:`.sweeps`, the paper registry, the
book) asks these functions and only formats what they return; the registry judges every rule on these readings
and re-exports the constants below, and its rule history (:mod:`sinkpaper.paper.history`) follows this file, so
a change to a constant here is dated like a change of a rule.
"""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from ..data.sources import DEFAULT_CORPUS
from ..files import atomic_write_text
from ..metrics import excess_alpha, uniform_alpha
from ..train.store import DEFAULT_STORE, FOUND, STALE, get
from ..train.sweep import sweep_configs

# Fixed before the stored runs were re-scored under them. Inside one text run Sink_1 moves by ~5 points between
# evaluations late in training (90th percentile 12), so a run is read on its plateau, never its last evaluation.
PLATEAU = 0.2        # a run's value: the mean of its evaluations over the last 20 % of its training steps
PLATEAU_EVALS = 3    # ... which needs at least 3 evaluations there (else "not enough evaluations", the run named)
TRAINED = 0.1        # a run learned when its held-out or its training loss over that window is at least 0.1 nats
#                      (4x the held-out loss's sampling error on 100 x 64 tokens) below the unigram loss of its data,
#                      the loss of predicting each token by its frequency. Else it is listed and no verdict counts it.
#                      (Not "below its first evaluation": by step 100 the text runs already sit at the unigram level
#                      and the miniature's at its task's floor, so a first evaluation says nothing about learning.)
RISING = 0.25        # a run is "still rising at its end" when the least-squares line through its plateau's values
#                      rises across the window by at least this share of the plateau's mean (the registry's 25 %
#                      change) and by at least 1 point of Sink % (below that, evaluation noise on near-zero values):
#                      its plateau is then a lower bound, and the book says so beside the number


# ------------------------------------------------------------------------------------ the store, one iterator
@dataclass(frozen=True)
class Stored:
    """One (point, seed) of a family at a profile and what the store holds for it: ``status`` FOUND (``payload``
    is the run, ``path`` its file), STALE (only runs under an older definition) or MISSING (the store's
    :func:`sinkpaper.train.store.get`)."""
    point: str
    seed: int
    cfg: object                 # the TrainConfig the run would have
    status: str
    payload: dict | None = None
    path: str | None = None

    @property
    def found(self) -> bool:
        return self.status == FOUND

    def record(self) -> "RunRecord":
        """The run with its commonest fields named (a found run only)."""
        if not self.found:
            raise ValueError(f"{self.point} seed {self.seed} is not in the store ({self.status})")
        return RunRecord.from_payload(self.payload, self.point)


def stored(config: str | Path, profile: str, points: Sequence[str] | None = None, seeds: Sequence[int] = (0,),
           store: str | Path = DEFAULT_STORE, overrides: Mapping | None = None) -> Iterator[Stored]:
    """THE loop over a family's points x seeds in the store: one :class:`Stored` per (point, seed), in the sweep's
    order, found or not. A found payload carries ``loaded_from`` (its file). ValueError when ``config`` does not
    define ``profile``; an unknown point lists the valid ones (:func:`sinkpaper.train.sweep.sweep_configs`)."""
    for point, seed, cfg in sweep_configs(config, profile, list(points) if points else None, list(seeds),
                                          overrides):
        got = get(store, cfg)
        if got.status != FOUND:
            yield Stored(point, seed, cfg, got.status)
            continue
        path = str(got.path)
        yield Stored(point, seed, cfg, FOUND, {**got.payload, "loaded_from": path}, path)


def runs(config: str | Path, profile: str, points: Sequence[str] | None = None, seeds: Sequence[int] = (0, 1, 2),
         store: str | Path = DEFAULT_STORE) -> list["RunRecord"]:
    """The found (current, never stale) runs of a family's points x seeds as records; the others are left out."""
    return [s.record() for s in stored(config, profile, points, seeds, store) if s.found]


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


# ------------------------------------------------------------------------------------- the metric vocabulary
def point_of(payload: Mapping) -> str:
    """The sweep point of a payload (its name after the family: "miniature/recipe" -> "recipe")."""
    return payload["name"].split("/", 1)[-1]


def mask_of(config: Mapping) -> dict:
    """{"window": w or None, "prefix": p or None} of a stored payload's config (what the metric's divisor uses)."""
    m, d = config["model"], config["data"]
    return {"window": m.get("window") if m.get("mask") == "window" else None, "prefix": d.get("prefix_lm")}


def uniform_floor(config: Mapping) -> float:
    """alpha_1 of a head that attends uniformly to what each query may see, under a stored run's mask and
    evaluation length (:func:`sinkpaper.metrics.uniform_alpha`)."""
    return float(uniform_alpha(config["eval"]["seq_len"], **mask_of(config))[0])


MASSIVE_RATIO = "token-1 norm ratio"   # what an evaluation records per layer, read as its largest value
MASSIVE_KEY = "massive_activation_ratio_by_layer"


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
    if name == MASSIVE_RATIO:   # |h_1| / mean_{t>1} |h_t| per layer (embeddings first), its largest: chapter 02's
        by_layer = result.get(MASSIVE_KEY)   # "max over layers"; None in a run stored before evaluations recorded it
        return float(max(by_layer)) if by_layer else None
    if name == "loss":
        return result.get("final_loss", result.get("loss"))
    if name == "val_loss":
        return result.get("val_loss")
    raise ValueError(f"unknown metric {name!r}; valid: Sink_k, Sink_first, Sink_doc_start, Sink*, alpha_1, alpha_k, "
                     f"{MASSIVE_RATIO}, loss, val_loss, "
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


# ------------------------------------------------------------------------------------------- the plateau
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


def plateau_of(payload: Mapping, name: str, fraction: float = PLATEAU, min_evals: int = PLATEAU_EVALS) -> dict:
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


def still_rising(plateau: Mapping, metric: str, share: float = RISING) -> bool:
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


def failure_word(why: str | None) -> str | None:
    """A :func:`training_failure` reason in a word or two, for a table cell: "spiked" or "did not learn"."""
    return None if why is None else "spiked" if why.startswith("a loss spike") else "did not learn"


def training_failure(payload: Mapping, margin: float = TRAINED, fraction: float = PLATEAU,
                     cache: str | Path = UNIGRAM) -> str | None:
    """Why a stored run is not a result, or None when it learned. It spiked (:func:`sinkpaper.train.spikes.spikes_of`:
    its training loss jumped more than a nat above its running minimum after warm-up, or its gradient norm 20x its
    median), or it did not learn: a loss is not finite, or neither its held-out loss nor its training loss,
    averaged over the last ``fraction`` of its steps, is at least ``margin`` nats below the unigram loss of its
    data (:func:`unigram_floor`): it predicts no better than token frequencies. (A run that memorises a small
    unique set learns: its training loss falls far below while its held-out loss rises.)"""
    from ..train.spikes import spikes_of
    spikes = spikes_of(payload)
    if spikes:
        first = spikes[0]
        where = (f"step {first['step']}" if first["step"] == first["until"]
                 else f"steps {first['step']}-{first['until']}")
        # what tripped the rule, by name: a gradient spike's loss may have barely moved
        said = ([f"{first['peak']:.1f} nats above its running minimum"] if "loss" in first["kind"] else []) + (
            [f"gradient norm {first['grad_ratio']:.0f}x its median"] if "grad_norm" in first["kind"] else [])
        kind = {"loss": "loss", "grad_norm": "gradient"}.get(first["kind"], "loss and gradient")
        return (f"a {kind} spike at {where} ({'; '.join(said)}"
                f"{'' if len(spikes) == 1 else f'; {len(spikes)} spikes in all'}): not counted")
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


def shown_values(payloads: Sequence[Mapping], point: str, name: str, fraction: float = PLATEAU,
                 min_evals: int = PLATEAU_EVALS) -> tuple[list[tuple[int, float]], int]:
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


def spread(values: Sequence[float]) -> dict:
    """THE spread summary: mean, min, max and n of a list of numbers (a plateau's window, or the book's "mean
    [min, max] over seeds"; :func:`sinkpaper.results.numbers.fmt_spread` writes it)."""
    return {"mean": statistics.fmean(values), "min": min(values), "max": max(values), "n": len(values)}
