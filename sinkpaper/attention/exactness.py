"""How far an attention route's gradients sit from fp64 at the logits training reaches, on what a training step
hands it: q, k, v in bf16 (a bf16 projection's outputs; values exactly representable, so fp64 sees the same
numbers), the biases as fp32 parameters, an upstream gradient of bf16 values, under bf16 autocast.

Used by tests/test_exact_routes.py (every route within SDPA's own error) and by
``python -m sinkpaper.attention.exactness`` (the table of errors against the logits' size on the Measurements
page).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

B, H, T, D = 1, 2, 32, 16


def inputs(max_logit: float, op: str = "softmax", seed: int = 0, shape=(B, H, T, D)):
    """q, k, v (bf16 values, as fp64) whose scores' largest |s| is ``max_logit``, and fp32 biases (as fp64):
    k_bias, v_bias, sink_logit (around 40: a sink that has formed) and score_bias."""
    b, h, t, d = shape
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(b, h, t, d, generator=g, dtype=torch.float64) for _ in range(3))
    if op == "kernel":              # the kernels take features phi(q), phi(k) (elu + 1 here: positive)
        q, k = F.elu(q) + 1, F.elu(k) + 1
    s = (q @ k.transpose(-1, -2)) / math.sqrt(d)
    q = q * (max_logit / s.abs().amax())
    q, k, v = (x.to(torch.bfloat16).double() for x in (q, k, v))
    extra = {"k_bias": torch.randn(h, d, generator=g, dtype=torch.float64) * 4,
             "v_bias": torch.randn(h, d, generator=g, dtype=torch.float64),
             "sink_logit": torch.randn(h, generator=g, dtype=torch.float64) * 8 + 40,
             "score_bias": torch.randn(h, t, t, generator=g, dtype=torch.float64) * 4}
    return q, k, v, {name: x.float().double() for name, x in extra.items()}


def grads(fn, q, k, v, extra: dict, dtype) -> dict:
    """The gradients of sum(out * w) in q, k, v and every bias of ``extra``, as fp64. ``dtype`` bf16: q, k, v as
    bf16 leaves and the biases fp32, under bf16 autocast (a training step); fp64: the reference values."""
    lowp = dtype == torch.bfloat16
    leaves = {"q": q, "k": k, "v": v, **extra}
    leaves = {n: (x.to(torch.bfloat16) if n in "qkv" else x.float()) if lowp else x.clone() for n, x in leaves.items()}
    for x in leaves.values():
        x.requires_grad_(True)
    w = torch.linspace(-1, 1, q.shape[0] * q.shape[1] * q.shape[2] * v.shape[-1], dtype=torch.float64)
    w = w.view(*q.shape[:3], -1).to(torch.bfloat16).double()   # from the bf16 projection after it, in a step
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=lowp):
        out = fn(**leaves)
    (out.double() * w).sum().backward()
    return {n: x.grad.double() for n, x in leaves.items()}


def relative_errors(got: dict, want: dict) -> dict:
    """||got - want|| / ||want|| per tensor."""
    return {n: float((got[n] - want[n]).norm() / want[n].norm().clamp_min(1e-30)) for n in want}


def route_error(fn, q, k, v, extra: dict | None = None) -> dict:
    """``fn``'s relative gradient errors at bf16 against its own fp64 run on the same inputs."""
    extra = extra or {}
    return relative_errors(grads(fn, q, k, v, extra, torch.bfloat16), grads(fn, q, k, v, extra, torch.float64))


def sdpa(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def bf16_normalized_softmax(q, k, v):
    """Causal softmax attention as the reference operator computed it before its core moved to fp32: under CPU
    bf16 autocast `logsumexp` and `exp` stay in bf16. Kept to show what it cost, never a training route."""
    t = q.shape[2]
    visible = torch.ones(t, t, dtype=torch.bool).tril()
    s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    m = s.masked_fill(~visible, float("-inf"))
    return torch.exp(m - torch.logsumexp(m, -1, keepdim=True)) @ v


def reference_softmax(q, k, v):
    from .masks import visible_mask
    from .operators import attention_reference
    return attention_reference(q, k, v, visible=visible_mask(q.shape[2])).out


def error_table(max_logits=(2, 16, 64, 128), compile_=True) -> list[dict]:
    """The largest q / k / v gradient error of each softmax route against the logits' size (largest |s|)."""
    routes = {"SDPA": sdpa, "reference operator (fp32 core)": reference_softmax,
              "softmax normalized in bf16 (before)": bf16_normalized_softmax}
    if compile_:
        routes.update({f"{name}, compiled": torch.compile(fn, dynamic=False) for name, fn in list(routes.items())
                       if name != "SDPA"})
    rows = []
    for m in max_logits:
        q, k, v, _ = inputs(m)
        for name, fn in routes.items():
            e = route_error(fn, q, k, v)
            rows.append({"max_logit": m, "route": name, "max_error": max(e.values()),
                         **{f"error_{n}": e[n] for n in ("q", "k", "v")}})
    return rows


def main() -> None:
    import argparse
    import json
    from pathlib import Path

    from .. import provenance
    from ..files import atomic_write_text
    ap = argparse.ArgumentParser(description="q / k / v gradient error against fp64 by the logits' size")
    ap.add_argument("--json", default="results/routes/softmax-gradient-error.json")
    a = ap.parse_args()
    torch.set_num_threads(1)
    rows = error_table()
    for r in rows:
        print(f"|s| {r['max_logit']:4g}  {r['route']:48s} {100 * r['max_error']:6.2f} %")
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(a.json, json.dumps({"kind": "softmax-gradient-error", "shape": [B, H, T, D], "rows": rows,
                                          "provenance": provenance.stamp("cpu", threads=1,
                                                                         source_of_numbers="computed now")}, indent=1))
    print(a.json)


if __name__ == "__main__":
    main()
