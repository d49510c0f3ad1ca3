"""The book's altair charts and its table display: heatmaps and per-layer lines, provenance lines, the Table
class, and the charts of stored sweeps and training curves (seeds over training as a mean line and a min-max band,
:func:`band_chart`; one line per run, :func:`curve_chart`; one dot-and-tick chart of a sweep, :func:`sweep_chart`;
where the sink sits, :func:`position_profile_chart`; the paper's Table 1 beside ours, :func:`table1_chart`;
attention maps). Every chart that compares with the paper draws the paper's number where :mod:`sinkpaper.paper`
has one (:func:`paper_number`) and none where it has none. :class:`Columns` sets charts of the column's width side
by side; :func:`joined_lines` and :func:`draws_the_paper` read a chart's spec back (the tests' checks). The tables
built from stored runs are in :mod:`.tables`.

Only the book (and the notebooks) import altair; the core library does not. Charts use altair's default
HTML renderer: in the built book they draw with the offline ``vega-bundle.js`` (see :mod:`.assets`). Do not
switch to the ``mimetype`` renderer: its output fails papermill's notebook validation.

Data are embedded as ``alt.Data(values=...)`` rounded to 4 significant digits, so no pandas is needed and
altair's 5000-row guard does not apply; keep inputs small (a 128x128 map is ~16k values).
"""
from __future__ import annotations

import hashlib
import html
import math
import os
import re
import statistics
from typing import Any, Iterable, Mapping, Sequence

import altair as alt
from IPython.display import Markdown, display
import numpy as np

from ..metrics import SEQ_LEN
from ..paper import DEFAULT_ALIASES, NO_SINK, NUMBERS, PLATEAU, PLATEAU_EVALS, SINK
from ..results.sweeps import point_of, shown_values

# No action menu on the charts: its padding made every chart of the column's width 38 px wider than its box (a
# scrollbar under each), and its "open in the Vega editor" links out of the site.
alt.renderers.set_embed_options(actions=False)

WIDTH = 300
HEIGHT = 300
_LARGE = 40_000  # values per chart above which we warn: pages get heavy


def _num(x: Any) -> float | None:
    """JSON-safe float rounded to 4 significant digits (None for NaN/inf)."""
    x = float(x)
    if not math.isfinite(x):
        return None
    return float(f"{x:.4g}")


def _check_size(n: int, what: str) -> None:
    if n > _LARGE:
        import warnings

        warnings.warn(f"{what}: {n} values embedded in one chart; the page will be large", stacklevel=3)


def heatmap(
    matrix,
    x_title: str,
    y_title: str,
    title: str,
    value_title: str = "alpha_1",
    domain: Sequence[float] | None = None,
    width: int = WIDTH,
    height: int = HEIGHT,
) -> alt.Chart:
    """Heatmap of a 2-D array: rows on the y axis (e.g. layers), columns on the x axis (e.g. heads).

    ``domain`` fixes the colour scale (e.g. ``(0, 1)`` for attention fractions); non-finite cells are left blank.
    """
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2:
        raise ValueError(f"heatmap needs a 2-D array, got shape {m.shape}")
    _check_size(m.size, title)
    values = [
        {"x": int(j), "y": int(i), "v": _num(m[i, j])}
        for i in range(m.shape[0])
        for j in range(m.shape[1])
        if math.isfinite(m[i, j])
    ]
    scale = alt.Scale(scheme="viridis", domain=list(domain)) if domain is not None else alt.Scale(scheme="viridis")
    return (
        alt.Chart(alt.Data(values=values), title=title, width=width, height=height)
        .mark_rect()
        .encode(
            x=alt.X("x:O", title=x_title),
            y=alt.Y("y:O", title=y_title, sort="ascending"),
            color=alt.Color("v:Q", title=value_title, scale=scale),
            tooltip=[
                alt.Tooltip("y:O", title=y_title),
                alt.Tooltip("x:O", title=x_title),
                alt.Tooltip("v:Q", title=value_title, format=".4g"),
            ],
        )
    )


def lines_by_layer(
    series: Mapping[str, Iterable[float]],
    y_title: str,
    title: str,
    log_y: bool = False,
    x_title: str = "layer",
    width: int = WIDTH,
    height: int = HEIGHT,
) -> alt.Chart:
    """One line per label over the layer index (position in each 1-D array). With ``log_y`` non-positive values
    are dropped (a log axis cannot show them)."""
    values = []
    for label, ys in series.items():
        for layer, y in enumerate(np.asarray(ys, dtype=float).ravel()):
            if not math.isfinite(y) or (log_y and y <= 0):
                continue
            values.append({"layer": layer, "value": _num(y), "series": str(label)})
    _check_size(len(values), title)
    y_scale = alt.Scale(type="log") if log_y else alt.Scale(zero=False)
    return (
        alt.Chart(alt.Data(values=values), title=title, width=width, height=height)
        .mark_line(point=True)
        .encode(
            x=alt.X("layer:Q", title=x_title, axis=alt.Axis(tickMinStep=1)),
            y=alt.Y("value:Q", title=y_title, scale=y_scale),
            color=alt.Color("series:N", title=None, sort=list(map(str, series))),
            tooltip=[alt.Tooltip("series:N"), alt.Tooltip("layer:Q"), alt.Tooltip("value:Q", format=".4g")],
        )
    )


