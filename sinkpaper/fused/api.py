"""`attention` and `column_stats`: argument checks, the fused attention as torch operators and the kernel launches.

`impl="auto"` runs the Triton kernels on CUDA tensors, and on CPU tensors when the Triton interpreter is on
(TRITON_INTERPRET=1 set before triton was imported); otherwise `attention` runs the pure-PyTorch reference (same
contract) and `column_stats` the blocked PyTorch route (`sinkpaper.fused.blocked`: two passes, no T x T map).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import torch

from ..attention.operators import FUSED_OPERATORS, OPERATORS
from .blocked import blocked_column_stats, sink_share
from .reference import ColumnStats, reference_attention, reference_column_stats

OPS = tuple(FUSED_OPERATORS)   # the operator table's fused operators
# the fused operators whose forward stores a row statistic for the backward (sigmoid / elu need none: their
# backward is elementwise)
_STAT_IDS = tuple(OPERATORS[name].fused_id for name in OPS if OPERATORS[name].row_stat)
DTYPES = (torch.float32, torch.float16, torch.bfloat16)
IMPLS = ("auto", "triton", "reference")
STATS_IMPLS = ("auto", "triton", "blocked", "reference")  # column_stats also has the blocked PyTorch route
MAX_HEAD_DIM = 256  # 256: Gemma 3's heads (smaller tiles on GPU)
# Decided once, like triton itself decides at import whether @triton.jit interprets.
_INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"


def interpreting() -> bool:
    """True when the Triton kernels run under the CPU interpreter (TRITON_INTERPRET=1 at import)."""
    return _INTERPRET


# ------------------------------------------------------------------------------------------------ checks
def _check(q, k, v, op, causal, window, prefix, doc_ids, scale, sink_logit, k_bias, v_bias, sigmoid_bias, impl,
           impls=IMPLS):
    if op not in OPS:
        raise ValueError(f"op={op!r} is not a fused operator; valid: {', '.join(OPS)} "
                         "(the other operators run on sinkpaper.attention.attention_reference)")
    if impl not in impls:
        raise ValueError(f"impl={impl!r}; valid: {', '.join(impls)}")
    # fp64 only where no Triton kernel runs (the blocked route and the reference, e.g. for fp64 checks)
    dtypes = DTYPES + (torch.float64,) if impl in ("blocked", "reference") or (
        impl == "auto" and isinstance(q, torch.Tensor) and q.device.type == "cpu" and not _INTERPRET) else DTYPES
    named = {"q": q, "k": k} if v is None else {"q": q, "k": k, "v": v}
    for name, x in named.items():
        if not isinstance(x, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
        if x.dim() != 4:
            raise ValueError(f"{name} must be [batch, heads, T, head_dim], got shape {tuple(x.shape)}")
        if x.dtype not in dtypes:
            raise ValueError(f"{name} has dtype {x.dtype}; the kernels take float32, float16 or bfloat16"
                             + (" (float64 on the blocked and reference routes)" if x.dtype == torch.float64 else ""))
        if x.dtype != q.dtype:
            raise ValueError(f"{name} has dtype {x.dtype} but q has {q.dtype}; pass one dtype")
        if x.device != q.device:
            raise ValueError(f"{name} is on {x.device} but q is on {q.device}")
        if x.shape[:3] != q.shape[:3]:
            raise ValueError(f"{name} has [batch, heads, T] = {tuple(x.shape[:3])} but q has {tuple(q.shape[:3])}")
    B, H, T, D = q.shape
    if k.shape[-1] != D:
        raise ValueError(f"k has head_dim {k.shape[-1]} but q has {D}")
    for name, x in named.items():
        if not 1 <= x.shape[-1] <= MAX_HEAD_DIM:
            raise ValueError(f"{name} has head_dim {x.shape[-1]}; the kernels support 1..{MAX_HEAD_DIM}")
    if T < 1:
        raise ValueError("T must be >= 1")
    if window is not None and prefix is not None:
        raise ValueError("window and prefix cannot be combined")
    if window is not None and (int(window) != window or window < 1):
        raise ValueError(f"window must be an integer >= 1 (keys each query sees, itself included), got {window}")
    if prefix is not None and (int(prefix) != prefix or prefix < 0):
        raise ValueError(f"prefix must be an integer >= 0, got {prefix}")
    if not causal and (window is not None or prefix is not None):
        raise ValueError("causal=False conflicts with window/prefix (both are causal masks)")
    if doc_ids is not None:
        if not isinstance(doc_ids, torch.Tensor) or doc_ids.shape != (B, T):
            raise ValueError(f"doc_ids must be a tensor [batch, T] = [{B}, {T}], got "
                             f"{tuple(doc_ids.shape) if isinstance(doc_ids, torch.Tensor) else type(doc_ids).__name__}")
        if doc_ids.dtype.is_floating_point or doc_ids.dtype == torch.bool:
            raise ValueError(f"doc_ids must be integer document ids, got {doc_ids.dtype}")
        if doc_ids.device != q.device:
            raise ValueError(f"doc_ids is on {doc_ids.device} but q is on {q.device}")
    if scale is not None and not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a positive finite number, got {scale!r}")
    if sink_logit is not None and k_bias is not None:
        raise ValueError("pass either sink_logit (a fixed-logit sink) or k_bias (a learnable key), not both")
    if sink_logit is not None and (not isinstance(sink_logit, torch.Tensor) or sink_logit.shape != (H,)):
        raise ValueError(f"sink_logit must be a tensor [heads] = [{H}]")
    for name, x, width in (("k_bias", k_bias, D), ("v_bias", v_bias, None if v is None else v.shape[-1])):
        if x is None:
            continue
        if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.shape[0] not in (1, H) or (
                width is not None and x.shape[1] != width):
            raise ValueError(f"{name} must be a tensor [heads, head_dim] = [{H}, {width}] (or [1, {width}] shared), "
                             f"got {tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__}")
    for name, x in (("sink_logit", sink_logit), ("k_bias", k_bias), ("v_bias", v_bias)):
        if x is not None and x.device != q.device:
            raise ValueError(f"{name} is on {x.device} but q is on {q.device}")
    if sigmoid_bias and op != "sigmoid":
        raise ValueError(f"sigmoid_bias={sigmoid_bias} only applies to op='sigmoid', not {op!r}")
    if impl == "triton" and q.device.type != "cuda" and not _INTERPRET:
        raise ValueError(f"impl='triton' on {q.device.type} tensors needs the Triton interpreter: set "
                         "TRITON_INTERPRET=1 before importing triton (or use impl='auto' for the reference)")


def _major_minor(version: str) -> tuple[int, int]:
    return tuple(int(x) for x in version.split("+")[0].split(".")[:2])


def _check_interpreter_numpy() -> None:
    """triton < 3.7's interpreter fails with numpy >= 2.4 (triton-lang/triton#9171, fixed in 3.7)."""
    import numpy
    import triton
    if _major_minor(triton.__version__) < (3, 7) and _major_minor(numpy.__version__) >= (2, 4):
        raise RuntimeError(f"numpy {numpy.__version__} breaks triton {triton.__version__}'s interpreter "
                           "(triton-lang/triton#9171): install triton>=3.7 (constraints.txt pins 3.7.1) or "
                           "numpy<2.4, or use impl='reference'")


