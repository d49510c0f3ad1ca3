"""README blocks generated from stored measurements that are not training runs: the training-throughput
benchmark (CPU and GPU), the Triton kernels against SDPA on a GPU, the thread scaling of training runs, the long-context measurements of `sink` and the offline
corpus's token file. Each renderer reads one stored JSON file and returns the block's lines; a file that is not
there gives a line saying what is not measured and the command that measures it (never a number).

The README turns a line into a bullet, keeps a line that starts with "|" (a table row) as it is and keeps an
empty line empty (a table needs one above it).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

from ..train.bench import comparisons

TRAINING_BENCH = "results/bench/training-text.json"
TRAINING_BENCH_GPU = "results/bench/training-gpu.json"
TRAINING_BENCH_LAYERS4 = "results/bench/training-text-layers4.json"   # the text profile's 4-layer runs' shape
# the same two shapes on a CPU whose bf16 GEMMs are native (AMD EPYC, Zen 4): there the profile's dtype is the fast one
TRAINING_BENCH_EPYC = "results/bench/training-text-epyc.json"
TRAINING_BENCH_LAYERS4_EPYC = "results/bench/training-text-layers4-epyc.json"
SOFTMAX_ERROR = "results/routes/softmax-gradient-error.json"   # python -m sinkpaper.attention.exactness
ROUTES_CHECK = "results/routes/routes-check.json"              # python -m sinkpaper routes-check
CPU_ROUTES = "results/bench/cpu-routes.json"     # scripts/bench_cpu_routes.py: the CPU's attention and loss routes
CPU_OPTIONS = "results/bench/cpu-options.json"   # scripts/bench_cpu_options.py: speed options measured, not adopted
CPU_OPTIONS_FILES = "results/bench/cpu-options*.json"   # one file per CPU measured (cpu-options-<cpu>.json)
STEP_PROFILES = "results/bench/step-profile-*.json"   # python -m sinkpaper bench profile: one file per CPU model
KERNELS_BENCH_GPU = "results/bench/kernels-gpu.json"
THREAD_SCALING = "results/bench/thread-scaling-text.json"
LONG_CONTEXT = "results/long_context"
LONG_CONTEXT_BENCH = f"{LONG_CONTEXT}/bench-sink-smollm2-135m.json"
LONG_CONTEXT_SINK_RUN = f"{LONG_CONTEXT}/smollm2-135m-T8192-sink.json"
LONG_CONTEXT_CURVES = (f"{LONG_CONTEXT}/smollm2-135m.json", f"{LONG_CONTEXT}/gemma3-270m-bos.json")
CORPUS_SIDECAR = "data/corpus/tokens.u16.xz.json"

def load_stored(path: str | Path, root: str | Path = ".") -> dict | None:
    """A stored measurement (JSON) under `root`, or None where it is not there."""
    path = Path(root) / path
    return json.loads(path.read_text()) if path.exists() else None


def _load_avg(x) -> str:
    """A load average as stored: a number, a list of numbers or /proc/loadavg's "1.0 2.0 3.0"."""
    if isinstance(x, str):
        x = [float(v) for v in x.split()] if x.strip() else None
    if isinstance(x, (list, tuple)):
        return ", ".join(f"{v:.1f}" for v in x)
    return f"{x:.1f}" if isinstance(x, (int, float)) else "unknown"