def _square_panel(m: np.ndarray, title: str, value_title: str, scheme: str, size: int) -> alt.Chart:
    values = [
        {"key": int(j), "query": int(i), "v": _num(m[i, j])}
        for i in range(m.shape[0])
        for j in range(m.shape[1])
        if math.isfinite(m[i, j])
    ]
    return (
        alt.Chart(alt.Data(values=values), title=title, width=size, height=size)
        .mark_rect()
        .encode(
            x=alt.X("key:O", title="key position", axis=alt.Axis(labelOverlap=True)),
            y=alt.Y("query:O", title="query position", axis=alt.Axis(labelOverlap=True)),
            color=alt.Color("v:Q", title=value_title, scale=alt.Scale(scheme=scheme),
                            legend=alt.Legend(orient="bottom", gradientLength=size * 0.8)),
            tooltip=[alt.Tooltip("query:O"), alt.Tooltip("key:O"), alt.Tooltip("v:Q", title=value_title, format=".4g")],
        )
    )


def qk_heatmaps(product, cosine, norm_product, title: str, size: int = 220) -> alt.HConcatChart:
    """Three T x T panels side by side - q.k, cos(q, k) and |q||k| - each with its own colour scale and axes
    (nothing shared). Masked (e.g. future) positions should be NaN and are left blank."""
    mats = [np.asarray(a, dtype=float) for a in (product, cosine, norm_product)]
    for a in mats:
        if a.ndim != 2 or a.shape[0] != a.shape[1]:
            raise ValueError(f"qk_heatmaps needs T x T arrays, got shape {a.shape}")
    _check_size(sum(a.size for a in mats), title)
    panels = [
        _square_panel(mats[0], "q·k", "q·k", "redblue", size),
        _square_panel(mats[1], "cos(q, k)", "cos", "redblue", size),
        _square_panel(mats[2], "‖q‖‖k‖", "norm product", "viridis", size),
    ]
    return (
        alt.hconcat(*panels, title=title)
        .resolve_scale(color="independent", x="independent", y="independent")
        .resolve_legend(color="independent")
    )


# ------------------------------------------------------------------------------------------------ provenance
_KNOWN = ("model", "profile", "device", "hardware", "code_version", "torch", "python", "computed_now", "source",
          "loaded_from", "timestamp", "computed_at", "n_samples", "n_tokens", "seq_len")


def _shown(value: Any) -> Any:
    """A provenance value as printed: a path (a Path, or a string naming an absolute path) relative to the
    checkout, never an absolute path of the build machine (:func:`sinkpaper.provenance.shown_path`)."""
    from ..provenance import shown_path

    if isinstance(value, os.PathLike) or (isinstance(value, str) and os.path.isabs(value)):
        return shown_path(value)
    return value


def provenance_line(prov: Mapping[str, Any]) -> str:
    """Markdown one-liner describing where a number came from.

    Recognised keys (all optional; :func:`sinkpaper.provenance.stamp` output works as is): ``model``,
    ``profile``, ``device`` (or ``hardware``), ``code_version``, ``torch``, ``python``, ``computed_now`` (bool)
    or ``source`` ("computed"/"loaded"), ``loaded_from`` (implies loaded), ``timestamp`` / ``computed_at``,
    ``n_samples``, ``n_tokens`` / ``seq_len``. Other keys are appended as ``key=value``.
    """
    parts = []
    if prov.get("model") is not None:
        parts.append(f"model `{prov['model']}`")
    if prov.get("profile") is not None:
        parts.append(f"profile `{prov['profile']}`")
    device = prov.get("device", prov.get("hardware"))
    if device is not None:
        parts.append(f"device {device}")
    if prov.get("code_version") is not None:
        versions = str(prov["code_version"]).split(", ")
        # many runs, many versions: the count on the line, the list on hover (one line per page, not a paragraph)
        parts.append(f"code `{versions[0]}`" if len(versions) == 1 else
                     f'<abbr title="{html.escape(", ".join(versions), quote=True)}">{len(versions)} code versions</abbr>')
    libs = [f"{k} {prov[k]}" for k in ("torch", "python") if prov.get(k) is not None]
    if libs:
        parts.append(", ".join(libs))
    computed = prov.get("computed_now")
    if computed is None and prov.get("source") is not None:
        computed = str(prov["source"]).lower().startswith("comp")
    if computed is None and prov.get("loaded_from"):
        computed = False
    stamp = prov.get("timestamp", prov.get("computed_at"))
    if computed is True:
        parts.append("computed now" + (f" ({stamp})" if stamp else ""))
    elif computed is False:
        where = f" from `{_shown(prov['loaded_from'])}`" if prov.get("loaded_from") else ""
        when = f" (computed {stamp})" if stamp else ""
        parts.append(f"**loaded**{where}{when}")
    elif stamp:
        parts.append(f"computed {stamp}")
    size = []
    if prov.get("n_samples") is not None:
        size.append(f"{prov['n_samples']} samples")
    tokens = prov.get("n_tokens", prov.get("seq_len"))
    if tokens is not None:
        size.append(f"{tokens} tokens" + (" each" if prov.get("n_samples") is not None else ""))
    if size:
        parts.append(" × ".join(size))
    parts += [f"{k}={_shown(v)}" for k, v in prov.items() if k not in _KNOWN]
    return "*Provenance:* " + " · ".join(parts) if parts else "*Provenance:* (none recorded)"


