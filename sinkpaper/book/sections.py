"""What the Sections 4-6 chapters (optimization, data, loss) need beyond :mod:`.experiments`: the real-LM sweep
of a family (the real-text runs read from the store at the cpu profile, trained at gpu/paper), tables and charts of stored
sweeps and curves, and the views of one head of a trained Bigram-Backcopy model (its map, where a copy looks;
the per-head numbers are :mod:`sinkpaper.mechanism`'s). The agreement rules live in :mod:`sinkpaper.paper`.

Like :mod:`.figures`, this module is book-only and may import altair; the core library never does.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import altair as alt
import numpy as np
import torch

from .experiments import StoredSweep, payloads_provenance, point_of, stored_sweep
from ..metrics import excess_alpha, uniform_alpha  # noqa: F401 (chapters call them through here)
from .figures import Table, _num, heatmap

STORE = "results/store"


# ------------------------------------------------------------------------------------------ real-LM sweeps
@dataclass
class LMSweep:
    """The real-LM runs of a family at the profile a chapter reads or trains: ``payloads`` (found or trained),
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
        out: dict[str, list[dict]] = {}
        for p in self.payloads:
            out.setdefault(point_of(p), []).append(p)
        return out


TEXT_PROFILE = "text"   # the real-text CPU sweeps (the scorecard's "real text (CPU)" scale)
TEXT_SEEDS = (0, 1, 2)  # the seeds scripts/sweep_text.sh trains at that profile


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


# ------------------------------------------------------------------------------------------------- numbers
def mean_sink(payloads: Sequence[dict], point: str, k: int = 1) -> float | None:
    """Mean Sink_k (%) over the seeds of one point; None when the point has no run."""
    vals = [p["result"]["sink_k"][str(k)] for p in payloads if point_of(p) == point]
    return statistics.fmean(vals) if vals else None


def mean_alpha_1(payloads: Sequence[dict], point: str) -> float | None:
    vals = [p["result"]["alpha_1_mean"] for p in payloads if point_of(p) == point]
    return statistics.fmean(vals) if vals else None


def emergence(curve: Sequence[Mapping], k: int = 1, threshold: float = 50.0) -> dict | None:
    """The first evaluation at which Sink_k reaches ``threshold`` % (step and tokens seen); None if never."""
    for c in curve:
        if "sink_k" in c and c["sink_k"][str(k)] >= threshold:
            return {"step": c["step"], "tokens": c["tokens"]}
    return None


def mask_of(config: Mapping) -> dict:
    """{"window": w or None, "prefix": p or None} of a stored payload's config (what the metric's divisor uses)."""
    m, d = config["model"], config["data"]
    return {"window": m.get("window") if m.get("mask") == "window" else None, "prefix": d.get("prefix_lm")}


