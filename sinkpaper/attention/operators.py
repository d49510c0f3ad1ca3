"""Readable pure-PyTorch reference implementations of every attention operation the paper studies.

One entry point, `attention_reference`, with the same argument names as the fused kernels
(`sinkpaper.fused`), so the model's eager path, the tests and the notebooks share one oracle.

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

Numerics: the whole operator (scores, their normalization, the weights times V) is computed in fp32 at least,
with autocast off, and the output cast back to q's dtype. Under CPU bf16 autocast `logsumexp` and `exp` stay in
bf16 (CUDA's autocast moves them to fp32); at the logits training reaches (|s| ~ 50, spacing 0.25) the rows of
bf16 weights sum to 0.89-1.14 and, compiled, the q / k gradients came out 22 % off at |s| 64 (SDPA: 2-3 %), enough
to blow a run up. Normalizing in fp32 alone left 3.5-7 % (the backward's dW = dO V^T rounded to bf16 before the
row-sum subtraction); the fp32 core is within 0.5 %, below SDPA's error (tests/test_attention.py pins both).

What the sink metric reads (`attn_map`): the attention probabilities for the normalized operators
(softmax family, softpick, normalized sigmoid/elu), and the paper's proxy |w| / sum |w| for the others
(reported as Sink*). For normalized non-negative weights the proxy equals the weights.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Callable

import torch
import torch.nn.functional as F

KERNEL_Z = ("one", "rowsum", "maxabs")


def is_proxy(op: str, normalize: bool = False) -> bool:
    """True when the operator has no probability normalization, so the metric uses |w| / sum |w| (Sink*)."""
    return OPERATORS[op].proxy(OpParams(normalize=normalize))


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
    params: OpParams | None = None,
    return_map: bool = False,
    **settings: object,
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
    The operator's settings are one `params` (:class:`OpParams`, e.g. a model config's `op_params`) or its
    fields as keywords (`normalize=True`, `softmax_sum=2.0`, ...), not both.
    """
    if op not in OPERATIONS:
        raise ValueError(f"unknown attention operation {op!r}; valid: {', '.join(OPERATIONS)}")
    params = OpParams.from_settings(params, settings)
    if op == "kernel" and params.kernel_z not in KERNEL_Z:
        raise ValueError(f"unknown kernel normalizer {params.kernel_z!r}; valid: {', '.join(KERNEL_Z)}")
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
    out_dtype = q.dtype
    work = torch.promote_types(out_dtype, torch.float32)
    with torch.autocast(q.device.type, enabled=False):
        q, k, v = q.to(work), k.to(work), v.to(work)
        k_bias, v_bias, sink_logit, score_bias = (None if x is None else x.to(work)
                                                  for x in (k_bias, v_bias, sink_logit, score_bias))
        result = _attend(q, k, v, visible, op, scale, score_bias, sink_logit, k_bias, v_bias, params, return_map)
    result.out = result.out.to(out_dtype)
    return result


def _attend(q, k, v, visible, op, scale, score_bias, sink_logit, k_bias, v_bias, params, return_map):
    """:func:`attention_reference` on checked inputs, all in one dtype (fp32 or fp64), autocast off."""
    B, H, T, D = q.shape
    scores = scale * (q @ k.transpose(-1, -2))  # kernel: phi(q) phi(k)^T / sqrt(d_h), as in the paper
    if score_bias is not None:
        scores = scores + score_bias
    visible = visible.expand(B, H, T, T) if visible.dim() == 4 else visible[:, None].expand(B, H, T, T)

    has_sink = sink_logit is not None or k_bias is not None  # an extra key; a V bias alone is not one
    v_after = v_bias if not has_sink else None               # the paper's V bias: added after the attention
    if has_sink:
        scores, visible, v_all = _with_sink_column(q, v, scores, visible, scale, sink_logit, k_bias, v_bias)
    else:
        v_all = v

    weights, lse = OPERATORS[op].weights(scores, visible, params)

    out = weights @ v_all
    if v_after is not None:
        out = out + (v_after.to(out.dtype).view(1, -1, 1, v.shape[-1]) if v_after.dim() == 2
                     else v_after.to(out.dtype).view(1, 1, 1, -1))
    result = AttentionResult(out=out, lse=lse)
    if return_map:
        if OPERATORS[op].proxy(params):
            full = weights.abs() / weights.abs().sum(-1, keepdim=True).clamp_min(1e-30)
        elif op == "softmax":
            full = weights / params.softmax_sum  # the share of the row's attention
        else:
            full = weights
        result.weights = weights
        result.scores = scores
        if has_sink:
            result.sink_map, result.attn_map = full[..., 0], full[..., 1:]
        else:
            result.attn_map = full
    return result


