"""A stored sweep drawn and said: each point's plateau values over seeds (:func:`book_values`), the dot-and-tick
chart of a sweep (:func:`sweep_chart`) and the caption that states its finding (:func:`sweep_caption`), and where
the sink sits by position."""
from __future__ import annotations

import statistics
from typing import Sequence

import altair as alt

from ...paper import NO_SINK, SINK
from ...paper.budget import ripeness
from ...results.reading import point_of, shown_values
from .core import _num, no_data_chart, variant_colors
from .paper_marks import paper_layer, paper_number

_METRIC_LABEL = {"Sink*": "Sink* (bias position)"}


def book_values(payloads: Sequence[dict], point: str, name: str) -> tuple[list[tuple[int, float]], int]:
    """How the book reads a point's runs, in tables and charts alike: (seed, value) with each run on its plateau as
    the verdicts read it (:func:`sinkpaper.results.reading.shown_values`), and how many fell back to their final
    value."""
    return shown_values(payloads, point, name)


def book_mean(payloads: Sequence[dict], point: str, name: str = "Sink_1") -> float | None:
    """The mean over the seeds of :func:`book_values` (the number a chapter's prose quotes beside its table); None
    when no run of the point records ``name``."""
    vals = [v for _, v in book_values(payloads, point, name)[0]]
    return statistics.fmean(vals) if vals else None


def book_peak(payloads: Sequence[dict], point: str, ks: Sequence[int] = range(1, 11)) \
        -> tuple[int | None, float | None]:
    """(k, :func:`book_mean` of Sink_k) of the position k with the largest Sink_k (the smallest k on a tie): where a
    point's sink sits. (None, None) when the point has no run."""
    means = {k: book_mean(payloads, point, f"Sink_{k}") for k in ks}
    if all(v is None for v in means.values()):
        return None, None
    k = max(ks, key=lambda k: (means[k] or 0.0, -k))
    return k, means[k]


def sweep_chart(payloads: Sequence[dict], order: Sequence[str], k: int = 1, title: str = "",
                value: str | Sequence[str] = "sink", width: int | str = "container",
                height: int = 200) -> alt.LayerChart:
    """THE dot-and-tick chart of a sweep: per point (x, in ``order``; points without runs are left out) each
    seed's number (its plateau, as the tables show it) as a dot and the mean over seeds as a tick, so the spread over
    seeds shows. ``value``: "sink"
    (Sink_k %), "alpha_1", or several metrics of :func:`sinkpaper.results.reading.metric_of` side by side, each
    its own colour: ("Sink*", "Sink_1") puts the sink on a bias position next to the one on token 1 (a metric a
    run does not record is left out). The paper's number (:func:`paper_number`) is a hollow black diamond where it
    gives one."""
    present = [pt for pt in order if any(point_of(p) == pt for p in payloads)]
    if not present:
        return no_data_chart(title, "no stored run of " + ", ".join(order), 360 if width == "container" else width,
                             height)
    x = alt.X("point:N", sort=present, title=None, axis=alt.Axis(labelAngle=-30))
    if isinstance(value, str):
        name = f"Sink_{k}" if value == "sink" else value
        shown = {pt: book_values(payloads, pt, name)[0] for pt in present}
        dots = [{"point": pt, "seed": seed, "v": _num(v)} for pt in present for seed, v in shown[pt]]
        means = [{"point": pt, "v": _num(statistics.fmean(v for _, v in shown[pt]) if shown[pt] else None)}
                 for pt in present]
        is_sink = name.startswith("Sink")
        y = alt.Y("v:Q", title=f"{name} %" if is_sink else f"{name} (mean over heads)",
                  scale=alt.Scale(domain=[0, 100] if is_sink else [0, 1]))
        layers = [
            alt.Chart(alt.Data(values=dots), width=width, height=height).mark_circle(size=50, opacity=0.7).encode(
                x=x, y=y, xOffset=alt.XOffset("seed:N"), color=alt.Color("seed:N", title="seed"),
                tooltip=["point:N", "seed:N", alt.Tooltip("v:Q", format=".3g")]),
            alt.Chart(alt.Data(values=means)).mark_tick(color="black", thickness=2, size=22).encode(
                x=x, y=y, tooltip=["point:N", alt.Tooltip("v:Q", title="mean", format=".3g")])]
        marks = [{"point": pt, "who": "paper", "v": _num(v)} for pt in present
                 if (v := paper_number(pt, name)) is not None] if is_sink else []
        if marks:
            layers.append(paper_layer(marks, x, y))
        return alt.layer(*layers, title=title)
    labels = [_METRIC_LABEL.get(name, name) for name in value]
    dots, means = [], []
    for pt in present:
        ps = [p for p in payloads if point_of(p) == pt]
        for name, label in zip(value, labels):
            vals = book_values(ps, pt, name)[0]
            dots += [{"point": pt, "metric": label, "seed": s, "v": _num(v)} for s, v in vals]
            if vals:
                means.append({"point": pt, "metric": label, "v": _num(statistics.fmean(v for _, v in vals))})
    y = alt.Y("v:Q", title="% of heads", scale=alt.Scale(domain=[0, 100]))
    color = alt.Color("metric:N", title=None, sort=labels, legend=alt.Legend(orient="bottom"))
    offset = alt.XOffset("metric:N", sort=labels)
    layers = [
        alt.Chart(alt.Data(values=dots), width=width, height=height).mark_circle(size=45, opacity=0.6).encode(
            x=x, xOffset=offset, y=y, color=color,
            tooltip=["point:N", "metric:N", "seed:N", alt.Tooltip("v:Q", format=".3g")]),
        alt.Chart(alt.Data(values=means)).mark_tick(thickness=2, size=14).encode(
            x=x, xOffset=offset, y=y, color=color,
            tooltip=["point:N", "metric:N", alt.Tooltip("v:Q", title="mean", format=".3g")])]
    marks = [{"point": pt, "metric": label, "who": "paper", "v": _num(v)} for pt in present
             for name, label in zip(value, labels) if (v := paper_number(pt, name)) is not None]
    if marks:
        layers.append(paper_layer(marks, x, y, offset))
    return alt.layer(*layers, title=title)