# ------------------------------------------------------------------------------------- training benchmark
def training_bench_lines(path: str | Path = TRAINING_BENCH, root: str | Path = ".") -> list[str]:
    """The training-throughput benchmark (`python -m sinkpaper bench training --profile text --json PATH`):
    provenance, the table of rows, the GEMM peaks, the ratios and the time of one run at this shape."""
    r = load_stored(path, root)
    if r is None:
        where = "on a lent GPU, " if path == TRAINING_BENCH_GPU else ""
        profile = "gpu" if path == TRAINING_BENCH_GPU else "text"
        extra = " --set model.n_layers=4" if path in (TRAINING_BENCH_LAYERS4, TRAINING_BENCH_LAYERS4_EPYC) else ""
        return [f"Training throughput: not measured yet (no `{path}`; {where}`python -m sinkpaper bench training "
                f"--profile {profile}{extra} --json {path}` measures it)."]
    pv, m = r["provenance"], r["model_config"]
    hw = pv.get("hardware", "")
    cpu = (pv.get("cpu_model") or hw or "CPU unknown") if not hw or hw.startswith("CPU") else \
        f"{hw} (host: {pv.get('cpu_model') or 'CPU unknown'})"
    amx = "" if not pv.get("cpu_model") or "amx" in pv["cpu_model"] or hw and not hw.startswith("CPU") else ", no AMX"
    load = pv.get("load_average_1min")
    cmd = list(pv["command"])
    if "--json" in cmd:          # where it was written on the machine that ran it; `path` is where it is stored
        i = cmd.index("--json")
        del cmd[i:i + 2]
    quiet = r.get("quiet")
    loaded = (f"{'quiet' if quiet['quiet'] else '**not quiet**'}: {quiet['why']}" if quiet else
              f"load average (1 min) {load[0]:.1f} before and {load[1]:.1f} after, {pv['cpus']} CPUs" if load else "")
    route = f"; route: attention {r['route']['attention']}, loss {r['route']['loss']}" if "route" in r else ""
    lines = [f"Measured {pv['computed_at']} (`{path}`, from `python -m sinkpaper {' '.join(cmd)}`): "
             f"{cpu}{amx}, {r['threads']} thread{'s' if r['threads'] != 1 else ''}, torch {pv['torch']}, code "
             f"{pv['code_version']}, {pv['steps']} timed steps per row after {pv['warmup']} warm-up"
             + (f"; {loaded}" if loaded else "")
             + f". Shapes: {m['n_layers']} layers x {m['n_heads']} heads, d {m['d_model']}, FFN {m['d_ff']}, "
             f"vocab {r['vocab_size']}, batch {r['micro_batch']} x {r['context']}{route}.", "",
             "| model | dtype | compiled | tokens/s (median) | best step | MFU (own dtype's GEMM peak) |",
             "|---|---|---|---|---|---|"]
    for row in r["rows"]:
        lines.append(f"| {row['model']} | {row['dtype']} | {'yes' if row['compiled'] else 'no'} | "
                     f"{row['tokens_per_s']:,.0f} | {row['tokens_per_s_best']:,.0f} | {100 * row['mfu']:.1f} % |")
    lines.append("")
    peaks, gemm = r["gemm_peak_flops"], r["gemm"]
    any_gemm = next(iter(gemm.values()))
    rates = lambda xs: ", ".join(f"{k} {v:,.0f}" for k, v in xs.items()) + " GFLOP/s"  # noqa: E731
    gemms = (f"GEMM peak ({any_gemm['n']}^3, median of {any_gemm['reps']}): "
             + rates({k: v / 1e9 for k, v in peaks.items()})
             + (f" (bf16 / fp32: {peaks['bf16'] / peaks['fp32']:.1f}x)" if {"bf16", "fp32"} <= set(peaks) else ""))
    if (own := r.get("gemm_model_shapes")):   # the step's own matmuls, each timed alone: a small model's ceiling
        mfu = "; ".join(f"{row['model']} {row['dtype']}{', compiled' if row['compiled'] else ''} "
                        f"{100 * row['mfu_model_shapes']:.0f} %" for row in r["rows"]
                        if row.get("mfu_model_shapes") is not None)
        gemms += ("; the step's own matmuls, each timed alone: " + rates({k: v["flops_per_s"] / 1e9
                                                                          for k, v in own.items()})
                  + (f" (MFU against them: {mfu})" if mfu else ""))
    lines.append(gemms + ".")
    b = r["best"]
    base = r["rows"][0]["dtype"]   # fp32 on the CPU; on a GPU the config's dtype, eager
    vs_base = (f"Best (ours {b['dtype']}, {'compiled' if b['compiled'] else 'eager'}) / ours {base} eager: "
               f"**{r['ratio_best_vs_fp32_eager']:.2f}x**; ") if len(r["rows"]) > 2 else ""
    for c in comparisons(r):
        if c["at"] == "best":
            lines.append(f"{vs_base}ours / transformers, same dtype and compile, side by side "
                         f"({c['ours']:,.0f} vs {c['theirs']:,.0f} tokens/s): **{c['ratio']:.2f}x**.")
        else:
            lines.append(f"At the profile's own dtype ({c['dtype']}, {c['setting']}), side by side "
                         f"({c['ours']:,.0f} vs {c['theirs']:,.0f} tokens/s): **{c['ratio']:.2f}x** transformers.")
    run = _run_minutes(r)
    if run is not None:
        minutes, dtype, what = run
        lines.append(f"At ours' fastest {dtype} rate (the runs' dtype), {what}: **{minutes:.1f} min** of training.")
    lines += [f"Skipped: {s}" for s in r.get("skipped", [])]
    return lines


def _run_minutes(r: dict) -> tuple[float, str, str] | None:
    """(minutes, dtype, what) of one run of the benchmarked profile at ours' fastest rate in the profile's own
    dtype (its steps from the profile's config), or None where no row of ours has that dtype or the profile's
    batch today is not the shape that was measured."""
    from ..train.config import load
    if not r.get("config") or not r.get("profile"):
        return None
    cfg = load(r["config"], r["profile"])
    # the benchmark's own record of its runs (its --set overrides applied: the 4-layer points train fp32) where it
    # has one; a benchmark from before it kept one reads the profile's config
    runs = r.get("runs") or {"dtype": "bf16" if cfg.run.dtype == "bf16" else "fp32", "steps": cfg.optim.steps}
    dtype, steps = runs["dtype"], runs["steps"]
    rates = [x["tokens_per_s"] for x in r["rows"] if x["model"] == "ours" and x["dtype"] == dtype]
    if not rates or (cfg.optim.batch_size, cfg.data.context) != (r["micro_batch"], r["context"]):
        return None
    tokens = steps * cfg.optim.batch_size * cfg.data.context
    return (tokens / max(rates) / 60, dtype, f"a run of the {r['profile']} profile at this shape "
            f"({steps:,} steps of {cfg.optim.batch_size} x {cfg.data.context} tokens)")


