"""The sweep points the Section-7 chapters (architecture, attention biases, attention operations) show, in the
order of their config, each with what it changes; a point reads the paper's number(s) for it from
:mod:`sinkpaper.paper` (typed once there), and the points the paper ran that our sweeps do not are listed too.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .. import paper as registry


@dataclass(frozen=True)
class Point:
    """One sweep point of a Section-7 family (its name in configs/) and what it changes; :attr:`paper` reads the
    paper's number(s) for it from :mod:`sinkpaper.paper`."""

    name: str
    what: str

    @property
    def paper(self) -> str:
        return registry.paper_text(self.name)


ARCHITECTURE: tuple[Point, ...] = (
    Point("pos_rope", "RoPE, pre-norm, SwiGLU, concatenated heads (the default; 8 heads in the paper, 4 at text)"),
    Point("pos_nope", "no positional encoding (NoPE)"),
    Point("pos_absolute", "absolute (sinusoidal) positions"),
    Point("pos_learnable", "learnable absolute positions"),
    Point("pos_relative", "relative positions as the authors' released code: the T5 bucket index added to the logits"),
    Point("pos_relative_learned", "ours: T5's learned relative bias per bucket and head"),
    Point("pos_alibi", "ALiBi"),
    Point("post_norm", "post-norm instead of pre-norm"),
    Point("post_norm_lr_x0.25", "post-norm at LR x 0.25 (post-norm at the base LR did not learn in 2 of 3 seeds)"),
    Point("ffn_relu", "FFN ReLU"),
    Point("ffn_gelu", "FFN GeLU"),
    Point("ffn_geglu", "FFN GeGLU"),
    Point("heads_1", "1 head"),
    Point("heads_add", "heads added instead of concatenated (our reading: d_model-wide values, summed)"),
    Point("ffn_swish", "FFN Swish"), Point("ffn_reglu", "FFN ReGLU"),
    Point("heads_2", "2 heads"), Point("heads_4", "4 heads"), Point("heads_8", "8 heads"),
    Point("ffn_swish_steps_x2", "FFN Swish, twice the steps (is its zero the budget?)"),
    Point("ffn_swish_steps_x4", "FFN Swish, four times the steps (still no sink at twice the steps)"),
    Point("heads_add_steps_x2", "heads added, twice the steps (is its zero the budget?)"),
)
ARCHITECTURE_NOT_RUN: tuple[Point, ...] = ()


def _config_order(points: tuple[Point, ...], family: str) -> tuple[Point, ...]:
    """The points in their config's sweep order (the order the book shows them in)."""
    from ..train.config import sweep_points
    from ..resources import find_config
    order = {name: i for i, name in enumerate(sweep_points(find_config(family)))}
    return tuple(sorted(points, key=lambda p: order.get(p.name, len(order))))


ARCHITECTURE = _config_order(ARCHITECTURE, "architecture")

BIASES: tuple[Point, ...] = (
    Point("none", "no bias (the default)"),
    Point("sink_token", "learnable sink token at position 0"),
    Point("kv_bias", "learnable k*, v* in every head"),
    Point("k_bias", "learnable k*, v* = 0"),
    Point("v_bias", "learnable v* added after the softmax (the paper's control)"),
    Point("k_bias_fixed_v", "learnable k*, fixed v* = v' = [1, 0, ..., 0]"),
    Point("k_bias_dims_1", "k* learned in the first of the head's dimensions (d_a = 1; our reading), v* = 0"),
)
# The paper's other fixed-v*, shared and d_a rows (claims bias_fixed_v_large, bias_shared, bias_low_dim_more).
BIASES_MORE: tuple[Point, ...] = (
    Point("k_bias_fixed_5v1", "fixed v* = 5 v'"), Point("k_bias_fixed_20v1", "fixed v* = 20 v'"),
    Point("k_bias_fixed_v2", "fixed v* = v'' = ones / sqrt(d_h)"), Point("k_bias_fixed_5v2", "fixed v* = 5 v''"),
    Point("k_bias_fixed_20v2", "fixed v* = 20 v''"), Point("kv_bias_shared", "KV biases shared across heads"),
    Point("k_bias_shared", "K biases shared across heads"),
    *(Point(f"k_bias_dims_{d}", f"k* in d_a = {d} dimensions") for d in (2, 4, 8, 16)),
    Point("sink_token_no_bos", "sink token, no fixed first token (the paper's setting for the sink token)"),
    Point("kv_bias_no_bos", "KV biases, no fixed first token"),
    Point("k_bias_no_bos", "K biases, no fixed first token"),
    Point("k_bias_fixed_v_no_bos", "fixed v* = v', no fixed first token (the paper's setting)"),
    Point("k_bias_fixed_20v1_no_bos", "fixed v* = 20 v', no fixed first token (the paper's setting)"),
)
BIASES = _config_order(BIASES + BIASES_MORE, "biases")
BIASES_NOT_RUN: tuple[Point, ...] = tuple(Point(f"k_bias_dims_{d}", f"k* in d_a = {d} dimensions") for d in (32, 64))