def sweep_caption(payloads: Sequence[dict], order: Sequence[str], k: int = 1,
                  value: str | Sequence[str] = "sink", onset_loss: float | None = None) -> str:
    """What a :func:`sweep_chart` shows, as a finding: which points have a sink in every seed (>= the registry's
    SINK), which have none in any seed (< NO_SINK), which the seeds split, and where the paper disagrees with
    that (a point the paper gives a sink that has none here, or the reverse). Reads the same plateau values.
    ``onset_loss`` (the base's, :mod:`sinkpaper.paper.budget`): a point with no sink where some seed was read
    before its held-out loss reached it is named apart, as not yet, never as the paper read the other way."""
    names = [f"Sink_{k}" if value == "sink" else value] if isinstance(value, str) else list(value)
    name = names[0]
    if not name.startswith("Sink"):
        return f"{name} on each run's plateau per point: dots are seeds, the tick their mean."
    groups: dict[str, list[str]] = {"sink": [], "none": [], "split": []}
    against, early, seeds = [], [], set()
    for pt in order:
        vals = [v for _, v in book_values(payloads, pt, name)[0]]
        if not vals:
            continue
        seeds.add(len(vals))
        kind = "sink" if min(vals) >= SINK else "none" if max(vals) < NO_SINK else "split"
        groups[kind].append(pt)
        pv = paper_number(pt, name)
        if pv is not None and kind != "split" and (pv >= SINK) != (kind == "sink"):
            unripe = kind == "none" and onset_loss is not None and any(
                not ripeness(p, onset_loss).ripe for p in payloads if point_of(p) == pt)
            (early if unripe else against).append(f"{pt} (paper {pv:g} %)")
    n_seeds = f"{max(seeds)} seeds" if seeds and len(seeds) == 1 else "its seeds"
    said = [f"a sink (>= {SINK:g} %) in every seed: {', '.join(groups['sink'])}" if groups["sink"] else "",
            f"none (< {NO_SINK:g} %) in any seed: {', '.join(groups['none'])}" if groups["none"] else "",
            f"the seeds split: {', '.join(groups['split'])}" if groups["split"] else ""]
    said = [x for x in said if x]
    if said:
        said[0] = said[0][0].upper() + said[0][1:]
    text = f"{name} on each point's plateau ({n_seeds}: dots; tick: their mean; hollow diamond: the paper). " \
           + "; ".join(said) + "."
    if against:
        text += " Where the paper reads the other way: " + ", ".join(against) + "."
    if early:
        text += (f" Not yet (a seed had not reached the base's onset loss, {onset_loss:.3f}, before its plateau "
                 "was read): " + ", ".join(early) + ".")
    return text


def position_profile_chart(payloads: Sequence[dict], order: Sequence[str], title: str, k_max: int = 10,
                           width: int | str = "container", height: int = 200) -> alt.LayerChart:
    """Sink_k % for k = 1..k_max, one line per point (mean over seeds): where the sink sits. The paper's Sink_k of a
    point (e.g. Sink_2 of a fixed token at position 2), where it gives one, is a hollow diamond in the point's
    colour."""
    shown = [pt for pt in order if any(point_of(p) == pt for p in payloads)]
    values = [{"point": pt, "k": k, "v": _num(book_mean(payloads, pt, f"Sink_{k}"))}
              for pt in shown for k in range(1, k_max + 1)]
    if not values:
        return no_data_chart(title, "no stored run of " + ", ".join(order), 360 if width == "container" else width,
                             height)
    x = alt.X("k:O", title="position k", axis=alt.Axis(labelAngle=0))
    y = alt.Y("v:Q", title="Sink_k % (mean over seeds)", scale=alt.Scale(domain=[0, 100]))
    color = alt.Color("point:N", sort=shown, title=None, legend=alt.Legend(orient="bottom", columns=2),
                      scale=alt.Scale(domain=shown, range=variant_colors(shown)))
    layers = [alt.Chart(alt.Data(values=values)).mark_line(point=True).encode(
        x=x, y=y, color=color, tooltip=["point:N", "k:O", alt.Tooltip("v:Q", format=".3g")])]
    marks = [{"point": pt, "k": k, "who": "paper", "v": _num(v)} for pt in shown for k in range(1, k_max + 1)
             if (v := paper_number(pt, f"Sink_{k}")) is not None]
    if marks:
        layers.append(alt.Chart(alt.Data(values=marks)).mark_point(filled=False, size=110, strokeWidth=2,
                                                                     shape="diamond").encode(
            x=x, y=y, color=color, tooltip=["point:N", "k:O", alt.Tooltip("who:N", title="source"),
                                            alt.Tooltip("v:Q", title="the paper", format=".4g")]))
    return alt.layer(*layers, title=title).properties(width=width, height=height)
