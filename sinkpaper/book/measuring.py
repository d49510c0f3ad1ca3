"""The Section-3 chapters' (01, 02, 03, 11) parameters and presentation: :func:`check_profile`,
:func:`parse_models`, :func:`parse_bos`, :func:`parse_inputs`, :func:`by_profile`, :func:`positive_int`,
:func:`streaming_sizes`;
:func:`inputs_table` (the Table-1 settings from explorer payloads); :func:`xy_chart`, a line chart over a numeric
x (epsilon, T) for rows of dicts. What these chapters measure is in :mod:`sinkpaper.analysis.section3`.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sinkpaper.analysis.section3 import sink_vs_epsilon
from sinkpaper.book.parameters import PROFILES, device_of  # noqa: F401 (chapters read ms.PROFILES)


# ------------------------------------------------------------------------------------------------ parameters
check_profile = device_of   # the one profile check (sinkpaper.book.parameters)


def parse_models(model: str) -> list[str]:
    """'a, b' -> ['a', 'b'] (offline names or Hugging Face ids); at least one, no repeats."""
    if not isinstance(model, str):
        raise ValueError(f"model must be a string of comma-separated names, got {model!r}")
    names = [m.strip() for m in model.split(",") if m.strip()]
    if not names:
        from sinkpaper.lms import available_models

        raise ValueError("model must name at least one model; available offline: " + ", ".join(available_models())
                         + "; or any Hugging Face causal LM id")
    if len(set(names)) != len(names):
        raise ValueError(f"model names a model twice: {names}")
    return names


def parse_bos(bos: Any) -> list[bool]:
    """True -> [True], False -> [False], "both" -> [False, True]."""
    if isinstance(bos, str) and bos.lower() in ("true", "false", "both"):
        bos = {"true": True, "false": False, "both": "both"}[bos.lower()]
    if bos is True:
        return [True]
    if bos is False:
        return [False]
    if bos == "both":
        return [False, True]
    raise ValueError(f"bos must be True, False or 'both', got {bos!r}")


def parse_inputs(inputs: Any) -> list[str]:
    """'natural,repeat' (or a list) -> ['natural', 'repeat'], in the paper's order natural, random, repeat."""
    from sinkpaper.probes import INPUTS

    items = [s.strip() for s in inputs.split(",")] if isinstance(inputs, str) else list(inputs or [])
    items = [s for s in items if s]
    bad = [s for s in items if s not in INPUTS]
    if bad or not items:
        raise ValueError(f"inputs must name one or more of {', '.join(INPUTS)} (comma-separated), got {inputs!r}")
    return [i for i in INPUTS if i in items]


def positive_int(value: Any, name: str = "value") -> int:
    """`value` as an int, which must be >= 1 (a clear error otherwise)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def by_profile(value: Any, profile: str, defaults: Mapping[str, int], name: str = "value") -> int:
    """`value` unless it is None, else the profile's default; it must be an int >= 1."""
    if value is None:
        return defaults[profile]
    return positive_int(value, f"{name} (None = the profile's default)")


def streaming_sizes(profile: str, *, n_tokens: Any, window: Any, removal_tokens: Any, sink_counts: Any,
                    n_sink: Any, bin_size: Any, bos: Any) -> tuple[int, int, int, list[int]]:
    """Chapter 11's sizes, each None replaced by the profile's default and every mistake said before a model
    loads: (n_tokens, window, removal_tokens, sink_counts), sink_counts sorted without n_sink."""
    n_tokens = by_profile(n_tokens, profile, {"cpu": 1024, "gpu": 4096, "paper": 4096}, "n_tokens")
    window = by_profile(window, profile, {"cpu": 128, "gpu": 512, "paper": 512}, "window")
    removal_tokens = min(by_profile(removal_tokens, profile, {"cpu": 512, "gpu": 2048, "paper": 2048},
                                    "removal_tokens"), n_tokens)
    if sink_counts is None:
        sink_counts = [1] if profile == "cpu" else [1, 2, 8, 16]
    if isinstance(n_sink, bool) or not isinstance(n_sink, (int, np.integer)):
        raise ValueError(f"n_sink must be an int, got {n_sink!r}")
    sink_counts = sorted({positive_int(k, "sink_counts entry") for k in sink_counts} - {n_sink})
    positive_int(bin_size, "bin_size")
    if bos not in (True, False, "auto"):
        raise ValueError(f"bos must be True, False or 'auto', got {bos!r}")
    if not 0 <= n_sink < window or any(k >= window for k in sink_counts):
        raise ValueError(f"n_sink ({n_sink}) and every sink_counts entry must be in [0, window) (window {window})")
    if window >= n_tokens - 1:
        raise ValueError(f"window ({window}) must be shorter than the text (n_tokens {n_tokens}): nothing is evicted")
    if removal_tokens < 4 * max(n_sink, 1) + 2:
        raise ValueError(f"removal_tokens ({removal_tokens}) is too short for the sink-removal table")
    return n_tokens, window, removal_tokens, sink_counts


