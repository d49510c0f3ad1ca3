"""Seeds over training as a mean line and a min-max band (:func:`band_chart`, THE chart of several seeds over
training), the rows it draws, a live run beside the stored seeds of its point, and the raw weights behind the
proxy Sink*_1."""
from __future__ import annotations

import statistics
from typing import Any, Mapping, Sequence

import altair as alt

from ...results.reading import point_of
from .core import Columns, STORED_SEEDS, _num, no_data_chart, variant_colors
from .paper_marks import paper_levels


# --------------------------------------------------------------------------------------- seeds as bands
def seed_rows(payloads: Sequence[Mapping], rows_of, points: Sequence[str] | None = None) -> list[dict]:
    """``rows_of(payload, label)`` (e.g. :func:`sinkpaper.results.curves.curve_rows`) for every run, each row
    carrying its run's "point" and "seed", so a chart can tell the seeds of one point apart (:func:`band_chart`)."""
    out = []
    for p in sorted(payloads, key=lambda p: (point_of(p), p["config"]["run"]["seed"])):
        pt, seed = point_of(p), p["config"]["run"]["seed"]
        if points is None or pt in points:
            out += [{**r, "point": pt, "seed": seed} for r in rows_of(p, f"{pt}, seed {seed}")]
    if points is not None:
        order = {pt: i for i, pt in enumerate(points)}
        out.sort(key=lambda r: order[r["point"]])
    return out


def band_rows(rows: Sequence[Mapping], y: str, x: str = "tokens", group: str = "point") -> list[dict]:
    """Per (group, x): the mean over seeds of ``y``, its min and max, and every seed's value as text (the tooltip);
    rows without ``y`` are left out."""
    cells: dict[tuple, list] = {}
    for r in rows:
        if r.get(y) is not None and r.get(x) is not None:
            cells.setdefault((str(r[group]), r[x]), []).append((r["seed"], float(r[y])))
    out = []
    for (g, xv), vals in cells.items():
        ys = [v for _, v in vals]
        out.append({"group": g, "x": xv, "mean": _num(statistics.fmean(ys)), "lo": _num(min(ys)),
                    "hi": _num(max(ys)), "n": len(ys),
                    "seeds": ", ".join(f"seed {s}: {v:.3g}" for s, v in sorted(vals))})
    return out