def cpu_routes_lines(path: str | Path = CPU_ROUTES, root: str | Path = ".") -> list[str]:
    """The measurements behind the trainer's two CPU routes (scripts/bench_cpu_routes.py): attention forward +
    backward through the reference operator and through SDPA per T, and a training step per loss chunk size."""
    r = load_stored(path, root)
    if r is None:
        return [f"The CPU routes: not measured yet (`python scripts/bench_cpu_routes.py --json {path}`)."]
    pv = r["provenance"]
    by = {}
    for row in r["attention"]:
        by.setdefault(row["T"], {})[row["route"]] = row["median_ms"]
    routes = list(next(iter(by.values())))
    lines = [f"Measured {pv['computed_at']} (`{path}`): {pv.get('cpu_model') or pv['hardware']}, 1 thread, torch "
             f"{pv['torch']}, code {pv['code_version']}, median of {pv['steps']} after 3 warm-up; "
             + ("quiet machine: " if r["quiet"]["quiet"] else "**not quiet**: ") + r["quiet"]["why"] + ".", "",
             "| T | batch | " + " | ".join(f"{k} (ms)" for k in routes) + " |", "|---" * (len(routes) + 2) + "|"]
    for T, row in by.items():
        batch = next(x["batch"] for x in r["attention"] if x["T"] == T)
        lines.append(f"| {T} | {batch} | " + " | ".join(f"{row[k]:.1f}" for k in routes) + " |")
    best = min(r["loss_chunks"], key=lambda x: x["median_step_ms"])
    lines += ["", "Attention forward + backward, plain causal softmax, 4 heads of 32, bf16 autocast. The trainer "
              f"takes the reference operator at T <= {r['chosen']['CPU_REFERENCE_MAX_T']}.",
              "A training step of the text profile's base model, compiled bf16, per loss chunk: " + "; ".join(
                  f"{x['chunk_tokens']} tokens {x['median_step_ms']:.0f} ms" for x in r["loss_chunks"])
              + f" (fastest: {best['chunk_tokens']}). The trainer's chunk is about "
              f"{r['chosen']['CPU_LOSS_CHUNK_BYTES'] / 2 ** 20:g} MiB of fp32 logits."]
    if r.get("profile_steps"):
        lines.append("A training step at each CPU profile's own shape, dtype and compile mode, reference operator / "
                     "SDPA, and the route the trainer takes: " + "; ".join(
                         f"{x['profile']}, batch {x['batch']} x {x['T']}: {x['reference_ms']:.0f} / "
                         f"{x['sdpa_ms']:.0f} ms, {x['route_taken']}" for x in r["profile_steps"]) + ".")
    return lines


def cpu_options_lines(pattern: str = CPU_OPTIONS_FILES, root: str | Path = ".") -> list[str]:
    """The CPU speed options measured against the trainer's setting (scripts/bench_cpu_options.py), and the GEMM
    rates of the step's shapes per dtype: what was tried, what it gave, what was adopted; one block per CPU."""
    paths = sorted(Path(root).glob(pattern))
    if not paths:
        return [f"The CPU speed options: not measured yet (`python scripts/bench_cpu_options.py --json "
                f"{CPU_OPTIONS}`)."]
    lines: list[str] = []
    for path in paths:
        lines += ([""] if lines else []) + _cpu_options_block(path.relative_to(root).as_posix(), root)
    return lines


def _cpu_options_block(path: str, root: str | Path) -> list[str]:
    r = load_stored(path, root)
    pv = r["provenance"]
    dtypes = list(dict.fromkeys(x["dtype"] for x in r["steps"]))
    options = list(dict.fromkeys(x["option"] for x in r["steps"]))
    step = {(x["dtype"], x["option"]): x for x in r["steps"]}
    lines = [f"Measured {pv['computed_at']} (`{path}`): {pv.get('cpu_model') or pv['hardware']}, 1 thread, torch "
             f"{pv['torch']}, code {pv['code_version']}, median of {pv['steps']} steps after 3 warm-up, each option "
             "timed in turn with the trainer's setting; "
             + ("quiet machine: " if r["quiet"]["quiet"] else "**not quiet**: ") + r["quiet"]["why"] + ".", "",
             "| option | " + " | ".join(f"{d} step (ms) | {d} speed" for d in dtypes) + " |",
             "|---" * (2 * len(dtypes) + 1) + "|"]
    for o in options:
        lines.append(f"| {o} | " + " | ".join(f"{step[d, o]['median_step_ms']:.0f} | "
                                              f"{step[d, o]['speed_vs_setting']:.2f}x" for d in dtypes) + " |")
    gemm = {}
    for x in r["gemm"]:
        gemm.setdefault(x["gemm"], {})[x["dtype"]] = x["gflops"]
    lines += ["", "GEMM rates (GFLOP/s, one thread): " + "; ".join(
        f"{name} " + ", ".join(f"{d} {v:.0f}" for d, v in by.items()) for name, by in gemm.items()) + ".",
              f"Adopted: fused projections {'on' if r['adopted']['FUSED_PROJECTIONS'] else 'off'}"
              + (f", fused loss {'on' if r['adopted']['FUSED_LOSS'] else 'off'}"
                 if "FUSED_LOSS" in r["adopted"] else "")
              + f", inductor's options {r['adopted']['inductor options']}."]
    return lines


