"""Positional encodings of Section 7.1: RoPE, sinusoidal (absolute), learnable, T5 relative buckets, ALiBi.

Positions are 0-based indices over the sequence the attention sees (a learnable sink token, if any, is
position 0 and the first real token position 1).
"""
from __future__ import annotations

import math

import torch
from torch import nn


def rope_tables(positions: torch.Tensor, head_dim: int, base: float = 10000.0):
    """cos, sin [T, head_dim] for rotating pairs (i, i + head_dim/2), the LLaMA convention."""
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=positions.device, dtype=torch.float32) / head_dim))
    angles = positions.float()[:, None] * inv_freq[None, :]
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x [B, H, T, D] rotated by position: x * cos + rotate_half(x) * sin."""
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return (x * cos.to(x.dtype) + rotated * sin.to(x.dtype))


def sinusoidal_embedding(positions: torch.Tensor, d_model: int) -> torch.Tensor:
    """[T, d_model] fixed sin/cos absolute position embedding (Vaswani et al.)."""
    inv_freq = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, device=positions.device).float() / d_model)
    angles = positions.float()[:, None] * inv_freq[None, :]
    emb = torch.zeros(len(positions), d_model, device=positions.device)
    emb[:, 0::2] = angles.sin()
    emb[:, 1::2] = angles.cos()[:, : d_model // 2]
    return emb


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """Head slopes 2^(-8 i / n) (Press et al.), with the paper's interpolation for non-powers of two."""
    def powers(n):
        start = 2.0 ** (-8.0 / n)
        return [start ** (i + 1) for i in range(n)]
    if math.log2(n_heads).is_integer():
        return torch.tensor(powers(n_heads))
    closest = 2 ** math.floor(math.log2(n_heads))
    extra = powers(2 * closest)[0::2][: n_heads - closest]
    return torch.tensor(powers(closest) + extra)


def alibi_bias(n_heads: int, seq_len: int, device=None) -> torch.Tensor:
    """[H, T, T] additive bias -slope * (t - j) for j <= t; depends only on the distance t - j."""
    pos = torch.arange(seq_len, device=device)
    dist = (pos[:, None] - pos[None, :]).clamp_min(0).float()
    return -alibi_slopes(n_heads).to(device)[:, None, None] * dist


class RelativePositionBias(nn.Module):
    """Relative-position bias from T5's buckets of the key-query distance, shared by all layers.

    learned=True: T5's learned scalar per (bucket, head). learned=False: the authors' released code
    (sail-sg/Attention-Sink, lit_gpt/model_relpos.py): the bucket index itself, 0..n_buckets-1, is added to the
    logits of every head, unidirectional; a fixed bias that grows with distance and has no parameters."""

    def __init__(self, n_heads: int, n_buckets: int = 32, max_distance: int = 128, bidirectional: bool = False,
                 learned: bool = True):
        super().__init__()
        self.n_heads, self.learned = n_heads, learned
        self.n_buckets, self.max_distance = n_buckets, max_distance
        self.bidirectional = bidirectional and learned   # the released form has no bidirectional buckets
        self.embedding = nn.Embedding(n_buckets, n_heads) if learned else None

    def bucket(self, relative: torch.Tensor) -> torch.Tensor:
        """Map key - query distances to buckets: exact for small distances, logarithmic beyond."""
        n = self.n_buckets
        out = torch.zeros_like(relative)
        if self.bidirectional:
            n //= 2
            out = out + (relative > 0).long() * n
            distance = relative.abs()
        else:
            distance = (-relative).clamp_min(0)
        exact = n // 2
        is_small = distance < exact
        log_bucket = exact + (
            torch.log(distance.float().clamp_min(1) / exact) / math.log(self.max_distance / exact) * (n - exact)
        ).long()
        log_bucket = log_bucket.clamp_max(n - 1)
        return out + torch.where(is_small, distance, log_bucket)

    def forward(self, seq_len: int, device=None) -> torch.Tensor:
        device = self.embedding.weight.device if self.learned else device
        pos = torch.arange(seq_len, device=device)
        relative = pos[None, :] - pos[:, None]  # key - query
        if not self.learned:
            return self.bucket(relative).float()[None].expand(self.n_heads, seq_len, seq_len)
        return self.embedding(self.bucket(relative)).permute(2, 0, 1)  # [H, T, T]
