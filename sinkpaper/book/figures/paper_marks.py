"""The paper on a chart: its number for a point (:func:`paper_number`, never a stand-in), its levels on a chart of a
sink rate, its Table 1 models as marks, and the charts whose main subject is a comparison with it (Table 1 beside
ours, the sink against sequence length, the sink by position)."""
from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

import altair as alt

from ...metrics import SEQ_LEN
from ...paper import DEFAULT_ALIASES, NUMBERS
from .core import _check_size, _group_point, _num


# ----------------------------------------------------------------------------------------- sink vs length
def sink_vs_length(payload: Mapping[str, Any], width: int = 260, height: int = 220) -> alt.HConcatChart:
    """Sink_1 and mean alpha_1 against T for one :func:`sinkpaper.long_context.measure_vs_length` payload: the
    model overall (alpha_1 next to the uniform share H_T / T), then alpha_1 and Sink_1 of every layer as
    layer x T heatmaps (sliding-window layers marked "local" in the tooltip)."""
    pts = sorted(payload["points"], key=lambda p: p["T"])
    if not pts:
        raise ValueError("the payload has no measured T")
    windows = payload.get("layer_windows") or [None] * len(pts[0]["per_layer_alpha_1"])
    overall = []
    for p in pts:
        overall += [{"T": p["T"], "value": _num(p["alpha_1_mean"]), "series": "mean α_1"},
                    {"T": p["T"], "value": _num(p["uniform_alpha_1"]), "series": "uniform H_T / T"},
                    {"T": p["T"], "value": _num(p["sink_1"] / 100), "series": "Sink_1 (fraction of heads)"}]
    x = alt.X("T:Q", scale=alt.Scale(type="log", base=2), title="T (tokens)")
    left = (alt.Chart(alt.Data(values=overall), title=f"{payload['model']}: the sink against T", width=width,
                      height=height).mark_line(point=True)
            .encode(x=x, y=alt.Y("value:Q", title="value"),
                    color=alt.Color("series:N", title=None, legend=alt.Legend(orient="bottom", columns=1)),
                    strokeDash=alt.StrokeDash("series:N", legend=None),
                    tooltip=["series:N", "T:Q", alt.Tooltip("value:Q", format=".4g")]))
    # the paper's Table 1 models on natural text at its T (Sink_1 as a fraction of heads, as the line beside it)
    marks = [{"T": m["x"], "value": _num(m["y"] / 100), "model": m["name"], "who": "paper"}
             for m in table1_marks("natural", SEQ_LEN)]
    if marks:
        left = left + paper_layer(marks, x, "value:Q", tooltip=[
            alt.Tooltip("who:N", title="source"), "model:N", "T:Q",
            alt.Tooltip("value:Q", title="Sink_1 (fraction of heads)", format=".3g")])
    cells = [{"T": str(p["T"]), "layer": i, "alpha": _num(a), "sink": _num(s),
              "kind": "global" if windows[i] is None else f"local (window {windows[i]})"}
             for p in pts for i, (a, s) in enumerate(zip(p["per_layer_alpha_1"], p["per_layer_sink_1"]))]
    _check_size(2 * len(cells), "sink_vs_length")
    order = [str(p["T"]) for p in pts]

    def heat(field, title, legend_title, domain):
        return (alt.Chart(alt.Data(values=cells), title=title, width=width, height=height).mark_rect()
                .encode(x=alt.X("T:O", sort=order, title="T (tokens)"),
                        y=alt.Y("layer:O", title="layer", sort="ascending"),
                        color=alt.Color(f"{field}:Q", title=legend_title, scale=alt.Scale(domain=domain,
                                                                                          scheme="viridis")),
                        tooltip=["layer:O", "kind:N", "T:O", alt.Tooltip(f"{field}:Q", format=".3g")]))

    return alt.hconcat(left, heat("alpha", "mean α_1 per layer", "α_1", [0, 1]),
                       heat("sink", "Sink_1 per layer (%)", "Sink_1 %", [0, 100])).resolve_scale(color="independent")


def paper_number(point: str, metric: str = "Sink_1") -> float | None:
    """The paper's number for a point's metric (:data:`sinkpaper.paper.NUMBERS`: a bare point name is its Sink_1,
    a family's default point reads the default run's); None where the paper gives none, never a stand-in."""
    if metric == "Sink_1" and (point == "default" or point in DEFAULT_ALIASES):
        return NUMBERS["default"].value
    for key in ((point, f"{point}: Sink_1") if metric == "Sink_1" else (f"{point}: {metric}",)):
        if key in NUMBERS:
            return NUMBERS[key].value
    return None


def paper_levels(groups: Sequence[str], y: str) -> dict[str, float]:
    """{group: the paper's value} for a chart of a sink rate over training: ``y`` is "Sink_k %" or "Sink* %", and
    each group that names a point of the registry (:func:`paper_number`) and has a number there gets it; any other
    group (a live run's label, a point the paper gives no number for) gets none."""
    m = re.fullmatch(r"(?:proxy )?Sink(\*?)(_\d+)? %", y)
    if not m:
        return {}
    # the paper keys an operation without normalization by its bare name, a starred Sink_1 (Sink*_1)
    metric = f"Sink{m.group(2)}" if m.group(2) else "Sink*"
    return {g: v for g in groups if (v := paper_number(_group_point(g), metric)) is not None}


