"""`python -m sinkpaper bench profile`: where one training step's time goes, on this CPU.

A step of each case (a profile's base model at its own shape, in a dtype, compiled or eager, through the route the
trainer takes: :class:`sinkpaper.train.bench._Row`) runs under torch.profiler after its warm-up (and compilation).
Every operator's self time is put in one phase and one kind:

- phase, from the operator's callers: the optimizer (under ``Optimizer.step``/``zero_grad``), the loss (under the
  chunked linear cross-entropy, forward or backward: the LM head's products are its matmuls), the backward pass
  (under the autograd engine), else the forward pass;
- kind, from the operator's name (:data:`KINDS`, first match): matmul, cast or copy, attention (SDPA and softmax
  kernels), fused elementwise (inductor's generated C++ kernels), optimizer kernel, other elementwise or reduction
  (ATen), and framework (the self time of Python-level scopes: dispatch, autograd, compiled-graph glue).

The shares are of the profiled self time; the step's own time is measured apart, without the profiler, and both
are reported. A second, short pass of one step with oneDNN's verbose log on (a subprocess) names the oneDNN
primitives and implementations the step executes, with their time; fp32 products on x86 go to MKL's BLAS, which
oneDNN does not see (then the list is empty of matmuls, and says so).
"""
from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections import defaultdict

import torch

from . import accel

# kind -> regex on the lower-cased operator name; the first that matches
KINDS: tuple[tuple[str, str], ...] = (
    ("matmul", r"aten::(mm|addmm|bmm|baddbmm|addbmm|_mm|matmul|linear)$|mkldnn|onednn|gemm|_linear_pointwise"),
    ("attention", r"scaled_dot_product|flash_attention|aten::_softmax|aten::softmax|_efficient_attention"),
    ("cast or copy", r"aten::(to|_to_copy|copy_|clone|contiguous|_copy_from|_copy_from_and_resize|empty_strided)$"),
    ("fused elementwise (inductor)", r"cpp_fused|kernel_cpp|graph_\d+_"),
    ("optimizer kernel", r"_fused_adam|_foreach_"),
    ("elementwise or reduction (aten)", r"^aten::"),
)
FRAMEWORK = "framework (dispatch, autograd, graph glue)"
PHASES = ("forward", "loss", "backward", "optimizer")


def kind_of(name: str) -> str:
    low = name.lower()
    return next((kind for kind, pattern in KINDS if re.search(pattern, low)), FRAMEWORK)


def phase_of(event) -> str:
    """The phase of a profiler event, from the names of its callers (itself included)."""
    names = []
    e = event
    while e is not None:
        names.append(e.name)
        e = e.cpu_parent
    if any(n.startswith("Optimizer.") for n in names):
        return "optimizer"
    if any("LinearCrossEntropy" in n or "linear_cross_entropy" in n for n in names):
        return "loss"
    if any(n.startswith("autograd::engine::evaluate_function") or "Backward" in n for n in names):
        return "backward"
    return "forward"


def _table(events, steps: int) -> dict:
    """Self time (ms a step) by phase and kind, with each operator's top contributors."""
    cells: dict[tuple[str, str], float] = defaultdict(float)
    ops: dict[tuple[str, str], float] = defaultdict(float)
    for e in events:
        if e.device_type != torch.autograd.DeviceType.CPU:
            continue
        phase, kind = phase_of(e), kind_of(e.name)
        ms = e.self_cpu_time_total / 1e3 / steps
        cells[(phase, kind)] += ms
        ops[(e.name, kind)] += ms
    total = sum(cells.values()) or 1.0
    by_phase = {p: round(sum(v for (ph, _), v in cells.items() if ph == p), 3) for p in PHASES}
    by_kind = defaultdict(float)
    for (_, k), v in cells.items():
        by_kind[k] += v
    top = sorted(ops.items(), key=lambda kv: -kv[1])[:15]
    return {
        "profiled_ms_per_step": round(total, 3),
        "by_phase_ms": by_phase,
        "by_phase_share": {p: round(v / total, 4) for p, v in by_phase.items()},
        "by_kind_ms": {k: round(v, 3) for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])},
        "by_kind_share": {k: round(v / total, 4) for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])},
        "cells_ms": [{"phase": p, "kind": k, "ms": round(v, 3)} for (p, k), v in sorted(cells.items())],
        "top_operators": [{"name": n, "kind": k, "ms": round(v, 3), "share": round(v / total, 4)}
                          for (n, k), v in top],
    }