def sink_logit_gate(scores: torch.Tensor, visible: torch.Tensor, sink_logit: torch.Tensor) -> torch.Tensor:
    """The gate a sink logit b_h puts on each query's attention: softmax over [b_h, s_1 .. s_t] restricted to the
    real keys is the plain softmax over s_1 .. s_t times sigmoid(LSE(s) - b_h), LSE the log-sum-exp of the query's
    visible scores. So a learned sink logit is a per-head, query-dependent gate on the head's output (the gated
    attention of Qiu et al. 2025 with the gate tied to the scores). scores [B, H, T, T], visible broadcastable to
    it, sink_logit [H] -> gate [B, H, T]."""
    lse = torch.logsumexp(scores.masked_fill(~visible, float("-inf")), dim=-1)
    return torch.sigmoid(lse - sink_logit.to(scores.dtype).view(1, -1, 1))


def _with_sink_column(q, v, scores, visible, scale, sink_logit, k_bias, v_bias):
    """The scores, mask and values with one extra key at column 0, visible to every query: a sink logit per head,
    or a key k* (its score scale * q k*); its value v* (zero without one)."""
    B, H, T, D = q.shape
    if sink_logit is not None:
        extra = sink_logit.to(scores.dtype).view(1, H, 1, 1).expand(B, H, T, 1)
    else:
        kb = k_bias.to(q.dtype).view(1, -1, 1, D) if k_bias.dim() == 2 else k_bias.to(q.dtype).view(1, 1, 1, D)
        extra = scale * (q * kb).sum(-1, keepdim=True)
    scores = torch.cat([extra, scores], dim=-1)
    visible = torch.cat([visible.new_ones(B, H, T, 1), visible], dim=-1)
    if v_bias is not None:
        vb = v_bias.to(v.dtype).view(1, -1, 1, v.shape[-1]) if v_bias.dim() == 2 else v_bias.to(v.dtype).view(1, 1, 1, -1)
        return scores, visible, torch.cat([vb.expand(B, H, 1, v.shape[-1]), v], dim=2)
    return scores, visible, torch.cat([v.new_zeros(B, H, 1, v.shape[-1]), v], dim=2)


# ------------------------------------------------------------------------------------------ the operator table
@dataclass(frozen=True)
class OpParams:
    """The attention operators' settings (the model config's fields of the same meaning)."""
    normalize: bool = False      # sigmoid / elu: divide by the row sum (ModelConfig.attn_normalize)
    softmax_sum: float = 1.0     # softmax: each row sums to alpha
    p_norm: float = 1.0          # softmax_p: exp(s) / ||exp(s)||_p
    kernel_z: str = "rowsum"     # kernel: the normalizer Z
    sigmoid_bias: float = 0.0    # sigmoid(s + b)
    softpick_eps: float = 1e-6

    @classmethod
    def of(cls, cfg) -> "OpParams":
        """From a ModelConfig (or anything with its attention fields): each field from the config's field of the
        same name (``normalize`` from ``attn_normalize``), so a new setting is one field here and one there."""
        return cls(**{f.name: getattr(cfg, CONFIG_FIELD.get(f.name, f.name)) for f in fields(cls)})

    @classmethod
    def from_settings(cls, params: "OpParams | None", settings: dict) -> "OpParams":
        """``params`` itself, or one built from keyword settings; both, or a setting that is not a field, is a
        ValueError naming the valid ones."""
        unknown = sorted(set(settings) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"unknown operator setting(s) {', '.join(unknown)}; valid: "
                             f"{', '.join(f.name for f in fields(cls))}")
        if params is not None and settings:
            raise ValueError("pass the operator's settings either as params=OpParams(...) or as keywords, not both")
        return params if params is not None else cls(**settings)


