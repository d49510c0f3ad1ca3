"""Fused Triton attention kernels: forward, backward (dQ; dK and dV) and the sink metric's column statistics.

Layouts: q, k [B, H, T, D] and v [B, H, T, DV], all contiguous or (BTHD) all transposed views of contiguous
[B, T, H, D] tensors, the model's own layout, read in place; one program per (block of rows, batch*head).
Every operator shares the same loops and differs only in the per-tile weights (`OP`):

  0 softmax   online softmax in base 2; the stored row statistic is the natural log-sum-exp
  1 sigmoid   w = sigmoid(x + b), no row statistics at all (the row sum only when asked, for the metric)
  2 elu       w = elu(x) + 1, likewise
  3 softpick  w = relu(e^x - 1) / (sum |e^x - 1| + eps) with a running max clamped at >= 0; the stored
              statistic is log(sum |e^x - 1| + eps)

where x = scale * q.k. A sink (a per-head logit, or the paper's k*/v* bias) is one extra column every row
sees: the wrapper passes its per-row logit `S0` [B*H, T] (and `V0` [H, DV]) and the kernels start their
running state from it, so the stored statistic already includes the sink. `V0` without `S0` is the paper's
V bias: v* added to every output row after the attention (no column). The sink's and v*'s own gradients are
per-row reductions done by the wrapper in PyTorch.

The backward: a pass over O and dO for delta_i = dO_i . (A V)_i (`bwd_delta`), then one program per key block for
dK and dV in the transposed orientation (keys x queries, so only loaded operands are transposed), and one per query
block for dQ (deterministic); or, with ATOMIC_DQ, the key-block programs also add dQ in fp32 with atomics.

Masks (`MASK`): 0 none, 1 causal, 2 sliding window of W keys, 3 prefix-LM over the first W positions;
`HAS_DOC` intersects with equal document ids. For plain causal / no mask without documents, tiles that are
entirely visible skip the mask (the second loop of each kernel handles the diagonal / the ragged tail).

Under TRITON_INTERPRET=1 (CPU), `F32_DOT` casts dot operands to fp32 (the interpreter's bf16 dot is wrong).
"""
from __future__ import annotations

import triton
import triton.language as tl

from ..attention.operators import FUSED_OPERATORS

# a global read inside @triton.jit must be a constexpr: the GPU compiler refuses others, the interpreter does not check
LOG2E = tl.constexpr(1.4426950408889634)
OPS = dict(FUSED_OPERATORS)   # operator name -> the OP constexpr the kernels branch on (the operator table's id)
# the ids the kernels' branches compare OP with, named from the operator table (never a literal)
SOFTMAX, SIGMOID, ELU, SOFTPICK = (tl.constexpr(OPS[name]) for name in ("softmax", "sigmoid", "elu", "softpick"))
MASK_NONE, MASK_CAUSAL, MASK_WINDOW, MASK_PREFIX = 0, 1, 2, 3


@triton.jit
def _fp32(x):
    """A scalar argument as fp32. torch.compile (inductor) passes Python floats to a Triton kernel as fp64,
    which would promote every tile they multiply to fp64; the kernels compute in fp32 whatever the caller passes."""
    return tl.cast(x, tl.float32)


@triton.jit
def _head_base(bh, H, T, D, BTHD: tl.constexpr):
    """Where (batch x head) ``bh``'s first row starts: [B, H, T, D] contiguous (rows D apart) or, BTHD, a view of
    a contiguous [B, T, H, D] tensor, as the model's projections give it (rows H * D apart), read in place."""
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    if BTHD:
        return b * T * H * D + h * D
    else:
        return (b * H + h) * T * D


@triton.jit
def _row_stride(H, D, BTHD: tl.constexpr):
    return H * D if BTHD else D


@triton.jit
def _dot(a, b, IEEE: tl.constexpr):
    if IEEE:  # fp32 inputs on a GPU: full precision instead of TF32
        return tl.dot(a, b, input_precision="ieee")
    else:
        return tl.dot(a, b)


@triton.jit
def _visible(i, j, doc_i, doc_j, T, W, MASK: tl.constexpr, HAS_DOC: tl.constexpr):
    """Query i sees key j (the same rules as attention.visible_mask), over index tiles that broadcast against each
    other: i = offs_m[:, None], j = offs_n[None, :] gives queries x keys; i = offs_m[None, :], j = offs_n[:, None]
    the transposed tile (keys x queries) the dK/dV loop computes. doc_i / doc_j broadcast the same way."""
    vis = (i < T) & (j < T)
    if MASK == 1:
        vis = vis & (j <= i)
    elif MASK == 2:
        vis = vis & (j <= i) & (i - j < W)
    elif MASK == 3:
        vis = vis & ((j <= i) | ((i < W) & (j < W)))
    if HAS_DOC:
        vis = vis & (doc_i == doc_j)
    return vis


