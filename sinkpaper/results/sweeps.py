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
"""
from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from ..metrics import excess_alpha, uniform_alpha
from ..train.store import DEFAULT_STORE, read_result, result_path, stale_results
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
    """At ``cpu``: the family's stored real-text CPU runs (profile ``text``, seeds :data:`TEXT_SEEDS`; nothing is
    trained here). At ``gpu`` / ``paper``: train ``seeds`` where the store lacks them with run_sweep (into
    runs/<family>), reuse the rest."""
    if profile == "cpu":
        seeds = TEXT_SEEDS
        try:
            found = stored_sweep(config, TEXT_PROFILE, points, seeds, store)
        except ValueError:   # the configs do not define the text profile yet
            from ..train.config import sweep_points

            empty = StoredSweep(str(config), TEXT_PROFILE, store=str(store),
                                missing=[(p, s) for p in (points or sweep_points(config)) for s in seeds])
            return LMSweep(config, TEXT_PROFILE, [], empty,
                           note=f"**No real-text run of `{config}` is stored.** The real-text CPU sweep (profile "
                                f"`{TEXT_PROFILE}`, the *real text (CPU)* column of the scorecard) is not defined "
                                "in the configs yet; no run at the `gpu` or `paper` profile is stored either.")
        return LMSweep(config, TEXT_PROFILE, found.payloads, found)
    from ..train.sweep import run_sweep

    before = stored_sweep(config, profile, points, seeds, store)
    had = {p["hash"] for p in before.payloads}
    payloads = run_sweep(config, profile, out=f"runs/{Path(config).stem}", store=store,
                         points=list(points) if points else None, seeds=list(seeds), progress=False)
    after = stored_sweep(config, profile, points, seeds, store)
    return LMSweep(config, profile, payloads, after, {p["hash"] for p in payloads} - had)


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
    if name.startswith("Sink_"):
        return result["sink_k"].get(name[5:])
    if name == "Sink*":
        return result.get("sink_star")
    if name == "alpha_1":
        return result.get("alpha_1_mean")
    if name == "loss":
        return result.get("final_loss", result.get("loss"))
    if name == "val_loss":
        return result.get("val_loss")
    raise ValueError(f"unknown metric {name!r}; valid: Sink_k, Sink*, alpha_1, loss, val_loss, first Sink_1, "
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


# ------------------------------------------------------------------------------------- summaries over seeds
def values_of(payloads: Sequence[Mapping], point: str, name: str = "Sink_1") -> list[float]:
    """The metric of every run of one point that records it, in the order of ``payloads``."""
    return [float(v) for p in payloads if point_of(p) == point and (v := metric_of(p, name)) is not None]


def spread(values: Sequence[float]) -> dict:
    """mean, min, max and n of a list of numbers (the book's "mean [min, max] over seeds")."""
    return {"mean": statistics.fmean(values), "min": min(values), "max": max(values), "n": len(values)}


def mean_of(payloads: Sequence[Mapping], point: str, name: str = "Sink_1") -> float | None:
    """The mean over the seeds of one point of a metric; None when no run of the point records it."""
    vals = values_of(payloads, point, name)
    return statistics.fmean(vals) if vals else None


def peak_position(payloads: Sequence[Mapping], point: str, ks: Sequence[int] = range(1, 11)) \
        -> tuple[int | None, float | None]:
    """(k, mean Sink_k) of the position k with the largest Sink_k (mean over seeds; the smallest k on a tie):
    where a point's sink sits. (None, None) when the point has no run."""
    means = {k: mean_of(payloads, point, f"Sink_{k}") for k in ks}
    if all(v is None for v in means.values()):
        return None, None
    k = max(ks, key=lambda k: (means[k] or 0.0, -k))
    return k, means[k]
