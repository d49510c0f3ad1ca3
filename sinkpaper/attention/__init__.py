"""Attention operators (readable references) and masks. Fused Triton kernels plug in through `backend`."""
from .masks import (MASKS, causal_mask, column_mean, intra_document_mask, prefix_lm_mask, sliding_window_mask,
                    visible_block, visible_mask)
from .operators import (FUSED_OPERATORS, KERNEL_Z, OPERATIONS, OPERATORS, SINK_DESIGNS, SINKS, AttentionResult, OpParams,
                        Operator, SinkDesign, attention_reference, is_proxy)

__all__ = [
    "MASKS", "OPERATIONS", "OPERATORS", "FUSED_OPERATORS", "Operator", "OpParams", "SINKS", "SINK_DESIGNS",
    "SinkDesign", "KERNEL_Z", "AttentionResult", "attention_reference", "is_proxy",
    "causal_mask", "prefix_lm_mask", "sliding_window_mask", "intra_document_mask", "visible_mask", "visible_block",
    "column_mean",
]