@triton.jit
def _key_range(m0, T, W, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, MASK: tl.constexpr):
    """Key blocks [lo, hi) that rows m0 .. m0+BLOCK_M-1 can see (lo a multiple of BLOCK_N)."""
    lo = 0
    hi = T
    if MASK == 1:
        hi = tl.minimum(m0 + BLOCK_M, T)
    elif MASK == 2:
        hi = tl.minimum(m0 + BLOCK_M, T)
        lo = tl.maximum(m0 - W + 1, 0) // BLOCK_N * BLOCK_N
    elif MASK == 3:
        hi = tl.minimum(tl.maximum(m0 + BLOCK_M, W), T)
    return lo, hi


@triton.jit
def _query_range(n0, T, W, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, MASK: tl.constexpr):
    """Query blocks [lo, hi) whose rows can see keys n0 .. n0+BLOCK_N-1 (lo a multiple of BLOCK_M)."""
    lo = 0
    hi = T
    if MASK == 1:
        lo = n0 // BLOCK_M * BLOCK_M
    elif MASK == 2:
        lo = n0 // BLOCK_M * BLOCK_M
        hi = tl.minimum(n0 + BLOCK_N + W - 1, T)
    elif MASK == 3:
        lo = tl.where(n0 >= W, n0 // BLOCK_M * BLOCK_M, 0)
    return lo, hi


# ------------------------------------------------------------------------------------------------ forward
@triton.jit
def _fwd_inner(acc, m, l, q, K, V, k_base, v_base, rq, rv, doc_q, DOC, doc_base, offs_m, lo, hi, T, W, scale,
               sig_bias, D: tl.constexpr, DV: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
               BLOCK_DV: tl.constexpr, OP: tl.constexpr, MASK: tl.constexpr, HAS_DOC: tl.constexpr,
               MASKED: tl.constexpr, WRITE_OUT: tl.constexpr, ROWSUM: tl.constexpr, F32_DOT: tl.constexpr,
               IEEE: tl.constexpr):
    offs_d = tl.arange(0, BLOCK_D)
    offs_dv = tl.arange(0, BLOCK_DV)
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(K + k_base + offs_n[:, None] * rq + offs_d[None, :],
                    mask=(offs_n[:, None] < T) & (offs_d[None, :] < D), other=0.0)
        if F32_DOT:
            k = k.to(tl.float32)
        s = _dot(q, tl.trans(k), IEEE)
        if MASKED:
            doc_k = offs_n
            if HAS_DOC:
                doc_k = tl.load(DOC + doc_base + offs_n, mask=offs_n < T, other=-2)
            vis = _visible(offs_m[:, None], offs_n[None, :], doc_q[:, None], doc_k[None, :], T, W, MASK, HAS_DOC)
        if OP == SOFTMAX:
            s = s * (scale * LOG2E)
            if MASKED:
                s = tl.where(vis, s, float("-inf"))
            m_new = tl.maximum(m, tl.max(s, 1))
            alpha = tl.exp2(m - m_new)
            p = tl.exp2(s - m_new[:, None])
            l = l * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None]
            m = m_new
        elif OP == SOFTPICK:
            x = s * scale
            if MASKED:
                m_new = tl.maximum(m, tl.max(tl.where(vis, x, float("-inf")), 1))
            else:
                m_new = tl.maximum(m, tl.max(x, 1))
            alpha = tl.exp(m - m_new)
            e = tl.exp(x - m_new[:, None]) - tl.exp(-m_new)[:, None]  # (e^x - 1) e^-m
            if MASKED:
                e = tl.where(vis, e, 0.0)  # |e^-inf - 1| = 1: masked keys must leave the sum explicitly
            l = l * alpha + tl.sum(tl.abs(e), 1)
            p = tl.maximum(e, 0.0)
            acc = acc * alpha[:, None]
            m = m_new
        elif OP == SIGMOID:
            p = tl.sigmoid(s * scale + sig_bias)
            if MASKED:
                p = tl.where(vis, p, 0.0)
            if ROWSUM:
                l = l + tl.sum(p, 1)
        else:
            x = s * scale
            p = tl.where(x > 0, x + 1.0, tl.exp(tl.minimum(x, 0.0)))
            if MASKED:
                p = tl.where(vis, p, 0.0)
            if ROWSUM:
                l = l + tl.sum(p, 1)
        if WRITE_OUT:
            v = tl.load(V + v_base + offs_n[:, None] * rv + offs_dv[None, :],
                        mask=(offs_n[:, None] < T) & (offs_dv[None, :] < DV), other=0.0)
            if F32_DOT:
                acc += _dot(p, v.to(tl.float32), IEEE)
            else:
                acc += _dot(p.to(v.dtype), v, IEEE)
    return acc, m, l