# ------------------------------------------------------------------------------------------------- tables
def points_table(payloads: Sequence[dict], order: Sequence[str], ks: Sequence[int] = (1,),
                    changes: Mapping[str, str] | None = None, paper: Mapping[str, str] | None = None,
                    uniform: bool = False, sink_star: bool = False, held_out: bool = False) -> Table:
    """One row per point in ``order`` (points without runs are left out): what changes, seeds, Sink_k mean
    [min, max] over seeds for each k, alpha_1, the final loss, tokens seen; with ``uniform`` the uniform floor
    of alpha_1 under the point's mask and the excess over it; with ``sink_star`` Sink* (the sink on a bias or
    extra position, where the point has one); with ``held_out`` the held-out loss (mean [min, max]) instead of
    the last training loss; with ``paper`` the paper's number."""
    groups: dict[str, list[dict]] = {}
    for p in payloads:
        groups.setdefault(point_of(p), []).append(p)
    rows = []
    for point in order:
        ps = groups.get(point)
        if not ps:
            continue
        row = {"point": point}
        if changes is not None:
            row["changes"] = changes.get(point, "")
        row["seeds"] = ",".join(str(s) for s in sorted(p["config"]["run"]["seed"] for p in ps))
        for k in ks:
            vals = [p["result"]["sink_k"][str(k)] for p in ps]
            row[f"Sink_{k} %"] = f"{statistics.fmean(vals):.1f} [{min(vals):.1f}, {max(vals):.1f}]"
        if sink_star:
            stars = [p["result"].get("sink_star") for p in ps]
            stars = [v for v in stars if v is not None]
            row["Sink* %"] = f"{statistics.fmean(stars):.1f} [{min(stars):.1f}, {max(stars):.1f}]" if stars else "—"
        a1 = statistics.fmean(p["result"]["alpha_1_mean"] for p in ps)
        row["alpha_1"] = round(a1, 3)
        if uniform:
            u = float(uniform_alpha(ps[0]["config"]["eval"]["seq_len"], **mask_of(ps[0]["config"]))[0])
            row["uniform alpha_1"] = round(u, 3)
            row["excess"] = round(excess_alpha(a1, u), 3) + 0.0  # no "-0.0"
        if held_out:
            vl = [p["result"]["val_loss"] for p in ps]
            row["held-out loss"] = f"{statistics.fmean(vl):.3f} [{min(vl):.3f}, {max(vl):.3f}]"
        else:
            row["loss"] = round(statistics.fmean(p["result"]["final_loss"] for p in ps), 3)
        row["tokens"] = f"{ps[0]['result']['tokens_seen']:,}"
        if paper is not None:
            row["paper"] = paper.get(point, "—")
        rows.append(row)
    if len({r["tokens"] for r in rows}) == 1:   # the same for every point: the provenance line says it once
        rows = [{k: v for k, v in r.items() if k != "tokens"} for r in rows]
    return Table(rows)


def emergence_table(payloads: Sequence[dict], order: Sequence[str], ks: Mapping[str, int] | None = None,
                    threshold: float = 50.0) -> Table:
    """Per point and seed: the step (and tokens) at which Sink_k first reached ``threshold`` %, or 'not within
    N steps'. ``ks`` maps a point to the position k to follow (default 1)."""
    rows = []
    for point in order:
        for p in sorted((p for p in payloads if point_of(p) == point), key=lambda p: p["config"]["run"]["seed"]):
            k = (ks or {}).get(point, 1)
            e = emergence(p["curve"], k, threshold)
            never = f"not within {p['result']['step']}"
            rows.append({"point": point, "seed": p["config"]["run"]["seed"], "k": k,
                         f"first step with Sink_k >= {threshold:g} %": e["step"] if e else never,
                         "tokens seen then": e["tokens"] if e else None,
                         "final Sink_k %": round(p["result"]["sink_k"][str(k)], 1)})
    return Table(rows)


def sink_curve_rows(payload: Mapping, label: str, k: int) -> list[dict]:
    """Like experiments.curve_rows, with the Sink_k of each evaluation under the key "Sink_k %"."""
    return [{"run": label, "step": c["step"], "tokens": c["tokens"], f"Sink_{k} %": c["sink_k"][str(k)]}
            for c in payload["curve"] if "sink_k" in c]


# ------------------------------------------------------------------------------------------------- charts
def row(*charts, title: str = "") -> alt.HConcatChart:
    """Charts side by side, each with its own colour legend."""
    return alt.hconcat(*charts, title=title).resolve_scale(color="independent").resolve_legend(color="independent")


def _no_data_chart(title: str, message: str, width: int, height: int) -> alt.Chart:
    """A chart with nothing to draw says so in its frame: vega-lite gives an empty data set an infinite
    domain (console errors, a broken SVG)."""
    return (alt.Chart(alt.Data(values=[{"message": message}]), title=title, width=width, height=height)
            .mark_text(fontSize=12, color="gray").encode(text="message:N"))


