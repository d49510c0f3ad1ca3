"""Chapter 12 (kernels and performance): the fused Triton kernels checked against their references, and the
kernel benchmark's stored results read back with their provenance.

- :func:`format_errors`: the error table of :func:`sinkpaper.fused.testing.error_table` (every operator x
  mask (x sink): the Triton kernel's output, row statistic, gradients and ``column_stats``' alpha against fp64
  PyTorch references, as maximum relative errors; the comparison tests/test_fused.py asserts on), for display.
- :func:`metric_agreement`: Sink_k of small models measured from the attention maps and from
  ``column_stats`` (no T x T map): the same numbers.
- :func:`stored_benchmarks` and the ``*_rows`` functions: ``results/bench/kernels-*.json`` (the one home of every
  stored benchmark, the Measurements page's too; a lent GPU's ``scripts/lease.sh bench`` writes
  ``kernels-gpu.json``), written by ``python -m sinkpaper bench kernels --json ...``
  (:mod:`sinkpaper.fused.bench`), arranged as tables of
  ratios against PyTorch SDPA, FlexAttention and eager attention; :func:`benchmark_items` (and
  :func:`show_benchmark`, which displays them) is what the chapter shows of one benchmark result.

Nothing here imports triton or ``sinkpaper.fused`` at import time.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Mapping, Sequence

import torch

BENCH_DIR = "results/bench"   # every stored benchmark; the kernel benchmark's files are named kernels-*.json
BENCH_GLOB = "kernels-*.json"


def format_errors(rows: Sequence[Mapping]) -> list[dict]:
    """The error rows for display: errors in scientific notation, a dash where a column does not apply."""
    cols = ["op", "mask", "sink", "out", "row statistic", "dq", "dk", "dv", "dsink_logit", "dk_bias", "dv_bias",
            "alpha (column_stats)", "sink column (column_stats)", "worst", "within tolerance", "kernel seconds"]
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
    """Small random SinkModels traced twice, from the attention maps and from column_stats (method='stats'):
    the largest |alpha difference| and whether Sink_k^eps agree for eps = 0.05 and 0.3 (every k)."""
    from .. import metrics
    from ..data.packing import document_ids
    from ..fused.testing import backend
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
        cols = metrics.TraceStats.from_trace(model.trace(ids, doc_ids=docs, method="stats"))
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


def bench_command(path: str = f"{BENCH_DIR}/kernels-<device>.json") -> str:
    return f"mkdir -p {Path(path).parent} && python -m sinkpaper bench kernels --json {path}"


def stored_benchmarks(directory: str | Path = BENCH_DIR, include_smoke: bool = False) -> list[tuple[Path, dict]]:
    """Every kernel benchmark JSON in ``directory`` (``kernels-*.json``, name order) as (path, result); smoke runs
    (interpreter timings, not performance) only with include_smoke. A file of that name that is not a kernel
    benchmark is an error."""
    out = []
    for path in sorted(Path(directory).glob(BENCH_GLOB)):
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
           # an argument that is an absolute path names the machine it ran on (a lent GPU's $OUT): its file name
           "command": " ".join(["python -m sinkpaper", *(Path(a).name if Path(a).is_absolute() else a
                                                         for a in pv.get("command", []))])
           if pv.get("command") else None}
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
                     # one column for every op (a table's columns are its first row's): the op is in its own column
                     "vs the eager op": _fmt_ratio(_ratio(result, f"ours {op}/eager {op}", mode=mode, T=T, D=D))
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
    """Write a (non-smoke) benchmark result as ``<directory>/kernels-<device slug>.json``; returns the path."""
    from ..files import atomic_write_text

    if result.get("smoke"):
        raise ValueError("a smoke run's timings are not performance numbers; it is not stored")
    path = Path(directory) / f"kernels-{device_slug(result['provenance'].get('device_name') or 'device')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(result, indent=1) + "\n")
    return path


BENCHMARK_TABLES = (("Causal softmax", speed_rows), ("Other operators", ops_rows),
                    ("column_stats (α_k without the T x T map)", column_stats_rows),
                    ("bf16 error against fp64", accuracy_rows), ("Goals", goal_rows))


