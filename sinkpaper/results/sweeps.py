"""A family's sweep as the chapters read it: the stored runs of a config's points x seeds (what is missing said
plainly), the real-text sweep of a chapter (read from the store at the profile the chapter names), and the
summaries over seeds. A run is read through :mod:`.reading` (its plateau, its metrics, whether it trained); no
plotting here: the book draws these (:mod:`sinkpaper.book.figures`, :mod:`sinkpaper.book.tables`).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from ..train.config import sweep_points
from ..train.store import DEFAULT_STORE, STALE
from ..train.sweep import divergence_error, read_diverged
from .numbers import fmt_spread
from .reading import PLATEAU, PLATEAU_EVALS, NotEnoughEvaluations, metric_of, plateau_of, point_of, spread, stored

TEXT_PROFILE = "text"   # the real-text CPU sweeps (the scorecard's "real text (CPU)" scale)
TEXT_SEEDS = (0, 1, 2)  # the seeds scripts/sweep_text.sh trains at that profile


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
    # pairs whose training stopped on a non-finite loss: stored as divergence records (the paper's "-"), not
    # missing, never a value: (point, seed, the record's error up to its first ";")
    diverged: list[tuple[str, int, str]] = field(default_factory=list)

    def by_point(self) -> dict[str, list[dict]]:
        return by_point(self.payloads)

    def missing_text(self) -> str:
        """One Markdown sentence on what is not in the store and the command that would produce it, and one on the
        runs that diverged (stored as divergence records: a result, not shown as values)."""
        gone = (f" **Diverged** (stored as divergence records, the paper's \"-\", not shown): "
                + "; ".join(f"{p} seed {sd}: {err}" for p, sd, err in self.diverged) + "." if self.diverged else "")
        if not self.missing:
            return gone.strip()
        points = sorted({p for p, _ in self.missing})
        seeds = sorted({s for _, s in self.missing})
        stale = (f" {len(self.stale)} of them are stored under an older definition of a model variant "
                 f"({', '.join(sorted({p for p, _ in self.stale}))}): stale, not shown; rerun them."
                 if self.stale else "")
        return (f"**Not in the results store** at the `{self.profile}` profile: {len(self.missing)} run(s) of "
                f"`{self.config}` ({', '.join(points)}; seeds {', '.join(map(str, seeds))}).{stale} Produce them with "
                f"`python -m sinkpaper sweep --config {self.config} --profile {self.profile} --seeds "
                f"{' '.join(map(str, seeds))} --points {' '.join(points)} --out runs/{Path(self.config).stem}`.{gone}")


def by_point(payloads: Sequence[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for p in payloads:
        out.setdefault(point_of(p), []).append(p)
    return out


def stored_sweep(config: str, profile: str, points: Sequence[str] | None = None, seeds: Sequence[int] = (0,),
                 store: str = DEFAULT_STORE, extra_seeds: Sequence[int] = ()) -> StoredSweep:
    """Every (point, seed) of ``config`` at ``profile`` that the store holds for exactly today's config (by hash);
    those that diverged (a divergence record) are ``diverged``, the others ``missing``, and those of them the store
    holds only stale (:func:`sinkpaper.train.store.get`) also ``stale``. ``extra_seeds``: seeds read where they are
    stored (a seed added where another failed) and never listed as missing."""
    out = StoredSweep(str(config), profile, store=str(store))
    extra = [s for s in extra_seeds if s not in seeds]
    for run in stored(config, profile, points, [*seeds, *extra], store):
        if run.found:
            out.payloads.append(run.payload)
        elif (record := read_diverged(store, run.cfg)) is not None:
            out.diverged.append((run.point, run.seed, divergence_error(record)))
        elif run.seed not in extra:
            out.missing.append((run.point, run.seed))
            if run.status == STALE:
                out.stale.append((run.point, run.seed))
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
             store: str = DEFAULT_STORE) -> LMSweep:
    """A family's stored real-text runs, read, never trained: at ``cpu`` the real-text CPU runs (profile ``text``,
    seeds :data:`TEXT_SEEDS`), at ``gpu`` / ``paper`` that profile's runs of ``seeds``. What is missing is said
    with the command that trains it (a lent GPU trains the gpu profile's queue: scripts/lease.sh gpu), so a
    chapter run at any profile takes the time of its own live runs only."""
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


# ------------------------------------------------------------------------------------- summaries over seeds
def values_of(payloads: Sequence[Mapping], point: str, name: str = "Sink_1") -> list[float]:
    """The metric of every run of one point that records it, in the order of ``payloads``."""
    return [float(v) for p in payloads if point_of(p) == point and (v := metric_of(p, name)) is not None]


def summary_rows(payloads: Sequence[Mapping], fraction: float = PLATEAU, min_evals: int = PLATEAU_EVALS,
                 name: str = "Sink_1") -> list[dict]:
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
    lines = [f"{'point':<26}{'seeds':<12}{f'{name} % on the plateau: mean [min, max]':<42}{'val loss':>10}{'s/run':>8}"]
    for r in rows:
        value = (fmt_spread(r[name]) if r[name] is not None else "—") + (
            f" (seeds {','.join(map(str, r['too few evaluations']))}: too few evaluations)"
            if r["too few evaluations"] else "")
        lines.append(f"{r['point']:<26}{','.join(map(str, r['seeds'])):<12}{value:<42}{r['val_loss']['mean']:10.3f}"
                     f"{r['wall_seconds']['mean']:8.0f}")
    return "\n".join(lines)


def emergence(records: Sequence) -> list[dict]:
    """Sink_1 over training, over seeds (:class:`~sinkpaper.results.reading.RunRecord` s): one row per evaluation
    step every record has."""
    steps = sorted(set.intersection(*(set(c["step"] for c in r.curve) for r in records))) if records else []
    rows = []
    for step in steps:
        at = [next(c for c in r.curve if c["step"] == step) for r in records]
        rows.append({"step": step, "tokens": at[0]["tokens"], "sink_1": spread([c["sink_1"] for c in at]),
                     "alpha_1": spread([c["alpha_1"] for c in at])})
    return rows
