"""What forms before the sink, read on one probe: sequences of random tokens repeated once.

On ``r ++ r`` (r: random tokens), a head that has learned to copy attends, from each token of the second copy, to
the token that followed its first occurrence: the *induction* pattern. A *previous-token* head attends from each
token to the one before it. And a model that uses the first copy predicts the second better than the first: the
*in-context gain*, in nats. In public training runs these form before the first-token sink (arXiv 2606.02378);
measured at every evaluation of a run they order the onsets on one footing.

The probe is packed exactly as the run's training windows (its BOS, fixed token or random span applied), so a
pair whose earlier occurrence was replaced by a fixed token is left out: a query counts only where its token
really occurred ``half`` positions before.
"""
from __future__ import annotations

import numpy as np
import torch


def repeated_stream(n: int, span: int, vocab: tuple[int, int], seed: int = 4321) -> tuple[np.ndarray, int]:
    """A token stream of ``n`` windows of ``span`` tokens, each window ``r ++ r`` with r drawn uniformly from
    ``vocab`` = [lo, hi) (one more random token when ``span`` is odd); and ``half``, the length of r."""
    half = span // 2
    rng = np.random.default_rng(seed)
    r = rng.integers(vocab[0], vocab[1], size=(n, half))
    rows = np.concatenate([r, r, rng.integers(vocab[0], vocab[1], size=(n, span - 2 * half))], axis=1)
    return rows.reshape(-1).astype(np.uint16 if vocab[1] <= 2**16 else np.int64), half


def induction_pairs(input_ids: torch.Tensor, half: int) -> torch.Tensor:
    """[B, T] bool: the queries whose token occurred ``half`` positions before (0-based p >= half and
    ids[p] == ids[p - half]); their induction target is key p - half + 1."""
    B, T = input_ids.shape
    ok = torch.zeros(B, T, dtype=torch.bool, device=input_ids.device)
    if half < 1 or half >= T:
        return ok
    ok[:, half:] = input_ids[:, half:] == input_ids[:, :-half]
    return ok


def induction_score(attn: torch.Tensor, input_ids: torch.Tensor, half: int) -> torch.Tensor:
    """attn [B, H, T, T] (rows: queries), input_ids [B, T] -> [H]: the mean attention from each query of the second
    copy to the token after its token's first occurrence, over the valid pairs (:func:`induction_pairs`). A head that
    copies exactly scores 1; a uniform causal head scores the mean of 1/(p+1) over those queries (about 1/T)."""
    ok = induction_pairs(input_ids, half)                       # [B, T]
    B, H, T, _ = attn.shape
    q = torch.arange(T, device=attn.device)
    key = (q - half + 1).clamp(min=0, max=T - 1)
    picked = attn[:, :, q, key]                                 # [B, H, T]: each query's induction target
    w = ok[:, None, :].to(picked.dtype)
    return (picked * w).sum((0, 2)) / w.sum((0, 2)).clamp(min=1)


def uniform_induction_score(T: int, half: int) -> float:
    """The :func:`induction_score` of a uniform causal head on one window ``r ++ r`` of ``T`` tokens (r of length
    ``half``, every second-copy query valid): the mean of 1/(p+1) over the queries p = half..T-1, a baseline a
    trained head's score is read against. Computed by the score itself, so the baseline cannot drift from it; at
    T = 64, half = 32 it is 0.0214, not 1/T."""
    ids = torch.cat([torch.arange(half), torch.arange(half), torch.arange(T - 2 * half) + half])[None]
    attn = torch.tril(torch.ones(T, T, dtype=torch.float64))
    attn = (attn / attn.sum(-1, keepdim=True))[None, None]
    return float(induction_score(attn, ids, half)[0])


def previous_token_score(attn: torch.Tensor) -> torch.Tensor:
    """attn [B, H, T, T] -> [H]: the mean attention from each query (but the first) to the token just before it.
    A head that looks one back scores 1; a uniform causal head the mean of 1/(p+1) over p = 1..T-1."""
    T = attn.shape[-1]
    q = torch.arange(1, T, device=attn.device)
    return attn[:, :, q, q - 1].mean((0, 2))


def in_context_gain(logits: torch.Tensor, input_ids: torch.Tensor, half: int) -> float:
    """Mean loss (nats) on the first copy's tokens minus the same tokens' loss in the second copy, over the pairs
    whose first occurrence has context (position >= 2, 1-based) and whose repeat is valid (:func:`induction_pairs`)."""
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    nll = -logp.gather(-1, input_ids[:, 1:, None])[..., 0]    # [B, T-1]: column j predicts position j + 1
    T = input_ids.shape[1]
    second = induction_pairs(input_ids, half)[:, 1:].clone()    # column j: position j + 1 repeats position j+1-half
    second[:, :half] = False                                     # ... whose first occurrence has context
    first = torch.zeros_like(second)
    first[:, : T - 1 - half] = second[:, half:]                  # the same tokens, half positions earlier
    if not second.any():
        return float("nan")
    return float(nll[first].mean() - nll[second].mean())


@torch.no_grad()
def measure_circuits(net, input_ids: torch.Tensor, half: int, batch_size: int = 25,
                     doc_ids: torch.Tensor | None = None) -> dict:
    """On the repeated probe: per layer and head, the induction and previous-token scores; the largest of each over
    the model's heads; and the in-context gain. ``net`` is a SinkModel (its ``trace`` gives the maps); ``doc_ids``
    [N, T] for a model trained with intra-document masking (the probe's documents, as its packing marks them)."""
    ind, prev, gains, n = None, None, [], 0
    for i in range(0, len(input_ids), batch_size):
        ids = input_ids[i:i + batch_size]
        docs = None if doc_ids is None else {"doc_ids": doc_ids[i:i + batch_size]}
        tr = net.trace(ids, method="maps", logits=True, **(docs or {}))
        a = torch.stack([induction_score(m.float(), ids, half) for m in tr.attentions])        # [L, H]
        b = torch.stack([previous_token_score(m.float()) for m in tr.attentions])
        k = len(ids)
        ind = a * k if ind is None else ind + a * k
        prev = b * k if prev is None else prev + b * k
        gains.append((in_context_gain(tr.logits, ids, half), k))   # the same forward pass's logits
        n += k
    ind, prev = (ind / n).cpu(), (prev / n).cpu()
    gain = sum(g * k for g, k in gains) / n
    return {"induction_by_head": ind.tolist(), "previous_token_by_head": prev.tolist(),
            "induction_max": float(ind.max()), "previous_token_max": float(prev.max()), "in_context_gain": gain}