def band_chart(rows: Sequence[Mapping], y: str, title: str, y_title: str | None = None, *, x: str = "tokens",
               group: str = "point", width: int | str = "container", height: int = 200,
               y_domain: Sequence[float] | None = None, log_y: bool = False,
               paper: Mapping[str, float] | None = None, paper_level: float | None = None,
               rule_y: float | None = None, also: Sequence[tuple[str, str]] = ()) -> alt.LayerChart:
    """THE chart of several seeds over training: per ``group`` (a point, by default) the mean over seeds as a line
    and the min-max over seeds as a band, each seed's value in the tooltip; rows from :func:`seed_rows`.
    ``paper``: {group: the paper's value}, drawn as a dashed level in the group's colour, labelled "paper" at its
    right end and named in the tooltip (a group without one gets none: nothing is invented). Left out, a chart
    of a sink rate ("Sink_2 %", "Sink* %") looks up each group that names a point (:func:`paper_levels`);
    ``paper={}`` draws none. ``rule_y``: a grey dashed threshold. ``also``: other metrics of the same rows,
    [(y, title)], drawn in the same frame one at a time, chosen with a radio button under it; ``y`` shows first,
    and the paper's levels and the rules belong to it (one figure, not one chart per metric)."""
    if also and log_y:
        raise ValueError("a chart with other metrics behind buttons draws them on a linear axis (log_y=False)")
    views = [(y, title, y_title or y, list(y_domain) if y_domain else None)] + [(a, t, a, None) for a, t in also]
    values = []
    for vy, _, _, _ in views:
        vals = band_rows(rows, vy, x, group)
        if log_y:
            vals = [v for v in vals if v["lo"] is not None and v["lo"] > 0]
        values += [{**v, "metric": vy} for v in vals] if also else vals
    if not values:
        return no_data_chart(title, f"no evaluation with {y} to draw", 320 if width == "container" else width,
                             height)
    groups = list(dict.fromkeys(v["group"] for v in values))
    xe = alt.X("x:Q", title="tokens seen" if x == "tokens" else x)
    color = alt.Color("group:N", sort=groups, title=None, legend=alt.Legend(orient="bottom", columns=2, labelLimit=150),
                      scale=alt.Scale(domain=groups, range=variant_colors(groups)))
    yt = y_title or y
    base = alt.Chart(alt.Data(values=values))
    if also:
        # one view at a time: the radio's value filters the rows, and the frame (title, y range) follows it
        show = alt.param(name="show", value=y, bind=alt.binding_radio(
            options=[v[0] for v in views], labels=[v[2] for v in views], name="show: "))

        def pick(field: Any) -> str:   # a vega expression: the value of the view the radio shows
            out = repr(field(views[-1]))
            for v in reversed(views[:-1]):
                out = f"show === {v[0]!r} ? {field(v)!r} : ({out})"
            return out

        def top(v) -> float:   # a view's upper y limit: its domain, or its highest band rounded up
            return v[3][1] if v[3] else _num(1.05 * max([r["hi"] for r in values if r["metric"] == v[0]] or [1.0]))

        ys = alt.Scale(domainMin=alt.ExprRef(pick(lambda v: v[3][0] if v[3] else 0)),
                       domainMax=alt.ExprRef(pick(top)))
        base = base.transform_filter("datum.metric === show")
        title = alt.TitleParams(text=alt.ExprRef(pick(lambda v: v[1])))
        yt = None
        detail = [alt.Detail("metric:N")]
    else:
        ys = alt.Scale(type="log") if log_y else alt.Scale(domain=list(y_domain)) if y_domain else alt.Scale(zero=False)
        detail = []
    value_name = yt or "value"
    layers = [
        base.mark_area(opacity=0.18).encode(x=xe, y=alt.Y("lo:Q", title=yt, scale=ys), y2="hi:Q", color=color,
                                            detail=detail),
        base.mark_line(point=alt.OverlayMarkDef(size=18)).encode(
            x=xe, y=alt.Y("mean:Q", title=yt, scale=ys), color=color, detail=detail,
            tooltip=[alt.Tooltip("group:N", title=group), alt.Tooltip("x:Q", title=x, format=","),
                     *([alt.Tooltip("metric:N")] if also else []),
                     alt.Tooltip("mean:Q", title=f"{value_name}, mean over seeds", format=".4g"),
                     alt.Tooltip("lo:Q", title="min", format=".4g"), alt.Tooltip("hi:Q", title="max", format=".4g"),
                     alt.Tooltip("seeds:N")]),
    ]
    if also:
        layers[0] = layers[0].add_params(show)
    if paper is None:
        paper = paper_levels(groups, y)
    marks = [{"group": g, "paper": _num(v), "who": "paper"} for g, v in paper.items() if g in groups and v is not None]
    # the levels belong to the first view: shown with it, hidden (and clipped away) with the others; hiding keeps
    # their data in the chart, where filtering it out would leave an empty field for vega to warn about
    only_first = {"opacity": alt.ExprRef(f"show === {y!r} ? 1 : 0"), "clip": True} if also else {}
    if marks:   # the rule and its "paper" label share one copy of the data
        rule = alt.Chart()
        layers.append(alt.layer(
            rule.mark_rule(strokeDash=[6, 4], strokeWidth=1.5, **only_first).encode(
                y=alt.Y("paper:Q", scale=ys), color=color,
                tooltip=[alt.Tooltip("who:N", title="source"), alt.Tooltip("group:N", title=group),
                         alt.Tooltip("paper:Q", title=f"the paper's {y_title or y}", format=".4g")]),
            rule.mark_text(align="right", baseline="bottom", dy=-2, fontSize=10, **only_first).encode(
                x=alt.value("width"), y=alt.Y("paper:Q", scale=ys), color=color, text="who:N"),
            data=alt.Data(values=marks)))
    levels = []   # the paper's one level for every group (black), and a grey threshold
    if paper_level is not None:
        levels.append(({"level": _num(paper_level), "who": "paper"},
                       {"strokeDash": [6, 4], "strokeWidth": 1.5, "color": "black"},
                       [alt.Tooltip("who:N", title="source"), alt.Tooltip("level:Q", format=".4g")]))
    if rule_y is not None:
        levels.append(({"level": _num(rule_y)}, {"strokeDash": [2, 2], "color": "gray"}, alt.Undefined))
    for datum, mark, tip in levels:
        layers.append(alt.Chart(alt.Data(values=[datum])).mark_rule(**mark, **only_first).encode(
            y=alt.Y("level:Q", scale=ys), tooltip=tip))
    return alt.layer(*layers, title=title).properties(width=width, height=height)


def raw_weight_bands(rows: Sequence[Mapping], label: str = "Real text") -> Columns:
    """The proxy Sink*_1 and the raw weights on token 1 and on the other keys over training, seeds as bands
    (rows of :func:`seed_rows` over :func:`sinkpaper.results.curves.raw_curve_rows`)."""
    return Columns(
        band_chart(rows, "proxy Sink*_1 %", f"{label}: proxy Sink*_1 (%)", x="step", y_domain=(0, 100)),
        band_chart(rows, "raw weight on token 1", "raw weight on token 1", x="step", log_y=True),
        band_chart(rows, "raw weight on other keys", "raw weight on the other keys", x="step", log_y=True))


def live_and_stored_rows(live: Mapping, live_label: str, stored: Sequence[Mapping],
                         metrics: Sequence[str] | None = None) -> list[dict]:
    """Rows for :func:`band_chart`: a run trained now (its own line) beside the stored seeds of the same point (one
    band, named "stored seeds"), each evaluation's ``metrics`` (:func:`sinkpaper.results.curves.curve_rows`)."""
    from ...results.curves import CURVE_METRICS, curve_rows

    def rows_of(p, label):
        return curve_rows(p, label, tuple(metrics or CURVE_METRICS))

    live_rows = [{**r, "point": live_label, "seed": live["config"]["run"]["seed"]} for r in rows_of(live, live_label)]
    return live_rows + [{**r, "point": STORED_SEEDS.format(r["point"])} for r in seed_rows(stored, rows_of)]