def curve_chart(rows: Sequence[Mapping], y: str, title: str, y_title: str | None = None, width: int = 320,
                height: int = 200, dashed: Sequence[str] = ()) -> alt.Chart:
    """One line per run of ``y`` against tokens seen (rows from experiments.curve_rows); runs named in
    ``dashed`` are drawn dashed (e.g. the stored seeds next to a live run)."""
    values = [{"run": r["run"], "tokens": r["tokens"], "y": _num(r[y]), "step": r["step"],
               "style": "dashed" if r["run"] in dashed else "solid"}
              for r in rows if r.get(y) is not None]
    if not values:
        return _no_data_chart(title, f"no evaluation with {y} to draw", width, height)
    return (alt.Chart(alt.Data(values=values), title=title, width=width, height=height)
            .mark_line(point=True)
            .encode(x=alt.X("tokens:Q", title="tokens seen"),
                    y=alt.Y("y:Q", title=y_title or y, scale=alt.Scale(zero=False)),
                    color=alt.Color("run:N", title=None),
                    strokeDash=alt.StrokeDash("style:N", legend=None,
                                              scale=alt.Scale(domain=["solid", "dashed"], range=[[1, 0], [4, 3]])),
                    tooltip=[alt.Tooltip("run:N"), alt.Tooltip("step:Q"), alt.Tooltip("tokens:Q", format=","),
                             alt.Tooltip("y:Q", title=y_title or y, format=".4g")]))


def sweep_chart(payloads: Sequence[dict], order: Sequence[str], k: int = 1, title: str = "", value: str = "sink",
                width: int = 360, height: int = 200) -> alt.LayerChart:
    """Per point (x, in ``order``): each seed's Sink_k % (value="sink") or alpha_1 (value="alpha_1") as a dot
    and the mean as a tick, so the spread over seeds shows."""
    def v(p):
        return p["result"]["sink_k"][str(k)] if value == "sink" else p["result"]["alpha_1_mean"]
    present = [pt for pt in order if any(point_of(p) == pt for p in payloads)]
    if not present:
        return _no_data_chart(title, "no stored run of " + ", ".join(order), width, height)
    dots = [{"point": point_of(p), "seed": p["config"]["run"]["seed"], "v": _num(v(p))}
            for p in payloads if point_of(p) in present]
    means = [{"point": pt, "v": _num(statistics.fmean(v(p) for p in payloads if point_of(p) == pt))} for pt in present]
    y_title = f"Sink_{k} %" if value == "sink" else "alpha_1 (mean over heads)"
    x = alt.X("point:N", sort=present, title=None, axis=alt.Axis(labelAngle=-30))
    y = alt.Y("v:Q", title=y_title, scale=alt.Scale(domain=[0, 100] if value == "sink" else [0, 1]))
    base = alt.Chart(alt.Data(values=dots), width=width, height=height)
    return alt.layer(
        base.mark_circle(size=50, opacity=0.7).encode(x=x, y=y, xOffset=alt.XOffset("seed:N"),
                                                      color=alt.Color("seed:N", title="seed"),
                                                      tooltip=["point:N", "seed:N", alt.Tooltip("v:Q", format=".3g")]),
        alt.Chart(alt.Data(values=means)).mark_tick(color="black", thickness=2, size=22).encode(
            x=x, y=y, tooltip=["point:N", alt.Tooltip("v:Q", title="mean", format=".3g")]),
        title=title)


def attention_map_chart(attn: np.ndarray, marks: Sequence[tuple[int, int]], title: str, size: int = 330,
                        mark_label: str = "trigger query -> the token before the trigger") -> alt.LayerChart:
    """A T x T attention map (query rows, key columns, 0-based positions) with red open squares on the cells
    in ``marks`` (query, key), e.g. where a copy head must look."""
    m = np.asarray(attn, dtype=float)
    base = heatmap(m, "key position", "query position", title, value_title="attention", domain=(0, 1),
                   width=size, height=size)
    pts = [{"x": int(j), "y": int(i), "what": mark_label} for i, j in marks]
    marker = (alt.Chart(alt.Data(values=pts)).mark_square(filled=False, color="red", size=60, strokeWidth=1.5)
              .encode(x=alt.X("x:O"), y=alt.Y("y:O", sort="ascending"), tooltip=["what:N", "y:O", "x:O"]))
    return alt.layer(base, marker)