CONFIG_FIELD = {"normalize": "attn_normalize"}   # OpParams fields whose ModelConfig field has another name


def _softmax(scores, visible, p):
    masked = scores.masked_fill(~visible, float("-inf"))
    lse = torch.logsumexp(masked, dim=-1)
    return torch.exp(masked - lse[..., None]) * p.softmax_sum, lse


def _softmax_p(scores, visible, p):
    # exp(s) / (sum exp(p s))^(1/p), stably: log Z = logsumexp(p s) / p
    masked = scores.masked_fill(~visible, float("-inf"))
    log_z = torch.logsumexp(p.p_norm * masked, dim=-1) / p.p_norm
    return torch.exp(masked - log_z[..., None]), None


def _row_normalized(weights, p):
    return weights / weights.sum(-1, keepdim=True).clamp_min(1e-30) if p.normalize else weights


def _sigmoid(scores, visible, p):
    return _row_normalized(torch.sigmoid(scores + p.sigmoid_bias) * visible, p), None


def _elu(scores, visible, p):
    return _row_normalized((F.elu(scores) + 1.0) * visible, p), None


def _kernel(scores, visible, p):
    weights = scores * visible
    if p.kernel_z == "one":
        return weights, None
    z = weights.sum(-1, keepdim=True)
    z = z if p.kernel_z == "rowsum" else z.abs().clamp_min(1.0)
    # A row sum can be ~0 for identity features; keep its sign and avoid dividing by zero.
    return weights / torch.where(z.abs() < 1e-6, torch.full_like(z, 1e-6), z), None


def _softpick(scores, visible, p):
    # (scores arrive in fp32 at least: compiled in bf16, the backward through the row max came out NaN)
    # a running max clamped at >= 0 so exp never overflows
    masked = scores.masked_fill(~visible, torch.finfo(scores.dtype).min)
    m = masked.amax(-1, keepdim=True).clamp_min(0.0)
    shifted = (torch.exp(masked - m) - torch.exp(-m)) * visible  # (e^s - 1) e^-m, masked entries excluded
    weights = F.relu(shifted) / (shifted.abs().sum(-1, keepdim=True) + p.softpick_eps * torch.exp(-m))
    return weights, None


def _always(_p: OpParams) -> bool:
    return True


def _never(_p: OpParams) -> bool:
    return False


@dataclass(frozen=True)
class Operator:
    """One attention operation: its formula and source, its reference weights, what the metric reads and what the
    fused Triton path covers. Adding an operator is its entry here, its reference function above, its test (the
    parameter lists derive from this table) and, when fused, its branch in `sinkpaper.fused`."""
    name: str
    formula: str
    source: str
    weights: Callable      # (scores, visible, OpParams) -> (weights [.., T, T(+1)], logsumexp or None)
    proxy: Callable[[OpParams], bool]       # True: no probability rows, the metric reads |w| / sum |w| (Sink*)
    denominator_logit: Callable[[OpParams], bool]   # True: a sink logit can join the normalizer as its source
                                                    # defines it (exp(b) / (exp(b) + sum exp(s)): rows of one)
    fused_id: int | None = None             # the Triton kernels' operator id; None: the reference only
    fused_when: Callable[[OpParams], bool] = _always   # the settings the fused path covers
    row_stat: str | None = None             # what the fused forward stores per row for its backward


