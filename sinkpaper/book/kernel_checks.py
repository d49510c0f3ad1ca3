"""Chapter 12 (kernels and performance): the fused Triton kernels checked against their references, and the
kernel benchmark's stored results read back with their provenance.

- :func:`error_table`: for every operator x mask (x sink), the Triton kernel's forward output, its gradients
  and ``column_stats``' alpha against fp64 PyTorch references, as maximum relative errors. On CPU the kernels
  run under the Triton interpreter, which must be switched on (TRITON_INTERPRET=1) before triton is
  imported; on a GPU they run compiled.
- :func:`metric_agreement`: Sink_k of small models measured from the attention maps and from
  ``column_stats`` (no T x T map): the same numbers.
- :func:`stored_benchmarks` and the ``*_rows`` functions: ``results/kernels/*.json``, written by
  ``python -m sinkpaper bench kernels --json ...`` (:mod:`sinkpaper.kernels.bench`), arranged as tables of
  ratios against PyTorch SDPA, FlexAttention and eager attention.

Nothing here imports triton or ``sinkpaper.kernels`` at import time.
"""
from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path
from typing import Mapping, Sequence

import torch

MASKS = ("causal", "full", "window", "prefix", "document")
SINKS = ("none", "sink_logit", "kv_bias")
TOLERANCE = 1e-5  # max relative error of fp32 kernels against fp64, as tests/test_kernels.py
BENCH_DIR = "results/kernels"
CPU_SHAPE = (1, 2, 45, 32)    # T = 45: not a multiple of the interpreter's 32-wide tiles
GPU_SHAPE = (2, 4, 1000, 64)  # T = 1000: not a multiple of the GPU tiles (64, 128)


def backend(device: str | torch.device) -> str:
    """Which Triton the kernels run on for tensors on ``device`` (raises when they cannot run there)."""
    from .. import kernels as K

    dev = torch.device(device)
    if dev.type == "cuda":
        return f"compiled Triton on {torch.cuda.get_device_name(dev)}"
    if K.interpreting():
        return "the Triton interpreter on the CPU (TRITON_INTERPRET=1)"
    raise RuntimeError("the Triton kernels cannot run on the CPU here: set TRITON_INTERPRET=1 in the environment "
                       "before triton is imported (or use a CUDA device)")