def step_profile_lines(pattern: str = STEP_PROFILES, root: str | Path = ".") -> list[str]:
    """Where a training step's time goes, per CPU model (`python -m sinkpaper bench profile`): each case's step time
    and its shares by phase and by kind, and the oneDNN primitives the step runs."""
    paths = sorted(Path(root).glob(pattern))
    if not paths:
        return ["Where a step's time goes: not profiled yet (`python -m sinkpaper bench profile --json "
                "results/bench/step-profile-<cpu>.json`)."]
    lines = []
    for path in paths:
        r = json.loads(path.read_text())
        pv = r["provenance"]
        lines += [f"{r['cpu_model']}, one thread (`{path.relative_to(root)}`, {pv['computed_at']}, torch {pv['torch']}, "
                  f"code {pv['code_version']}; " + ("quiet: " if r["quiet"]["quiet"] else "**not quiet**: ")
                  + r["quiet"]["why"] + "; shares of the profiled self time)"
                  + (f"; {'; '.join(r['skipped'])}" if r["skipped"] else "") + ":", "",
                  "| step | ms | forward | loss (LM head + cross-entropy) | LM head's share of the FLOPs | backward | "
                  "optimizer | matmul | elementwise (ATen + fused) | attention | cast or copy | framework | "
                  "oneDNN primitives |",
                  "|---" * 13 + "|"]
        for c in r["cases"]:
            ph, k = c["by_phase_share"], c["by_kind_share"]
            elementwise = k.get("elementwise or reduction (aten)", 0) + k.get("fused elementwise (inductor)", 0)
            prims = c["onednn"].get("primitives") or []
            onednn = ", ".join(f"{p['primitive']} {p['implementation']}" for p in prims[:3]) or "none (MKL BLAS)"
            lines.append(
                f"| {c['label']}, {c['dtype']}, {'compiled' if c['compiled'] else 'eager'} | {c['step_ms']:.0f} | "
                + f"{100 * ph['forward']:.0f} % | {100 * ph['loss']:.0f} % | "
                + (f"{100 * c['lm_head_flop_share']:.0f} %" if "lm_head_flop_share" in c else "") + " | "
                + " | ".join(f"{100 * ph[p]:.0f} %" for p in ("backward", "optimizer")) + " | "
                + " | ".join(f"{100 * v:.0f} %" for v in (
                    k.get("matmul", 0), elementwise, k.get("attention", 0), k.get("cast or copy", 0),
                    k.get("framework (dispatch, autograd, graph glue)", 0))) + f" | {onednn} |")
        lines.append("")
    return lines[:-1]


def kernels_vs_flash_rows(bench: Mapping) -> list[dict]:
    """The series of a stored kernel benchmark the book draws and tabulates: our softmax kernel's time over SDPA's
    flash path as a speed ratio, {"T", "D", "mode" ("fwd" or "fwd+bwd"), "ratio"} per shape (above 1: ours is
    faster)."""
    return [{k: x[k] for k in ("T", "D", "mode", "ratio")} for x in bench["ratios"]
            if x["kind"] == "speed" and x["what"] == "ours/sdpa_flash" and x["op"] == "softmax"]