# ----------------------------------------------------------------------------------------- paper vs ours
COLUMNS = ("setting", "paper", "ours", "difference", "note")


_SPREAD = re.compile(r"(-?\d[\d.,]*)( \[-?\d[\d.,]*, -?\d[\d.,]*\])(\*?)")
_PAIRS = re.compile(r"\S+ -?\d[\d.]*(, \S+ -?\d[\d.]*)+")


def _cell_html(text: str) -> str:
    """A cell's text as HTML; a spread over seeds, 'mean [min, max]' (sinkpaper.results.numbers.fmt_spread),
    keeps each number whole: the mean on its line, the range under it, smaller, never broken mid-number; a list of
    'label number' pairs breaks only between pairs."""
    m = _SPREAD.fullmatch(text)
    if not m:
        if _PAIRS.fullmatch(text):     # "Sink* 32.18, Sink_1 4.74": a line break only between the pairs
            return ", ".join(f'<span class="mean">{html.escape(p)}</span>' for p in text.split(", "))
        return html.escape(text)
    mean, rng, mark = (html.escape(g) for g in m.groups())
    return f'<span class="mean">{mean}{mark}</span><span class="range">{rng.strip()}</span>'


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return "—" if not math.isfinite(float(v)) else f"{float(v):.4g}"
    return str(v)


class Table:
    """Rows of dicts shown as a table: HTML in notebooks and the book, Markdown elsewhere (no pandas needed)."""

    numeric: frozenset = frozenset()

    def __init__(self, rows: list[dict[str, Any]], columns: Sequence[str] | None = None):
        self.rows = rows
        self.columns = tuple(columns) if columns is not None else tuple(rows[0]) if rows else ()
        self.numeric = frozenset(c for c in self.columns
                                 if rows and all(isinstance(r.get(c), (int, float, np.number)) for r in rows))

    def to_markdown(self) -> str:
        head = "| " + " | ".join(self.columns) + " |\n|" + "---|" * len(self.columns) + "\n"
        esc = lambda s: s.replace("|", "\\|")  # noqa: E731
        return head + "".join("| " + " | ".join(esc(_fmt(r[c])) for c in self.columns) + " |\n" for r in self.rows)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_html_(self) -> str:
        num = self.numeric
        th = "".join(f"<th>{c}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(
                f'<td style="text-align:{"right" if c in num else "left"}">{_cell_html(_fmt(r[c]))}</td>'
                for c in self.columns) + "</tr>"
            for r in self.rows
        )
        return (f'<div class="spx-scroll"><table class="sinkpaper-table"><thead><tr>{th}</tr></thead>'
                f'<tbody>{body}</tbody></table></div>')

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame(self.rows, columns=list(self.columns))


class ComparisonTable(Table):
    """Rows of (setting, paper, ours, difference, note)."""

    def __init__(self, rows: list[dict[str, Any]]):
        super().__init__(rows, COLUMNS)
        self.numeric = frozenset({"paper", "ours", "difference"})