def table1_marks(inputs: str, x: float) -> list[dict]:
    """The paper's Table 1 models on one input kind ("natural", "random", "repeat") as marks at ``x`` (its
    epsilon, its T, position 1): rows {"x", "y" (Sink_1 %), "name"}, from :mod:`sinkpaper.paper`."""
    return [{"x": x, "y": n.value, "name": key.split(": ")[0]} for key, n in NUMBERS.items()
            if key.endswith(f": {inputs}") and n.source == "Table 1"]


def paper_layer(marks: list[dict], x, y, offset=None, tooltip: Sequence | None = None) -> alt.Chart:
    """THE mark of a value of the paper: a hollow black diamond (``marks`` carry "who": "paper")."""
    enc = dict(x=x, y=y, tooltip=tooltip or ["point:N", alt.Tooltip("who:N", title="source"),
                                             alt.Tooltip("v:Q", title="the paper", format=".4g")])
    if offset is not None:
        enc["xOffset"] = offset
    return alt.Chart(alt.Data(values=marks)).mark_point(filled=False, color="black", size=80, strokeWidth=2,
                                                         shape="diamond").encode(**enc)


# ------------------------------------------------------------------------------------ chapters 10 and 12
def sink_by_position_chart(rows: Sequence[Mapping], title: str, width: int = 360, height: int = 200,
                           paper: bool = False):
    """Sink_k % over positions k, one line per setting (rows from :func:`sink_k_chart_rows`); BOS-off settings
    dashed. ``paper``: the paper's Table 1 models on natural text at k = 1 as hollow diamonds (for pretrained
    models measured on natural text)."""
    values = [{"setting": r["setting"], "k": r["k"], "v": _num(r["Sink_k (%)"]),
               "BOS": "off" if r["setting"].endswith("BOS off") else "on"} for r in rows]
    order = list(dict.fromkeys(r["setting"] for r in rows))
    x, y = alt.X("k:O", title="position k", axis=alt.Axis(labelAngle=0)), \
        alt.Y("v:Q", title="Sink_k %", scale=alt.Scale(domain=[0, 100]))
    lines = (alt.Chart(alt.Data(values=values), title=title, width=width, height=height)
             .mark_line(point=True)
             .encode(x=x, y=y, color=alt.Color("setting:N", sort=order, title=None),
                     strokeDash=alt.StrokeDash("BOS:N", legend=None, scale=alt.Scale(domain=["on", "off"],
                                                                                     range=[[1, 0], [4, 3]])),
                     tooltip=["setting:N", "k:O", alt.Tooltip("v:Q", title="Sink_k %", format=".3g")]))
    if not paper:
        return lines
    # the paper's Table 1 models on natural text (each with its tokenizer's default BOS) at k = 1
    marks = [{"k": 1, "v": _num(m["y"]), "model": m["name"], "who": "paper"} for m in table1_marks("natural", 1)]
    return lines + paper_layer(marks, x, y, tooltip=[alt.Tooltip("who:N", title="source"), "model:N",
                                                      alt.Tooltip("v:Q", title="Sink_1 %")])


def table1_chart(rows: Sequence[Mapping], title: str = "Sink_1 per input kind: the paper's models (Table 1) and ours",
                 width: int | str = "container", height: int = 220) -> alt.LayerChart:
    """Sink_1 % per input kind, the paper's Table 1 models (:data:`sinkpaper.paper.NUMBERS`, source "Table 1";
    grey bars) beside ours (``rows`` of :func:`sinkpaper.book.measuring.inputs_table`, one bar per model and BOS
    setting, coloured). An input kind the paper gives no number for has no grey bar."""
    kinds = list(dict.fromkeys(r["inputs"] for r in rows))
    values = [{"inputs": key.split(": ")[1], "model": key.split(": ")[0], "who": "paper", "v": _num(n.value)}
              for key, n in NUMBERS.items() if n.source == "Table 1" and ": " in key and key.split(": ")[1] in kinds]
    values += [{"inputs": r["inputs"], "model": f"{r['model']}, BOS {r['BOS']}", "who": "ours",
                "v": _num(r["Sink_1 (%)"])} for r in rows]
    models = list(dict.fromkeys(v["model"] for v in values))
    ours = [m for m in models if not any(v["model"] == m and v["who"] == "paper" for v in values)]
    paper_models = [m for m in models if m not in ours]
    palette = ["#d1242f", "#0969da", "#1a7f37", "#bc4c00", "#8250df", "#1b7c83"]
    color = alt.Color("model:N", sort=models, title=None, legend=alt.Legend(orient="bottom", columns=2),
                      scale=alt.Scale(domain=models, range=["#bbbbbb", "#999999", "#777777", "#555555"][
                          :len(paper_models)] + [palette[i % len(palette)] for i in range(len(ours))]))
    return (alt.Chart(alt.Data(values=values), title=title).mark_bar()
            .encode(x=alt.X("inputs:N", sort=kinds, title=None, axis=alt.Axis(labelAngle=0)),
                    xOffset=alt.XOffset("model:N", sort=models),
                    y=alt.Y("v:Q", title="Sink_1 %", scale=alt.Scale(domain=[0, 100])), color=color,
                    tooltip=["inputs:N", "model:N", alt.Tooltip("who:N", title="source"),
                             alt.Tooltip("v:Q", title="Sink_1 %", format=".4g")])
            .properties(width=width, height=height))
