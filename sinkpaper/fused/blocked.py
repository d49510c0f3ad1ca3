"""Column statistics (and the attention output) in plain PyTorch without the T x T matrix: the CPU route.

The same two passes as the Triton `column_stats_kernel`, over blocks of rows and columns instead of tiles:

- pass 1, one block of `block` queries at a time against every key those queries can see: the row statistic
  (log-sum-exp for softmax, the sink column included; log(sum |e^x - 1| + eps) for softpick; log of the row sum
  of the weights for sigmoid and elu, the normalizer of the paper's proxy |w| / sum |w|) and, when values are
  given, the layer's output;
- pass 2, one block of `block` keys at a time against every query that can see them: the weights are recomputed
  from the row statistic and each key column's sum over its visible queries is divided by their number.

Each step holds a [B, H, block, <= T] tile, so peak memory is O(B * H * T * block) on top of q, k, v; `block`
shrinks when one tile would exceed `tile_bytes`. Blocks skip the keys (queries) the mask hides entirely (causal,
sliding window, prefix-LM), so a causal pass costs about half a full one. Accumulation is fp32, or fp64 when the
inputs are fp64 (for tests against fp64 references). Masks use the same rules as
`sinkpaper.attention.visible_mask` (through `visible_block`).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..attention import visible_block
from .reference import ColumnStats

BLOCK = 128                  # rows / columns per step
TILE_BYTES = 256 * 2 ** 20   # one [B, H, block, T] tile at most (the block shrinks, never below MIN_BLOCK)
MIN_BLOCK = 16


def block_size(B: int, H: int, T: int, itemsize: int = 4, block: int = BLOCK, tile_bytes: int = TILE_BYTES) -> int:
    """Rows (pass 1) or columns (pass 2) per step: `block`, smaller when one tile would exceed tile_bytes."""
    fit = tile_bytes // max(1, B * H * T * itemsize)
    return int(max(MIN_BLOCK, min(block, fit, T)))


def _key_range(m0, m1, T, window, prefix, causal):
    """Keys [lo, hi) that queries m0 .. m1-1 can see."""
    if prefix is not None:
        return 0, min(T, max(m1, prefix))
    if window is not None:
        return max(0, m0 - window + 1), m1
    return (0, m1) if causal else (0, T)


def _query_range(n0, n1, T, window, prefix, causal):
    """Queries [lo, hi) that can see keys n0 .. n1-1."""
    if prefix is not None:
        return (0, T) if n0 < prefix else (n0, T)
    if window is not None:
        return n0, min(T, n1 + window - 1)
    return (n0, T) if causal else (0, T)


def sink_share(op: str, s0: torch.Tensor, stat: torch.Tensor, sigmoid_bias: float = 0.0) -> torch.Tensor:
    """What the sink metric reads on the sink / bias column, per row: its probability (softmax, softpick) or
    its share of the row's weight (sigmoid, elu: the paper's proxy), from its logit s0 and the row statistic."""
    if op == "softmax":
        return torch.exp(s0 - stat)
    if op == "softpick":
        return torch.relu(_softpick_shifted(s0[..., None], stat)[..., 0])
    if op == "sigmoid":
        return torch.sigmoid(s0 + sigmoid_bias) / torch.exp(stat)
    return torch.where(s0 > 0, s0 + 1, torch.exp(s0.clamp(max=0))) / torch.exp(stat)


def _softpick_shifted(x, m):
    """(e^x - 1) e^-m without cancellation: expm1(x) e^-m where x is small (x <= m <= ... keeps it finite),
    e^(x-m) - e^-m where x > 1 (no cancellation there, and expm1 could overflow)."""
    mm = m[..., None]
    return torch.where(x > 1, torch.exp(x - mm) - torch.exp(-mm), torch.expm1(x.clamp(max=1)) * torch.exp(-mm))


def _fill_hidden_(x, hidden, value, dim):
    """x.masked_fill_(hidden, value) touching only the span of columns (dim=-1) or rows (dim=-2) that hold a hidden
    entry: a causal block is hidden only near the diagonal, so most of the tile is left alone."""
    other = -2 if dim == -1 else -1
    bad = hidden.any(dim=other).reshape(-1, hidden.shape[dim]).any(0).nonzero()
    if bad.numel():
        a, b = int(bad[0]), int(bad[-1]) + 1
        if dim == -1:
            x[..., a:b].masked_fill_(hidden[..., a:b], value)
        else:
            x[..., a:b, :].masked_fill_(hidden[..., a:b, :], value)
    return x


def _weights(op, x, sigmoid_bias):
    """Unnormalized weights of the operators without normalization (in place on x)."""
    if op == "sigmoid":
        return torch.sigmoid_(x.add_(sigmoid_bias))
    return F.elu_(x).add_(1.0)


def row_stats(q, k, v=None, *, op="softmax", causal=True, window=None, prefix=None, doc_ids=None, scale,
              s0=None, sigmoid_bias=0.0, softpick_eps=1e-6, block=None):
    """Pass 1: the row statistic [B, H, T] and, with v, the output [B, H, T, Dv] (None without v).

    q, k, v must already be in the accumulation dtype; s0 [B, H, T] is the sink column's logit or None."""
    B, H, T, _ = q.shape
    block = block or block_size(B, H, T, q.element_size())
    stat = q.new_empty(B, H, T)
    out = None if v is None else q.new_empty(B, H, T, v.shape[-1])
    pos = torch.arange(T, device=q.device)
    for m0 in range(0, T, block):
        m1 = min(T, m0 + block)
        lo, hi = _key_range(m0, m1, T, window, prefix, causal)
        x = torch.matmul(q[:, :, m0:m1], k[:, :, lo:hi].transpose(-1, -2)).mul_(scale)  # [B, H, rows, keys]
        hidden = ~visible_block(pos[m0:m1], pos[lo:hi], causal=causal, window=window, prefix=prefix,
                                doc_ids=doc_ids)[:, None]
        z0 = None if s0 is None else s0[:, :, m0:m1]
        if op in ("softmax", "softpick"):
            _fill_hidden_(x, hidden, float("-inf"), -1)
            m = x.amax(-1)
            if op == "softpick":
                m = m.clamp_min(0.0)  # e^x - 1 = e^m (e^(x-m) - e^-m): the max is clamped at >= 0
            if z0 is not None:
                m = torch.maximum(m, z0.clamp_min(0.0) if op == "softpick" else z0)
            m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))  # a row that sees nothing
            if op == "softmax":
                p = x.sub_(m[..., None]).exp_()
                l = p.sum(-1) + (0 if z0 is None else torch.exp(z0 - m))
                row = m + torch.log(l)
            else:
                em = torch.exp(-m)
                p = _fill_hidden_(_softpick_shifted(x, m), hidden, 0.0, -1)  # (e^x - 1) e^-m; hidden keys leave the sum
                del x
                l = p.abs().sum(-1) + (0 if z0 is None else _softpick_shifted(z0[..., None], m)[..., 0].abs())
                l = l + softpick_eps * em
                row = m + torch.log(l)
                p = p.clamp_min_(0.0)
        else:
            p = _fill_hidden_(_weights(op, x, sigmoid_bias), hidden, 0.0, -1)
            l = p.sum(-1)
            if z0 is not None:
                l = l + sink_share(op, z0, torch.zeros_like(z0), sigmoid_bias)
            row = torch.log(l)
        stat[:, :, m0:m1] = row
        if out is not None:
            o = torch.matmul(p, v[:, :, lo:hi])
            out[:, :, m0:m1] = o / l[..., None] if op in ("softmax", "softpick") else o
        del p, hidden
    return out, stat


