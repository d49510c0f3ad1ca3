"""The Measurements page's charts, drawn when the site is built from the same stored files its generated blocks
quote (:mod:`sinkpaper.results.measured`): a page of Markdown asks for one with

    ```{sinkpaper-chart} long-context-bench
    The caption.
    ```

(the directive is :func:`sinkpaper.site.sphinx_ext.setup`'s). Each chart reads its file under the checkout's
``results/``; a file that is not there draws nothing and the page says it is not measured, as its block does.
Performance is measured against the reference it competes with, so each chart sets ours beside that reference.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import altair as alt

from ..results import measured as M

OURS, REFERENCE = "#d1242f", "#57606a"   # ours in the real-text colour, the reference it competes with in grey


def long_context_bench(root: Path) -> alt.TopLevelMixin | None:
    """CPU seconds and peak memory against T of the sink metric's two routes on one pretrained model: the column
    statistics (no T x T map kept) beside the eager maps it replaces."""
    bench = M.load_stored(M.LONG_CONTEXT_BENCH, root)
    if bench is None:
        return None
    rows = M.long_context_bench_rows(bench)
    color = alt.Color("route:N", title=None, sort=["stats", "maps"],
                      scale=alt.Scale(domain=["stats", "maps"], range=[OURS, REFERENCE]),
                      legend=alt.Legend(orient="bottom", labelExpr="datum.label == 'stats' ? "
                                        "'column statistics (ours)' : 'every T x T map (eager)'"))
    x = _t_axis(rows)
    tip = ["route:N", "T:Q", alt.Tooltip("cpu_seconds:Q", title="CPU s", format=".3g"),
           alt.Tooltip("peak_rss_gib:Q", title="peak RSS GiB", format=".3g")]
    base = alt.Chart(alt.Data(values=rows)).mark_line(point=True)
    return alt.hconcat(
        base.encode(x=x, y=alt.Y("cpu_seconds:Q", title="CPU seconds", scale=alt.Scale(type="log")), color=color,
                    tooltip=tip).properties(title=f"{bench['model']}: time", width=240, height=180),
        base.encode(x=x, y=alt.Y("peak_rss_gib:Q", title="peak RSS (GiB)"), color=color,
                    tooltip=tip).properties(title=f"{bench['model']}: memory", width=240, height=180))


def training_bench(root: Path, *paths: str) -> alt.TopLevelMixin | None:
    """Training tokens per second of each configuration of our model beside transformers' Llama of the same
    shapes, dtype and compile setting (the reference the trainer competes with): one bar per row of each stored
    benchmark in ``paths`` (default: the text profile's), each setting named by its machine where there are
    several (which dtype is fast depends on the CPU)."""
    benches = [b for b in (M.load_stored(p, root) for p in (paths or (M.TRAINING_BENCH,))) if b is not None]
    if not benches:
        return None

    layers = {(b.get("model_config") or {}).get("n_layers") for b in benches}

    def machine(b: dict) -> str:
        pv = b["provenance"]
        name = (pv.get("cpu_model") or pv.get("hardware") or "?").replace("(R)", "").split(" (")[0]
        shape = f", {b['model_config']['n_layers']} layers" if len(layers) > 1 else ""
        return " ".join(name.replace(" Processor", "").split()) + shape
    rows = [{"setting": (f"{machine(b)}: " if len(benches) > 1 else "")
             + f"{r['model']}, {r['dtype']}, {'compiled' if r['compiled'] else 'eager'}",
             "who": "ours" if r["model"] == "ours" else "transformers", "tokens_per_s": r["tokens_per_s"],
             "mfu": r["mfu"]} for b in benches for r in b["rows"]]
    return alt.Chart(alt.Data(values=rows), title="Training, median tokens/s").mark_bar().encode(
        x=alt.X("tokens_per_s:Q", title="tokens per second"),
        y=alt.Y("setting:N", sort=[r["setting"] for r in rows], title=None, axis=alt.Axis(labelLimit=260)),
        color=alt.Color("who:N", scale=alt.Scale(domain=["ours", "transformers"], range=[OURS, REFERENCE]),
                        title=None, legend=alt.Legend(orient="bottom")),
        tooltip=["setting:N", alt.Tooltip("tokens_per_s:Q", format=",.0f"),
                 alt.Tooltip("mfu:Q", title="MFU (own dtype's GEMM peak)", format=".1%")],
    ).properties(width="container", height=22 * len(rows))


def thread_scaling(root: Path) -> alt.TopLevelMixin | None:
    """Tokens per second of one training run alone, of two side by side (one thread each), and of one run at two
    threads: what running the sweeps two at a time buys on two cores."""
    bench = M.load_stored(M.THREAD_SCALING, root)
    if bench is None:
        return None
    rows = M.thread_scaling_rows(bench)
    return alt.Chart(alt.Data(values=rows), title="Two runs side by side, or one on two threads").mark_bar(
        color=OURS).encode(
        x=alt.X("tokens_per_s:Q", title="tokens per second"),
        y=alt.Y("run:N", sort=[r["run"] for r in rows], title=None, axis=alt.Axis(labelLimit=170)),
        tooltip=["run:N", "threads:Q", alt.Tooltip("tokens_per_s:Q", format=",.0f")],
    ).properties(width="container", height=22 * len(rows))


def kernels_bench_gpu(root: Path) -> alt.TopLevelMixin | None:
    """Our fused softmax kernel's speed over SDPA's flash path on a lent GPU, per sequence length, forward and
    forward+backward (1: as fast as flash; above 1: faster)."""
    bench = M.load_stored(M.KERNELS_BENCH_GPU, root)
    if bench is None:
        return None
    rows = [{**r, "shape": f"head dim {r['D']}, {r['mode']}"} for r in M.kernels_vs_flash_rows(bench)]
    lines = alt.Chart(alt.Data(values=rows)).mark_line(point=True).encode(
        x=_t_axis(rows),
        y=alt.Y("ratio:Q", title="speed, ours / SDPA flash (x)", scale=alt.Scale(zero=True)),
        color=alt.Color("shape:N", title=None, legend=alt.Legend(orient="bottom", columns=2)),
        tooltip=["shape:N", "T:Q", alt.Tooltip("ratio:Q", format=".2f")])
    parity = alt.Chart(alt.Data(values=[{"ratio": 1.0}])).mark_rule(strokeDash=[4, 3], color=REFERENCE).encode(
        y="ratio:Q")
    where = bench.get("provenance", {}).get("hardware") or bench.get("device", "GPU")
    return alt.layer(lines, parity, title=f"Fused softmax against FlashAttention (SDPA), {where}"
                     ).properties(width="container", height=200)


def _t_axis(rows) -> alt.X:
    """Sequence length on a log-2 axis, ticked at the lengths measured."""
    ts = sorted({r["T"] for r in rows})
    return alt.X("T:Q", title="sequence length T", scale=alt.Scale(type="log", base=2),
                 axis=alt.Axis(values=ts, format=",d", labelAngle=0))


CHARTS: dict[str, Callable[[Path], alt.TopLevelMixin | None]] = {
    "long-context-bench": long_context_bench,
    # both CPUs' benchmarks of both text shapes in one chart
    "training-bench": lambda root: training_bench(root, M.TRAINING_BENCH, M.TRAINING_BENCH_EPYC,
                                                  M.TRAINING_BENCH_LAYERS4, M.TRAINING_BENCH_LAYERS4_EPYC),
    "training-bench-gpu": lambda root: training_bench(root, M.TRAINING_BENCH_GPU),
    "thread-scaling": thread_scaling, "kernels-bench-gpu": kernels_bench_gpu}


def chart(name: str, root: Path) -> alt.TopLevelMixin | None:
    """The chart ``name`` from the stored files under ``root`` (None where the file is not there); an unknown name
    is a ValueError that lists the valid ones."""
    if name not in CHARTS:
        raise ValueError(f"unknown chart {name!r}; valid: {', '.join(CHARTS)}")
    return CHARTS[name](Path(root))
