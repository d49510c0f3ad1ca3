"""The book's chart primitives: heatmaps and per-layer lines, QK maps, one row of charts that fits the column,
the chart of a run per line, attention maps, a chart's HTML with a stable id, numbered figures with their captions
(:class:`Figure`), charts of the column's width side by side (:class:`Columns`), folds, and one colour per variant
kept across the book.

Only the book (and the notebooks) import altair; the core library does not. Charts use altair's default
HTML renderer: in the built book they draw with the offline ``vega-bundle.js`` (see :mod:`sinkpaper.site.assets`).
Do not switch to the ``mimetype`` renderer: its output fails papermill's notebook validation.

Data are embedded as ``alt.Data(values=...)`` rounded to 4 significant digits, so no pandas is needed and
altair's 5000-row guard does not apply; keep inputs small (a 128x128 map is ~16k values).
"""
from __future__ import annotations

import hashlib
import html
import math
import os
import re
from typing import Any, Iterable, Mapping, Sequence

import altair as alt
from IPython.display import Markdown, display
import numpy as np

from .html_tables import Table, provenance_line

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


STORED_SEEDS = "stored seeds ({})"  # the group of a point's stored seeds beside a live run (live_and_stored_rows)


def _group_point(group: str) -> str:
    """The point a band chart's group stands for: itself, or the point of a "stored seeds (point)" group."""
    m = re.fullmatch(re.escape(STORED_SEEDS).replace(r"\{\}", "(.+)"), group)
    return m.group(1) if m else group


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


def benchmark_items(result: Mapping, path: str | os.PathLike | None = None) -> list:
    """What chapter 12 shows of one benchmark result, in order: its provenance line, then a bold title and the
    table of each of :data:`BENCHMARK_TABLES` that has rows."""
    from ...analysis.kernel_checks import BENCHMARK_TABLES, bench_provenance

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

    @property
    def ref(self) -> str:
        """How text cites it: "Figure 4.2", linked to the figure (HTML, so Markdown and MyST keep it as it is)."""
        return fig_ref(self.number)

    def _repr_html_(self) -> str:
        return (f'<figure class="spx-figure" id="{self.anchor}">{_html_of(self.content)}'
                f'<figcaption><span class="spx-fignum">Figure {self.number}.</span> '
                f'{html.escape(self.caption)}</figcaption></figure>')


def fig_ref(number: str) -> str:
    """A citation of figure ``number`` ("7.1") that links to it; the site tests check that it lands on a figure."""
    return f'<a class="spx-figref" href="#fig-{number.replace(".", "-")}">Figure {number}</a>'


def figure(content: Any, caption: str) -> None:
    """Display ``content`` as the chapter's next numbered :class:`Figure` with ``caption`` (text that cites it
    builds the :class:`Figure` and displays it, to read its ``ref``)."""
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


class Fold:
    """Items (tables, charts, Markdown, HTML) shown closed under ``title``: a <details> the browser's find-in-page
    opens and a print opens (sinkpaper.site.sphinx_ext); in a notebook the same, opened with a click. For what a
    reader may want and the page should not spell out: a run's recipe, per-seed tables, method."""

    def __init__(self, title: str, *items: Any):
        if not title.strip():
            raise ValueError("a fold needs a title that says what it holds")
        self.title, self.items = title.strip(), [i for i in items if i is not None]

    @staticmethod
    def _item_html(item: Any) -> str:
        if isinstance(item, Markdown):
            from markdown_it import MarkdownIt
            return MarkdownIt("commonmark").enable("table").render(item.data)
        return _html_of(item)

    def _repr_html_(self) -> str:
        body = "".join(self._item_html(i) for i in self.items)
        return (f'<details class="spx-fold"><summary>{html.escape(self.title)}</summary>'
                f'<div class="spx-fold-body">{body}</div></details>')

    def _repr_markdown_(self) -> str:
        """The same fold for a notebook's Markdown view (Colab, nbconvert): the items' own Markdown (a table's
        rows) inside <details>; an item with no Markdown form as its HTML. The book shows the HTML form."""
        def md(item: Any) -> str:
            if isinstance(item, Markdown):
                return item.data
            if hasattr(item, "_repr_markdown_"):
                return item._repr_markdown_()
            return _html_of(item)
        body = "\n\n".join(md(i) for i in self.items)
        return f"<details><summary>{html.escape(self.title)}</summary>\n\n{body}\n\n</details>"


def folded(title: str, text: str) -> Markdown:
    """Markdown shown collapsed under ``title`` in the book (a MyST dropdown; a notebook shows it as text): detail
    one click away, such as the runs the store still lacks and the command that makes them."""
    return Markdown(f"````{{dropdown}} {title}\n\n{text}\n````")


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

        from ...resources import find_config
        from ...train.config import sweep_points

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
