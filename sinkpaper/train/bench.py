"""`python -m sinkpaper bench training`: training throughput of our model, at today's fp32 eager path and at
faster settings, against transformers' LlamaForCausalLM with the same configuration, side by side in one run.

Every row times a full step (forward, loss, backward, fused AdamW step) on the profile's shapes with random
token batches. On the CPU the rows are ours in fp32 / bf16 (autocast, fp32 master weights), eager / compiled
(inductor), and transformers at the settings where ours is fastest. The same run times a square GEMM in fp32
and in bf16: the machine's measured peak. Each row's MFU is against the peak of its own dtype, counting
6 N + 12 L d T FLOPs per token (PaLM's convention; N = the parameters that multiply: all but the input
embedding). On the GPU: ours at the config's dtype, eager and compiled, and transformers (SDPA attention) at the
setting where ours is fastest, with the MFU also against the datasheet bf16 peak. A compiled row whose compilation
fails is left out with its reason (`skipped`), and the eager rows are still measured.

Rows are timed round-robin (one step of each in turn), so a machine whose load changes during the run slows
every row alike; the figures still depend on that load, which the provenance records.
"""
from __future__ import annotations

import json
import os
import statistics
import time
from typing import Mapping

import torch

from . import accel

# dense bf16 peak (no sparsity), FLOP/s, by device-name substring
PEAK_BF16 = {"H100": 989.4e12, "H200": 989.4e12, "A100": 312e12, "L4": 121e12}

GEMM_N = 2048   # the square GEMM that measures the peak


def bench_config(config: str, profile: str, overrides: dict | None = None):
    """The TrainConfig whose shapes the benchmark times (the profile's base run of ``config``)."""
    from .config import load
    return load(config, profile, overrides)


def _peak(device) -> float | None:
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((v for k, v in PEAK_BF16.items() if k in name), None)


def _llama(cfg, vocab: int):
    from transformers import LlamaConfig, LlamaForCausalLM
    hf = LlamaConfig(vocab_size=vocab, hidden_size=cfg.d_model, intermediate_size=cfg.d_ff,
                     num_hidden_layers=cfg.n_layers, num_attention_heads=cfg.n_heads,
                     num_key_value_heads=cfg.n_heads, max_position_embeddings=cfg.max_seq_len,
                     rms_norm_eps=cfg.norm_eps, rope_theta=cfg.rope_base, tie_word_embeddings=False,
                     attention_bias=False, mlp_bias=False, attn_implementation="sdpa")
    return LlamaForCausalLM(hf)


def _sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def gemm_peak_flops(device, dtype: str, n: int = GEMM_N, reps: int = 5) -> dict:
    """FLOP/s of an n x n x n matmul in `dtype`: median and best of `reps` after one warm-up."""
    dt = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(n, n, generator=g).to(device, dt), torch.randn(n, n, generator=g).to(device, dt)
    a @ b
    times = []
    for _ in range(reps):
        _sync(device)
        t0 = time.perf_counter()
        a @ b
        _sync(device)
        times.append(time.perf_counter() - t0)
    flops = 2 * n ** 3
    return {"median": flops / statistics.median(times), "best": flops / min(times), "n": n, "reps": reps}