@triton.jit
def attn_fwd(Q, K, V, S0, V0, DOC, Out, Stat, H, T, W, scale, sig_bias, softpick_eps,
             D: tl.constexpr, DV: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, OP: tl.constexpr, MASK: tl.constexpr,
             HAS_DOC: tl.constexpr, HAS_SINK: tl.constexpr, HAS_V0: tl.constexpr, WRITE_OUT: tl.constexpr,
             WRITE_STAT: tl.constexpr, F32_DOT: tl.constexpr, IEEE: tl.constexpr, BTHD: tl.constexpr = False):
    scale = _fp32(scale)
    sig_bias = _fp32(sig_bias)
    softpick_eps = _fp32(softpick_eps)
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    m0 = pid_m * BLOCK_M
    offs_m = m0 + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    offs_dv = tl.arange(0, BLOCK_DV)
    row_ok = offs_m < T
    bh64 = bh.to(tl.int64)
    q_base = _head_base(bh, H, T, D, BTHD)
    rq = _row_stride(H, D, BTHD)
    v_base = _head_base(bh, H, T, DV, BTHD)
    rv = _row_stride(H, DV, BTHD)
    doc_base = b.to(tl.int64) * T
    q = tl.load(Q + q_base + offs_m[:, None] * rq + offs_d[None, :],
                mask=row_ok[:, None] & (offs_d[None, :] < D), other=0.0)
    if F32_DOT:
        q = q.to(tl.float32)
    doc_q = offs_m
    if HAS_DOC:
        doc_q = tl.load(DOC + doc_base + offs_m, mask=row_ok, other=-1)

    # The running state starts from the sink column (or empty).
    acc = tl.zeros([BLOCK_M, BLOCK_DV], dtype=tl.float32)
    if OP == SOFTMAX:
        m = tl.full([BLOCK_M], -1.0e30, dtype=tl.float32)
    else:
        m = tl.zeros([BLOCK_M], dtype=tl.float32)
    l = tl.zeros([BLOCK_M], dtype=tl.float32)
    if HAS_SINK:
        s0 = tl.load(S0 + bh64 * T + offs_m, mask=row_ok, other=0.0)
        if OP == SOFTMAX:
            m = s0 * LOG2E
            w0 = tl.full([BLOCK_M], 1.0, dtype=tl.float32)
        elif OP == SOFTPICK:
            m = tl.maximum(s0, 0.0)
            e0 = tl.exp(s0 - m) - tl.exp(-m)
            w0 = tl.maximum(e0, 0.0)
            e0 = tl.abs(e0)
        elif OP == SIGMOID:
            w0 = tl.sigmoid(s0 + sig_bias)
        else:
            w0 = tl.where(s0 > 0, s0 + 1.0, tl.exp(tl.minimum(s0, 0.0)))
        if OP == SOFTPICK:
            l = e0
        else:
            l = w0
        if HAS_V0:
            v0 = tl.load(V0 + h * DV + offs_dv, mask=offs_dv < DV, other=0.0).to(tl.float32)
            acc += w0[:, None] * v0[None, :]

    if (MASK == 1) and (not HAS_DOC):
        # keys before the diagonal block are visible to every row of this block
        acc, m, l = _fwd_inner(acc, m, l, q, K, V, q_base, v_base, rq, rv, doc_q, DOC, doc_base, offs_m, 0, m0, T, W,
                               scale, sig_bias, D, DV, BLOCK_N, BLOCK_D, BLOCK_DV, OP, MASK, HAS_DOC, False,
                               WRITE_OUT, WRITE_STAT, F32_DOT, IEEE)
        acc, m, l = _fwd_inner(acc, m, l, q, K, V, q_base, v_base, rq, rv, doc_q, DOC, doc_base, offs_m, m0,
                               tl.minimum(m0 + BLOCK_M, T), T, W, scale, sig_bias, D, DV, BLOCK_N, BLOCK_D,
                               BLOCK_DV, OP, MASK, HAS_DOC, True, WRITE_OUT, WRITE_STAT, F32_DOT, IEEE)
    elif (MASK == 0) and (not HAS_DOC):
        full = T // BLOCK_N * BLOCK_N
        acc, m, l = _fwd_inner(acc, m, l, q, K, V, q_base, v_base, rq, rv, doc_q, DOC, doc_base, offs_m, 0, full, T, W,
                               scale, sig_bias, D, DV, BLOCK_N, BLOCK_D, BLOCK_DV, OP, MASK, HAS_DOC, False,
                               WRITE_OUT, WRITE_STAT, F32_DOT, IEEE)
        acc, m, l = _fwd_inner(acc, m, l, q, K, V, q_base, v_base, rq, rv, doc_q, DOC, doc_base, offs_m, full, T, T, W,
                               scale, sig_bias, D, DV, BLOCK_N, BLOCK_D, BLOCK_DV, OP, MASK, HAS_DOC, True,
                               WRITE_OUT, WRITE_STAT, F32_DOT, IEEE)
    else:
        lo, hi = _key_range(m0, T, W, BLOCK_M, BLOCK_N, MASK)
        acc, m, l = _fwd_inner(acc, m, l, q, K, V, q_base, v_base, rq, rv, doc_q, DOC, doc_base, offs_m, lo, hi, T, W,
                               scale, sig_bias, D, DV, BLOCK_N, BLOCK_D, BLOCK_DV, OP, MASK, HAS_DOC, True,
                               WRITE_OUT, WRITE_STAT, F32_DOT, IEEE)

    l = tl.where(row_ok, l, 1.0)  # rows past T are never stored; keep them finite
    if OP == SOFTMAX:
        out = acc / l[:, None]
        stat = (m + tl.log2(l)) / LOG2E
    elif OP == SOFTPICK:
        denom = l + softpick_eps * tl.exp(-m)
        out = acc / denom[:, None]
        stat = m + tl.log(denom)
    else:
        out = acc
        stat = l
    if HAS_V0 and (not HAS_SINK):  # the paper's V bias: out = A V + v*, after the normalization
        v0 = tl.load(V0 + h * DV + offs_dv, mask=offs_dv < DV, other=0.0).to(tl.float32)
        out = out + v0[None, :]
    if WRITE_OUT:
        tl.store(Out + v_base + offs_m[:, None] * rv + offs_dv[None, :], out.to(Out.dtype.element_ty),
                 mask=row_ok[:, None] & (offs_dv[None, :] < DV))
    if WRITE_STAT:
        if (OP == SIGMOID) or (OP == ELU):
            stat = tl.log(stat)  # log of the row sum (only accumulated when asked for)
        tl.store(Stat + bh64 * T + offs_m, stat, mask=row_ok)


