"""Fused Triton attention kernels (forward and backward) for the operators the book trains, and the sink
metric's column statistics without the T x T attention matrix.

- `attention(q, k, v, *, op, causal, window, prefix, doc_ids, scale, sink_logit, k_bias, v_bias, ...)`
- `column_stats(q, k, *, ...)` -> `ColumnStats(alpha [B, H, T], sink [B, H] | None)`
- `attention_column_stats(q, k, v, *, ...)` -> (output, ColumnStats): both from one first pass (no gradient)
- `reference_attention`, `reference_column_stats`: the pure-PyTorch references with the same contracts.

On a machine without a GPU, set TRITON_INTERPRET=1 before importing triton to run the kernels on CPU;
otherwise CPU tensors go to the reference (`attention`) and to the blocked PyTorch route, two passes without the
T x T map (`column_stats`, `attention_column_stats`; `sinkpaper.fused.blocked`).
"""
from .api import DTYPES, OPS, attention, attention_column_stats, column_stats, interpreting
from .reference import ColumnStats, reference_attention, reference_column_stats

__all__ = ["attention", "column_stats", "attention_column_stats", "ColumnStats", "reference_attention",
           "reference_column_stats", "interpreting", "OPS", "DTYPES"]
