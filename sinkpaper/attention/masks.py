"""Which query sees which key. Every mask is a bool tensor `visible[..., t, j]` (query t sees key j).

The same masks drive the reference operators, the model, and the sink metric's divisor (alpha_k averages
over the queries that actually see k), so a prefix-LM, sliding-window or intra-document model is measured
the way it was trained.
"""
from __future__ import annotations

import torch

MASKS = ("causal", "prefix", "window", "document")


def causal_mask(seq_len: int, device=None) -> torch.Tensor:
    """[T, T]: query t sees keys 0..t."""
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


def prefix_lm_mask(seq_len: int, prefix_len: int, device=None) -> torch.Tensor:
    """[T, T]: the first `prefix_len` positions see each other bidirectionally; the rest is causal."""
    visible = causal_mask(seq_len, device)
    p = min(prefix_len, seq_len)
    visible[:p, :p] = True
    return visible


def sliding_window_mask(seq_len: int, window: int, device=None) -> torch.Tensor:
    """[T, T]: query t sees its last `window` keys, itself included: keys t-window+1 .. t."""
    pos = torch.arange(seq_len, device=device)
    dist = pos[:, None] - pos[None, :]
    return (dist >= 0) & (dist < window)


def intra_document_mask(doc_ids: torch.Tensor) -> torch.Tensor:
    """[B, T, T] from document ids [B, T]: causal within a document, nothing across documents."""
    if doc_ids.dim() != 2:
        raise ValueError(f"doc_ids must be [batch, T], got shape {tuple(doc_ids.shape)}")
    same_doc = doc_ids[:, :, None] == doc_ids[:, None, :]
    return same_doc & causal_mask(doc_ids.shape[1], doc_ids.device)


def visible_mask(
    seq_len: int,
    *,
    causal: bool = True,
    window: int | None = None,
    prefix: int | None = None,
    doc_ids: torch.Tensor | None = None,
    device=None,
) -> torch.Tensor:
    """Combine the masks the kernels accept (same argument names): returns [B or 1, T, T] bool.

    `prefix` and `window` each replace plain causality on their part; `doc_ids` is intersected with the rest.
    """
    if window is not None and window < 1:
        raise ValueError(f"window must be >= 1 key, got {window}")
    if prefix is not None and prefix < 0:
        raise ValueError(f"prefix must be >= 0 tokens, got {prefix}")
    if window is not None and prefix is not None:
        raise ValueError("window and prefix cannot be combined")
    pos = torch.arange(seq_len, device=device)
    if doc_ids is not None and doc_ids.shape[-1] != seq_len:
        raise ValueError(f"doc_ids has length {doc_ids.shape[-1]}, expected {seq_len}")
    return visible_block(pos, pos, causal=causal, window=window, prefix=prefix, doc_ids=doc_ids)


def visible_block(rows: torch.Tensor, cols: torch.Tensor, *, causal: bool = True, window: int | None = None,
                  prefix: int | None = None, doc_ids: torch.Tensor | None = None) -> torch.Tensor:
    """The rows x cols block of `visible_mask` (query positions `rows`, key positions `cols`, 0-based):
    [B or 1, len(rows), len(cols)] bool. The blocked column statistics build one block at a time, so the
    T x T mask never exists; `visible_mask` is this block over all positions."""
    i, j = rows[:, None], cols[None, :]
    if prefix is not None:
        visible = (j <= i) | ((i < prefix) & (j < prefix))
    elif window is not None:
        visible = (j <= i) & (i - j < window)
    elif causal:
        visible = j <= i
    else:
        visible = torch.ones(len(rows), len(cols), dtype=torch.bool, device=rows.device)
    visible = visible[None]
    if doc_ids is not None:
        doc_ids = doc_ids.to(rows.device)
        same_doc = doc_ids[:, rows][:, :, None] == doc_ids[:, cols][:, None, :]
        visible = visible & same_doc
    return visible


def column_mean(attn: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
    """The mean of attn[t, k] over the queries t that see key k (the diagonal counts): the paper's alpha_k
    (Sec. 3.2; `sinkpaper.metrics.alpha` is this function), under any of the masks above.

    attn: [..., T, T] (query, key); visible: bool, broadcastable to attn (for a `Trace` layer map
    [B, H, T, T] pass `trace.visible[:, None]`, so that the batch dim is not aligned with the heads).
    Returns [..., T] in float32 (float64 for a float64 input); a key that no query sees gets 0.
    """
    if attn.shape[-1] != attn.shape[-2]:
        raise ValueError(f"attention maps must be square [..., T, T], got {tuple(attn.shape)}")
    if visible.dtype != torch.bool:
        raise TypeError(f"visible must be a bool mask (True = query sees key), got {visible.dtype}")
    attn = attn if attn.dtype == torch.float64 else attn.float()
    visible = visible.to(attn.device)
    total = torch.where(visible, attn, 0.0).sum(-2)
    count = visible.sum(-2).to(attn.dtype).expand_as(total)
    return torch.where(count > 0, total / count.clamp(min=1), 0.0)