# ------------------------------------------------------------------------------------------------ backward
@triton.jit
def bwd_delta(O, DO, V0, Delta, H, T, DV: tl.constexpr, BLOCK_DV: tl.constexpr, BLOCK_M: tl.constexpr,
              SUB_V0: tl.constexpr, BTHD: tl.constexpr = False):
    """delta_i = dO_i . (A V)_i in fp32, reading O and dO once in their own dtype. SUB_V0: the paper's V bias was
    added to O after the attention (out = A V + v*), so it is taken off first; a sink column's value is part of A V."""
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_dv = tl.arange(0, BLOCK_DV)
    ok = (offs_m[:, None] < T) & (offs_dv[None, :] < DV)
    base = _head_base(bh, H, T, DV, BTHD)
    rv = _row_stride(H, DV, BTHD)
    o = tl.load(O + base + offs_m[:, None] * rv + offs_dv[None, :], mask=ok, other=0.0).to(tl.float32)
    do = tl.load(DO + base + offs_m[:, None] * rv + offs_dv[None, :], mask=ok, other=0.0).to(tl.float32)
    if SUB_V0:
        v0 = tl.load(V0 + (bh % H) * DV + offs_dv, mask=offs_dv < DV, other=0.0).to(tl.float32)
        o = tl.where(ok, o - v0[None, :], 0.0)
    tl.store(Delta + bh.to(tl.int64) * T + offs_m, tl.sum(o * do, 1), mask=offs_m < T)


