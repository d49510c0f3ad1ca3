"""The language-modelling loss over the LM head without materialising the full logits.

`linear_cross_entropy(h, weight, targets)` equals `F.cross_entropy(h @ weight.T, targets, ignore_index=-100)`
(mean over the non-ignored targets, softmax in fp32), but works through the tokens in chunks: each chunk's
logits [chunk, vocab] are formed, reduced to the loss, and, when a gradient is wanted, turned into the
gradients of `h` and `weight` right away (softmax minus one-hot, two matmuls), then freed. A step touches
chunk x vocab logits at a time instead of tokens x vocab several times over (matmul output, fp32 copy,
log-softmax, its gradient): with vocab 8192 and 4096 tokens a step that is 134 MB of fp32 logits per pass.
The gradients are kept until `backward`, which only scales them by the incoming gradient.

Under autocast the matmuls run in the autocast dtype (bf16 through oneDNN on the CPU) and the softmax, the
loss and the accumulated weight gradient in fp32, as the plain path does.

`fused=True` computes each chunk's loss and logit gradient in one inductor kernel (:func:`chunk_nll_grad`: a
log-sum-exp pass and a pass that writes softmax minus one-hot, rounded once to the matmul dtype) instead of the
ATen passes (log-softmax, exp, scatter, mask, cast): the same mathematics, its exp and sums in inductor's order.
"""
from __future__ import annotations

import torch

IGNORE_INDEX = -100
CHUNK = 4096   # tokens per chunk: 8192-vocab fp32 logits of one chunk are 134 MB (README, "Training speed")


def chunk_nll_grad(logits: torch.Tensor, targets: torch.Tensor, valid: torch.Tensor, acc: torch.dtype):
    """One chunk's summed negative log-likelihood over its ``valid`` rows and the gradient of that sum with respect
    to ``logits [c, V]`` (softmax minus one-hot; zero on ignored rows), computed in ``acc`` and returned in the
    logits' dtype. ``targets`` are clamped to [0, V) (an ignored row's is never read)."""
    x = logits.to(acc)
    lse = torch.logsumexp(x, dim=-1, keepdim=True)
    nll = ((lse[:, 0] - x.gather(1, targets[:, None])[:, 0]) * valid).sum()
    hit = torch.arange(x.shape[1], device=x.device)[None, :] == targets[:, None]
    grad = torch.where(valid[:, None], torch.exp(x - lse) - hit.to(acc), 0.0)
    return nll, grad.to(logits.dtype)


_COMPILED: list = []


def _fused_chunk():
    """:func:`chunk_nll_grad` compiled by inductor, made on first use (compiling imports torch._dynamo)."""
    if not _COMPILED:
        _COMPILED.append(torch.compile(chunk_nll_grad, dynamic=False, fullgraph=True))
    return _COMPILED[0]


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, h, weight, targets, chunk: int, compute_dtype, want_grad: bool, fused: bool = False):
        N = h.shape[0]
        valid = targets != IGNORE_INDEX
        n_valid = valid.sum()
        acc = torch.promote_types(compute_dtype, torch.float32)       # softmax / loss / dW: fp32 at least
        hc, wc = h.to(compute_dtype), weight.to(compute_dtype)
        total = torch.zeros((), dtype=acc, device=h.device)
        grad_h = torch.empty(h.shape, dtype=compute_dtype, device=h.device) if want_grad else None
        grad_w = torch.zeros(weight.shape, dtype=acc, device=h.device) if want_grad else None
        for s in range(0, N, chunk):
            e = min(N, s + chunk)
            if want_grad and fused:
                nll, g = _fused_chunk()(hc[s:e] @ wc.T, targets[s:e].clamp_min(0), valid[s:e], acc)
                total = total + nll
                grad_h[s:e] = g @ wc
                grad_w += g.T @ hc[s:e]
                continue
            logp = torch.log_softmax(hc[s:e] @ wc.T, dim=-1, dtype=acc)  # [c, V], one fused pass
            t, v = targets[s:e], valid[s:e]
            safe_t = t.clamp_min(0)[:, None]
            total = total - (logp.gather(1, safe_t)[:, 0] * v).sum()
            if want_grad:
                p = logp.exp_()                                        # softmax, in place
                p.scatter_add_(1, safe_t, -v[:, None].to(p.dtype))      # minus one-hot at valid targets
                p.mul_(v[:, None])                                     # ignored rows give no gradient
                g = p.to(compute_dtype)
                grad_h[s:e] = g @ wc
                grad_w += g.T @ hc[s:e]
        scale = 1.0 / n_valid.to(acc)                      # 0 targets: nan, as F.cross_entropy
        if want_grad:
            ctx.save_for_backward(grad_h, grad_w, scale)
            ctx.dtypes = (h.dtype, weight.dtype)
        return total * scale

    @staticmethod
    def backward(ctx, grad_out):
        grad_h, grad_w, scale = ctx.saved_tensors
        s = grad_out.to(scale.dtype) * scale
        dh = (grad_h.to(s.dtype) * s).to(ctx.dtypes[0]) if ctx.needs_input_grad[0] else None
        dw = (grad_w * s).to(ctx.dtypes[1]) if ctx.needs_input_grad[1] else None
        return dh, dw, None, None, None, None, None


def linear_cross_entropy(h: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                         chunk: int = CHUNK, fused: bool = False) -> torch.Tensor:
    """Mean cross-entropy of `h [N, d] @ weight[V, d].T` against `targets [N]` (-100 ignored), chunked;
    ``fused``: each chunk's softmax and gradient in one inductor kernel when a gradient is wanted."""
    if h.dim() != 2 or targets.shape != h.shape[:1]:
        raise ValueError(f"h must be [N, d] and targets [N]; got {tuple(h.shape)} and {tuple(targets.shape)}")
    device_type = h.device.type
    compute_dtype = (torch.get_autocast_dtype(device_type) if torch.is_autocast_enabled(device_type)
                     else torch.promote_types(h.dtype, weight.dtype))
    want_grad = torch.is_grad_enabled() and (h.requires_grad or weight.requires_grad)
    with torch.autocast(device_type, enabled=False):
        return _LinearCrossEntropy.apply(h, weight, targets, int(chunk), compute_dtype, want_grad, bool(fused))