def _case_row(config: str, point: str, dtype: str, compiled: bool, profile: str = "text"):
    from .bench import _Row
    from .sweep import sweep_configs
    [(_, _, cfg)] = sweep_configs(config, profile, [point], [0])
    dev = torch.device("cpu")
    vocab = int(cfg.model.get("vocab_size", 8192))
    mcfg = cfg.model_config(vocab)
    if mcfg.backend == "triton":
        mcfg = type(mcfg).from_dict({**mcfg.to_dict(), "backend": "eager"})
    T, micro = cfg.data.context, cfg.optim.batch_size // cfg.optim.grad_accum
    ids = torch.randint(0, vocab, (micro, T + 1), generator=torch.Generator().manual_seed(0))
    if compiled:   # inductor's generated kernels get their own profiler scopes (else their time is the graph's)
        import torch._inductor.config as inductor_config
        inductor_config.cpp.enable_kernel_profile = True
    row = _Row("ours", dtype, compiled, mcfg, vocab, ids, dev)
    return cfg, mcfg, row, micro * T


def profile_case(config: str, point: str, dtype: str, compiled: bool, steps: int = 3, warmup: int = 2,
                 profile: str = "text") -> dict:
    """One case: its step time without the profiler (median of ``steps``), then ``steps`` profiled steps."""
    from torch.profiler import ProfilerActivity, profile as torch_profile
    cfg, mcfg, row, tokens = _case_row(config, point, dtype, compiled, profile)
    for _ in range(warmup):
        row.step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        row.step()
        times.append(time.perf_counter() - t0)
    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            row.step()
    table = _table(prof.events(), steps)
    step_ms = statistics.median(times) * 1e3
    from .bench import flops_per_token
    flops = flops_per_token(row.model, mcfg, cfg.data.context)
    return {"config": config, "point": point, "profile": profile, "dtype": dtype, "compiled": row.compiled,
            "shape": {"micro_batch": cfg.optim.batch_size // cfg.optim.grad_accum, "context": cfg.data.context,
                      **{k: getattr(mcfg, k) for k in ("n_layers", "d_model", "n_heads", "d_ff", "vocab_size")}},
            "route": row.model.training_route(cfg.data.context, "cpu", dtype, row.compiled),
            "step_ms": round(step_ms, 2), "tokens_per_s": round(tokens / (step_ms / 1e3), 1),
            # the LM head's products (forward and both gradients) as a share of the step's FLOPs: what the loss
            # phase would take if every product ran at the same rate
            "flops_per_token": flops, "lm_head_flop_share": round(6 * mcfg.vocab_size * mcfg.d_model / flops, 4),
            "profiler_overhead": round(table["profiled_ms_per_step"] / step_ms - 1, 3), **table}


ONEDNN_LINE = re.compile(r"^onednn_verbose,(?:v\d+,)?(?:[^,]*,)?primitive,exec,cpu,([^,]+),([^,]+),.*,([0-9.]+)$")


def onednn_kernels(config: str, point: str, dtype: str, compiled: bool, profile: str = "text") -> dict:
    """The oneDNN primitives one step executes (after warm-up), in a subprocess with oneDNN's verbose log on: by
    (primitive, implementation), calls and ms."""
    code = ("from sinkpaper.train.step_profile import _one_step; "
            f"_one_step({config!r}, {point!r}, {dtype!r}, {compiled!r}, {profile!r})")
    env = {**os.environ, "ONEDNN_VERBOSE": "0"}
    # verbose from the marker on: the warm-up's calls (compilation, first-call reorders) are not the step's
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"}
    seen: dict[tuple[str, str], list[float]] = defaultdict(list)
    started = False
    for line in proc.stdout.splitlines():
        if line.strip() == "== step ==":
            started = True
            continue
        m = ONEDNN_LINE.match(line.strip())
        if started and m:
            seen[(m.group(1), m.group(2))].append(float(m.group(3)))
    rows = [{"primitive": p, "implementation": impl, "calls": len(v), "ms": round(sum(v), 3)}
            for (p, impl), v in sorted(seen.items(), key=lambda kv: -sum(kv[1]))]
    note = ("" if any(r["primitive"] in ("matmul", "inner_product") for r in rows) else
            "no oneDNN matmul in the step: its products go to MKL's BLAS (fp32 on x86), which oneDNN does not log")
    return {"primitives": rows, **({"note": note} if note else {})}