@triton.jit
def _tile_grads(s, dp, vis, stat, delta, scale, sig_bias, OP: tl.constexpr, MASKED: tl.constexpr):
    """Weights w and dL/dx (x = scale * q.k) of one tile, given the forward's row statistic. ``stat`` and ``delta``
    come broadcast against the tile: [rows, 1] for a queries x keys tile, [1, rows] for the transposed one, so both
    backward loops share this one function. Softmax works in base 2 (one multiply-add per element)."""
    if OP == SOFTMAX:
        w = tl.exp2(s * (scale * LOG2E) - stat * LOG2E)
        if MASKED:
            w = tl.where(vis, w, 0.0)
        ds = w * (dp - delta)
    elif OP == SIGMOID:
        w = tl.sigmoid(s * scale + sig_bias)
        if MASKED:
            w = tl.where(vis, w, 0.0)
        ds = w * (1.0 - w) * dp
    elif OP == ELU:
        x = s * scale
        ex = tl.exp(tl.minimum(x, 0.0))
        w = tl.where(x > 0, x + 1.0, ex)
        ds = tl.where(x > 0, 1.0, ex) * dp
        if MASKED:
            w = tl.where(vis, w, 0.0)
            ds = tl.where(vis, ds, 0.0)
    else:
        # w = relu(e^x - 1) / N with N = sum |e^x - 1| + eps = e^stat; dx = e (1[x>0] dp - sign(x) delta)
        x = s * scale
        e = tl.exp(x - stat)
        w = tl.maximum(e - tl.exp(-stat), 0.0)
        sign = tl.where(x > 0, 1.0, tl.where(x < 0, -1.0, 0.0))
        ds = e * (tl.where(x > 0, dp, 0.0) - sign * delta)
        if MASKED:
            w = tl.where(vis, w, 0.0)
            ds = tl.where(vis, ds, 0.0)
    return w, ds


@triton.jit
def _dkdv_inner(dk, dv, k, v, Q, DO, Stat, Delta, DQA, q_base, v_base, rq, rv, row_base, doc_k, DOC, doc_base, offs_n, lo,
                hi, T, W, scale, sig_bias, D: tl.constexpr, DV: tl.constexpr, BLOCK_M: tl.constexpr,
                BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr, OP: tl.constexpr, MASK: tl.constexpr,
                HAS_DOC: tl.constexpr, MASKED: tl.constexpr, ATOMIC_DQ: tl.constexpr, F32_DOT: tl.constexpr,
                IEEE: tl.constexpr):
    """One key block against the query blocks [lo, hi), in the transposed orientation (keys x queries): S^T = K Q^T
    and dP^T = V dO^T, so dV += W^T dO and dK += dS^T Q need no transpose of a computed tile, only of the loaded q
    and dO. ATOMIC_DQ: also dQ += dS K for these rows, added in fp32 with atomics (5 matmuls instead of 7, not
    bitwise reproducible)."""
    offs_d = tl.arange(0, BLOCK_D)
    offs_dv = tl.arange(0, BLOCK_DV)
    for start_m in range(lo, hi, BLOCK_M):
        start_m = tl.multiple_of(start_m, BLOCK_M)
        offs_m = start_m + tl.arange(0, BLOCK_M)
        row_ok = offs_m < T
        q = tl.load(Q + q_base + offs_m[:, None] * rq + offs_d[None, :],
                    mask=row_ok[:, None] & (offs_d[None, :] < D), other=0.0)
        do = tl.load(DO + v_base + offs_m[:, None] * rv + offs_dv[None, :],
                     mask=row_ok[:, None] & (offs_dv[None, :] < DV), other=0.0)
        stat = tl.load(Stat + row_base + offs_m, mask=row_ok, other=0.0)
        delta = tl.load(Delta + row_base + offs_m, mask=row_ok, other=0.0)
        if F32_DOT:
            q = q.to(tl.float32)
            do = do.to(tl.float32)
        st = _dot(k, tl.trans(q), IEEE)                  # [BLOCK_N, BLOCK_M]
        dpt = _dot(v, tl.trans(do), IEEE)
        vis = st > 0  # placeholder when unmasked (rows past T contribute 0: their q, dO, delta load as 0)
        if MASKED:
            doc_q = offs_m
            if HAS_DOC:
                doc_q = tl.load(DOC + doc_base + offs_m, mask=row_ok, other=-1)
            vis = _visible(offs_m[None, :], offs_n[:, None], doc_q[None, :], doc_k[:, None], T, W, MASK, HAS_DOC)
        wt, dst = _tile_grads(st, dpt, vis, stat[None, :], delta[None, :], scale, sig_bias, OP, MASKED)
        dv += _dot(wt.to(do.dtype), do, IEEE)
        dk += _dot(dst.to(q.dtype), q, IEEE)
        if ATOMIC_DQ:
            dq = _dot(tl.trans(dst).to(k.dtype), k, IEEE) * scale
            tl.atomic_add(DQA + q_base + offs_m[:, None] * rq + offs_d[None, :], dq,
                          mask=row_ok[:, None] & (offs_d[None, :] < D))
    return dk, dv