def step_matmuls(mcfg, tokens: int, context: int) -> list[tuple[int, int, int, int, int]]:
    """Every matmul of one training step at a model's own shapes, as (count, batch, m, k, n): each linear layer's
    forward (tokens x in -> out), input gradient and weight gradient, and attention's two batched products
    forward and four backward (batch = sequences x heads)."""
    d, f, L, V = mcfg.d_model, mcfg.d_ff, mcfg.n_layers, mcfg.vocab_size
    inner = mcfg.n_heads * (mcfg.head_dim or d // mcfg.n_heads)
    gated = mcfg.ffn in ("swiglu", "geglu", "reglu")
    linears = [(4 * L, d, inner)] if inner == d else [(3 * L, d, inner), (L, inner, d)]
    linears += [((2 if gated else 1) * L, d, f), (L, f, d), (1, d, V)]
    out = []
    for count, k, n in linears:
        out += [(count, 1, tokens, k, n), (count, 1, tokens, n, k), (count, 1, k, tokens, n)]
    seqs, dh, T = tokens // context * mcfg.n_heads, inner // mcfg.n_heads, context
    out += [(3 * L, seqs, T, dh, T), (3 * L, seqs, T, T, dh)]     # s = q k^T, o = p v, and their gradients
    return out


def model_shape_gemm_flops(mcfg, tokens: int, context: int, device, dtype: str, reps: int = 5) -> dict:
    """The machine's matmul rate at the step's own shapes (:func:`step_matmuls`): each timed alone (median of
    ``reps`` after one warm-up), FLOPs of the step's matmuls over the sum of their times. The MFU a step could
    reach if nothing but its matmuls ran, at the rate each reaches alone."""
    dt = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    g = torch.Generator().manual_seed(0)
    total_flops = total_s = 0.0
    shapes = []
    for count, b, m, k, n in step_matmuls(mcfg, tokens, context):
        a = torch.randn(b, m, k, generator=g).to(device, dt)
        w = torch.randn(b, k, n, generator=g).to(device, dt)
        torch.bmm(a, w)
        times = []
        for _ in range(reps):
            _sync(device)
            t0 = time.perf_counter()
            torch.bmm(a, w)
            _sync(device)
            times.append(time.perf_counter() - t0)
        flops, secs = 2.0 * b * m * k * n, statistics.median(times)
        shapes.append({"count": count, "batch": b, "m": m, "k": k, "n": n, "flops_per_s": flops / secs})
        total_flops += count * flops
        total_s += count * secs
    return {"flops_per_s": total_flops / total_s, "step_matmul_flops": total_flops, "shapes": shapes, "reps": reps}


def flops_per_token(model, mcfg, context: int) -> int:
    """6 N + 12 L d T with N = parameters that multiply (all but the input embedding table)."""
    emb = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else model.embed
    n = sum(p.numel() for p in model.parameters()) - emb.weight.numel()
    return 6 * n + 12 * mcfg.n_layers * mcfg.d_model * context


class _Row:
    """One model at one setting, with its own optimizer and a `step()` that runs a full training step."""

    def __init__(self, name: str, dtype: str, compiled: bool, mcfg, vocab: int, ids, device):
        from ..models import SinkModel
        torch.manual_seed(0)
        self.name, self.dtype, self.compiled, self.times = name, dtype, compiled, []
        self.model = (SinkModel(mcfg) if name == "ours" else _llama(mcfg, vocab)).to(device)
        self.net = accel.maybe_compile(self.model, device, compiled)
        self.compiled = self.net is not self.model
        if name == "ours":
            self.model.set_training_route(dtype, self.compiled)     # the route the trainer would take
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-4, fused=True)
        self.autocast = accel.autocast(device, dtype)
        self.ids, self.device = ids, device

    def step(self) -> None:
        ids = self.ids
        with self.autocast:
            if self.name == "ours":
                loss = self.net(ids[:, :-1], targets=ids[:, 1:]).loss
            else:
                loss = self.net(input_ids=ids[:, :-1], labels=ids[:, :-1]).loss  # HF shifts labels itself
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)

    def timed_step(self) -> None:
        _sync(self.device)
        t0 = time.perf_counter()
        self.step()
        _sync(self.device)
        self.times.append(time.perf_counter() - t0)


def _warm(rows: list[_Row], warmup: int, skipped: list[str]) -> list[_Row]:
    """Warm up (and compile) each row; a compiled row whose compilation fails is dropped with its reason in
    `skipped`, so the eager rows are still measured (a lease is too short to lose the benchmark to one row)."""
    kept = []
    for row in rows:
        try:
            for _ in range(warmup):
                row.step()
        except Exception as e:  # noqa: BLE001 -- inductor and Triton raise many types; the reason is recorded
            if not row.compiled:
                raise
            skipped.append(f"{row.name} {row.dtype} compiled: {type(e).__name__}: {' '.join(str(e).split())[:300]}")
            continue
        row.times = []
        kept.append(row)
    return kept