def paper_vs_ours(rows: list[dict[str, Any]]) -> ComparisonTable:
    """Paper-vs-ours table. Each row needs ``setting``, ``paper`` and ``ours``; ``note`` is optional and
    ``difference`` defaults to ``ours - paper`` when both are numbers (else left blank). The paper's values
    must be typed in by the caller from the paper itself - this helper invents nothing.

    Returns a :class:`ComparisonTable` (HTML/Markdown in notebooks; ``.to_pandas()`` if pandas is installed).
    """
    out = []
    for r in rows:
        missing = {"setting", "paper", "ours"} - set(r)
        if missing:
            raise ValueError(f"row {r!r} lacks {sorted(missing)}")
        diff = r.get("difference")
        p, o = r["paper"], r["ours"]
        if diff is None and all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
                                for v in (p, o)):
            diff = float(o) - float(p)
        out.append({"setting": r["setting"], "paper": p, "ours": o, "difference": diff, "note": r.get("note", "")})
    return ComparisonTable(out)


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
        left = left + _paper_layer(marks, x, "value:Q", tooltip=[
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


# ------------------------------------------------------------------------------ sweeps and training curves
PAGE_WIDTH = 680   # the book's content column at a 1280-pixel window (wider outputs scroll sideways)
LEGEND_WIDTH = 90  # what a colour legend beside a chart adds to its width


def _width(chart) -> int:
    """A chart's drawing width (a layer's first chart's), plus its legend: 320 where none is set."""
    w = getattr(chart, "width", alt.Undefined)
    if w is alt.Undefined and getattr(chart, "layer", None):
        w = getattr(chart.layer[0], "width", alt.Undefined)
    return (w if isinstance(w, (int, float)) else 320) + LEGEND_WIDTH


def row(*charts, title: str = "", width: int = PAGE_WIDTH) -> alt.HConcatChart | alt.VConcatChart:
    """Charts side by side, each with its own colour legend; as many rows as it takes to keep each row within
    ``width`` pixels (the page's column), so nothing scrolls sideways."""
    rows, current, used = [], [], 0
    for c in charts:
        w = _width(c)
        if current and used + w > width:
            rows.append(current)
            current, used = [], 0
        current.append(c)
        used += w
    if current:
        rows.append(current)
    lines = [alt.hconcat(*r).resolve_scale(color="independent").resolve_legend(color="independent") for r in rows]
    if len(lines) == 1:
        return alt.hconcat(*rows[0], title=title).resolve_scale(color="independent").resolve_legend(color="independent")
    return alt.vconcat(*lines, title=title).resolve_scale(color="independent").resolve_legend(color="independent")


def no_data_chart(title: str, message: str, width: int, height: int) -> alt.Chart:
    """A chart with nothing to draw says so in its frame: vega-lite gives an empty data set an infinite
    domain (console errors, a broken SVG)."""
    return (alt.Chart(alt.Data(values=[{"message": message}]), title=title, width=width, height=height)
            .mark_text(fontSize=12, color="gray").encode(text="message:N"))


def curve_chart(rows: Sequence[Mapping], y: str, title: str, y_title: str | None = None, width: int = 320,
                height: int = 200, dashed: Sequence[str] = (), *, x: str = "tokens", color: str = "run",
                log_y: bool = False, zero: bool = False, y_domain: Sequence[float] | None = None,
                rule_y: float | None = None, legend: str = "right") -> alt.Chart:
    """THE line chart over training: one line per value of ``color`` (a run, by default) of ``y`` against ``x``
    (tokens seen, or "step"), from rows of :func:`sinkpaper.results.curves.curve_rows` (or raw_curve_rows).
    Lines named in ``dashed`` are drawn dashed (e.g. the stored seeds next to a live run); the legend keeps the
    rows' order. The y axis: log with ``log_y`` (non-positive values dropped), fixed with ``y_domain`` (e.g.
    (0, 100) for a percentage, so an all-zero line still reads 0 %), else fitted to the data (from 0 with
    ``zero``); ``rule_y`` draws a dashed horizontal line (e.g. the threshold). ``legend``: its place (altair's
    orient; "bottom" keeps a chart with many long-named lines inside the page)."""
    if color in ("x", "y", "step", "tokens", "style"):
        raise ValueError(f"color names a field of the chart's own: {color!r}")
    values = [{color: str(r[color]), "x": r[x], "y": _num(r[y]), "step": r["step"], "tokens": r.get("tokens"),
               "style": "dashed" if r[color] in dashed else "solid"}
              for r in rows if r.get(y) is not None and (not log_y or r[y] > 0)]
    if not values:
        return no_data_chart(title, f"no evaluation with {y} to draw", width, height)
    if log_y:
        ys = alt.Scale(type="log")
    else:
        ys = alt.Scale(domain=list(y_domain)) if y_domain is not None else alt.Scale(zero=zero)
    chart = (alt.Chart(alt.Data(values=values), title=title, width=width, height=height)
             .mark_line(point=True)
             .encode(x=alt.X("x:Q", title="tokens seen" if x == "tokens" else x),
                     y=alt.Y("y:Q", title=y_title or y, scale=ys),
                     color=alt.Color(f"{color}:N", title=None, sort=list(dict.fromkeys(v[color] for v in values)),
                                     legend=alt.Legend(orient=legend, columns=3 if legend in ("bottom", "top") else 1)),
                     strokeDash=alt.StrokeDash("style:N", legend=None,
                                               scale=alt.Scale(domain=["solid", "dashed"], range=[[1, 0], [4, 3]])),
                     tooltip=[alt.Tooltip(f"{color}:N"), alt.Tooltip("step:Q"),
                              alt.Tooltip("tokens:Q", format=","),
                              alt.Tooltip("y:Q", title=y_title or y, format=".4g")]))
    if rule_y is not None:
        chart = chart + (alt.Chart(alt.Data(values=[{"y": rule_y}])).mark_rule(strokeDash=[4, 3], color="gray")
                         .encode(y="y:Q"))
    return chart


def long_rows(rows: Sequence[Mapping], keys: Sequence[str], key_name: str = "series") -> list[dict]:
    """Wide rows (one per evaluation, several measured columns) to long rows (one per column) for a chart
    with one line per column: {"run", "step", "tokens", key_name: "<run>: <column>", "value"}."""
    out = []
    for r in rows:
        for k in keys:
            if r.get(k) is not None:
                out.append({"run": r["run"], "step": r["step"], "tokens": r["tokens"],
                            key_name: f"{r['run']}: {k}", "value": r[k]})
    return out


_METRIC_LABEL = {"Sink*": "Sink* (bias position)"}


def book_values(payloads: Sequence[dict], point: str, name: str) -> tuple[list[tuple[int, float]], int]:
    """How the book reads a point's runs, in tables and charts alike: (seed, value) with each run on its plateau as
    the verdicts read it (:data:`sinkpaper.paper.PLATEAU`), and how many fell back to their final value."""
    return shown_values(payloads, point, name, PLATEAU, PLATEAU_EVALS)


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


STORED_SEEDS = "stored seeds ({})"  # the group of a point's stored seeds beside a live run (live_and_stored_rows)


def _group_point(group: str) -> str:
    """The point a band chart's group stands for: itself, or the point of a "stored seeds (point)" group."""
    m = re.fullmatch(re.escape(STORED_SEEDS).replace(r"\{\}", "(.+)"), group)
    return m.group(1) if m else group


def table1_marks(inputs: str, x: float) -> list[dict]:
    """The paper's Table 1 models on one input kind ("natural", "random", "repeat") as marks at ``x`` (its
    epsilon, its T, position 1): rows {"x", "y" (Sink_1 %), "name"}, from :mod:`sinkpaper.paper`."""
    return [{"x": x, "y": n.value, "name": key.split(": ")[0]} for key, n in NUMBERS.items()
            if key.endswith(f": {inputs}") and n.source == "Table 1"]


def _paper_layer(marks: list[dict], x, y, offset=None, tooltip: Sequence | None = None) -> alt.Chart:
    """THE mark of a value of the paper: a hollow black diamond (``marks`` carry "who": "paper")."""
    enc = dict(x=x, y=y, tooltip=tooltip or ["point:N", alt.Tooltip("who:N", title="source"),
                                             alt.Tooltip("v:Q", title="the paper", format=".4g")])
    if offset is not None:
        enc["xOffset"] = offset
    return alt.Chart(alt.Data(values=marks)).mark_point(filled=False, color="black", size=80, strokeWidth=2,
                                                         shape="diamond").encode(**enc)


def sweep_chart(payloads: Sequence[dict], order: Sequence[str], k: int = 1, title: str = "",
                value: str | Sequence[str] = "sink", width: int | str = "container",
                height: int = 200) -> alt.LayerChart:
    """THE dot-and-tick chart of a sweep: per point (x, in ``order``; points without runs are left out) each
    seed's number (its plateau, as the tables show it) as a dot and the mean over seeds as a tick, so the spread over
    seeds shows. ``value``: "sink"
    (Sink_k %), "alpha_1", or several metrics of :func:`sinkpaper.results.sweeps.metric_of` side by side, each
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
            layers.append(_paper_layer(marks, x, y))
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
        layers.append(_paper_layer(marks, x, y, offset))
    return alt.layer(*layers, title=title)


def sweep_caption(payloads: Sequence[dict], order: Sequence[str], k: int = 1,
                  value: str | Sequence[str] = "sink") -> str:
    """What a :func:`sweep_chart` shows, as a finding: which points have a sink in every seed (>= the registry's
    SINK), which have none in any seed (< NO_SINK), which the seeds split, and where the paper disagrees with
    that (a point the paper gives a sink that has none here, or the reverse). Reads the same plateau values."""
    names = [f"Sink_{k}" if value == "sink" else value] if isinstance(value, str) else list(value)
    name = names[0]
    if not name.startswith("Sink"):
        return f"{name} on each run's plateau per point: dots are seeds, the tick their mean."
    groups: dict[str, list[str]] = {"sink": [], "none": [], "split": []}
    against, seeds = [], set()
    for pt in order:
        vals = [v for _, v in book_values(payloads, pt, name)[0]]
        if not vals:
            continue
        seeds.add(len(vals))
        kind = "sink" if min(vals) >= SINK else "none" if max(vals) < NO_SINK else "split"
        groups[kind].append(pt)
        pv = paper_number(pt, name)
        if pv is not None and kind != "split" and (pv >= SINK) != (kind == "sink"):
            against.append(f"{pt} (paper {pv:g} %)")
    n_seeds = f"{max(seeds)} seeds" if seeds and len(seeds) == 1 else "its seeds"
    said = [f"a sink (>= {SINK:g} %) in every seed: {', '.join(groups['sink'])}" if groups["sink"] else "",
            f"none (< {NO_SINK:g} %) in any seed: {', '.join(groups['none'])}" if groups["none"] else "",
            f"the seeds split: {', '.join(groups['split'])}" if groups["split"] else ""]
    said = [x for x in said if x]
    if said:
        said[0] = said[0][0].upper() + said[0][1:]
    text = f"{name} on the plateau of each point ({n_seeds}; dots are seeds, the tick their mean, the hollow " \
           f"diamond the paper). " + "; ".join(said) + "."
    if against:
        text += " Where the paper reads the other way: " + ", ".join(against) + "."
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


def attention_map_chart(attn: np.ndarray, marks: Sequence[tuple[int, int]], title: str, size: int = 330,
                        mark_label: str = "trigger query -> the token before the trigger") -> alt.LayerChart:
    """A T x T attention map (query rows, key columns, 0-based positions) with red open squares on the cells
    in ``marks`` (query, key), e.g. where a copy head must look (:func:`sinkpaper.mechanism.trigger_cells`)."""
    m = np.asarray(attn, dtype=float)
    base = heatmap(m, "key position", "query position", title, value_title="attention", domain=(0, 1),
                   width=size, height=size)
    pts = [{"x": int(j), "y": int(i), "what": mark_label} for i, j in marks]
    marker = (alt.Chart(alt.Data(values=pts)).mark_square(filled=False, color="red", size=60, strokeWidth=1.5)
              .encode(x=alt.X("x:O"), y=alt.Y("y:O", sort="ascending"), tooltip=["what:N", "y:O", "x:O"]))
    return alt.layer(base, marker)


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
    return lines + _paper_layer(marks, x, y, tooltip=[alt.Tooltip("who:N", title="source"), "model:N",
                                                      alt.Tooltip("v:Q", title="Sink_1 %")])


def benchmark_items(result: Mapping, path: str | os.PathLike | None = None) -> list:
    """What chapter 12 shows of one benchmark result, in order: its provenance line, then a bold title and the
    table of each of :data:`BENCHMARK_TABLES` that has rows."""
    from ..analysis.kernel_checks import BENCHMARK_TABLES, bench_provenance

    out: list = [Markdown(provenance_line(bench_provenance(result, path)))]
    for title, rows_of in BENCHMARK_TABLES:
        rows = rows_of(result)
        if rows:
            out += [Markdown(f"**{title}**"), Table(rows)]
    return out


def show_benchmark(result: Mapping, path: str | os.PathLike | None = None) -> None:
    """Display :func:`benchmark_items` in a notebook."""
    for item in benchmark_items(result, path):
        display(item)


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
    for row, mark, tip in levels:
        layers.append(alt.Chart(alt.Data(values=[row])).mark_rule(**mark, **only_first).encode(
            y=alt.Y("level:Q", scale=ys), tooltip=tip))
    return alt.layer(*layers, title=title).properties(width=width, height=height)


def joined_lines(spec: Mapping) -> list[str]:
    """The line marks of a chart (its ``to_dict()``, or the spec a page embeds) that join points of different
    runs: within one line (the rows sharing the values of its colour, detail and dash fields) an x value that
    repeats means two runs were drawn as one sawtooth. Returns a description of each."""
    found = []

    def walk(s: Mapping, data: list | None, enc: Mapping) -> None:
        data = s.get("data", {}).get("values", data) if isinstance(s.get("data"), Mapping) else data
        enc = {**enc, **s.get("encoding", {})}
        for key in ("layer", "vconcat", "hconcat", "concat"):
            for sub in s.get(key, []):
                walk(sub, data, enc)
        mark = s.get("mark")
        kind = mark.get("type") if isinstance(mark, Mapping) else mark
        if kind not in ("line", "trail") or not data or "x" not in enc:
            return
        xf = enc["x"].get("field")
        keys = []
        for ch in ("color", "detail", "strokeDash", "strokeWidth", "opacity", "shape"):
            for e in (enc[ch] if isinstance(enc.get(ch), list) else [enc.get(ch)]):
                if isinstance(e, Mapping) and e.get("field"):
                    keys.append(e["field"])
        seen: dict[tuple, set] = {}
        for r in data:
            k = tuple(r.get(f) for f in keys)
            xv = r.get(xf)
            if xv in seen.setdefault(k, set()):
                found.append(f"{s.get('title') or mark}: line {dict(zip(keys, k))} has two points at {xf} = {xv}")
                return
            seen[k].add(xv)

    walk(spec, None, {})
    return found


_ALTAIR_ID = re.compile(r"altair-viz-[0-9a-f]{32}")


def chart_html(chart: alt.TopLevelMixin) -> str:
    """A chart as the HTML altair's html renderer writes (whatever renderer is active), with a content-derived
    element id. In the book it draws with the offline vega bundle (the page's ``VEGA_DEBUG`` tells it the bundle is
    there); elsewhere it loads vega from a CDN as altair always does."""
    with alt.renderers.enable("html", embed_options=alt.renderers.options.get("embed_options", {})):
        bundle = chart._repr_mimebundle_()
    bundle = bundle[0] if isinstance(bundle, tuple) else bundle
    html_ = bundle["text/html"]
    ids = set(_ALTAIR_ID.findall(html_))
    if len(ids) == 1:  # altair draws a random id per call; a content hash keeps executed notebooks stable
        old = ids.pop()
        digest = hashlib.sha256(html_.replace(old, "").encode("utf-8")).hexdigest()[:32]
        html_ = html_.replace(old, f"altair-viz-{digest}")
    return html_


# ------------------------------------------------------------------------------------------ numbered figures
_NUMBERING = {"chapter": None, "n": 0}


def start_chapter(stem: str) -> None:
    """Number this kernel's figures "Figure <chapter>.<n>" from here on: ``stem`` is the chapter's file stem
    ("05_data" -> 5). Each chapter runs in a kernel of its own, so the count is the chapter's."""
    head = stem.split("_", 1)[0]
    if not head.isdigit():
        raise ValueError(f"a chapter's stem starts with its number (e.g. '05_data'), not {stem!r}")
    _NUMBERING.update(chapter=int(head), n=0)


def _html_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, alt.TopLevelMixin):
        return chart_html(content)
    if hasattr(content, "_repr_html_"):
        return content._repr_html_()
    raise TypeError(f"a figure holds a chart, a Columns or an HTML string, not {type(content).__name__}")


class Figure:
    """A numbered figure: its chart(s), then a caption that states what it shows (the chapter computes the
    sentence from the runs it draws; nothing here knows a result). The anchor ``fig-<chapter>-<n>`` links to it."""

    def __init__(self, content: Any, caption: str):
        if not caption or not caption.strip():
            raise ValueError("a figure needs a caption that says what it shows")
        _NUMBERING["n"] += 1
        ch, n = _NUMBERING["chapter"], _NUMBERING["n"]
        self.number = f"{ch}.{n}" if ch is not None else str(n)
        self.content, self.caption = content, caption.strip()

    @property
    def anchor(self) -> str:
        return "fig-" + self.number.replace(".", "-")

    def _repr_html_(self) -> str:
        return (f'<figure class="spx-figure" id="{self.anchor}">{_html_of(self.content)}'
                f'<figcaption><span class="spx-fignum">Figure {self.number}.</span> '
                f'{html.escape(self.caption)}</figcaption></figure>')


def figure(content: Any, caption: str) -> None:
    """Display ``content`` as the chapter's next numbered :class:`Figure` with ``caption``."""
    display(Figure(content, caption))


class Columns:
    """Charts of ``width="container"`` side by side, two to a row (one on a phone, book/_static/sinkpaper.css):
    altair cannot size the parts of a concatenated chart to the page, CSS can. Each cell has its share of the row
    before its chart draws (vega measures its box once, as the page is read: a cell that grew later would leave a
    chart drawn for the whole row, shrunk)."""

    def __init__(self, *charts, per_row: int = 2):
        self.charts = charts
        self.per_row = max(1, min(per_row, len(charts)))

    def _repr_html_(self) -> str:
        basis = f"calc((100% - {self.per_row - 1} * 1.2em) / {self.per_row})"
        cells = "".join(f'<div class="spx-column" style="flex:0 0 {basis};min-width:0">{chart_html(c)}</div>'
                        for c in self.charts)
        return f'<div class="spx-columns" style="display:flex;flex-wrap:wrap;gap:.5em 1.2em">{cells}</div>'


def raw_weight_bands(rows: Sequence[Mapping], label: str = "Real text") -> Columns:
    """The proxy Sink*_1 and the raw weights on token 1 and on the other keys over training, seeds as bands
    (rows of :func:`seed_rows` over :func:`sinkpaper.results.curves.raw_curve_rows`)."""
    return Columns(
        band_chart(rows, "proxy Sink*_1 %", f"{label}: proxy Sink*_1 (%)", x="step", y_domain=(0, 100)),
        band_chart(rows, "raw weight on token 1", "raw weight on token 1", x="step", log_y=True),
        band_chart(rows, "raw weight on other keys", "raw weight on the other keys", x="step", log_y=True))


def embedded_specs(page: str) -> list[dict]:
    """The vega-lite specs a page (a notebook output's or a built page's HTML) embeds through altair's renderer:
    what a test reads to check every chart of the book at once (:func:`joined_lines`, :func:`draws_the_paper`)."""
    import json

    decoder, out, i = json.JSONDecoder(), [], 0
    while (i := page.find("})({", i)) >= 0:
        try:
            spec, _ = decoder.raw_decode(page, i + 3)
        except ValueError:
            spec = None
        if isinstance(spec, dict) and "$schema" in spec and "vega-lite" in spec["$schema"]:
            out.append(spec)
        i += 4
    return out


def chart_values(spec: Mapping) -> list[dict]:
    """Every data row a chart spec embeds, at any level (altair hoists data its layers share to the top)."""
    out = []
    vals = spec.get("data", {}).get("values", []) if isinstance(spec.get("data"), Mapping) else []
    out += [r for r in vals if isinstance(r, Mapping)]
    for key in ("layer", "vconcat", "hconcat", "concat"):
        for sub in spec.get(key, []):
            out += chart_values(sub)
    return out


MAX_SERIES = 6   # series one panel may draw: more, and the reader cannot tell the colours apart (facet instead)


def crowded_panels(spec: Mapping, limit: int = MAX_SERIES) -> list[str]:
    """The panels of a chart spec whose lines, bands or dots have more than ``limit`` colours (series): each as
    "title: n series of field"."""
    found: list[str] = []

    def walk(s: Mapping, data, title) -> None:
        if isinstance(s.get("data"), Mapping) and "values" in s["data"]:
            data = s["data"]["values"]
        t = s.get("title")
        title = (t.get("text") if isinstance(t, Mapping) else t) or title
        for key in ("layer", "hconcat", "vconcat", "concat"):
            for sub in s.get(key, []):
                walk(sub, data, title)
        mark = s.get("mark")
        kind = mark.get("type") if isinstance(mark, Mapping) else mark
        color = s.get("encoding", {}).get("color")
        if kind in ("line", "area", "circle", "point") and isinstance(color, Mapping) and color.get("field") and data:
            n = len({r.get(color["field"]) for r in data if isinstance(r, Mapping)})
            if n > limit:
                found.append(f"{title}: {n} series of {color['field']}")

    walk(spec, None, None)
    return found


def draws_the_paper(spec: Mapping) -> bool:
    """Whether a chart carries a value of the paper in its data (a row whose "who" is "paper")."""
    return any(r.get("who") == "paper" for r in chart_values(spec))


def live_and_stored_rows(live: Mapping, live_label: str, stored: Sequence[Mapping],
                         metrics: Sequence[str] | None = None) -> list[dict]:
    """Rows for :func:`band_chart`: a run trained now (its own line) beside the stored seeds of the same point (one
    band, named "stored seeds"), each evaluation's ``metrics`` (:func:`sinkpaper.results.curves.curve_rows`)."""
    from ..results.curves import CURVE_METRICS, curve_rows

    def rows_of(p, label):
        return curve_rows(p, label, tuple(metrics or CURVE_METRICS))

    live_rows = [{**r, "point": live_label, "seed": live["config"]["run"]["seed"]} for r in rows_of(live, live_label)]
    return live_rows + [{**r, "point": STORED_SEEDS.format(r["point"])} for r in seed_rows(stored, rows_of)]


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


def folded(title: str, text: str) -> Markdown:
    """Markdown shown collapsed under ``title`` in the book (a MyST dropdown; a notebook shows it as text): detail
    one click away, such as the runs the store still lacks and the command that makes them."""
    return Markdown(f"````{{admonition}} {title}\n:class: dropdown\n\n{text}\n````")


# --------------------------------------------------------------------------------------- one colour per variant
VARIANT_PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#ff9da6", "#9d755d",
                   "#eeca3b", "#bab0ac", "#1f77b4", "#8c564b", "#2ca02c", "#d62728", "#9467bd", "#17becf",
                   "#bcbd22", "#7f7f7f", "#e377c2", "#ff7f0e")


