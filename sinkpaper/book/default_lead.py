"""Chapter 4's lead: the paper's default packing (no fixed first token, no BOS) on a CPU, its curve beside the one
GPU seed that grew this sink and the paper's own default run (:mod:`sinkpaper.results.default_cpu`)."""
from __future__ import annotations

import html
from dataclasses import dataclass

from .. import paper
from ..results import default_cpu as D
from ..results.curves import curve_rows
from ..results.numbers import sig, span
from ..results.sweeps import payloads_provenance
from .figures import band_chart


def _rows(payload: dict, label: str, seed: int) -> list[dict]:
    return [{**r, "point": label, "seed": seed} for r in curve_rows(payload, label)]


def _width(payload: dict) -> str:
    """A configuration of the plan by what tells it apart on the lead: its width ("d 128")."""
    return f"d {payload['config']['model']['d_model']}"


def _run_text(run: D.DefaultRun, f: dict) -> str:
    """A run in a clause: "d 128, seed 0: 120M of 328M tokens, Sink_1 0.0 %" while it trains, its plateau against
    the bar once stored whole (where alpha_1 leaves uniform and the layers with a sink go in its tooltip); ``f``:
    its :func:`~sinkpaper.results.default_cpu.facts`."""
    name = f"{_width(run.payload)}, seed {run.seed}"
    if f["tokens"] is None:
        return f"{name}: started, no evaluation yet"
    if not run.finished:
        total = run.payload["config"]["optim"]["steps"] * _tokens_per_step(run)
        return f"{name}: {f['tokens'] / 1e6:.0f}M of {total / 1e6:.0f}M tokens, Sink_1 {sig(f['last_sink_1'])} %"
    if f["failure"]:
        return f"{name}: not a result ({f['failure']})"
    if f["plateau"] is None:
        return f"{name}: Sink_1 {sig(f['last_sink_1'])} % at its last evaluation"
    return (f"{name}: Sink_1 {sig(f['plateau'])} % at {f['tokens'] / 1e6:.0f}M tokens, "
            f"{'clearing' if f['plateau'] >= D.BAR else 'below'} the {D.BAR:g} % bar")


def _run_tip(run: D.DefaultRun, f: dict) -> str:
    """What the lead's clause leaves to its tooltip: the point, where alpha_1 leaves uniform, the layers with a
    sink, and for a run in progress its hours trained and left."""
    lu = f["leaves_uniform"]
    bits = [run.point + ("" if run.finished else " (running)"),
            f"alpha_1 left uniform at {lu['tokens'] / 1e6:.0f}M tokens" if lu else "alpha_1 still uniform"]
    if run.finished:
        layers = f["sink_layers"]
        bits.append(f"sink in layer{'s' if len(layers) > 1 else ''} {', '.join(map(str, layers))}" if layers
                    else "no layer with a sink")
    p = run.progress or {}
    if p.get("elapsed_seconds") is not None:
        bits.append(f"{p['elapsed_seconds'] / 3600:.1f} h trained")
    if p.get("projected_seconds_left") is not None:
        bits.append(f"about {p['projected_seconds_left'] / 3600:.0f} h left at its last sitting's pace")
    return "; ".join(bits)


def _said(run: D.DefaultRun) -> str:
    f = D.facts(run.payload, run.finished)
    return f'<span title="{html.escape(_run_tip(run, f))}">{html.escape(_run_text(run, f))}</span>'


def _tokens_per_step(run: D.DefaultRun) -> int:
    cfg = run.payload["config"]
    return cfg["optim"]["batch_size"] * cfg["data"]["context"]


CSS = """
.spx-lead{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:.2em 1em;align-items:start;
  margin:.2em 0 .6em 0;font-size:.9em;line-height:1.4}
.spx-lead .vega-embed{width:100%}
@media (max-width:700px){.spx-lead{grid-template-columns:minmax(0,1fr)}}
"""


@dataclass
class Lead:
    chart: object | None
    text: str          # HTML: the runs in two or three sentences, the commands in tooltips
    provenance: dict

    def _repr_html_(self) -> str:
        from .figures import chart_html

        chart = chart_html(self.chart) if self.chart is not None else ""
        return f'<style>{CSS}</style><div class="spx-lead"><div>{chart}</div><div>{self.text}</div></div>'

    def show(self) -> None:
        from IPython.display import display

        display(self)