def column_sums(q, k, stat, *, op="softmax", causal=True, window=None, prefix=None, doc_ids=None, scale,
                sigmoid_bias=0.0, block=None) -> torch.Tensor:
    """Pass 2: alpha [B, H, T], the mean over the queries that see key k of what the metric scores there."""
    B, H, T, _ = q.shape
    block = block or block_size(B, H, T, q.element_size())
    alpha = q.new_empty(B, H, T)
    pos = torch.arange(T, device=q.device)
    for n0 in range(0, T, block):
        n1 = min(T, n0 + block)
        lo, hi = _query_range(n0, n1, T, window, prefix, causal)
        x = torch.matmul(q[:, :, lo:hi], k[:, :, n0:n1].transpose(-1, -2)).mul_(scale)  # [B, H, queries, keys]
        visible = visible_block(pos[lo:hi], pos[n0:n1], causal=causal, window=window, prefix=prefix,
                                doc_ids=doc_ids)[:, None]
        st = stat[:, :, lo:hi, None]
        if op == "softmax":
            a = x.sub_(st).exp_()
        elif op == "softpick":
            a = _softpick_shifted(x, st[..., 0]).clamp_min_(0.0)
        else:  # the proxy |w| / sum |w| (w > 0)
            a = _weights(op, x, sigmoid_bias).mul_(torch.exp(-st))
        total = _fill_hidden_(a, ~visible, 0.0, -2).sum(-2)
        count = visible.sum(-2).to(total.dtype)
        alpha[:, :, n0:n1] = torch.where(count > 0, total / count.clamp_min(1.0), 0.0)
        del x, a, visible
    return alpha


@torch.no_grad()
def blocked_column_stats(q, k, v=None, *, op="softmax", causal=True, window=None, prefix=None, doc_ids=None,
                         scale=None, s0=None, sigmoid_bias=0.0, softpick_eps=1e-6, block=None):
    """Both passes: (ColumnStats(alpha, sink), output or None). Inputs of any float dtype; the accumulation
    is fp64 for fp64 inputs, else fp32; the output comes back in v's dtype."""
    acc = torch.float64 if q.dtype == torch.float64 else torch.float32
    scale = float(scale if scale is not None else 1.0 / math.sqrt(q.shape[-1]))
    qa, ka = q.to(acc), k.to(acc)
    z0 = None if s0 is None else s0.to(acc)
    masks = dict(causal=causal, window=window, prefix=prefix, doc_ids=doc_ids)
    out, stat = row_stats(qa, ka, None if v is None else v.to(acc), op=op, **masks, scale=scale, s0=z0,
                          sigmoid_bias=sigmoid_bias, softpick_eps=softpick_eps, block=block)
    alpha = column_sums(qa, ka, stat, op=op, **masks, scale=scale, sigmoid_bias=sigmoid_bias, block=block)
    sink = None if z0 is None else sink_share(op, z0, stat, sigmoid_bias).mean(-1)
    if out is not None:
        out = out.to(v.dtype)
    return ColumnStats(alpha, sink), out
