"""The paper's propositions for a sequence of one repeated token, checked numerically on small SinkModels.

With every token equal, every hidden state at the first layer is the same vector, so attention scores can only
depend on positions:
- NoPE: all scores of a row are equal, so attention is exactly uniform, A[t, j] = 1/t (no sink);
- relative PE (T5 buckets) and ALiBi: scores depend only on t - j, so token 1 is not special (no sink);
- RoPE: A[t, 1] <= e^{2 xi} / (e^{2 xi} + t - 1), xi = scale * max|q| * max|k|, which goes to 0 as t grows.
Each function builds a small randomly initialised model and returns the measured quantities; tests and the
Section-3 notebook read them.
"""
from __future__ import annotations

import math

import torch

from .metrics import TraceStats
from .models import ModelConfig, SinkModel

SMALL = dict(vocab_size=61, d_model=32, n_layers=2, n_heads=4, d_ff=48)


def _max_alpha_1(trace) -> float:
    """Largest alpha_1 over samples, layers and heads, through the metric's own reduction."""
    return float(TraceStats.from_trace(trace).alphas[..., 0].max())


def repeated_tokens(n: int = 3, seq_len: int = 32, token: int = 7) -> torch.Tensor:
    return torch.full((n, seq_len), token, dtype=torch.long)


def small_model(pos_encoding: str, seq_len: int, seed: int = 0, **overrides) -> SinkModel:
    torch.manual_seed(seed)
    return SinkModel(ModelConfig(**(SMALL | {"pos_encoding": pos_encoding, "max_seq_len": seq_len} | overrides)))


@torch.no_grad()
def nope_uniform(seq_len: int = 32, seed: int = 0) -> dict:
    """Largest |A[t, j] - 1/t| over layers, heads and visible (t, j) for a NoPE model on repeats."""
    tr = small_model("nope", seq_len, seed).trace(repeated_tokens(seq_len=seq_len))
    uniform = torch.tril(torch.ones(seq_len, seq_len)) / torch.arange(1, seq_len + 1)[:, None]
    dev = max(float((a - uniform).abs().max()) for a in tr.attentions)
    return {"pos_encoding": "nope", "max_deviation_from_uniform": dev, "max_alpha_1": _max_alpha_1(tr),
            "uniform_alpha_1": sum(1 / t for t in range(1, seq_len + 1)) / seq_len}


@torch.no_grad()
def distance_only(pos_encoding: str, seq_len: int = 64, seed: int = 0, n_diagonals: int = 5) -> dict:
    """First-layer scores along the diagonals t - j = d are constant for relative PE and ALiBi on repeats;
    returns the largest spread along a diagonal and the largest alpha_1 over layers and heads."""
    model = small_model(pos_encoding, seq_len, seed)
    scores = []
    handle = model.blocks[0].attn.hook_scores.register_forward_hook(lambda m, i, o: scores.append(o))
    try:
        tr = model.trace(repeated_tokens(seq_len=seq_len))
    finally:
        handle.remove()
    s = scores[0][0]  # [H, T, T]
    diagonals = [torch.diagonal(s, offset=-d, dim1=-2, dim2=-1) for d in range(n_diagonals)]
    spread = max(float((diag - diag[..., :1]).abs().max()) for diag in diagonals)
    return {"pos_encoding": pos_encoding, "max_diagonal_spread": spread, "max_alpha_1": _max_alpha_1(tr)}


@torch.no_grad()
def rope_bound(seq_len: int = 256, seed: int = 0) -> dict:
    """First-layer attention to token 1 of a RoPE model on repeats next to the bound, per head and query t."""
    tr = small_model("rope", seq_len, seed).trace(repeated_tokens(n=1, seq_len=seq_len))
    q, k, a = tr.queries[0][0], tr.keys[0][0], tr.attentions[0][0]  # [H, T, D], [H, T, T]
    xi = q.norm(dim=-1).max(-1).values * k.norm(dim=-1).max(-1).values / math.sqrt(q.shape[-1])  # [H]
    t = torch.arange(1, seq_len + 1)
    bound = torch.exp(2 * xi)[:, None] / (torch.exp(2 * xi)[:, None] + t - 1)
    return {"pos_encoding": "rope", "t": t, "attention_to_1": a[:, :, 0], "bound": bound, "xi": xi,
            "bound_holds": bool((a[:, :, 0] <= bound + 1e-6).all())}