def lead(store: str | None = None) -> Lead:
    """The chart (None with nothing to draw), the sentences beside it, and the provenance of the stored runs drawn
    (a run in progress is named in the text with its step; it has no result's provenance yet)."""
    kw = {} if store is None else {"store": store}
    cpu = D.runs(**kw)
    gpu = D.gpu_seed(**kw)
    rows = []
    if gpu is not None:
        rows += _rows(gpu, f"GPU, {_width(gpu)}", gpu["config"]["run"]["seed"])
    for run in cpu:
        rows += _rows(run.payload, f"CPU, {_width(run.payload)}" + ("" if run.finished else " (running)"),
                      run.seed)
    chart = None
    if rows:
        chart = band_chart(rows, "Sink_1 %", "no fixed first token: Sink_1 (%)", y_domain=(0, 100), rule_y=D.BAR,
                           paper_level=paper.paper_value("default"), paper={}, height=110)
    from ..train.sweep import sweep_configs
    [(_, _, plan)] = sweep_configs(D.CONFIG, D.PROFILE, [D.POINTS[0]], [0])
    command = f"python -m sinkpaper sweep --profile text --config {D.CONFIG} --points {D.POINTS[0]} --seeds 0"
    # how long the plan's first run takes, from its measured step (the tooltip says how it was measured)
    hours = D.planned_hours()
    timed = "" if hours is None else (f"; about {hours:.0f} hours of one thread at the step time measured for its "
                                      "shape and route (results/bench/cpu-routes.json), evaluations aside")
    said = [_said(r) for r in cpu] or [
        f'<span title="{html.escape(command + timed)}">no run yet'
        + (f" (about {hours:.0f} hours of one thread)" if hours is not None else "") + "</span>"]
    text = (f"<b>The paper's own setting on a CPU</b> (no fixed first token, {plan.model['n_layers']} layers, context "
            f"{plan.data.context}; <code>{D.CONFIG}</code>, planned before its runs): " + "; ".join(said) + ".")
    nxt = D.next_runs(**kw)
    running = {(r.point, r.seed) for r in cpu if not r.finished}
    # the decision the plan wrote before its runs, read from the store, unless its run is already on the lead
    if any(r.finished for r in cpu) and not any((nxt.point, s) in running for s in nxt.seeds):
        text += " <b>Next, as planned</b>: " + html.escape(nxt.decision) + "."
    if gpu is not None:
        hardware = gpu["result"].get("provenance", {}).get("hardware", "GPU")
        text += (f" <b>On a lent {html.escape(hardware)}</b>: "
                 + _said(D.DefaultRun(gpu["name"], gpu["config"]["run"]["seed"], gpu, True)) + ".")
    text += (f" <b>The paper's run</b>: onset at 1-2B tokens, {paper.paper_text('default')} % at its end (dashed; "
             f"dotted: the {D.BAR:g} % bar).")
    prov = payloads_provenance([r.payload for r in cpu if r.finished] + ([gpu] if gpu is not None else []),
                               loaded=True)
    return Lead(chart, text, prov)


NO_FIXED = ("no_fixed_token", "no_fixed_token_steps_x2", "no_fixed_token_layers_4")   # the data family's points


def runs_fold(store: str | None = None) -> tuple[list, dict | None]:
    """Below the lead: every stored run without a fixed first token, the CPU's (the data family's points) and the
    GPU calibration grid's, in one fold; returns what to display and the provenance of the grid drawn (None
    without a grid run)."""
    from IPython.display import Markdown

    from ..results import calibration, curves, reading, sweeps
    from . import figures

    kw = {} if store is None else {"store": store}
    nofix = sweeps.stored_sweep("configs/data.yaml", "text", points=list(NO_FIXED), seeds=(0, 1, 2), **kw)
    said = []
    for pt in NO_FIXED:
        vals = [v for _, v in figures.book_values(nofix.payloads, pt, "Sink_1")[0]]
        runs_of = [p for p in nofix.payloads if reading.point_of(p) == pt]
        if vals:
            said.append(f"`{pt}` ({runs_of[0]['config']['model']['n_layers']} layers, "
                        f"{runs_of[0]['result']['tokens_seen'] / 1e6:.0f}M tokens): Sink_1 "
                        f"{span(vals)} % over {len(vals)} seed(s)")
    nofix_text = Markdown("**Without a fixed first token, on real text (text profile, read from the store):** "
                          + ("; ".join(said) + "." if said else "no stored run yet."))
    grid = calibration.calibration_runs(**kw)
    if not grid:
        return [nofix_text, figures.folded("Every point of the grid, per seed (the Measurements page's table)",
                                           calibration.calibration_markdown(**kw))], None
    out = []
    best = max(((reading.point_of(p), p["result"]["tokens_seen"], v[0][1]) for p in grid
                if (v := figures.book_values([p], reading.point_of(p), "Sink_1")[0])), key=lambda r: r[2],
               default=None)
    if best:
        out.append(Markdown(f"The largest Sink_1 any stored run without one reached is {sig(best[2])} %, by "
                            f"`calibration/{best[0]}` ({best[1] / 1e6:.0f}M tokens, a lent GPU; in the fold)."))
    rows = figures.seed_rows(grid, curves.curve_rows)
    out.append(figures.Fold(
        "The CPU runs without a fixed first token, and the GPU calibration grid: every point over the tokens it "
        "saw, and per seed",
        nofix_text,
        Markdown("Recognising position 1 without a fixed token is thought to take about two blocks before the "
                 "layer where the sink forms (Peng et al. 2026), but at this scale 4 layers were not enough either. "
                 "The `gpu` profile is calibrated for that default on a lent GPU (`configs/calibration.yaml`: at "
                 "least 4 layers, 262M tokens, no BOS, evaluated as the paper does); its bar is under the figure."),
        figures.Figure(figures.band_chart(rows, "Sink_1 %", "no fixed first token: Sink_1 (%)", y_domain=(0, 100),
                                          rule_y=calibration.BAR, paper_level=paper.paper_value("default"),
                                          also=[("alpha_1", "no fixed first token: mean alpha_1")]),
                       "Every point of the GPU calibration grid (no fixed first token, lent GPUs): Sink_1 and mean "
                       "α_1 against tokens seen; line: the mean over a point's stored seeds, band: their range; "
                       "dotted: the bar; dashed: the paper's default run at its end."),
        Markdown(calibration.calibration_markdown(**kw))))
    return out, sweeps.payloads_provenance(grid, loaded=True)