def _one_step(config, point, dtype, compiled, profile) -> None:
    """For :func:`onednn_kernels`: warm up with verbose off, then one step with it on (torch's own switch)."""
    _, _, row, _ = _case_row(config, point, dtype, compiled, profile)
    for _ in range(2):
        row.step()
    print("== step ==", flush=True)
    torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON).__enter__()
    row.step()
    sys.stdout.flush()


# (config, point, profile, label): the real-text lab's bases and the paper's default plan, each at its own shape
CASES = (
    ("configs/optimization.yaml", "default", "text", "text, 2 layers (the lab's base)"),
    ("configs/data.yaml", "fixed_pos1_layers_4", "text", "text, 4 layers"),
    ("configs/default_cpu.yaml", "default_cpu_d128", "text", "paper's default on a CPU (4 layers, context 256)"),
)
SMOKE_CASES = (("configs/optimization.yaml", "default", "cpu", "cpu profile (tiny shapes)"),)


def run_step_profile(steps: int = 3, warmup: int = 2, json_path: str | None = None, cases=CASES,
                     argv: list[str] | None = None, say=print) -> dict:
    """Every case in fp32 and, where this CPU has bf16 matmuls, in bf16, each compiled and eager; one thread."""
    from .. import provenance
    from ..files import atomic_write_text
    accel.set_threads(1)
    dev = torch.device("cpu")
    bf16_ok, bf16_why = accel.bf16_support(dev)
    from .bench import quiet_verdict, quiet_watch
    watch = quiet_watch()
    rows, skipped = [], [] if bf16_ok else [f"bf16: {bf16_why}"]
    for config, point, profile, label in cases:
        for dtype in ("fp32", "bf16") if bf16_ok else ("fp32",):
            for compiled in (True, False):
                say(f"profiling {label}, {dtype}, {'compiled' if compiled else 'eager'} ...")
                r = profile_case(config, point, dtype, compiled, steps, warmup, profile)
                r["label"] = label
                r["onednn"] = onednn_kernels(config, point, dtype, compiled, profile)
                rows.append(r)
    quiet, loads = quiet_verdict(dev, watch, cpus=1)
    result = {"benchmark": "step profile", "cpu_model": accel.cpu_model(), "threads": 1, "cases": rows,
              "skipped": skipped, "quiet": quiet,
              "provenance": provenance.stamp(dev, steps=steps, warmup=warmup, threads=1, cpus=os.cpu_count(),
                                             load_average_1min=loads, cpu_model=accel.cpu_model(),
                                             source_of_numbers="computed now", command=argv or ["bench", "profile"])}
    if json_path:
        atomic_write_text(json_path, json.dumps(result, indent=1))
    return result


def format_profile(r: dict) -> str:
    lines = [f"Where a training step goes, {r['cpu_model']}, one thread ({r['quiet'].get('why', '')})"]
    for c in r["cases"]:
        lines.append(f"\n{c['label']}: {c['dtype']}, {'compiled' if c['compiled'] else 'eager'}: "
                     f"{c['step_ms']:.0f} ms a step, {c['tokens_per_s']:,.0f} tokens/s")
        lines.append("  phases: " + ", ".join(f"{p} {s:.0%}" for p, s in c["by_phase_share"].items()))
        lines.append("  kinds:  " + ", ".join(f"{k} {s:.0%}" for k, s in c["by_kind_share"].items() if s >= 0.005))
        prims = c["onednn"].get("primitives") or []
        lines.append("  oneDNN: " + (", ".join(f"{p['primitive']} {p['implementation']} x{p['calls']}"
                                               for p in prims[:4]) or c["onednn"].get("note", c["onednn"].get("error", ""))))
    for s in r["skipped"]:
        lines.append(f"skipped: {s}")
    return "\n".join(lines)