def _use_triton(q, impl) -> bool:
    if impl in ("reference", "blocked"):
        return False
    if q.device.type == "cuda":
        return True
    if _INTERPRET and q.device.type == "cpu":
        _check_interpreter_numpy()
        return True
    return False


# ------------------------------------------------------------------------------------------------ launch
@dataclass(frozen=True)
class _Spec:
    """Everything about one call that is not a tensor: mask, operator, scale."""
    op: int
    mask: int
    w: int          # window or prefix length
    scale: float
    sig_bias: float
    softpick_eps: float


def _spec(op, causal, window, prefix, scale, D, sigmoid_bias, softpick_eps) -> _Spec:
    from . import triton_kernels as tk
    if window is not None:
        mask, w = tk.MASK_WINDOW, int(window)
    elif prefix:
        mask, w = tk.MASK_PREFIX, int(prefix)
    else:
        mask, w = (tk.MASK_CAUSAL if causal else tk.MASK_NONE), 0
    return _Spec(tk.OPS[op], mask, w, float(scale if scale is not None else 1.0 / math.sqrt(D)),
                 float(sigmoid_bias), float(softpick_eps))


def _pow2(n: int) -> int:
    return max(16, 1 << (n - 1).bit_length())


def _blocks(kind: str, D: int, interpret: bool | None = None) -> dict:
    """Tile sizes and launch options. The interpreter gets small tiles (it pays per tile operation);
    on GPU, FlashAttention-2-like shapes (forward / dQ: 128 rows x 64 keys; dK/dV: 64 keys x 64 rows).
    `interpret` (default: whether this process interprets) lets the GPU compile check ask for the GPU's."""
    if _INTERPRET if interpret is None else interpret:
        return {"BLOCK_M": 32, "BLOCK_N": 32}
    if D > 128:  # keep the fp32 accumulators in registers
        return {"BLOCK_M": 32 if kind in ("dkdv", "stats") else 64,
                "BLOCK_N": 64 if kind in ("dkdv", "stats") else 32, "num_warps": 8, "num_stages": 2}
    warps = 4 if D <= 64 else 8
    if kind == "fwd":
        return {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": warps, "num_stages": 3}
    if kind == "dq":
        return {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 2}
    if kind == "dkdv":
        return {"BLOCK_M": 64, "BLOCK_N": 128, "num_warps": 8, "num_stages": 2}
    return {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 3}  # column statistics


def _common(q, v, spec, bthd):
    D, DV = q.shape[-1], v.shape[-1] if v is not None else 1
    return dict(D=D, DV=DV, BLOCK_D=_pow2(D), BLOCK_DV=_pow2(DV), OP=spec.op, MASK=spec.mask,
                F32_DOT=_INTERPRET, IEEE=(q.dtype == torch.float32 and not _INTERPRET), BTHD=bthd)


def _one_layout(*xs):
    """(the tensors, bthd): [B, H, T, D] tensors the kernels read in place, all contiguous (bthd False) or all
    transposed views of contiguous [B, T, H, D] tensors (bthd True: the layout the model's projections give, so
    no copy); any other mix is copied to contiguous."""
    if all(x.is_contiguous() for x in xs):
        return xs, False
    if all(x.transpose(1, 2).is_contiguous() for x in xs):
        return xs, True
    return tuple(x.contiguous() for x in xs), False


def _in_layout(x, bthd):
    """``x`` stored as the kernels read it under ``bthd`` (a copy only when it is not)."""
    if bthd:
        return x if x.transpose(1, 2).is_contiguous() else x.transpose(1, 2).contiguous().transpose(1, 2)
    return x.contiguous()


def _as_promised(like, x):
    """``x`` with the strides ``torch.empty_like(like)`` has, as the operators' fake versions promise torch.compile
    (a copy only when the kernels had to read a mixed layout as contiguous). The strides are read from a meta
    tensor: no memory is allocated on the hot path to learn them."""
    if x.stride() == torch.empty_like(like, device="meta").stride():
        return x
    return torch.empty_like(like).copy_(x)


_NO_DOC: dict[torch.device, torch.Tensor] = {}   # the kernels' DOC argument when there are no documents


def _doc(doc_ids, q):
    """The int32 document ids the kernels read, or (without documents) a one-element placeholder they never read,
    made once per device instead of a zeroed allocation on every call."""
    if doc_ids is not None:
        return doc_ids.to(torch.int32).contiguous(), True
    if q.device not in _NO_DOC:
        _NO_DOC[q.device] = torch.zeros(1, dtype=torch.int32, device=q.device)
    return _NO_DOC[q.device], False


def _forward(q, k, v, s0, v0, doc_ids, spec, write_out=True, write_stat=True):
    from . import triton_kernels as tk
    B, H, T, _ = q.shape
    (q, k, *v), bthd = _one_layout(q, k, *([v] if v is not None else []))
    v = v[0] if v else None
    out = torch.empty_like(v) if write_out else q.new_empty(1)
    stat = torch.empty(B, H, T, device=q.device, dtype=torch.float32)
    doc, has_doc = _doc(doc_ids, q)
    blocks = _blocks("fwd", q.shape[-1])
    grid = (triton_cdiv(T, blocks["BLOCK_M"]), B * H)
    tk.attn_fwd[grid](q, k, v if v is not None else q, s0 if s0 is not None else stat,
                      v0 if v0 is not None else stat, doc, out, stat, H, T, spec.w, spec.scale, spec.sig_bias,
                      spec.softpick_eps, **_common(q, v, spec, bthd), HAS_DOC=has_doc, HAS_SINK=s0 is not None,
                      HAS_V0=v0 is not None, WRITE_OUT=write_out, WRITE_STAT=write_stat, **blocks)
    return out, stat


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _sink_terms(s0, stat, spec):
    """Per-row weight of the sink column, d(weight)/d(logit), and the softpick e = exp(s0 - stat)."""
    from . import triton_kernels as tk
    if spec.op == tk.OPS["softmax"]:
        w = torch.exp(s0 - stat)
        return w, None
    if spec.op == tk.OPS["sigmoid"]:
        w = torch.sigmoid(s0 + spec.sig_bias)
        return w, w * (1 - w)
    if spec.op == tk.OPS["elu"]:
        e = torch.exp(s0.clamp(max=0))
        return torch.where(s0 > 0, s0 + 1, e), torch.where(s0 > 0, torch.ones_like(e), e)
    e = torch.exp(s0 - stat)
    return torch.relu(e - torch.exp(-stat)), e


# torch.compile sees the fused attention as two opaque operators, forward and backward: inductor compiles the model
# around them and calls them as they are, so the kernels are launched by this module with its own argument types
# in eager and compiled runs alike (inductor's own code for a Triton kernel inside its graph passes Python floats
# as fp64), and a compiled model runs on the CPU too, its kernels interpreted.
@torch.library.custom_op("sinkpaper::fused_attention", mutates_args=())
def _fused_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, s0: torch.Tensor | None,
                     v0: torch.Tensor | None, doc_ids: torch.Tensor | None, op: int, mask: int, w: int, scale: float,
                     sig_bias: float, softpick_eps: float, deterministic: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(out, stat): the forward kernel at one _Spec (its fields, flattened: an operator's arguments are plain).
    ``deterministic`` is the backward's choice, carried here so the autograd context has it."""
    spec = _Spec(op, mask, w, scale, sig_bias, softpick_eps)
    out, stat = _forward(q, k, v, s0, v0, doc_ids, spec, write_stat=op in _STAT_IDS)
    return _as_promised(v, out), stat


@_fused_attention.register_fake
def _(q, k, v, s0, v0, doc_ids, op, mask, w, scale, sig_bias, softpick_eps, deterministic):
    B, H, T, _ = q.shape
    return torch.empty_like(v), q.new_empty((B, H, T), dtype=torch.float32)


@torch.library.custom_op("sinkpaper::fused_attention_backward", mutates_args=())
def _fused_attention_backward(dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                              out: torch.Tensor, stat: torch.Tensor, v_after: torch.Tensor | None,
                              doc_ids: torch.Tensor | None, op: int, mask: int, w: int, scale: float,
                              sig_bias: float, deterministic: bool
                              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dq, dk, dv, delta). delta_i = dO_i . (A V)_i (``v_after``: the paper's V bias, added to ``out`` after the
    attention, taken off first) comes from one pass over O and dO. Deterministic: one program per key block for dK
    and dV, one per query block for dQ (S and dP computed twice, 7 matmuls); otherwise the key-block programs add
    dQ in fp32 with atomics (5 matmuls; the sum's order, so its last bits, varies from call to call)."""
    from . import triton_kernels as tk
    B, H, T, D = q.shape
    DV = v.shape[-1]
    spec = _Spec(op, mask, w, scale, sig_bias, 0.0)
    given = q, k, v
    (q, k, v), bthd = _one_layout(q, k, v)
    out, dout = _in_layout(out, bthd), _in_layout(dout, bthd)   # read with v's layout
    delta = torch.empty(B, H, T, device=q.device, dtype=torch.float32)
    tk.bwd_delta[(triton_cdiv(T, 64), B * H)](out, dout, v_after if v_after is not None else delta, delta, H, T,
                                              DV=DV, BLOCK_DV=_pow2(DV), BLOCK_M=64, SUB_V0=v_after is not None,
                                              BTHD=bthd)
    dk, dv = torch.empty_like(k), torch.empty_like(v)
    dq_acc = None if deterministic else torch.zeros_like(q, dtype=torch.float32)
    doc, has_doc = _doc(doc_ids, q)
    common = dict(**_common(q, v, spec, bthd), HAS_DOC=has_doc)
    blocks = _blocks("dkdv", D)
    tk.attn_bwd_dkdv[(triton_cdiv(T, blocks["BLOCK_N"]), B * H)](
        q, k, v, dout, stat, delta, doc, dk, dv, dq_acc if dq_acc is not None else delta, H, T, w, scale, sig_bias,
        **common, ATOMIC_DQ=not deterministic, **blocks)
    if dq_acc is not None:
        dq = dq_acc.to(q.dtype)
    else:
        dq = torch.empty_like(q)
        blocks = _blocks("dq", D)
        tk.attn_bwd_dq[(triton_cdiv(T, blocks["BLOCK_M"]), B * H)](
            q, k, v, dout, stat, delta, doc, dq, H, T, w, scale, sig_bias, **common, **blocks)
    return (*(_as_promised(x, g) for x, g in zip(given, (dq, dk, dv))), delta)


@_fused_attention_backward.register_fake
def _(dout, q, k, v, out, stat, v_after, doc_ids, op, mask, w, scale, sig_bias, deterministic):
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v), stat.new_empty(stat.shape)


def _setup_context(ctx, inputs, output):
    q, k, v, s0, v0, doc_ids, *fields, deterministic = inputs
    out, stat = output
    ctx.save_for_backward(q, k, v, out, stat, s0, v0, doc_ids)
    ctx.spec = _Spec(*fields)
    ctx.deterministic = deterministic
    ctx.mark_non_differentiable(stat)


def _backward(ctx, dout, _dstat):
    from . import triton_kernels as tk
    q, k, v, out, stat, s0, v0, doc_ids = ctx.saved_tensors
    spec = ctx.spec
    B, H, T, D = q.shape
    v_after = v0 if s0 is None and v0 is not None else None  # the paper's V bias: out = A V + v*, outside A V
    dq, dk, dv, delta = _fused_attention_backward(dout, q, k, v, out, stat, v_after, doc_ids, spec.op, spec.mask,
                                                  spec.w, spec.scale, spec.sig_bias, ctx.deterministic)
    ds0 = dv0 = None
    if v_after is not None and ctx.needs_input_grad[4]:
        dv0 = dout.float().sum(dim=(0, 2))  # d(out)/d(v*) = 1 for every row: sum dO over batch and tokens
    if s0 is not None:
        w0, g0 = _sink_terms(s0, stat, spec)
        dp0 = (dout.float() * v0.float()[None, :, None, :].expand(B, H, 1, -1)).sum(-1) if v0 is not None \
            else torch.zeros_like(s0)
        if spec.op == tk.OPS["softmax"]:
            ds0 = w0 * (dp0 - delta)
        elif spec.op == tk.OPS["softpick"]:
            ds0 = g0 * (torch.where(s0 > 0, dp0, 0.0) - torch.sign(s0) * delta)
        else:
            ds0 = g0 * dp0
        if v0 is not None and ctx.needs_input_grad[4]:
            dv0 = torch.einsum("bht,bhtd->hd", w0, dout.float())
    return (dq, dk, dv, ds0, dv0) + (None,) * 8


_fused_attention.register_autograd(_backward, setup_context=_setup_context)


def _sink_logits(q, sink_logit, k_bias, v_bias, scale, dtype=torch.float32):
    """[B, H, T] fp32 (or `dtype`) logit of the sink column for every row (differentiable), or None without a sink."""
    B, H, T, D = q.shape
    if sink_logit is not None:
        return sink_logit.to(dtype).view(1, H, 1).expand(B, H, T).contiguous()
    if k_bias is not None:
        return (scale * torch.einsum("bhtd,hd->bht", q.to(dtype), k_bias.to(dtype).expand(H, D))).contiguous()
    return None  # no extra key (a V bias alone is added after the attention, not a column)


# ------------------------------------------------------------------------------------------------ public API
def attention(q, k, v, *, op="softmax", causal=True, window=None, prefix=None, doc_ids=None, scale=None,
              sink_logit=None, k_bias=None, v_bias=None, sigmoid_bias=0.0, return_lse=False, softpick_eps=1e-6,
              impl="auto", deterministic=True):
    """Fused attention over q, k [B, H, T, D], v [B, H, T, Dv] without the T x T matrix.

    op: softmax | sigmoid (sigmoid(x + sigmoid_bias), no normalization) | elu (elu(x) + 1, no normalization) |
    softpick, with x = scale * q.k (scale defaults to 1/sqrt(D)). Masks: causal; window=w (the last w keys,
    itself included); prefix=p (the first p positions see each other); doc_ids [B, T] (within a document).
    Sinks and biases ([H, D], or [1, D] shared by all heads), as in `sinkpaper.attention.attention_reference`:
    k_bias (+ v_bias): the paper's KV bias, an extra key k* with value v* every query sees (v_bias=None: v* = 0,
    the K bias); sink_logit [H] (+ v_bias): an extra key with that fixed logit (value v*, or zero); v_bias
    alone: the paper's V bias, added to every output row after the attention (no extra key, no column).
    Differentiable in q, k, v, sink_logit, k_bias, v_bias. With return_lse, also the fp32 row statistic
    [B, H, T]: log-sum-exp (softmax, sink included), log(sum |e^x - 1| + eps) (softpick), log of the row sum
    of the weights (sigmoid, elu). deterministic=False lets the Triton backward add dQ with atomics from its
    key-block programs (two fewer matmuls; the last bits of dQ vary from call to call); the default computes it
    in its own pass, bitwise the same on every call (tests and the book use it).
    """
    _check(q, k, v, op, causal, window, prefix, doc_ids, scale, sink_logit, k_bias, v_bias, sigmoid_bias, impl)
    if not isinstance(deterministic, bool):
        raise ValueError(f"deterministic must be True or False, got {deterministic!r}")
    if not _use_triton(q, impl):
        return reference_attention(q, k, v, op=op, causal=causal, window=window, prefix=prefix, doc_ids=doc_ids,
                                   scale=scale, sink_logit=sink_logit, k_bias=k_bias, v_bias=v_bias,
                                   sigmoid_bias=sigmoid_bias, return_lse=return_lse, softpick_eps=softpick_eps)
    spec = _spec(op, causal, window, prefix, scale, q.shape[-1], sigmoid_bias, softpick_eps)
    s0 = _sink_logits(q, sink_logit, k_bias, v_bias, spec.scale)
    v0 = v_bias.float().expand(q.shape[1], v.shape[-1]).contiguous() if v_bias is not None else None
    (q, k, v), _ = _one_layout(q, k, v)
    out, stat = _fused_attention(q, k, v, s0, v0, doc_ids, spec.op, spec.mask,
                                 spec.w, spec.scale, spec.sig_bias, spec.softpick_eps, deterministic)
    if op in ("sigmoid", "elu") and return_lse:
        # the training forward skips the row sums; recompute them for the caller
        _, stat = _forward(q, k, None, s0, None, doc_ids, spec, write_out=False)
    return (out, stat) if return_lse else out


def column_stats(q, k, *, op="softmax", causal=True, window=None, prefix=None, doc_ids=None, scale=None,
                 sink_logit=None, k_bias=None, sigmoid_bias=0.0, softpick_eps=1e-6, impl="auto") -> ColumnStats:
    """The paper's alpha_k for every key without the T x T matrix: `ColumnStats(alpha [B, H, T], sink [B, H])`.

    alpha_k is the mean, over the queries that see key k, of the attention k receives: the probabilities for
    softmax and softpick (the sink column in the normalizer), the paper's proxy |w| / sum |w| for sigmoid and
    elu. `sink` is the mean attention on the sink / bias column (None without one; values, and so the paper's
    V bias added after the attention, never change the map, so it takes no argument here). Two passes: the forward
    without values (row statistics only), then one program per key block. Memory O(B * H * T).

    impl: "auto" (Triton on CUDA or under TRITON_INTERPRET=1, else "blocked"), "triton", "blocked" (the same two
    passes in PyTorch over blocks of rows and columns, `sinkpaper.fused.blocked`; fp32 accumulation, fp64 for
    fp64 inputs; memory O(B * H * T * block)), "reference" (the materialized maps).
    """
    _check(q, k, None, op, causal, window, prefix, doc_ids, scale, sink_logit, k_bias, None, sigmoid_bias, impl,
           STATS_IMPLS)
    if impl == "blocked" or (impl == "auto" and not _use_triton(q, impl)):
        return _blocked(q, k, None, op, causal, window, prefix, doc_ids, scale, sink_logit, k_bias, sigmoid_bias,
                        softpick_eps)[0]
    if not _use_triton(q, impl):
        return reference_column_stats(q, k, op=op, causal=causal, window=window, prefix=prefix, doc_ids=doc_ids,
                                      scale=scale, sink_logit=sink_logit, k_bias=k_bias, sigmoid_bias=sigmoid_bias,
                                      softpick_eps=softpick_eps)
    from . import triton_kernels as tk
    with torch.no_grad():
        B, H, T, D = q.shape
        (q, k), bthd = _one_layout(q, k)
        spec = _spec(op, causal, window, prefix, scale, D, sigmoid_bias, softpick_eps)
        s0 = _sink_logits(q, sink_logit, k_bias, None, spec.scale)
        _, stat = _forward(q, k, None, s0, None, doc_ids, spec, write_out=False)
        alpha = torch.empty(B, H, T, device=q.device, dtype=torch.float32)
        doc, has_doc = _doc(doc_ids, q)
        blocks = _blocks("stats", D)
        common = _common(q, None, spec, bthd)
        del common["DV"], common["BLOCK_DV"]
        tk.column_stats_kernel[(triton_cdiv(T, blocks["BLOCK_N"]), B * H)](
            q, k, stat, doc, alpha, H, T, spec.w, spec.scale, spec.sig_bias, **common, HAS_DOC=has_doc, **blocks)
        sink = None if s0 is None else sink_share(op, s0, stat, spec.sig_bias).mean(-1)
    return ColumnStats(alpha, sink)


def _blocked(q, k, v, op, causal, window, prefix, doc_ids, scale, sink_logit, k_bias, sigmoid_bias, softpick_eps):
    acc = torch.float64 if q.dtype == torch.float64 else torch.float32
    scale = float(scale if scale is not None else 1.0 / math.sqrt(q.shape[-1]))
    with torch.no_grad():
        s0 = _sink_logits(q, sink_logit, k_bias, None, scale, acc)
        return blocked_column_stats(q, k, v, op=op, causal=causal, window=window, prefix=prefix or None,
                                    doc_ids=doc_ids, scale=scale, s0=s0, sigmoid_bias=float(sigmoid_bias),
                                    softpick_eps=softpick_eps)


def attention_column_stats(q, k, v, *, op="softmax", causal=True, window=None, prefix=None, doc_ids=None,
                           scale=None, sink_logit=None, k_bias=None, sigmoid_bias=0.0, softpick_eps=1e-6,
                           impl="auto") -> tuple[torch.Tensor, ColumnStats]:
    """The attention output (as `attention`, no gradient, no v_bias) and `column_stats` of one call.

    On the blocked route both come from one shared first pass, with no T x T map: what a model's forward needs
    to report the sink metric at any context length on a CPU. The sink column, if any, has value 0.
    """
    _check(q, k, v, op, causal, window, prefix, doc_ids, scale, sink_logit, k_bias, None, sigmoid_bias, impl,
           STATS_IMPLS)
    kw = dict(op=op, causal=causal, window=window, prefix=prefix, doc_ids=doc_ids, scale=scale,
              sink_logit=sink_logit, k_bias=k_bias, sigmoid_bias=sigmoid_bias, softpick_eps=softpick_eps)
    if impl == "blocked" or (impl == "auto" and not _use_triton(q, impl)):
        stats, out = _blocked(q, k, v, op, causal, window, prefix, doc_ids, scale, sink_logit, k_bias,
                              sigmoid_bias, softpick_eps)
        return out, stats
    with torch.no_grad():
        return attention(q, k, v, **kw, impl=impl), column_stats(q, k, **kw, impl=impl)