@triton.jit
def attn_bwd_dkdv(Q, K, V, DO, Stat, Delta, DOC, DK, DVout, DQA, H, T, W, scale, sig_bias,
                  D: tl.constexpr, DV: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, OP: tl.constexpr, MASK: tl.constexpr,
                  HAS_DOC: tl.constexpr, ATOMIC_DQ: tl.constexpr, F32_DOT: tl.constexpr, IEEE: tl.constexpr, BTHD: tl.constexpr = False):
    """One program per key block: loop over the query blocks that see it (dK, dV without atomics; dQ too, with
    atomics, when ATOMIC_DQ). Under the causal mask the first BLOCK_N rows from the key block's start are the
    diagonal (masked), the rest see the whole block (BLOCK_N is a multiple of BLOCK_M)."""
    scale = _fp32(scale)
    sig_bias = _fp32(sig_bias)
    pid_n = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    n0 = pid_n * BLOCK_N
    offs_n = n0 + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    offs_dv = tl.arange(0, BLOCK_DV)
    col_ok = offs_n < T
    bh64 = bh.to(tl.int64)
    q_base = _head_base(bh, H, T, D, BTHD)
    rq = _row_stride(H, D, BTHD)
    v_base = _head_base(bh, H, T, DV, BTHD)
    rv = _row_stride(H, DV, BTHD)
    row_base = bh64 * T
    doc_base = b.to(tl.int64) * T
    k = tl.load(K + q_base + offs_n[:, None] * rq + offs_d[None, :],
                mask=col_ok[:, None] & (offs_d[None, :] < D), other=0.0)
    v = tl.load(V + v_base + offs_n[:, None] * rv + offs_dv[None, :],
                mask=col_ok[:, None] & (offs_dv[None, :] < DV), other=0.0)
    if F32_DOT:
        k = k.to(tl.float32)
        v = v.to(tl.float32)
    doc_k = offs_n
    if HAS_DOC:
        doc_k = tl.load(DOC + doc_base + offs_n, mask=col_ok, other=-2)
    dk = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_DV], dtype=tl.float32)
    if (MASK == 1) and (not HAS_DOC):
        dk, dv = _dkdv_inner(dk, dv, k, v, Q, DO, Stat, Delta, DQA, q_base, v_base, rq, rv, row_base, doc_k, DOC, doc_base,
                             offs_n, n0, tl.minimum(n0 + BLOCK_N, T), T, W, scale, sig_bias, D,
                             DV, BLOCK_M, BLOCK_D, BLOCK_DV, OP, MASK, HAS_DOC, True, ATOMIC_DQ, F32_DOT, IEEE)
        dk, dv = _dkdv_inner(dk, dv, k, v, Q, DO, Stat, Delta, DQA, q_base, v_base, rq, rv, row_base, doc_k, DOC, doc_base,
                             offs_n, n0 + BLOCK_N, T, T, W, scale, sig_bias, D, DV,
                             BLOCK_M, BLOCK_D, BLOCK_DV, OP, MASK, HAS_DOC, False, ATOMIC_DQ, F32_DOT, IEEE)
    elif (MASK == 0) and (not HAS_DOC):
        dk, dv = _dkdv_inner(dk, dv, k, v, Q, DO, Stat, Delta, DQA, q_base, v_base, rq, rv, row_base, doc_k, DOC, doc_base,
                             offs_n, 0, T, T, W, scale, sig_bias, D, DV, BLOCK_M, BLOCK_D, BLOCK_DV,
                             OP, MASK, HAS_DOC, False, ATOMIC_DQ, F32_DOT, IEEE)
    else:
        lo, hi = _query_range(n0, T, W, BLOCK_M, BLOCK_N, MASK)
        dk, dv = _dkdv_inner(dk, dv, k, v, Q, DO, Stat, Delta, DQA, q_base, v_base, rq, rv, row_base, doc_k, DOC, doc_base,
                             offs_n, lo, hi, T, W, scale, sig_bias, D, DV, BLOCK_M, BLOCK_D, BLOCK_DV,
                             OP, MASK, HAS_DOC, True, ATOMIC_DQ, F32_DOT, IEEE)
    tl.store(DK + q_base + offs_n[:, None] * rq + offs_d[None, :], (dk * scale).to(DK.dtype.element_ty),
             mask=col_ok[:, None] & (offs_d[None, :] < D))
    tl.store(DVout + v_base + offs_n[:, None] * rv + offs_dv[None, :], dv.to(DVout.dtype.element_ty),
             mask=col_ok[:, None] & (offs_dv[None, :] < DV))