# ------------------------------------------------------------------------------------------------ models
def inputs_table(payloads: Sequence[Mapping], epsilon: float) -> list[dict]:
    """One row per (model, BOS, inputs) of explorer payloads: Sink_1 at epsilon, mean alpha_1, and the heads whose
    mean alpha_1 exceeds epsilon. Sink_1 equals :func:`sinkpaper.lms.measure_sink`'s on the same probe."""
    from sinkpaper.analysis import explorer_payload

    rows = []
    for p in payloads:
        for s in p["settings"]:
            a = explorer_payload.decode(p, s["inputs"], s["bos"])["alpha_1"]  # [S, L, H]
            mean = a.mean(0)
            rows.append({"model": p["model"], "BOS": "on" if s["bos"] else "off", "inputs": s["inputs"],
                         "Sink_1 (%)": round(sink_vs_epsilon(a, [epsilon])[0], 2),
                         "mean alpha_1": round(float(a.mean()), 3),
                         "heads with mean alpha_1 > eps": f"{int((mean > epsilon).sum())} of {mean.size}"})
    return rows


# ------------------------------------------------------------------------------------- the propositions
# ------------------------------------------------------------------------------------------------ properties
# ------------------------------------------------------------------------------------------------ charts
def xy_chart(rows: Sequence[Mapping], x: str, y: str, color: str, title: str, *, x_title: str | None = None,
             y_title: str | None = None, log_x: bool = False, width: int = 260, height: int = 200,
             rule_y: float | None = None, rule_x: float | None = None, legend: str = "bottom",
             paper: Sequence[Mapping] = ()):
    """A line chart of rows of dicts over a numeric x, one line per value of `color`; rows whose x or y is None
    are dropped. `rule_y` / `rule_x` draw a dashed horizontal / vertical line (e.g. a uniform baseline); `legend`
    is the legend's place (altair's orient: "bottom" keeps side-by-side charts inside a book page). `paper`:
    the paper's values as hollow black diamonds, rows {"x", "y", "name"} (e.g. its models at its epsilon)."""
    import altair as alt

    from .figures.core import _num
    from .figures.paper_marks import paper_layer

    values = [{"x": _num(r[x]), "y": _num(r[y]), "c": str(r[color])} for r in rows
              if r.get(y) is not None and r.get(x) is not None]
    xs = alt.Scale(type="log", base=2) if log_x else alt.Scale(zero=False)
    chart = alt.Chart(alt.Data(values=values), title=title, width=width, height=height).mark_line(point=True).encode(
        x=alt.X("x:Q", title=x_title or x, scale=xs),
        y=alt.Y("y:Q", title=y_title or y),
        color=alt.Color("c:N", title=None, sort=list(dict.fromkeys(v["c"] for v in values)),
                        legend=alt.Legend(orient=legend, columns=2 if legend in ("bottom", "top") else 1)),
        tooltip=[alt.Tooltip("c:N", title=color), alt.Tooltip("x:Q", title=x_title or x),
                 alt.Tooltip("y:Q", title=y_title or y, format=".4g")])
    marks = [{"x": _num(r["x"]), "y": _num(r["y"]), "name": r["name"], "who": "paper"} for r in paper
             if r.get("y") is not None]
    if marks:
        chart = chart + paper_layer(marks, "x:Q", "y:Q", tooltip=[
            alt.Tooltip("who:N", title="source"), alt.Tooltip("name:N", title="model"),
            alt.Tooltip("y:Q", title=y_title or y, format=".4g")])
    if rule_y is not None:
        chart = chart + alt.Chart(alt.Data(values=[{"y": rule_y}])).mark_rule(strokeDash=[4, 3], color="gray") \
            .encode(y="y:Q")
    if rule_x is not None:
        chart = chart + alt.Chart(alt.Data(values=[{"x": rule_x}])).mark_rule(strokeDash=[4, 3], color="gray") \
            .encode(x="x:Q")
    return chart