def _round_robin(rows: list[_Row], steps: int, warmup: int) -> None:
    for row in rows:                       # warm-up (and compilation) one row at a time
        for _ in range(warmup):
            row.step()
        row.times = []
    for _ in range(steps):
        for row in rows:
            row.timed_step()


def _record(row: _Row, tokens: int, flops_tok: int, peaks: dict, device, at_shapes: dict | None = None) -> dict:
    med = statistics.median(row.times)
    rec = {"model": row.name, "dtype": row.dtype, "compiled": row.compiled,
           "n_parameters": sum(p.numel() for p in row.model.parameters()),
           "median_step_s": med, "tokens_per_s": tokens / med, "tokens_per_s_best": tokens / min(row.times),
           "mfu": tokens / med * flops_tok / peaks[row.dtype]}
    if at_shapes and row.dtype in at_shapes:     # against the matmul rate at the step's own shapes
        rec["mfu_model_shapes"] = tokens / med * flops_tok / at_shapes[row.dtype]["flops_per_s"]
    datasheet = _peak(device)
    if datasheet is not None:
        rec["mfu_datasheet_bf16"] = tokens / med * flops_tok / datasheet
    return rec


def run_training_bench(config: str = "configs/optimization.yaml", profile: str = "cpu", steps: int = 10,
                       warmup: int = 3, device: str | None = None, json_path: str | None = None,
                       compile: bool = True, overrides: dict | None = None, gemm_n: int = GEMM_N,
                       argv: list[str] | None = None) -> dict:
    from .. import provenance
    from ..files import atomic_write_text
    cfg = bench_config(config, profile, overrides)
    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    accel.set_threads(cfg.run.threads)
    vocab = int(cfg.model.get("vocab_size", 8192))
    mcfg = cfg.model_config(vocab)
    if dev.type != "cuda" and mcfg.backend == "triton":
        mcfg = type(mcfg).from_dict({**mcfg.to_dict(), "backend": "eager"})
    T, micro = cfg.data.context, cfg.optim.batch_size // cfg.optim.grad_accum
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (micro, T + 1), generator=g).to(dev)
    watch = quiet_watch()
    bf16_ok, bf16_why = accel.bf16_support(dev)
    skipped = []
    if dev.type == "cuda":      # the config's dtype, eager and compiled
        dtype = accel.resolve_dtype(cfg.run.dtype, dev)
        candidates = [("ours", dtype, False)] + ([("ours", dtype, True)] if compile else [])
    else:
        candidates = [("ours", "fp32", False)]
        if compile:
            candidates.append(("ours", "fp32", True))
        if bf16_ok:
            candidates += [("ours", "bf16", False)] + ([("ours", "bf16", True)] if compile else [])
        else:
            skipped.append(f"bf16 rows: {bf16_why}")
    peaks_all = {dt: gemm_peak_flops(dev, dt, gemm_n) for dt in ("fp32", "bf16") if dt == "fp32" or bf16_ok}
    peaks = {dt: p["median"] for dt, p in peaks_all.items()}
    tokens = micro * T
    at_shapes = {dt: model_shape_gemm_flops(mcfg, tokens, T, dev, dt) for dt in peaks}
    ours = [_Row(n, dt, c, mcfg, vocab, ids, dev) for n, dt, c in candidates]
    if compile and dev.type == "cpu" and not any(r.compiled for r in ours):
        skipped.append(f"compiled rows: {accel.inductor_cpu_support()[1]}")
    ours = _warm(ours, warmup, skipped)
    _round_robin(ours, steps, warmup=0)
    flops_tok = flops_per_token(ours[0].model, mcfg, T)
    rows = [_record(r, tokens, flops_tok, peaks, dev, at_shapes) for r in ours]
    best_i = max(range(len(rows)), key=lambda i: rows[i]["tokens_per_s"])
    best = ours[best_i]
    # transformers at the best row's settings, timed side by side with that row again; and, where the profile's
    # own dtype is not the best row's (bf16 on a CPU without AMX), at the profile's dtype, compiled, side by side
    # with ours there: the ratio a run of the profile sees
    hf = _Row("transformers", best.dtype, best.compiled, mcfg, vocab, ids, dev)
    best.times = []
    _round_robin([best, hf], steps, warmup)
    pair = (_record(best, tokens, flops_tok, peaks, dev, at_shapes), _record(hf, tokens, flops_tok, peaks, dev, at_shapes))
    rows.append(pair[1])
    own_dtype = accel.resolve_dtype(cfg.run.dtype, dev)
    own = next((r for r in ours if r.dtype == own_dtype and r.compiled == best.compiled), None)
    at_profile = None
    if own is not None and own is not best:
        hf_own = _Row("transformers", own.dtype, own.compiled, mcfg, vocab, ids, dev)
        own.times = []
        _round_robin([own, hf_own], steps, warmup)
        at_profile = (_record(own, tokens, flops_tok, peaks, dev, at_shapes),
                      _record(hf_own, tokens, flops_tok, peaks, dev, at_shapes))
        rows.append(at_profile[1])
    fp32_eager = rows[0]
    result = {
        "benchmark": "training", "config": str(config), "profile": profile, "micro_batch": micro, "context": T,
        "model_config": {k: getattr(mcfg, k) for k in ("d_model", "n_layers", "n_heads", "d_ff", "backend")},
        "vocab_size": vocab, "threads": torch.get_num_threads(), "rows": rows,
        # what a run of the benchmarked config trains at (the overrides applied): its dtype and its steps
        "runs": {"dtype": own_dtype, "steps": cfg.optim.steps},
        "best": {"model": "ours", "dtype": best.dtype, "compiled": best.compiled},
        "ours_best_side_by_side_with_transformers": pair[0],
        "gemm_peak_flops": peaks, "gemm": peaks_all, "gemm_model_shapes": at_shapes,
        "flops_per_token": flops_tok,
        "flop_convention": "6 N + 12 L d T per token, N = parameters that multiply (no input embedding)",
        "ratio_best_vs_fp32_eager": rows[best_i]["tokens_per_s"] / fp32_eager["tokens_per_s"],
        "ratio_best_vs_transformers": pair[0]["tokens_per_s"] / pair[1]["tokens_per_s"],
        "skipped": skipped,
        "provenance": provenance.stamp(dev, steps=steps, warmup=warmup, threads=torch.get_num_threads(),
                                       cpus=os.cpu_count(), cpu_model=accel.cpu_model(), source_of_numbers="computed now",
                                       command=argv if argv is not None else ["bench", "training", "--profile", profile]),
    }
    result["ratio_tokens_per_s"] = result["ratio_best_vs_transformers"]   # the name the GPU report used
    if at_profile is not None:
        result["ours_profile_dtype_side_by_side_with_transformers"] = at_profile[0]
        result["ratio_profile_dtype_vs_transformers"] = at_profile[0]["tokens_per_s"] / at_profile[1]["tokens_per_s"]
    # the route of the fastest row (the attention route depends on the dtype and on compiling)
    result["route"] = ours[0].model.training_route(T, dev, rows[best_i]["dtype"], rows[best_i]["compiled"])
    result["quiet"], result["provenance"]["load_average_1min"] = quiet_verdict(dev, watch)
    if json_path:
        atomic_write_text(json_path, json.dumps(result, indent=1))
    return result


