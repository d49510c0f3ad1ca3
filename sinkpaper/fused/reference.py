"""Pure-PyTorch references for the fused kernels, with the kernels' exact contracts.

Both materialize the T x T attention through `sinkpaper.attention.attention_reference` (the operator the
model's eager path runs), so a kernel test compares the kernel with what the eager model computes.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch

from ..attention import attention_reference, column_mean, visible_mask


class ColumnStats(NamedTuple):
    alpha: torch.Tensor               # [B, H, T] fp32: mean attention key k receives over the queries seeing it
    sink: torch.Tensor | None = None  # [B, H] fp32: mean attention on the sink / bias column, or None


def _visible(q, causal, window, prefix, doc_ids):
    return visible_mask(q.shape[2], causal=causal, window=window, prefix=prefix, doc_ids=doc_ids, device=q.device)


def _row_stat(res, visible, op, softpick_eps):
    """The row statistic the kernels store: log-sum-exp (softmax), log(sum|e^x - 1| + eps) (softpick),
    log of the weights' row sum (sigmoid, elu: the proxy's normalizer)."""
    if op == "softmax":
        return res.lse
    B, H, T, _ = res.out.shape
    vis = visible[:, None].expand(B, H, T, T)
    if res.scores.shape[-1] == T + 1:  # the sink column is always visible
        vis = torch.cat([vis.new_ones(B, H, T, 1), vis], dim=-1)
    if op == "softpick":
        return torch.log(torch.where(vis, torch.expm1(res.scores).abs(), 0.0).sum(-1) + softpick_eps)
    return torch.log(res.weights.sum(-1))


def reference_attention(q, k, v, *, op="softmax", causal=True, window=None, prefix=None, doc_ids=None, scale=None,
                        sink_logit=None, k_bias=None, v_bias=None, sigmoid_bias=0.0, return_lse=False,
                        softpick_eps=1e-6):
    """Same contract as `sinkpaper.fused.attention`: out [B, H, T, Dv] (and the fp32 row statistic)."""
    visible = _visible(q, causal, window, prefix, doc_ids)
    res = attention_reference(q, k, v, visible=visible, op=op, scale=scale, sink_logit=sink_logit, k_bias=k_bias,
                              v_bias=v_bias, sigmoid_bias=sigmoid_bias, softpick_eps=softpick_eps,
                              return_map=return_lse)
    if not return_lse:
        return res.out
    return res.out, _row_stat(res, visible, op, softpick_eps).float()


def reference_column_stats(q, k, *, op="softmax", causal=True, window=None, prefix=None, doc_ids=None, scale=None,
                           sink_logit=None, k_bias=None, sigmoid_bias=0.0, softpick_eps=1e-6) -> ColumnStats:
    """Same contract as `sinkpaper.fused.column_stats`, from the materialized maps (the metric's own alpha)."""
    visible = _visible(q, causal, window, prefix, doc_ids)
    v = q.new_zeros(q.shape[:-1] + (1,))  # the values do not enter the weights
    res = attention_reference(q, k, v, visible=visible, op=op, scale=scale if scale is not None else
                              1.0 / math.sqrt(q.shape[-1]), sink_logit=sink_logit, k_bias=k_bias,
                              sigmoid_bias=sigmoid_bias, softpick_eps=softpick_eps, return_map=True)
    alpha = column_mean(res.attn_map, visible[:, None]).float()
    sink = None if res.sink_map is None else res.sink_map.float().mean(-1)
    return ColumnStats(alpha, sink)
