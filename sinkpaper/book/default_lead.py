"""Chapter 4's lead: the paper's default packing (no fixed first token, no BOS) on a CPU, its curve beside the one
GPU seed that grew this sink and the paper's own default run (:mod:`sinkpaper.results.default_cpu`)."""
from __future__ import annotations

from .. import paper
from ..results import default_cpu as D
from ..results.curves import curve_rows
from ..results.numbers import sig
from ..results.sweeps import payloads_provenance
from .figures import band_chart


def _rows(payload: dict, label: str, seed: int) -> list[dict]:
    return [{**r, "point": label, "seed": seed} for r in curve_rows(payload, label)]


def _run_text(run: D.DefaultRun) -> str:
    f = D.facts(run.payload, run.finished)
    if f["tokens"] is None:
        return f"`{run.point}` seed {run.seed}: started, no evaluation yet"
    where = (f"{f['tokens'] / 1e6:.0f}M tokens" if run.finished else
             f"{f['tokens'] / 1e6:.0f}M of {run.payload['config']['optim']['steps'] * _tokens_per_step(run) / 1e6:.0f}M "
             "tokens so far")
    sink = (f"Sink_1 {sig(f['plateau'])} % on its plateau ({'clears' if f['plateau'] >= D.BAR else 'below'} the "
            f"{D.BAR:g} % bar)" if f["plateau"] is not None and not f["failure"] else
            f"not a result: {f['failure']}" if f["failure"] else f"Sink_1 {sig(f['last_sink_1'])} % at its last evaluation")
    lu = f["leaves_uniform"]
    uniform = (f"alpha_1 left uniform at {lu['tokens'] / 1e6:.0f}M tokens" if lu else "alpha_1 still uniform")
    layers = f"the sink in layer{'s' if len(f['sink_layers']) > 1 else ''} {', '.join(map(str, f['sink_layers']))}" \
        if f["sink_layers"] else "no layer with a sink"
    return f"`{run.point}` seed {run.seed}, {where}: {sink}; {uniform}; {layers}"


def _tokens_per_step(run: D.DefaultRun) -> int:
    cfg = run.payload["config"]
    return cfg["optim"]["batch_size"] * cfg["data"]["context"]


def lead(store: str | None = None) -> tuple[object | None, str, dict]:
    """(the chart or None, the paragraph under it, the provenance of the stored runs drawn)."""
    kw = {} if store is None else {"store": store}
    cpu = D.runs(**kw)
    gpu = D.gpu_seed(**kw)
    rows = []
    if gpu is not None:
        rows += _rows(gpu, f"GPU seed ({gpu['name']})", gpu["config"]["run"]["seed"])
    for run in cpu:
        rows += _rows(run.payload, f"CPU: {run.label}", run.seed)
    chart = None
    if rows:
        chart = band_chart(rows, "Sink_1 %", "the paper's default packing: Sink_1 (%)", y_domain=(0, 100),
                           rule_y=D.BAR, paper_level=paper.paper_value("default"), paper={}, height=170,
                           also=[("alpha_1", "the paper's default packing: mean alpha_1")])
    said = [_run_text(r) for r in cpu] or [
        "no run yet (about a day of one thread: `python -m sinkpaper sweep --profile text --config "
        f"{D.CONFIG} --points {D.POINTS[0]} --seeds 0`)"]
    text = ("**The paper's default on a CPU** (no fixed first token, no BOS; 4 layers, d 128, context 256; "
            f"`{D.CONFIG}`, planned before its runs): " + "; ".join(said) + ".")
    if gpu is not None:
        text += " **The GPU seed**, the one sink grown without a fixed token (a lent H200, d 256): " + _run_text(
            D.DefaultRun(gpu["name"], gpu["config"]["run"]["seed"], gpu, True)) + "."
    text += (f" **The paper's default run** (Section 4): the sink appears between 1k and 2k steps (1-2B tokens) and "
             f"ends at {paper.paper_text('default')} % (the dashed line; grey dotted: the {D.BAR:g} % bar).")
    prov = payloads_provenance([r.payload for r in cpu if r.finished] + ([gpu] if gpu is not None else []),
                               loaded=True)
    return chart, text, prov