def finish_cpu_script(result: dict, watch: tuple, steps: int, script: str, json_path: str | None) -> dict:
    """The end of a one-thread CPU measurement script (scripts/bench_cpu_*.py): whether the machine was quiet since
    ``watch`` began (:func:`quiet_watch`), the provenance, the quiet line printed, and ``result`` written atomically
    to ``json_path`` when given."""
    from .. import provenance
    from ..files import atomic_write_text
    cpu = torch.device("cpu")
    result["quiet"], loads = quiet_verdict(cpu, watch)
    result["provenance"] = provenance.stamp(cpu, threads=1, steps=steps, cpu_model=accel.cpu_model(),
                                            load_average_1min=loads, cpus=os.cpu_count(),
                                            source_of_numbers="computed now", command=["python", script])
    print(result["quiet"]["why"])
    if json_path:
        atomic_write_text(json_path, json.dumps(result, indent=1))
    return result


OTHERS_QUIET = 0.25   # cores other processes may keep busy, on average over a benchmark, for it to count as quiet


def cpu_clock() -> tuple[float, float, float] | None:
    """(a monotonic wall clock, every core's busy seconds from /proc/stat, this process's and its waited children's
    CPU seconds); None without /proc/stat. Two readings around a benchmark give how many cores other processes kept
    busy meanwhile (:func:`others_busy`): unlike the load average, no minute of what came before is in it."""
    try:
        with open("/proc/stat") as f:
            user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in f.readline().split()[1:9])
    except (OSError, ValueError):
        return None
    t = os.times()
    return (time.monotonic(), (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK"),
            t.user + t.system + t.children_user + t.children_system)


def others_busy(before, after) -> float | None:
    """Cores other processes kept busy on average between two :func:`cpu_clock` readings (None where either is)."""
    if before is None or after is None or after[0] <= before[0]:
        return None
    return max(0.0, ((after[1] - before[1]) - (after[2] - before[2])) / (after[0] - before[0]))


def quiet_watch() -> tuple:
    """What :func:`quiet_verdict` needs from a benchmark's start: the 1-minute load average and a :func:`cpu_clock`
    reading."""
    return os.getloadavg()[0], cpu_clock()


def quiet_verdict(dev, watch: tuple, cpus: int | None = None) -> tuple[dict, list[float]]:
    """Whether the machine stayed quiet since ``watch`` (:func:`quiet_machine`, by other processes' CPU time where
    /proc/stat is readable), and the load averages at the start and now, rounded, for the provenance."""
    loads = [watch[0], os.getloadavg()[0]]
    return (quiet_machine(dev, loads, cpus=cpus, others=others_busy(watch[1], cpu_clock())),
            [round(x, 2) for x in loads])


def quiet_machine(dev, loads: list[float], cpus: int | None = None, others: float | None = None) -> dict:
    """Whether a CPU benchmark ran on a quiet machine. With ``others`` (:func:`others_busy` over the run): other
    processes kept at most :data:`OTHERS_QUIET` cores busy on average. Without it: the 1-minute load average at its
    start and end at most the number of cores, which still carries the minute before a run (workers paused just
    before it read as load). Not quiet: other work shared the cores and every ratio is a reading under load. A GPU's
    timings do not depend on the host's load in the same way: always quiet there, said so."""
    cpus = cpus or os.cpu_count() or 1
    if dev.type == "cuda":
        return {"quiet": True, "why": "GPU timings"}
    if others is not None:
        ok = others <= OTHERS_QUIET
        return {"quiet": ok, "why": f"other processes kept {others:.2f} cores busy on average during the run "
                                    f"({'<=' if ok else '>'} {OTHERS_QUIET})"
                + ("" if ok else ": other work shared the cores; the ratios are readings under load")}
    worst = max(loads)
    return {"quiet": worst <= cpus,
            "why": f"load average {worst:.2f} {'<=' if worst <= cpus else '>'} {cpus} cores"
                   + ("" if worst <= cpus else ": other work shared the cores; the ratios are readings under load")}


def comparisons(r: Mapping) -> list[dict]:
    """Ours against transformers as a stored benchmark timed them, side by side in one run: at ours' best setting
    ("at": "best") and, where that is not the profile's own dtype, at the profile's dtype ("profile dtype"). Each
    {"at", "dtype", "setting" ("compiled" or "eager"), "ours", "theirs" (tokens/s), "ratio"}; the terminal report
    and the Measurements page both say these."""
    hfs = [x for x in r["rows"] if x["model"] == "transformers"]
    pairs = [("best", r["ours_best_side_by_side_with_transformers"], hfs[0], r["ratio_best_vs_transformers"])]
    if "ratio_profile_dtype_vs_transformers" in r:
        pairs.append(("profile dtype", r["ours_profile_dtype_side_by_side_with_transformers"], hfs[-1],
                      r["ratio_profile_dtype_vs_transformers"]))
    return [{"at": at, "dtype": ours["dtype"], "setting": "compiled" if ours["compiled"] else "eager",
             "ours": ours["tokens_per_s"], "theirs": theirs["tokens_per_s"], "ratio": ratio}
            for at, ours, theirs, ratio in pairs]


def format_training_report(r: dict) -> str:
    pv = r["provenance"]
    m = r["model_config"]
    lines = [f"training throughput, {r['profile']} profile: {m['n_layers']} layers x {m['n_heads']} heads, d "
             f"{m['d_model']}, FFN {m['d_ff']}, vocab {r['vocab_size']}, batch {r['micro_batch']} x {r['context']}",
             f"[{pv['cpu_model'] or pv['hardware']}, {r['threads']} threads, torch {pv['torch']}, {pv['code_version']}, "
             f"{pv['steps']} timed steps per row, load average {pv['load_average_1min'][0]} -> "
             f"{pv['load_average_1min'][1]} on {pv['cpus']} CPUs]",
             f"  {'model':<14}{'dtype':<7}{'compiled':<10}{'tokens/s':>10}{'best step':>11}{'MFU':>8}"]
    for row in r["rows"]:
        lines.append(f"  {row['model']:<14}{row['dtype']:<7}{'yes' if row['compiled'] else 'no':<10}"
                     f"{row['tokens_per_s']:>10,.0f}{row['tokens_per_s_best']:>11,.0f}{100 * row['mfu']:>7.1f}%")
    p = r["gemm_peak_flops"]
    lines.append("  GEMM peak (square " + str(r["gemm"]["fp32"]["n"]) + ", median): "
                 + ", ".join(f"{k} {v / 1e9:,.0f} GFLOP/s" for k, v in p.items()) + "; MFU is against its row's dtype")
    if r.get("gemm_model_shapes"):
        lines.append("  the step's own matmuls, each timed alone: " + ", ".join(
            f"{k} {v['flops_per_s'] / 1e9:,.0f} GFLOP/s" for k, v in r["gemm_model_shapes"].items())
            + "; MFU there: " + ", ".join(f"{row['model']} {row['dtype']}{' compiled' if row['compiled'] else ''} "
                                          f"{100 * row['mfu_model_shapes']:.0f} %" for row in r["rows"]
                                          if "mfu_model_shapes" in row))
    b = r["best"]
    side = r["ours_best_side_by_side_with_transformers"]
    lines.append(f"  best (ours {b['dtype']}, {'compiled' if b['compiled'] else 'eager'}) vs ours {r['rows'][0]['dtype']} eager: "
                 f"{r['ratio_best_vs_fp32_eager']:.2f}x tokens/s")
    for c in comparisons(r):
        if c["at"] == "best":
            lines.append(f"  ratio ours / transformers (same dtype and compile, side by side: {c['ours']:,.0f} "
                         f"vs {c['theirs']:,.0f}): {c['ratio']:.2f}x tokens/s")
        else:
            lines.append(f"  at the profile's dtype ({c['dtype']}, {c['setting']}), side by side: {c['ours']:,.0f} "
                         f"vs {c['theirs']:,.0f}: {c['ratio']:.2f}x tokens/s")
    if "route" in r:
        lines.append(f"  ours' route: attention {r['route']['attention']}, loss {r['route']['loss']}")
    lines += [f"  skipped: {s}" for s in r["skipped"]]
    if not r.get("quiet", {"quiet": True})["quiet"]:
        lines.append(f"  NOT QUIET: {r['quiet']['why']}")
    return "\n".join(lines)