def kernels_bench_lines(path: str | Path = KERNELS_BENCH_GPU, root: str | Path = ".") -> list[str]:
    """The Triton kernels against SDPA's flash path on a GPU (`python -m sinkpaper bench kernels --json PATH`):
    provenance, ours / SDPA-flash for the softmax forward and forward+backward at each shape, and the goals."""
    r = load_stored(path, root)
    if r is None or r.get("smoke"):
        return [f"Triton kernels on a GPU: not measured yet (no `{path}`; on a lent GPU, `bash scripts/lease.sh "
                "bench` measures it)."]
    pv = r["provenance"]
    lines = [f"Measured {pv['computed_at']} (`{path}`): {pv['hardware']}, torch {pv['torch']}, triton "
             f"{pv.get('triton', '?')}, code {pv['code_version']}; causal softmax, bf16, batch x T = 16,384 tokens and "
             "heads x D = 2,048 at every shape. Ours / SDPA-flash in time (> 1: ours faster):", "",
             "| T | D | forward | forward + backward |", "|---|---|---|---|"]
    cells: dict[tuple, dict] = {}
    for x in kernels_vs_flash_rows(r):
        cells.setdefault((x["T"], x["D"]), {})[x["mode"]] = x["ratio"]
    for (T, D), c in sorted(cells.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        lines.append(f"| {T:,} | {D} | {c.get('fwd', float('nan')):.2f}x | {c.get('fwd+bwd', float('nan')):.2f}x |")
    lines.append("")
    lines += [f"Goal: {g['goal']}: **{g['status']}** ({g['detail']})." for g in r["goals"]]
    return lines


# ------------------------------------------------------------------------------------------ thread scaling
THREAD_RUNS = {"alone": "one run alone, 1 thread", "pairA": "side by side, run A, 1 thread",
               "pairB": "side by side, run B, 1 thread", "two": "one run alone, 2 threads"}


def thread_scaling_rows(bench: Mapping) -> list[dict]:
    """The series of a stored thread-scaling measurement: {"run" (what ran), "threads", "tokens_per_s"} each."""
    return [{"run": THREAD_RUNS.get(k, k), "threads": v["threads"], "tokens_per_s": v["tokens_per_s"]}
            for k, v in bench["runs"].items()]


def thread_scaling_lines(path: str | Path = THREAD_SCALING, root: str | Path = ".") -> list[str]:
    """Two training runs side by side at one thread each against one alone, and one run at two threads
    (`scripts/train_threads_scaling.sh`), from its stored JSON."""
    r = load_stored(path, root)
    if r is None:
        return [f"Thread scaling of training runs: not measured (no `{path}`; `bash scripts/train_threads_scaling.sh`"
                " measures it)."]
    s, runs, pv = r["settings"], r["runs"], r["provenance"]
    shapes = s.get("shapes")
    if isinstance(shapes, dict):
        shapes = ", ".join(f"{k} {v}" for k, v in shapes.items())
    tps = {k: v["tokens_per_s"] for k, v in runs.items()}
    median = f", median tokens/s past step {s['median_after_step']}" if "median_after_step" in s else ""
    cores = f", {pv['cores']} cores" if pv.get("cores") else ""
    lines = [f"Two runs side by side at one thread each (`scripts/train_threads_scaling.sh` -> `{path}`; "
             f"{s['dtype']}, compiled {s['compiled']}, {s['steps']} steps{median}" + (f"; {shapes}" if shapes else "")
             + f"): {tps['pairA']:,.0f} + {tps['pairB']:,.0f} tokens/s side by side against {tps['alone']:,.0f} "
             f"alone, **{r['ratio_pair_vs_alone']:.2f}x** one run alone; one run at {runs['two']['threads']} threads: "
             f"{tps['two']:,.0f} tokens/s, **{r['ratio_two_threads_vs_alone']:.2f}x**. Threads per run: "
             + ", ".join(f"{k} {v['threads']}" for k, v in runs.items()) + ".",
             f"Measured {pv.get('computed_at', pv.get('when'))} on {pv.get('cpu', pv.get('hardware'))}{cores}, torch "
             f"{pv.get('torch')}, code {pv.get('code_version', pv.get('code'))}, load average "
             f"{_load_avg(pv.get('load_before'))} before and {_load_avg(pv.get('load_after'))} after"
             + (f"; {pv['note']}" if pv.get("note") else "") + "."]
    return lines


# ------------------------------------------------------------------------------------------- long context
def _route_cell(x: dict) -> str:
    if x.get("status") == "ok":
        return f"{x['cpu_seconds']:.0f} CPU s ({x['seconds']:.0f} s), {x['peak_rss_gib']:.2f} GiB"
    why = str(x.get("why", "")).removeprefix("sinkpaper: error: ")
    return f"{x.get('status', 'not run')}" + (f": {why}" if why else "")


def long_context_bench_rows(bench: Mapping) -> list[dict]:
    """The series of a stored `bench sink`: {"T", "route" ("stats" or "maps"), "cpu_seconds", "peak_rss_gib"} for
    each route that finished at each T (one that ran out of memory or time has no row)."""
    return [{"T": p["T"], "route": route, "cpu_seconds": x["cpu_seconds"], "peak_rss_gib": x["peak_rss_gib"]}
            for p in bench["points"] for route, x in p["routes"].items() if x.get("status") == "ok"]


def long_context_bench_lines(path: str | Path = LONG_CONTEXT_BENCH, root: str | Path = ".") -> list[str]:
    """`python -m sinkpaper bench sink`: CPU seconds, wall seconds and peak RSS of the column-statistics
    (stats) route against the eager maps, per T, and how the stats route's peak RSS grows with T."""
    r = load_stored(path, root)
    if r is None:
        return [f"The stats route against the maps route: not measured (no `{path}`; `python -m sinkpaper bench "
                f"sink --json {path}` measures it)."]
    pv = r["provenance"]
    lines = [f"`{r['model']}`, {r['n_samples']} sample(s), memory cap {r['cap_gib']:g} GiB, measured "
             f"{pv['computed_at']} on {pv['hardware']}, torch {pv['torch']}, code {pv['code_version']} (`{path}`; "
             f"{pv.get('note', '')}).", "",
             "| T | stats route: CPU s (wall), peak RSS | maps route (eager, every T x T map) |", "|---|---|---|"]
    for p in r["points"]:
        lines.append(f"| {p['T']} | {_route_cell(p['routes']['stats'])} | {_route_cell(p['routes']['maps'])} |")
    ok = [(x["T"], x["peak_rss_gib"]) for x in long_context_bench_rows(r) if x["route"] == "stats"]
    lines.append("")
    if len(ok) >= 2:
        steps = [f"{b[1] - a[1]:+.2f}" for a, b in zip(ok, ok[1:])]
        n = len(ok)
        mx, my = sum(t for t, _ in ok) / n, sum(g for _, g in ok) / n
        slope = sum((t - mx) * (g - my) for t, g in ok) / sum((t - mx) ** 2 for t, _ in ok)
        lines.append(f"Peak RSS of the stats route from T = {ok[0][0]} to {ok[-1][0]}: {', '.join(steps)} GiB from "
                     f"one T to the next; a least-squares line through the {n} points: {1024 * slope:.2f} GiB per "
                     f"1k tokens over {my - slope * mx:.2f} GiB (the weights and Python) at T = 0.")
    return lines


def long_context_sink_lines(curves=LONG_CONTEXT_CURVES, single: str | Path = LONG_CONTEXT_SINK_RUN,
                            root: str | Path = ".") -> list[str]:
    """Sink_1 and mean alpha_1 against T for the stored `sink-vs-length` measurements, side by side, and the
    stored single `sink` run at long T (with its process's CPU time and peak RSS)."""
    payloads = [(c, load_stored(c, root)) for c in curves]
    have = [(c, p) for c, p in payloads if p is not None]
    lines = [f"Not measured: `{c}` (`python -m sinkpaper sink-vs-length`)." for c, p in payloads if p is None]
    if have:
        Ts = sorted({pt["T"] for _, p in have for pt in p["points"]})
        head = " | ".join(f"{p['model']} (BOS {'on' if p['bos'] else 'off'}): Sink_1 %, mean α_1, samples"
                          for _, p in have)
        text = have[0][1]["provenance"].get("text", {}).get("text_source")
        lines += [f"Sink_1 and mean α_1 against T, {have[0][1]['inputs']} text" + (f" ({text})" if text else "")
                  + f", ε = {have[0][1]['epsilon']}, "
                  f"`--method {have[0][1]['method']}`:", "", f"| T | {head} |", "|---" * (len(have) + 1) + "|"]
        for T in Ts:
            cells = []
            for _, p in have:
                pt = next((x for x in p["points"] if x["T"] == T), None)
                cells.append("not measured" if pt is None else
                             f"{pt['sink_1']:.1f}, {pt['alpha_1_mean']:.3f}, {pt['n_samples']}")
            lines.append(f"| {T} | " + " | ".join(cells) + " |")
        lines.append("")
        for c, p in have:
            pv = p["provenance"]
            lines.append(f"`{c}`: {'complete' if p.get('complete') else 'cut short (`--resume` measures the rest)'}"
                         f", {pv.get('tokens_per_length', '?')} tokens per T, measured {pv['computed_at']}"
                         + (f" (resumed from {pv['resumed_from']})" if pv.get("resumed_from") else "")
                         + f" on {pv['hardware']}, code {pv['code_version']}, {pv.get('total_seconds', '?')} s "
                         f"in all.")
    s = load_stored(single, root)
    if s is None:
        lines.append(f"Not measured: `{single}`.")
        return lines
    res, proc, rpv = s["result"], s.get("process", {}), s["result"].get("provenance", {})
    same = ""
    for c, p in have:
        pt = next((x for x in p["points"] if x["T"] == res["seq_len"]), None)
        if p["model"] == res["model"] and p["bos"] == res["bos"] and pt is not None:
            agree = pt["sink_1"] == res["sink_k"]["1"] and pt["alpha_1_mean"] == res["alpha_1_mean"]
            same = (f"; {'the same values as' if agree else 'not the same values as'} `{c}` at T = {pt['T']} "
                    f"({pt['sink_1']:.1f} %, {pt['alpha_1_mean']:.3f}; same route, same text)")
    cpu = proc.get("user_seconds", 0) + proc.get("system_seconds", 0)
    lines.append(f"`{s['command']}`: Sink_1 {res['sink_k']['1']:.1f} %, mean α_1 {res['alpha_1_mean']:.3f} at "
                 f"T = {res['seq_len']} (per layer in `{single}`){same}. Measured {rpv.get('computed_at')} on "
                 f"{rpv.get('hardware')}, code {rpv.get('code_version')}."
                 + (f" Measured with {proc['measured_with']}: {cpu:.0f} CPU s, wall {proc['wall']}, max RSS "
                    f"{proc['max_rss_kbytes'] / 2 ** 20:.2f} GiB; {proc.get('note', '')}." if proc else ""))
    return lines


def routes_agree_lines(directory: str | Path = LONG_CONTEXT, root: str | Path = ".") -> list[str]:
    """The column-statistics route against the eager maps on the same inputs (`scripts/routes_agree.py`): the
    largest |alpha_k difference| and whether Sink_k is identical, per model and T."""
    files = sorted((Path(root) / directory).glob("routes-agree-T*.json"))
    if not files:
        return [f"The routes against each other: not measured (no `{directory}/routes-agree-T*.json`; "
                "`python scripts/routes_agree.py` measures it)."]
    lines = []
    for f in files:
        r = json.loads(f.read_text())
        cells = []
        for row in r["rows"]:
            same = row["sink_k_maps"] == row["sink_k_stats"]
            cells.append(f"{row['model']} (BOS {'on' if row['bos'] else 'off'}, {row['n_samples']} sample(s)): largest "
                         f"|α_k difference| {row['max_abs_alpha_difference']:.1e} "
                         f"({'within' if row['max_abs_alpha_difference'] <= r['tolerance'] else 'beyond'} "
                         f"{r['tolerance']:g}), Sink_k {'identical' if same else 'different'} on both routes "
                         f"(Sink_1 {row['sink_k_stats']['1']:.1f} %)")
        pv = r["rows"][0]["provenance"]
        lines.append(f"At T = {r['T']} (`{Path(directory, f.name).as_posix()}`, measured {pv['computed_at']} on "
                     f"{pv['hardware']}, code "
                     f"{pv['code_version']}): " + "; ".join(cells) + ".")
    return lines


# ------------------------------------------------------------------------------------------- the corpus
def corpus_lines(path: str | Path = CORPUS_SIDECAR, root: str | Path = ".") -> list[str]:
    """The committed offline corpus from its token file's sidecar: tokens, compressed size, sources."""
    r = load_stored(path, root)
    if r is None:
        return [f"No offline corpus committed (no `{path}`; `python -m sinkpaper data build --out data/corpus` "
                "builds it)."]
    n = r["n_train"] + r["n_val"]
    src = r.get("meta", {}).get("sources_train_tokens", {})
    lines = [f"`{r['file']}`: {n / 1e6:.1f}M unique tokens ({r['n_train']:,} for training, {r['n_val']:,} held out)"
             f" in {r['bytes'] / 2 ** 20:.1f} MiB, vocabulary {r['vocab_size']}; its flat uint16 copy holds "
             f"{2 * n / 1e6:.0f} MB of tokens (from `{path}`)."]
    if src:
        lines.append(f"Training tokens of its {len(src)} sources: " + ", ".join(
            f"{k} {v / 1e6:.2f}M" for k, v in sorted(src.items(), key=lambda kv: -kv[1])) + ".")
    return lines


# ------------------------------------------------------------------------------------- token-file memory
DATA_MEMORY = "results/data/token-file-memory.json"


def data_memory_lines(path: str | Path = DATA_MEMORY, root: str | Path = ".") -> list[str]:
    """The token-file pipeline's memory at two or more corpus sizes (`scripts/data_scale.py --json PATH`): the
    streamed build's peak RSS growth and loading + 50 batches' (private, mapped file pages), against what the
    tokens would take held whole as int32; and whether the growth stays flat while the corpus grows."""
    r = load_stored(path, root)
    if r is None:
        return [f"Token-file memory: not measured yet (no `{path}`; `python scripts/data_scale.py --sizes 2e6 2e7 "
                f"--json {path}` measures it)."]
    pv, rows = r["provenance"], r["rows"]
    lines = [f"Measured {pv['computed_at']} (`{path}`, `scripts/data_scale.py`, tokenizer {pv['tokenizer']}): "
             f"{pv['cpu']}, {pv['cores']} cores, torch {pv['torch']}, code {pv['code_version']}, load average "
             f"{_load_avg(pv['load_before'])} before and {_load_avg(pv['load_after'])} after"
             + (f"; {pv['note']}" if pv.get("note") else "") + ". Each measurement is a fresh process; growth is "
             "over its RSS after imports.", "",
             "| corpus tokens | build: peak RSS growth | load + 50 batches: private | mapped file pages | "
             "tokens held as int32 | build time |", "|---|---|---|---|---|---|"]
    for x in rows:
        lines.append(f"| {x['tokens']:,} | +{x['build_growth_mib']:.1f} MiB | +{x['load_private_mib']:.1f} MiB | "
                     f"+{x['load_mapped_mib']:.1f} MiB | {x['int32_mib']:.0f} MiB | {x['build_s']:.0f} s |")
    if len(rows) >= 2:
        a, b = rows[0], rows[-1]
        lines += ["", f"From {a['tokens']:,} to {b['tokens']:,} tokens ({b['tokens'] / a['tokens']:.0f}x) the build's "
                  f"peak growth changes by {b['build_growth_mib'] - a['build_growth_mib']:+.1f} MiB and loading's "
                  f"private memory by {b['load_private_mib'] - a['load_private_mib']:+.1f} MiB, against "
                  f"{b['int32_mib'] - a['int32_mib']:.0f} MiB more int32 tokens."]
    return lines


def softmax_error_lines(path: str | Path = SOFTMAX_ERROR, root: str | Path = ".") -> list[str]:
    """The q / k / v gradient error of each softmax route against fp64, by the logits' size (a table)."""
    r = load_stored(path, root)
    if r is None:
        return [f"Not measured yet (`python -m sinkpaper.attention.exactness --json {path}`)."]
    pv = r["provenance"]
    sizes = sorted({row["max_logit"] for row in r["rows"]})
    routes = list(dict.fromkeys(row["route"] for row in r["rows"]))
    err = {(row["route"], row["max_logit"]): row["max_error"] for row in r["rows"]}
    lines = ["| route | " + " | ".join(f"largest \\|s\\| {m:g}" for m in sizes) + " |", "|---" * (len(sizes) + 1) + "|"]
    lines += [f"| {name} | " + " | ".join(f"{100 * err[name, m]:.1f} %" for m in sizes) + " |" for name in routes]
    return lines + ["", f"Largest relative error of the q, k, v gradients against fp64 on the same bf16 inputs "
                        f"(batch x heads x T x d = {' x '.join(map(str, r['shape']))}, causal), bf16 autocast; "
                        f"{pv['hardware']}, torch {pv['torch']}, code {pv['code_version']}, {pv['computed_at']} "
                        f"(`{path}`)."]


def _routes_by_seed(points: list[dict]) -> list[str]:
    """For a point checked at several seeds, one line: each route's gap to fp32 at the end, seed by seed, and the
    seeds it fails at."""
    by: dict[str, list[dict]] = {}
    for p in points:
        by.setdefault(p["point"], []).append(p)
    out = []
    for point, ps in by.items():
        if len(ps) < 2:
            continue
        parts = []
        for name in list(ps[0]["routes"])[1:]:           # the first route is the fp32 run the gaps are taken to
            gaps = " / ".join(f"{q['routes'][name]['loss_gap_at_end']:+.3f}" for q in ps)
            fails = [str(q["seed"]) for q in ps if not q["routes"][name]["passes"]]
            verdict = f"fails at seed {', '.join(fails)}" if fails else "passes at every seed"
            parts.append(f"{name} {gaps} ({verdict})")
        out.append(f"{point}, seeds {' / '.join(str(q['seed']) for q in ps)}, gap to fp32 at the end: "
                   + "; ".join(parts) + ".")
    return out


def routes_check_lines(path: str | Path = ROUTES_CHECK, root: str | Path = ".") -> list[str]:
    """The routes check: each route's loss at a few steps and at the end beside the fp32 run, spikes, verdict."""
    r = load_stored(path, root)
    if r is None:
        return [f"Not run yet (`python -m sinkpaper routes-check --json {path}`)."]
    pv = r["provenance"]
    steps = r["steps"]
    marks = [s for s in (50, 100, 150, 200) if s < steps] + [steps]
    # the bar's column only where the floor widened it somewhere (else every row would read the tolerance)
    bars = any(row.get("bar_nats", r["tolerance_nats"]) != r["tolerance_nats"]
               for p in r["points"] for row in p["routes"].values())
    floor = any("bar_nats" in row for p in r["points"] for row in p["routes"].values())
    lines = ["| point, seed | route | " + " | ".join(f"loss at {s}" for s in marks)
             + " | gap to fp32 at the end |" + (" bar |" if bars else "") + " spikes | passes |",
             "|---" * (len(marks) + 5 + bars) + "|"]
    for p in r["points"]:
        for name, row in p["routes"].items():
            lines.append(f"| {p['point']}, {p['seed']} | {name} | " + " | ".join(f"{row['loss'][s - 1]:.2f}" for s in marks)
                         + f" | {row['loss_gap_at_end']:+.3f} |" + (f" {row['bar_nats']:.3f} |" if bars else "")
                         + f" {len(row['spikes'])} | " + ("yes" if row["passes"] else "**no**") + " |")
    rule = (f"a route passes with no spike and its final loss within {r['tolerance_nats']} nats of the fp32 run's"
            if not floor else
            f"a route passes with no spike and its gap to the eager fp32 run within its bar: the larger of "
            f"{r['tolerance_nats']} nats and the floor, the gap of an fp32 compiled run (exact, another order of "
            f"operations) at that seed")
    trains = [f"{point} (seed{'s' * (len(v['seeds']) > 1)} {', '.join(map(str, v['seeds']))}) trains "
              + (f"on {v['route_taken']}" if v.get("route_taken") else f"at {v['trains_at']}")
              + (f" (its configs: {v['configured']})" if v.get("configured") not in (None, v["trains_at"]) else "")
              for point, v in r.get("verdicts", {}).items()]
    return lines + ["", *_routes_by_seed(r["points"]),
                    *([f"Verdict: {'; '.join(trains)}."] if trains else []),
                    f"{steps} steps of the text profile, one thread, the same seed and batches on every route; "
                        f"{rule}. {pv['hardware']}, torch {pv['torch']}, code {pv['code_version']}, "
                        f"{pv['computed_at']} (`{path}`)."]