@triton.jit
def _dq_inner(dq, q, do, stat, delta, K, V, k_base, v_base, rq, rv, doc_q, DOC, doc_base, offs_m, lo, hi, T, W, scale,
              sig_bias, D: tl.constexpr, DV: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
              BLOCK_DV: tl.constexpr, OP: tl.constexpr, MASK: tl.constexpr, HAS_DOC: tl.constexpr,
              MASKED: tl.constexpr, F32_DOT: tl.constexpr, IEEE: tl.constexpr):
    offs_d = tl.arange(0, BLOCK_D)
    offs_dv = tl.arange(0, BLOCK_DV)
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        offs_n = start_n + tl.arange(0, BLOCK_N)
        col_ok = offs_n < T
        k = tl.load(K + k_base + offs_n[:, None] * rq + offs_d[None, :],
                    mask=col_ok[:, None] & (offs_d[None, :] < D), other=0.0)
        v = tl.load(V + v_base + offs_n[:, None] * rv + offs_dv[None, :],
                    mask=col_ok[:, None] & (offs_dv[None, :] < DV), other=0.0)
        if F32_DOT:
            k = k.to(tl.float32)
            v = v.to(tl.float32)
        s = _dot(q, tl.trans(k), IEEE)
        dp = _dot(do, tl.trans(v), IEEE)
        vis = s > 0
        if MASKED:
            doc_k = offs_n
            if HAS_DOC:
                doc_k = tl.load(DOC + doc_base + offs_n, mask=col_ok, other=-2)
            vis = _visible(offs_m[:, None], offs_n[None, :], doc_q[:, None], doc_k[None, :], T, W, MASK, HAS_DOC)
        w, ds = _tile_grads(s, dp, vis, stat[:, None], delta[:, None], scale, sig_bias, OP, MASKED)
        dq += _dot(ds.to(k.dtype), k, IEEE)
    return dq


@triton.jit
def attn_bwd_dq(Q, K, V, DO, Stat, Delta, DOC, DQ, H, T, W, scale, sig_bias,
                D: tl.constexpr, DV: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, OP: tl.constexpr, MASK: tl.constexpr,
                HAS_DOC: tl.constexpr, F32_DOT: tl.constexpr, IEEE: tl.constexpr, BTHD: tl.constexpr = False):
    scale = _fp32(scale)
    sig_bias = _fp32(sig_bias)
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    m0 = pid_m * BLOCK_M
    offs_m = m0 + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    offs_dv = tl.arange(0, BLOCK_DV)
    row_ok = offs_m < T
    bh64 = bh.to(tl.int64)
    q_base = _head_base(bh, H, T, D, BTHD)
    rq = _row_stride(H, D, BTHD)
    v_base = _head_base(bh, H, T, DV, BTHD)
    rv = _row_stride(H, DV, BTHD)
    doc_base = b.to(tl.int64) * T
    q = tl.load(Q + q_base + offs_m[:, None] * rq + offs_d[None, :],
                mask=row_ok[:, None] & (offs_d[None, :] < D), other=0.0)
    do = tl.load(DO + v_base + offs_m[:, None] * rv + offs_dv[None, :],
                 mask=row_ok[:, None] & (offs_dv[None, :] < DV), other=0.0)
    stat = tl.load(Stat + bh64 * T + offs_m, mask=row_ok, other=0.0)
    delta = tl.load(Delta + bh64 * T + offs_m, mask=row_ok, other=0.0)
    if F32_DOT:
        q = q.to(tl.float32)
        do = do.to(tl.float32)
    doc_q = offs_m
    if HAS_DOC:
        doc_q = tl.load(DOC + doc_base + offs_m, mask=row_ok, other=-1)
    dq = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    if (MASK == 1) and (not HAS_DOC):
        dq = _dq_inner(dq, q, do, stat, delta, K, V, q_base, v_base, rq, rv, doc_q, DOC, doc_base, offs_m, 0, m0, T, W,
                       scale, sig_bias, D, DV, BLOCK_N, BLOCK_D, BLOCK_DV, OP, MASK, HAS_DOC, False, F32_DOT, IEEE)
        dq = _dq_inner(dq, q, do, stat, delta, K, V, q_base, v_base, rq, rv, doc_q, DOC, doc_base, offs_m, m0,
                       tl.minimum(m0 + BLOCK_M, T), T, W, scale, sig_bias, D, DV, BLOCK_N, BLOCK_D, BLOCK_DV,
                       OP, MASK, HAS_DOC, True, F32_DOT, IEEE)
    elif (MASK == 0) and (not HAS_DOC):
        full = T // BLOCK_N * BLOCK_N
        dq = _dq_inner(dq, q, do, stat, delta, K, V, q_base, v_base, rq, rv, doc_q, DOC, doc_base, offs_m, 0, full, T, W,
                       scale, sig_bias, D, DV, BLOCK_N, BLOCK_D, BLOCK_DV, OP, MASK, HAS_DOC, False, F32_DOT, IEEE)
        dq = _dq_inner(dq, q, do, stat, delta, K, V, q_base, v_base, rq, rv, doc_q, DOC, doc_base, offs_m, full, T, T, W,
                       scale, sig_bias, D, DV, BLOCK_N, BLOCK_D, BLOCK_DV, OP, MASK, HAS_DOC, True, F32_DOT, IEEE)
    else:
        lo, hi = _key_range(m0, T, W, BLOCK_M, BLOCK_N, MASK)
        dq = _dq_inner(dq, q, do, stat, delta, K, V, q_base, v_base, rq, rv, doc_q, DOC, doc_base, offs_m, lo, hi, T, W,
                       scale, sig_bias, D, DV, BLOCK_N, BLOCK_D, BLOCK_DV, OP, MASK, HAS_DOC, True, F32_DOT, IEEE)
    tl.store(DQ + q_base + offs_m[:, None] * rq + offs_d[None, :], (dq * scale).to(DQ.dtype.element_ty),
             mask=row_ok[:, None] & (offs_d[None, :] < D))