def _variant_index() -> dict[str, int]:
    """Every sweep point of every family in configs/, in a fixed order (the families by name, each in its config's
    order): a variant's place, hence its colour, is the same on every page."""
    global _VARIANTS
    if _VARIANTS is None:
        from pathlib import Path

        from ..resources import find_config
        from ..train.config import sweep_points

        names: dict[str, int] = {}
        for path in sorted(Path(find_config("optimization")).parent.glob("*.yaml")):
            try:
                points = sweep_points(path)
            except (ValueError, KeyError, TypeError):
                continue      # a file that is no sweep family (the shared base)
            for p in points:
                names.setdefault(p, len(names))
        _VARIANTS = names
    return _VARIANTS


_VARIANTS: dict[str, int] | None = None


def variant_colors(groups: Sequence[str]) -> list[str]:
    """A colour per group of a chart: a variant's own (its place among all the book's variants), the same on every
    chart; a group that is no variant (a live run), or whose colour another group of the chart already has, takes
    the first colour still free."""
    index, used, out = _variant_index(), set(), []
    for g in groups:
        name = _group_point(g)
        c = VARIANT_PALETTE[index[name] % len(VARIANT_PALETTE)] if name in index else None
        if c is None or c in used:
            free = [p for p in VARIANT_PALETTE if p not in used]
            c = free[0] if free else VARIANT_PALETTE[len(out) % len(VARIANT_PALETTE)]
        used.add(c)
        out.append(c)
    return out