def mask_kwargs(mask: str, batch: int, seq_len: int, device="cpu") -> dict:
    """The kernels' mask arguments for one named mask at this T: window T/3, prefix T/2 + 1, and three
    documents per row with boundaries that differ between rows."""
    if mask not in MASKS:
        raise ValueError(f"unknown mask {mask!r}; valid: {', '.join(MASKS)}")
    if mask == "causal":
        return {}
    if mask == "full":
        return {"causal": False}
    if mask == "window":
        return {"window": max(1, seq_len // 3)}
    if mask == "prefix":
        return {"prefix": seq_len // 2 + 1}
    rows = []
    for b in range(batch):
        cut1, cut2 = max(1, seq_len // 3 - b), max(2, (2 * seq_len) // 3 + b)
        rows.append([0 if t < cut1 else 1 if t < min(cut2, seq_len) else 2 for t in range(seq_len)])
    return {"doc_ids": torch.tensor(rows, dtype=torch.long, device=device)}


def _sink_tensors(sink: str, H: int, D: int, gen: torch.Generator) -> dict:
    if sink not in SINKS:
        raise ValueError(f"unknown sink {sink!r}; valid: {', '.join(SINKS)}")
    if sink == "sink_logit":
        return {"sink_logit": torch.randn(H, generator=gen)}
    if sink == "kv_bias":
        return {"k_bias": torch.randn(H, D, generator=gen), "v_bias": torch.randn(H, D, generator=gen)}
    return {}


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    """max |a - b| / max |b| (b the reference; 0 when both are 0)."""
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    scale = float(b.abs().max()) if b.numel() else 0.0
    diff = float((a - b).abs().max()) if b.numel() else 0.0
    return diff / scale if scale > 0 else diff


def check_one(op: str, mask: str, sink: str = "none", shape: Sequence[int] = CPU_SHAPE, seed: int = 0,
              device: str | torch.device = "cpu") -> dict:
    """One (operator, mask, sink): max relative errors of the kernel's output and gradients against the fp64
    reference, and of column_stats' alpha (and sink column) against the metric on the fp64 eager maps."""
    from .. import kernels as K

    if op not in K.OPS:
        raise ValueError(f"unknown op {op!r}; valid: {', '.join(K.OPS)}")
    B, H, T, D = (int(x) for x in shape)
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, H, T, D, generator=gen) for _ in range(3))
    extra = _sink_tensors(sink, H, D, gen)
    dout = torch.randn(B, H, T, D, generator=gen)
    masks = mask_kwargs(mask, B, T, device)
    leaves = [x.to(device).requires_grad_() for x in (q, k, v, *extra.values())]
    kq, kk, kv, *kextra = leaves
    t0 = time.perf_counter()
    out = K.attention(kq, kk, kv, op=op, impl="triton", **masks, **dict(zip(extra, kextra)))
    grads = torch.autograd.grad(out, leaves, dout.to(device))
    cs_extra = {n: x.to(device) for n, x in extra.items() if n != "v_bias"}
    cs = K.column_stats(kq.detach(), kk.detach(), op=op, impl="triton", **masks, **cs_extra)
    seconds = time.perf_counter() - t0

    ref_leaves = [x.double().requires_grad_() for x in (q, k, v, *extra.values())]
    rq, rk, rv, *rextra = ref_leaves
    cpu_masks = {n: (x.cpu() if isinstance(x, torch.Tensor) else x) for n, x in masks.items()}
    ref = K.reference_attention(rq, rk, rv, op=op, **cpu_masks, **dict(zip(extra, rextra)))
    ref_grads = torch.autograd.grad(ref, ref_leaves, dout.double())
    ref_cs = K.reference_column_stats(q.double(), k.double(), op=op, **cpu_masks,
                                      **{n: x.double() for n, x in extra.items() if n != "v_bias"})
    names = ["dq", "dk", "dv"] + [f"d{n}" for n in extra]
    row = {"op": op, "mask": mask, "sink": sink, "out": rel_err(out, ref)}
    row.update({n: rel_err(g, rg) for n, g, rg in zip(names, grads, ref_grads)})
    row["alpha (column_stats)"] = rel_err(cs.alpha, ref_cs.alpha)
    if cs.sink is not None and ref_cs.sink is not None:
        row["sink column (column_stats)"] = rel_err(cs.sink, ref_cs.sink)
    row["worst"] = max(v for n, v in row.items() if isinstance(v, float))
    row["kernel seconds"] = round(seconds, 2)
    return row


def error_table(ops: Sequence[str] | None = None, masks: Sequence[str] = MASKS, sinks: Sequence[str] = ("none",),
                shape: Sequence[int] = CPU_SHAPE, seed: int = 0, device: str | torch.device = "cpu",
                tolerance: float = TOLERANCE) -> list[dict]:
    """:func:`check_one` for every op x mask x sink; each row also says whether its worst error is within
    ``tolerance``. Raises when the kernels cannot run on ``device`` (see :func:`backend`)."""
    from .. import kernels as K

    backend(device)
    ops = list(ops or K.OPS)
    rows = []
    for i, (op, mask, sink) in enumerate((o, m, s) for o in ops for m in masks for s in sinks):
        row = check_one(op, mask, sink, shape, seed + i, device)
        row["within tolerance"] = row["worst"] <= tolerance
        rows.append(row)
    return rows


def format_errors(rows: Sequence[Mapping]) -> list[dict]:
    """The error rows for display: errors in scientific notation, a dash where a column does not apply."""
    cols = ["op", "mask", "sink", "out", "dq", "dk", "dv", "dsink_logit", "dk_bias", "dv_bias", "alpha (column_stats)",
            "sink column (column_stats)", "worst", "within tolerance", "kernel seconds"]
    present = [c for c in cols if any(c in r for r in rows)]
    out = []
    for r in rows:
        row = {}
        for c in present:
            v = r.get(c)
            row[c] = "—" if v is None else f"{v:.1e}" if isinstance(v, float) and c != "kernel seconds" else v
        out.append(row)
    return out


def metric_agreement(variants: Sequence[str] = ("softmax", "sigmoid", "kv_bias", "window", "document"),
                     seed: int = 0, device: str | torch.device = "cpu", seq_len: int = 36) -> list[dict]:
    """Small random SinkModels traced twice, from the attention maps and from column_stats (method='kernel'):
    the largest |alpha difference| and whether Sink_k^eps agree for eps = 0.05 and 0.3 (every k)."""
    from .. import metrics
    from ..data.packing import document_ids
    from ..models import ModelConfig, SinkModel

    configs = {"softmax": {}, "sigmoid": {"attention": "sigmoid"}, "softpick": {"attention": "softpick"},
               "kv_bias": {"sink": "kv_bias"}, "window": {"mask": "window", "window": 8},
               "prefix": {"mask": "prefix", "prefix_len": 5}, "document": {"mask": "document"}}
    unknown = [v for v in variants if v not in configs]
    if unknown:
        raise ValueError(f"unknown variant(s) {unknown}; valid: {', '.join(configs)}")
    backend(device)
    rows = []
    for variant in variants:
        torch.manual_seed(seed)
        model = SinkModel(ModelConfig(vocab_size=61, d_model=32, n_layers=2, n_heads=2, d_ff=48, max_seq_len=64,
                                      **configs[variant])).to(device).eval()
        ids = torch.randint(1, 61, (2, seq_len), device=device)
        docs = None
        if variant == "document":
            ids[0, seq_len // 3] = 0  # token 0 plays EOS: two documents in row 0, one in row 1
            docs = torch.from_numpy(document_ids(ids.cpu().numpy(), 0)).to(device)
        maps = metrics.TraceStats.from_trace(model.trace(ids, doc_ids=docs))
        cols = metrics.TraceStats.from_trace(model.trace(ids, doc_ids=docs, method="kernel"))
        rows.append({"variant": variant, "largest alpha difference (maps vs column_stats)":
                     f"{float((maps.alphas - cols.alphas).abs().max()):.1e}",
                     "Sink_k equal (eps 0.05, 0.3)": all(metrics.sink_rates(maps.alphas, e) == metrics.sink_rates(cols.alphas, e)
                                                         for e in (0.05, 0.3)),
                     "has a bias column (Sink*)": maps.sink_alphas is not None})
    return rows


# --------------------------------------------------------------------------------------------- benchmark
def device_slug(name: str) -> str:
    """A file name for a device: 'NVIDIA H100 80GB HBM3' -> 'nvidia-h100-80gb-hbm3'."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "device"


def bench_command(path: str = f"{BENCH_DIR}/<device>.json") -> str:
    return f"mkdir -p {Path(path).parent} && python -m sinkpaper bench kernels --json {path}"


def stored_benchmarks(directory: str | Path = BENCH_DIR, include_smoke: bool = False) -> list[tuple[Path, dict]]:
    """Every benchmark JSON in ``directory`` (name order) as (path, result); smoke runs (interpreter
    timings, not performance) only with include_smoke. A file that is not a kernel benchmark is an error."""
    out = []
    for path in sorted(Path(directory).glob("*.json")):
        result = json.loads(path.read_text())
        if result.get("benchmark") != "kernels" or "records" not in result:
            raise ValueError(f"{path} is not a kernel benchmark result (python -m sinkpaper bench kernels --json)")
        if result.get("smoke") and not include_smoke:
            continue
        out.append((path, result))
    return out


def bench_provenance(result: Mapping, path: str | Path | None = None) -> dict:
    """A provenance mapping for figures.provenance_line from a benchmark result (loaded when path is given)."""
    pv = result["provenance"]
    out = {"hardware": pv.get("device_name") or pv.get("hardware"), "code_version": pv.get("code_version"),
           "torch": pv.get("torch"), "triton": pv.get("triton"), "cuda": pv.get("cuda"),
           "computed_at": pv.get("computed_at"), "computed_now": path is None,
           "command": " ".join(["python -m sinkpaper", *pv.get("command", [])]) if pv.get("command") else None}
    if path is not None:
        out["loaded_from"] = str(path)
    if result.get("smoke"):
        out["smoke"] = "tiny shapes; timings under the interpreter are not performance"
    return {k: v for k, v in out.items() if v is not None}


def _fmt_ratio(r: float | None) -> str:
    return "—" if r is None or not math.isfinite(r) else f"{r:.2f}x"


def _ratio(result: Mapping, what: str, **where) -> float | None:
    for r in result.get("ratios", []):
        if r["what"] == what and all(r.get(k) == v for k, v in where.items()):
            return r["ratio"]
    return None


def _why_missing(result: Mapping, name: str, **where) -> str:
    rec = next((r for r in result.get("records", []) if r["name"] == name
                and all(r.get(k) == v for k, v in where.items())), None)
    if rec is None or rec.get("status") == "ok":
        return "—"
    return rec["status"]


def _shapes(result: Mapping, section: str, mode_key: bool = True) -> list[tuple]:
    seen = []
    for r in result.get("records", []):
        if r["section"] == section and r["name"] == "ours":
            key = (r["op"], r["mode"], r["T"], r["D"]) if mode_key else (r["T"], r["D"])
            if key not in seen:
                seen.append(key)
    return seen


SPEED_COMPETITORS = (("sdpa_flash", "SDPA flash"), ("sdpa_cudnn", "SDPA cuDNN"), ("flex", "FlexAttention"),
                     ("sdpa_math", "SDPA math"), ("eager", "eager"))


def speed_rows(result: Mapping) -> list[dict]:
    """Causal softmax, one row per (mode, T, D): our TFLOP/s and competitor ms / our ms (> 1: ours faster);
    a competitor that did not run shows its status (skipped, OOM, error)."""
    rows = []
    names = {r["name"] for r in result.get("records", []) if r["section"] == "speed"}
    for op, mode, T, D in _shapes(result, "speed"):
        ours = next(r for r in result["records"] if r["section"] == "speed" and r["name"] == "ours"
                    and (r["mode"], r["T"], r["D"]) == (mode, T, D))
        row = {"mode": mode, "T": T, "D": D, "B x H": f"{ours['B']} x {ours['H']}",
               "ours ms": None if ours["ms"] is None else round(ours["ms"], 3),
               "ours TFLOP/s": None if ours["tflops"] is None else round(ours["tflops"], 1)}
        for name, label in SPEED_COMPETITORS:
            if name not in names:
                continue
            r = _ratio(result, f"ours/{name}", section="speed", mode=mode, T=T, D=D)
            row[f"vs {label}"] = _fmt_ratio(r) if r is not None else _why_missing(result, name, section="speed",
                                                                                  mode=mode, T=T, D=D)
        rows.append(row)
    return rows


def ops_rows(result: Mapping) -> list[dict]:
    """sigmoid / elu / softpick: our softmax ms / this op's ms, and the eager op's ms / ours (> 1: faster)."""
    rows = []
    for op, mode, T, D in _shapes(result, "ops"):
        if op == "softmax":
            continue
        rows.append({"op": op, "mode": mode, "T": T, "D": D,
                     "vs our softmax": _fmt_ratio(_ratio(result, f"ours {op}/ours softmax", mode=mode, T=T, D=D)),
                     f"vs eager {op}": _fmt_ratio(_ratio(result, f"ours {op}/eager {op}", mode=mode, T=T, D=D))
                     if _ratio(result, f"ours {op}/eager {op}", mode=mode, T=T, D=D) is not None
                     else _why_missing(result, "eager", section="ops", op=op, mode=mode, T=T, D=D)})
    return rows


def column_stats_rows(result: Mapping) -> list[dict]:
    """column_stats (alpha without the T x T map): time and peak memory as ours / competitor (< 1: smaller)."""
    rows = []
    for T, D in _shapes(result, "column_stats", mode_key=False):
        stats = next(r for r in result["records"] if r["section"] == "column_stats" and r["name"] == "ours"
                     and (r["T"], r["D"]) == (T, D))
        rows.append({"T": T, "D": D, "ms": None if stats["ms"] is None else round(stats["ms"], 3),
                     "peak MiB": None if stats.get("peak_mib") is None else round(stats["peak_mib"], 1),
                     "time / one forward": _fmt_ratio(_ratio(result, "column_stats/ours forward", kind="time", T=T)),
                     "time / eager maps": _fmt_ratio(_ratio(result, "column_stats/eager column_stats", kind="time", T=T))
                     if _ratio(result, "column_stats/eager column_stats", kind="time", T=T) is not None
                     else _why_missing(result, "eager", section="column_stats", T=T),
                     "memory / one forward": _fmt_ratio(_ratio(result, "column_stats/ours forward", kind="memory", T=T)),
                     "memory / eager maps": _fmt_ratio(_ratio(result, "column_stats/eager column_stats", kind="memory", T=T))})
    return rows


def accuracy_rows(result: Mapping) -> list[dict]:
    """bf16 error against fp64, ours next to PyTorch SDPA's, per output / gradient."""
    recs = [r for r in result.get("records", []) if r["section"] == "accuracy" and r.get("status") == "ok"]
    rows = []
    for t in ("out", "dq", "dk", "dv"):
        ours = next((r for r in recs if r["name"] == "ours" and r["mode"] == t), None)
        sdpa = next((r for r in recs if r["name"] == "sdpa" and r["mode"] == t), None)
        if ours is None and sdpa is None:
            continue
        rows.append({"tensor": t, "ours max abs err": "—" if ours is None else f"{ours['max_abs_err']:.2e}",
                     "SDPA max abs err": "—" if sdpa is None else f"{sdpa['max_abs_err']:.2e}",
                     "ours / SDPA": _fmt_ratio(ours["max_abs_err"] / sdpa["max_abs_err"])
                     if ours and sdpa and sdpa["max_abs_err"] else "—",
                     "ours rel. RMS err": "—" if ours is None else f"{ours['rel_rms_err']:.2e}"})
    return rows


def goal_rows(result: Mapping) -> list[dict]:
    return [{"goal": g["goal"], "status": g["status"], "detail": g["detail"]} for g in result.get("goals", [])]


def save_benchmark(result: Mapping, directory: str | Path = BENCH_DIR) -> Path:
    """Write a (non-smoke) benchmark result as ``<directory>/<device slug>.json``; returns the path."""
    from ..files import atomic_write_text

    if result.get("smoke"):
        raise ValueError("a smoke run's timings are not performance numbers; it is not stored")
    path = Path(directory) / f"{device_slug(result['provenance'].get('device_name') or 'device')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(result, indent=1) + "\n")
    return path