# ------------------------------------------------------------------------------------------------ column statistics
@triton.jit
def column_stats_kernel(Q, K, Stat, DOC, Alpha, H, T, W, scale, sig_bias,
                        D: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                        OP: tl.constexpr, MASK: tl.constexpr, HAS_DOC: tl.constexpr, F32_DOT: tl.constexpr,
                        IEEE: tl.constexpr, BTHD: tl.constexpr = False):
    """alpha_k: mean over the queries that see key k of what the sink metric scores, one key block per
    program, recomputing the weights from the forward's row statistic (like the dK/dV kernel)."""
    scale = _fp32(scale)
    sig_bias = _fp32(sig_bias)
    pid_n = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    n0 = pid_n * BLOCK_N
    offs_n = n0 + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    col_ok = offs_n < T
    bh64 = bh.to(tl.int64)
    q_base = _head_base(bh, H, T, D, BTHD)
    rq = _row_stride(H, D, BTHD)
    doc_base = b.to(tl.int64) * T
    k = tl.load(K + q_base + offs_n[:, None] * rq + offs_d[None, :],
                mask=col_ok[:, None] & (offs_d[None, :] < D), other=0.0)
    if F32_DOT:
        k = k.to(tl.float32)
    doc_k = offs_n
    if HAS_DOC:
        doc_k = tl.load(DOC + doc_base + offs_n, mask=col_ok, other=-2)
    total = tl.zeros([BLOCK_N], dtype=tl.float32)
    count = tl.zeros([BLOCK_N], dtype=tl.float32)
    lo, hi = _query_range(n0, T, W, BLOCK_M, BLOCK_N, MASK)
    for start_m in range(lo, hi, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        row_ok = offs_m < T
        q = tl.load(Q + q_base + offs_m[:, None] * rq + offs_d[None, :],
                    mask=row_ok[:, None] & (offs_d[None, :] < D), other=0.0)
        stat = tl.load(Stat + bh64 * T + offs_m, mask=row_ok, other=0.0)
        if F32_DOT:
            q = q.to(tl.float32)
        doc_q = offs_m
        if HAS_DOC:
            doc_q = tl.load(DOC + doc_base + offs_m, mask=row_ok, other=-1)
        vis = _visible(offs_m[:, None], offs_n[None, :], doc_q[:, None], doc_k[None, :], T, W, MASK, HAS_DOC)
        x = _dot(q, tl.trans(k), IEEE) * scale
        if OP == SOFTMAX:
            a = tl.exp2((x - stat[:, None]) * LOG2E)
        elif OP == SOFTPICK:
            a = tl.maximum(tl.exp(x - stat[:, None]) - tl.exp(-stat)[:, None], 0.0)
        elif OP == SIGMOID:  # the paper's proxy |w| / sum |w|; w > 0 and stat = log(row sum)
            a = tl.exp(tl.log(tl.sigmoid(x + sig_bias)) - stat[:, None])
        else:
            a = tl.where(x > 0, x + 1.0, tl.exp(tl.minimum(x, 0.0))) * tl.exp(-stat)[:, None]
        a = tl.where(vis, a, 0.0)
        total += tl.sum(a, 0)
        count += tl.sum(vis.to(tl.float32), 0)
    alpha = tl.where(count > 0, total / tl.maximum(count, 1.0), 0.0)
    tl.store(Alpha + bh64 * T + offs_n, alpha, mask=col_ok)