OPERATORS: dict[str, Operator] = {op.name: op for op in (
    Operator("softmax", "alpha * exp(s) / sum exp(s)", "the paper's default (alpha: Section 7.3)", _softmax,
             proxy=_never, denominator_logit=lambda p: p.softmax_sum == 1.0,
             fused_id=0, fused_when=lambda p: p.softmax_sum == 1.0, row_stat="logsumexp"),
    Operator("softmax_p", "exp(s) / (sum exp(p s))^(1/p)", "Section 7.3", _softmax_p,
             proxy=_never, denominator_logit=_never),
    Operator("sigmoid", "sigmoid(s + b), optionally / row sum", "Section 7.3", _sigmoid,
             proxy=lambda p: not p.normalize, denominator_logit=_never,
             fused_id=1, fused_when=lambda p: not p.normalize),
    Operator("elu", "elu(s) + 1, optionally / row sum", "Section 7.3", _elu,
             proxy=lambda p: not p.normalize, denominator_logit=_never,
             fused_id=2, fused_when=lambda p: not p.normalize),
    Operator("kernel", "phi(q) phi(k)^T / sqrt(d_h) / Z", "Section 7.3 (linear-attention kernels)", _kernel,
             proxy=_always, denominator_logit=_never),
    Operator("softpick", "relu(e^s - 1) / (sum |e^s - 1| + eps)", "Zuhri et al. 2025, arXiv 2504.20966", _softpick,
             proxy=_never, denominator_logit=_never, fused_id=3, row_stat="log(sum |e^s - 1| + eps)"),
)}
OPERATIONS = tuple(OPERATORS)
FUSED_OPERATORS = {name: op.fused_id for name, op in OPERATORS.items() if op.fused_id is not None}


@dataclass(frozen=True)
class SinkDesign:
    """A place for the attention's excess (the paper's Section 7.2, and the designs after it): an extra key
    column every query sees, a learnable token, or a value added after the attention. `ModelConfig.sink` names
    one; the model builds its parameters and the attention arguments from `key` and `value`."""
    name: str
    description: str
    source: str
    key: str                    # none | token (a learnable token at position 0) | k_bias (a learnable key k*) |
                                # logit (a learnable logit per head) | zero_logit (a logit fixed at 0)
    value: str                  # none | zero (the column carries no value) | learned (v*) | fixed (v* set) |
                                # after (v* added to the output after the attention: no column)
    in_denominator: bool = False    # a logit in the softmax's denominator: only where the operator takes one
    fused: bool = True              # the fused kernels take it (the sink token shifts every position)

    @property
    def extra_key(self) -> bool:
        """True when the attention gets one extra key column (column 0 of the weights)."""
        return self.key in ("k_bias", "logit", "zero_logit")


SINK_DESIGNS: dict[str, SinkDesign] = {d.name: d for d in (
    SinkDesign("none", "no sink or bias", "the paper's default", "none", "none"),
    SinkDesign("sink_token", "a learnable token before every sequence", "Section 7.2, Table 4", "token", "none",
               fused=False),
    SinkDesign("kv_bias", "an extra key k* with value v*, both learned", "Section 7.2, Table 4", "k_bias", "learned"),
    SinkDesign("k_bias", "an extra key k* with value 0", "Section 7.2, Table 4", "k_bias", "zero"),
    SinkDesign("v_bias", "v* added after the attention: Softmax(QK^T/sqrt(d_h) + M) V + v* (the control)",
               "Section 7.2, Table 5", "none", "after"),
    SinkDesign("k_bias_fixed_v", "an extra key k* with a fixed value v*", "Section 7.2, Table 12", "k_bias", "fixed"),
    SinkDesign("zero_key_v_bias", "an extra key with logit 0 and a learnable value v* (ours, not the paper's)",
               "this book", "zero_logit", "learned"),
    SinkDesign("sink_logit", "a learnable logit per head in the softmax's denominator, no value",
               "gpt-oss (OpenAI 2025)", "logit", "zero", in_denominator=True),
    SinkDesign("softmax_plus_one", "exp(s) / (1 + sum exp(s)): the logit fixed at 0, no value",
               "Miller 2023, 'Attention is off by one'", "zero_logit", "zero", in_denominator=True),
)}
SINKS = tuple(SINK_DESIGNS)