def position_profile_chart(payloads: Sequence[dict], order: Sequence[str], title: str, k_max: int = 10,
                           width: int = 360, height: int = 200) -> alt.Chart:
    """Sink_k % for k = 1..k_max, one line per point (mean over seeds): where the sink sits."""
    values = []
    for pt in order:
        ps = [p for p in payloads if point_of(p) == pt]
        if not ps:
            continue
        for k in range(1, k_max + 1):
            values.append({"point": pt, "k": k, "v": _num(statistics.fmean(p["result"]["sink_k"][str(k)] for p in ps))})
    if not values:
        return _no_data_chart(title, "no stored run of " + ", ".join(order), width, height)
    return (alt.Chart(alt.Data(values=values), title=title, width=width, height=height)
            .mark_line(point=True)
            .encode(x=alt.X("k:O", title="position k"), y=alt.Y("v:Q", title="Sink_k % (mean over seeds)",
                                                              scale=alt.Scale(domain=[0, 100])),
                    color=alt.Color("point:N", sort=list(order), title=None),
                    tooltip=["point:N", "k:O", alt.Tooltip("v:Q", format=".3g")]))


def alpha_grid_steps(curve: Sequence[Mapping], title: str = "alpha_1 per layer and head",
                     size: int = 46) -> tuple[list[str], list[alt.Chart]]:
    """(labels, charts) for widgets.slider_stack: the layer x head alpha_1 grid at every evaluation of a run."""
    labels, charts = [], []
    evals = {c["step"]: c for c in curve if "alpha_1_matrix" in c}   # one per step (the last if logged twice)
    for c in evals.values():
        m = np.asarray(c["alpha_1_matrix"], dtype=float)
        labels.append(f"step {c['step']}")
        charts.append(heatmap(m, "head", "layer", f"{title}, step {c['step']} ({c['tokens']:,} tokens): "
                              f"Sink_1 {c['sink_k']['1']:.0f} %", value_title="alpha_1", domain=(0, 1),
                              width=size * m.shape[1], height=max(size * m.shape[0], 40)))
    return labels, charts


# --------------------------------------------------------------------------------------------- mechanism
@torch.no_grad()
def head_map(model, input_ids: torch.Tensor, layer: int, head: int) -> np.ndarray:
    """[T, T] attention map of one head on one sequence (input_ids [T] or [1, T])."""
    ids = input_ids.reshape(1, -1)
    return model.trace(ids).attentions[layer][0, head].float().numpy()


def trigger_cells(input_ids: torch.Tensor, n_triggers: int) -> list[tuple[int, int]]:
    """(query, key) = (t, t-1) for every trigger query t >= 1 (0-based) of one sequence: where a copy looks."""
    ids = input_ids.reshape(-1).tolist()
    return [(t, t - 1) for t in range(1, len(ids)) if ids[t] < n_triggers]


def pick_sequence(input_ids: torch.Tensor, n_triggers: int, want: int = 3) -> int:
    """Index of the first held-out sequence with at least ``want`` trigger queries (else the one with most)."""
    counts = (input_ids[:, 1:] < n_triggers).sum(1)
    hits = (counts >= want).nonzero().flatten()
    return int(hits[0]) if len(hits) else int(counts.argmax())


def span(values: Sequence[float], digits: int = 2) -> str:
    """'a-b' (min-max) for prose, or one number when they round to the same."""
    lo, hi = f"{min(values):.{digits}f}", f"{max(values):.{digits}f}"
    return lo if lo == hi else f"{lo}-{hi}"


def sig(x: float | None, digits: int = 3) -> str:
    """A number for prose: '—' when missing."""
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}g}"