ATTENTION: tuple[Point, ...] = (
    Point("softmax", "softmax (the default)"),
    Point("softmax_sum_0.2", "softmax scaled so each row sums to 0.2"),
    Point("softmax_p_2", "p-normalized softmax, p = 2 (the paper: fewer massive activations, no Sink_1 given)"),
    Point("sigmoid", "sigmoid, no normalization (* = the |w| / sum |w| proxy)"),
    Point("sigmoid_norm", "sigmoid, divided by the row sum"),
    Point("elu", "elu + 1, no normalization (*)"),
    Point("elu_norm", "ours: elu(qk) + 1 divided by its row sum, the variant the paper could not train"),
    Point("kernel_elu", "the paper's elu+1 kernel: (elu(q)+1)(elu(k)+1) over the row sum (*)"),
    Point("softpick", "softpick (rectified softmax; Zuhri et al. 2025, not this paper)"),
)
# The paper's other scaled-softmax and kernel rows (claims ops_scaled_more, ops_kernels), and the 1B rows (ops_1b).
ATTENTION = ATTENTION + (
    Point("softmax_sum_2", "softmax rows summing to 2"), Point("softmax_sum_0.1", "softmax rows summing to 0.1"),
    Point("softmax_sum_0.05", "softmax rows summing to 0.05"), Point("kernel_identity_z1", "kernel phi = identity, Z = 1 (*)"),
    Point("kernel_mlp_maxabs", "kernel phi = MLP, Z = max(|row sum|, 1) (*)"),
    Point("kernel_mlp_z1", "kernel phi = MLP, Z = 1 (*)"),
    Point("kernel_elu_z1", "the elu+1 kernel with Z = 1 (the paper could not train it)"),
    Point("softmax_sum_2_steps_x2", "softmax rows summing to 2, twice the steps (is its zero the budget?)"),
)
ATTENTION = _config_order(ATTENTION, "attention")
ATTENTION_NOT_RUN: tuple[Point, ...] = (
    Point("softmax_1b", "1B model, softmax"), Point("sigmoid_1b", "1B model, sigmoid without normalization (*)"),
)


AFTER_PAPER: tuple[Point, ...] = (
    Point("softmax", "softmax (the base run)"),
    Point("gate_elementwise", "gated attention, one sigmoid gate per head dimension (Qiu et al. 2025)"),
    Point("gate_headwise", "gated attention, one sigmoid gate per head (Qiu et al. 2025)"),
    Point("sink_logit", "a learned logit per head in the softmax's denominator, no value (gpt-oss)"),
    Point("softmax_plus_one", "the same logit fixed at 0 (Miller 2023)"),
    Point("softpick", "softpick, a rectified softmax (Zuhri et al. 2025)"),
    Point("no_fixed_token", "the base run without the fixed first token"),
    *(Point(f"{name}_no_bos", f"{what}, no fixed first token") for name, what in (
        ("gate_elementwise", "elementwise gate"), ("gate_headwise", "head-wise gate"), ("sink_logit", "sink logit"),
        ("softmax_plus_one", "softmax plus one"), ("softpick", "softpick"))),
)
AFTER_PAPER = _config_order(AFTER_PAPER, "after_paper")


def by_name(points: Sequence[Point]) -> dict[str, Point]:
    return {p.name: p for p in points}
