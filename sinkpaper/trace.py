"""What one forward pass exposes to the analyses, the same way for our models and for any HF causal LM.

A `Trace` is produced by `sinkpaper.models.SinkModel.trace(...)` and by `sinkpaper.lms.trace(...)`;
`sinkpaper.metrics` only ever reads a `Trace`, so every metric works on every model.

Conventions (1-based positions in the paper, 0-based indices here):
- `attentions[l]` is [B, H, T, T] over the T real tokens: the attention probabilities for normalized
  operators, or the paper's proxy |sim| / row-sum |sim| for operators without normalization (`proxy=True`,
  reported as Sink*). Entries of keys a query cannot see are 0.
- `sink_attention[l]` is [B, H, T]: the attention each query puts on a learnable sink token / KV bias that
  sits at an extra position 0 (None when the model has none; the paper's V bias alone is no position). With it, a row of `attentions` plus the
  sink entry sums to 1 for normalized operators.
- `visible` is [B or 1, T, T] bool: query t can see key j. It gives the metric's divisor (the number of
  queries that see key j), so prefix-LM, sliding-window and intra-document masks are honoured. Per-layer
  callers pass `visible[:, None]` so it broadcasts over heads.
- `layer_visible` (optional): one such mask per layer, for models whose layers attend differently (Gemma 3's
  sliding-window layers between global ones); the metric then reads layer l's divisor from `layer_visible[l]`.
- `hidden_states` has L+1 entries [B, T, D]: the embedding output, then each block's output, before the
  final norm (the paper's massive-activation measurement).
- `alphas` / `sink_alphas` (optional, the column-statistics route): per layer alpha_k [B, H, T] and the mean
  attention on the sink [B, H], computed by `sinkpaper.fused.column_stats` without any T x T map; then
  `attentions` is empty and the metric reads these instead (each layer's own mask already applied; `visible`
  is then a placeholder, never read, so that no T x T tensor exists).
- `queries`, `keys`, `values` (optional) are per layer [B, H, T, Dh]: queries and keys after RoPE (as the
  attention scores see them), keys/values repeated to H heads for grouped-query attention.
- `gates` (optional) per layer [B, H, T]: the gate each head's output is scaled by at each query: gated
  attention's sigmoid(x W_g) (mean over the head's dims where it is elementwise), or the gate a zero-valued
  softmax sink puts on the real keys, 1 - its weight (= sigmoid(LSE - b) for a sink logit b).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class Trace:
    attentions: list[torch.Tensor]
    visible: torch.Tensor
    hidden_states: list[torch.Tensor] = field(default_factory=list)
    sink_attention: list[torch.Tensor] | None = None
    queries: list[torch.Tensor] | None = None
    keys: list[torch.Tensor] | None = None
    values: list[torch.Tensor] | None = None
    proxy: bool = False
    alphas: list[torch.Tensor] | None = None
    sink_alphas: list[torch.Tensor] | None = None
    layer_visible: list[torch.Tensor] | None = None
    gates: list[torch.Tensor] | None = None      # per layer [B, H, T]: the gate on each head's output per query
    logits: torch.Tensor | None = None           # [B, T, vocab] of the same forward pass, where the model gives them

    def visible_of(self, layer: int) -> torch.Tensor:
        """The [B or 1, T, T] mask of one layer: `layer_visible[layer]` when given, else `visible`."""
        v = self.layer_visible[layer] if self.layer_visible is not None else self.visible
        return v[None] if v.dim() == 2 else v

    def _per_layer(self) -> list[torch.Tensor]:
        return self.attentions if self.attentions else (self.alphas or [])

    @property
    def n_layers(self) -> int:
        return len(self._per_layer())

    @property
    def n_heads(self) -> int:
        return self._per_layer()[0].shape[1]

    @property
    def seq_len(self) -> int:
        return self._per_layer()[0].shape[-1]

    def stacked_attentions(self) -> torch.Tensor:
        """[B, L, H, T, T]"""
        return torch.stack(self.attentions, dim=1)
