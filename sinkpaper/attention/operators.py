"""Readable pure-PyTorch reference implementations of every attention operation the paper studies.

One entry point, `attention_reference`, with the same argument names as the fused kernels
(`sinkpaper.kernels`), so the model's eager path, the tests and the notebooks share one oracle.

Notation: scores s = scale * q k^T with scale = 1/sqrt(d_h) (+ an additive positional bias for ALiBi /
relative PE). A learnable sink (a per-head logit, or the paper's KV / K bias k*, v*) is one extra key at
column 0 that every query sees. The paper's V bias alone (its control group, Table 5) is not a key: it is
added after the attention, Softmax(Q K^T / sqrt(d_h) + M) V + v*, and leaves the map unchanged.

Operations (Section 7.3 of the paper):
- softmax          exp(s) / sum exp(s), optionally scaled so the row sums to `softmax_sum` (alpha)
- softmax_p        p-normalized softmax: exp(s) / (sum exp(p s))^(1/p)
- sigmoid          sigmoid(s + b), optionally divided by its row sum
- elu              elu(s) + 1, optionally divided by its row sum
- kernel           phi(q) phi(k)^T / sqrt(d_h) / Z with Z in {1, row sum, max(|row sum|, 1)}; the caller
                   applies phi (the 1/sqrt(d_h) cancels for Z = row sum, not for the other two)
- softpick         relu(e^s - 1) / (sum |e^s - 1| + eps)   (Zuhri et al. 2025)

What the sink metric reads (`attn_map`): the attention probabilities for the normalized operators
(softmax family, softpick, normalized sigmoid/elu), and the paper's proxy |w| / sum |w| for the others
(reported as Sink*). For normalized non-negative weights the proxy equals the weights.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

OPERATIONS = ("softmax", "softmax_p", "sigmoid", "elu", "kernel", "softpick")
KERNEL_Z = ("one", "rowsum", "maxabs")


def is_proxy(op: str, normalize: bool = False) -> bool:
    """True when the operator has no probability normalization, so the metric uses |w| / sum |w| (Sink*)."""
    return op == "kernel" or (op in ("sigmoid", "elu") and not normalize)


@dataclass
class AttentionResult:
    out: torch.Tensor                     # [B, H, T, Dv]
    weights: torch.Tensor | None = None   # [B, H, T, T(+1)] what multiplies V (sink column first)
    attn_map: torch.Tensor | None = None  # [B, H, T, T] what the sink metric reads, real keys only
    sink_map: torch.Tensor | None = None  # [B, H, T] metric's attention on the sink / bias column
    scores: torch.Tensor | None = None    # [B, H, T, T(+1)] pre-normalization scores
    lse: torch.Tensor | None = None       # [B, H, T] log-sum-exp of the softmax scores, sink included


def _check(q, k, v, visible):
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError(f"q, k, v must be [batch, heads, T, head_dim]; got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    if q.shape[:3] != k.shape[:3] or k.shape[:3] != v.shape[:3]:
        raise ValueError(f"q, k, v disagree on [batch, heads, T]: {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k head dims differ: {q.shape[-1]} vs {k.shape[-1]}")
    T = q.shape[2]
    if visible.shape[-2:] != (T, T):
        raise ValueError(f"visible must end in [T, T] = [{T}, {T}], got {tuple(visible.shape)}")


def attention_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    visible: torch.Tensor,
    op: str = "softmax",
    scale: float | None = None,
    score_bias: torch.Tensor | None = None,
    sink_logit: torch.Tensor | None = None,
    k_bias: torch.Tensor | None = None,
    v_bias: torch.Tensor | None = None,
    sigmoid_bias: float = 0.0,
    normalize: bool = False,
    softmax_sum: float = 1.0,
    p_norm: float = 1.0,
    kernel_z: str = "rowsum",
    softpick_eps: float = 1e-6,
    return_map: bool = False,
) -> AttentionResult:
    """Attention over [B, H, T, D] tensors with a bool `visible` mask broadcastable to [B, H, T, T].

    `score_bias` [.., H, T, T] is added to the scores (ALiBi, relative PE).
    Sinks and biases ([H, D] or [1, D] shared by all heads), as in the paper's Section 7.2:
    - `k_bias` (+ `v_bias`): the KV bias, one extra key k* with value v* every query sees (`v_bias=None`:
      v* = 0, the paper's K bias);
    - `sink_logit` [H] (+ `v_bias`): an extra key with that fixed logit and value v* (zero without v_bias);
    - `v_bias` alone: the paper's V bias, added to every output row AFTER the attention (out = A V + v*);
      no extra key, the map and its rows are those of plain attention.
    For op="kernel", q and k are phi(q), phi(k) and k_bias is phi(k*); the similarities are scaled by
    `scale` (1/sqrt(d_h) by default) like every other operator.
    """
    if op not in OPERATIONS:
        raise ValueError(f"unknown attention operation {op!r}; valid: {', '.join(OPERATIONS)}")
    if op == "kernel" and kernel_z not in KERNEL_Z:
        raise ValueError(f"unknown kernel normalizer {kernel_z!r}; valid: {', '.join(KERNEL_Z)}")
    if sink_logit is not None and k_bias is not None:
        raise ValueError("pass either sink_logit or k_bias, not both")
    _check(q, k, v, visible)
    B, H, T, D = q.shape
    for name, x, width in (("k_bias", k_bias, D), ("v_bias", v_bias, v.shape[-1])):
        if x is not None and not (x.shape in ((H, width), (1, width)) or (x.dim() == 1 and x.shape[0] == width)):
            raise ValueError(f"{name} must be [heads, {width}] = [{H}, {width}] or [1, {width}] (shared by all "
                             f"heads), got {tuple(x.shape)}")
    if sink_logit is not None and sink_logit.shape != (H,):
        raise ValueError(f"sink_logit must be [heads] = [{H}], got {tuple(sink_logit.shape)}")
    if scale is None:
        scale = 1.0 / math.sqrt(D)
    scores = scale * (q @ k.transpose(-1, -2))  # kernel: phi(q) phi(k)^T / sqrt(d_h), as in the paper
    if score_bias is not None:
        scores = scores + score_bias
    visible = visible.expand(B, H, T, T) if visible.dim() == 4 else visible[:, None].expand(B, H, T, T)

    has_sink = sink_logit is not None or k_bias is not None  # an extra key; a V bias alone is not one
    v_after = v_bias if not has_sink else None               # the paper's V bias: added after the attention
    if has_sink:
        # One extra key at column 0, visible to every query.
        if sink_logit is not None:
            extra = sink_logit.to(scores.dtype).view(1, H, 1, 1).expand(B, H, T, 1)
        elif k_bias is not None:
            kb = k_bias.to(q.dtype).view(1, -1, 1, D) if k_bias.dim() == 2 else k_bias.to(q.dtype).view(1, 1, 1, D)
            extra = scale * (q * kb).sum(-1, keepdim=True)
        scores = torch.cat([extra, scores], dim=-1)
        visible = torch.cat([visible.new_ones(B, H, T, 1), visible], dim=-1)
        if v_bias is not None:
            vb = v_bias.to(v.dtype).view(1, -1, 1, v.shape[-1]) if v_bias.dim() == 2 else v_bias.to(v.dtype).view(1, 1, 1, -1)
            v_all = torch.cat([vb.expand(B, H, 1, v.shape[-1]), v], dim=2)
        else:
            v_all = torch.cat([v.new_zeros(B, H, 1, v.shape[-1]), v], dim=2)
    else:
        v_all = v

    lse = None
    neg_inf = torch.finfo(scores.dtype).min
    if op in ("softmax", "softmax_p"):
        masked = scores.masked_fill(~visible, float("-inf"))
        if op == "softmax":
            lse = torch.logsumexp(masked, dim=-1)
            weights = torch.exp(masked - lse[..., None]) * softmax_sum
        else:
            # exp(s) / (sum exp(p s))^(1/p), stably: log Z = logsumexp(p s) / p
            log_z = torch.logsumexp(p_norm * masked, dim=-1) / p_norm
            weights = torch.exp(masked - log_z[..., None])
    elif op == "sigmoid":
        weights = torch.sigmoid(scores + sigmoid_bias) * visible
    elif op == "elu":
        weights = (F.elu(scores) + 1.0) * visible
    elif op == "kernel":
        weights = scores * visible
    else:  # softpick, with a running max clamped at >= 0 so exp never overflows
        masked = scores.masked_fill(~visible, neg_inf)
        m = masked.amax(-1, keepdim=True).clamp_min(0.0)
        shifted = (torch.exp(masked - m) - torch.exp(-m)) * visible  # (e^s - 1) e^-m, masked entries excluded
        weights = F.relu(shifted) / (shifted.abs().sum(-1, keepdim=True) + softpick_eps * torch.exp(-m))

    if op in ("sigmoid", "elu") and normalize:
        weights = weights / weights.sum(-1, keepdim=True).clamp_min(1e-30)
    if op == "kernel" and kernel_z != "one":
        z = weights.sum(-1, keepdim=True)
        z = z if kernel_z == "rowsum" else z.abs().clamp_min(1.0)
        # A row sum can be ~0 for identity features; keep its sign and avoid dividing by zero.
        weights = weights / torch.where(z.abs() < 1e-6, torch.full_like(z, 1e-6), z)

    out = weights @ v_all
    if v_after is not None:
        out = out + (v_after.to(out.dtype).view(1, -1, 1, v.shape[-1]) if v_after.dim() == 2
                     else v_after.to(out.dtype).view(1, 1, 1, -1))
    result = AttentionResult(out=out, lse=lse)
    if return_map:
        if is_proxy(op, normalize):
            full = weights.abs() / weights.abs().sum(-1, keepdim=True).clamp_min(1e-30)
        elif op == "softmax":
            full = weights / softmax_sum  # the share of the row's attention
        else:
            full = weights
        result.weights = weights
        result.scores = scores
        if has_sink:
            result.sink_map, result.attn_map = full[..., 0], full[..., 1:]
        else:
            result.attn_map = full
    return result
