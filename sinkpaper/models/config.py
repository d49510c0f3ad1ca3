"""The model configuration: one validated dataclass; every variant of the paper is a field value.

Defaults are the paper's "60M" LLaMA2-style model (Section 4): d=768, 10 layers, 8 heads, FFN 1536,
RMSNorm pre-norm, RoPE, SwiGLU, MHA, no biases, untied embeddings.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..attention import KERNEL_Z, MASKS, OPERATIONS, OPERATORS, SINK_DESIGNS, SINKS, OpParams
from ..fields import check_types

POS_ENCODINGS = ("rope", "nope", "absolute", "learnable", "relative", "alibi")
NORMS = ("pre", "post")
FFNS = ("swiglu", "geglu", "reglu", "relu", "gelu", "swish")
HEAD_COMBINES = ("concat", "add")
KERNEL_PHIS = ("identity", "elu", "mlp")
RELATIVE_BIASES = ("learned", "bucket")
# sinks that add a logit to a softmax's denominator: they only mean something where the rows must sum to one
DENOMINATOR_SINKS = tuple(name for name, d in SINK_DESIGNS.items() if d.in_denominator)
GATES = ("none", "elementwise", "headwise")
FIXED_V = ("onehot", "uniform")
BACKENDS = ("eager", "triton")

# Model field values whose definition changed after runs were stored: {field: {value: revision}}. Revision 1 is a
# value's first definition and is not written anywhere; when a definition changes, add (or bump) its entry. The
# results store's key holds the revision of every listed value a run uses (sinkpaper.train.config.identity), so
# runs of an older definition keep another key: `python -m sinkpaper store stale` lists them ("stale, rerun")
# and no reader returns them as current.
# sink="v_bias" 2: the paper's exact form of the learnable value bias (runs stored before it are revision 1).
DEFINITION_REVISIONS: dict[str, dict[str, int]] = {
    "sink": {"v_bias": 2},                   # 2: v* added after the attention (the paper's control), no extra key
    "kernel_z": {"one": 2, "maxabs": 2},     # 2: kernel-form scores carry the paper's 1/sqrt(d_h)
    "kernel_phi": {"mlp": 2},                # 2: the 1/sqrt(d_h) scale, and the mlp feature map as released
}

_CHOICES = {
    "pos_encoding": POS_ENCODINGS, "relative_bias": RELATIVE_BIASES, "norm": NORMS, "ffn": FFNS, "head_combine": HEAD_COMBINES,
    "attention": OPERATIONS, "kernel_phi": KERNEL_PHIS, "kernel_z": KERNEL_Z, "sink": SINKS,
    "fixed_v": FIXED_V, "mask": MASKS, "backend": BACKENDS, "gate": GATES,
}


@dataclass
class ModelConfig:
    # sizes
    vocab_size: int = 50432          # GPT-NeoX tokenizer, as in the paper
    d_model: int = 768
    n_layers: int = 10
    n_heads: int = 8
    head_dim: int | None = None      # None: d_model // n_heads
    d_ff: int = 1536                 # FFN hidden size
    max_seq_len: int = 2048          # longest sequence (learnable PE table size)
    tie_embeddings: bool = False
    init_std: float = 0.02
    # positional encoding (Section 7.1)
    pos_encoding: str = "rope"       # rope | nope | absolute (sinusoidal) | learnable | relative (T5) | alibi
    rope_base: float = 10000.0
    relative_buckets: int = 32
    relative_max_distance: int = 128
    relative_bias: str = "learned"   # relative PE: learned (T5's scalar per bucket and head) | bucket (the bucket
                                     # index itself added to the logits, as in the authors' released code)
    # block design (Section 7.1)
    norm: str = "pre"                # RMSNorm placement: pre | post
    norm_eps: float = 1e-5
    ffn: str = "swiglu"              # swiglu | geglu | reglu (gated) | relu | gelu | swish
    head_combine: str = "concat"     # concat: heads concatenated then W_O; add: each head has d_model-wide values, summed
    # attention operation (Section 7.3)
    attention: str = "softmax"       # softmax | softmax_p | sigmoid | elu | kernel | softpick
    softmax_sum: float = 1.0         # softmax scaled so each row sums to alpha
    p_norm: float = 1.0              # softmax_p: exp(s) / ||exp(s)||_p
    attn_normalize: bool = False     # sigmoid / elu: divide by the row sum
    sigmoid_bias: float = 0.0        # sigmoid(s + b); the paper uses b = 0
    kernel_phi: str = "elu"          # kernel attention phi(q) phi(k)^T / sqrt(d_h): identity | elu (elu+1) | mlp
    kernel_z: str = "rowsum"         # normalizer Z: one | rowsum | maxabs (max(|row sum|, 1))
    softpick_eps: float = 1e-6
    # attention biases (Section 7.2)
    # none | sink_token | kv_bias | k_bias (v* = 0) | k_bias_fixed_v | v_bias: the paper's control, v* added
    # AFTER the attention (Softmax(QK^T/sqrt(d_h) + M) V + v*; no extra key) | zero_key_v_bias: ours, not the
    # paper's: an extra key with logit 0 and a learnable value v* inside the attention.
    # After the paper: sink_logit (gpt-oss, 2025): one learnable logit b_h per head joins the softmax's
    # denominator with no value, softmax([s_i1..s_it, b_h]) with b_h's column dropped, so a head can attend to
    # nothing (b_h starts at 0); softmax_plus_one (Miller 2023, "Attention is off by one"): the same with b_h = 0
    # fixed, exp(s_ij) / (1 + sum_j exp(s_ij)).
    sink: str = "none"
    bias_shared: bool = False        # one k*/v* shared by all heads instead of one per head
    fixed_v: str = "onehot"          # k_bias_fixed_v: v* = scale*[1,0,..,0] (onehot) or scale*ones/sqrt(d_h) (uniform)
    fixed_v_scale: float = 1.0       # the paper's Table 12: 1, 5, 20
    k_bias_dims: int | None = None   # learn only the first d_a dims of k* (the rest stay 0); None: all
    # after the paper: gated attention (Qiu et al. 2025, arXiv 2505.06708): Y' = Y * sigmoid(X W_g), X the
    # attention's (normed) input, Y the heads' outputs before the output projection. elementwise: one gate per
    # head dimension (W_g: d_model -> heads x head_dim; the source's best variant, used in Qwen3-Next);
    # headwise: one gate per head (W_g: d_model -> heads). No bias in W_g.
    gate: str = "none"
    # masks (Section 6 and data packing)
    mask: str = "causal"             # causal | prefix (first prefix_len bidirectional) | window | document
    prefix_len: int | None = None
    window: int | None = None        # sliding window: each query sees its last `window` keys
    # execution
    backend: str = "eager"           # eager (readable references) | triton (fused kernels, sinkpaper.fused)

    def __post_init__(self):
        check_types(type(self), dataclasses.asdict(self))
        for name, choices in _CHOICES.items():
            value = getattr(self, name)
            if value not in choices:
                raise ValueError(f"{name}={value!r} is not valid; choose one of: {', '.join(choices)}")
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "d_ff", "max_seq_len"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.head_dim is None:
            if self.d_model % self.n_heads:
                raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}; set head_dim")
            self.head_dim = self.d_model // self.n_heads
        if self.pos_encoding == "rope" and self.head_dim % 2:
            raise ValueError(f"RoPE needs an even head_dim, got {self.head_dim}")
        if self.pos_encoding == "absolute" and self.d_model % 2:
            raise ValueError(f"sinusoidal positions need an even d_model, got {self.d_model}")
        if self.p_norm <= 0:
            raise ValueError(f"p_norm must be > 0, got {self.p_norm}")
        if self.softmax_sum <= 0:
            raise ValueError(f"softmax_sum must be > 0, got {self.softmax_sum}")
        if self.mask == "prefix" and (self.prefix_len is None or self.prefix_len < 1):
            raise ValueError("mask='prefix' needs prefix_len >= 1")
        if self.mask == "window" and (self.window is None or self.window < 1):
            raise ValueError("mask='window' needs window >= 1")
        if SINK_DESIGNS[self.sink].in_denominator and not OPERATORS[self.attention].denominator_logit(self.op_params):
            takes = " or ".join(f"attention={name!r}" for name, op in OPERATORS.items()
                                if op.denominator_logit(OpParams()))
            raise ValueError(f"sink={self.sink!r} adds a logit to a softmax's denominator, so it needs rows that sum to "
                             f"one: attention='softmax' with softmax_sum=1 (got attention={self.attention!r}, "
                             f"softmax_sum={self.softmax_sum:g}); valid combinations: sink in "
                             f"{', '.join(DENOMINATOR_SINKS)} with {takes}, softmax_sum=1")
        if self.gate != "none" and self.head_combine != "concat":
            raise ValueError(f"gate={self.gate!r} gates each head's output before the output projection, so it needs "
                             f"head_combine='concat' (got {self.head_combine!r}); valid combinations: gate in "
                             f"{', '.join(GATES[1:])} with head_combine='concat'")
        if self.k_bias_dims is not None:
            if self.sink not in ("k_bias", "kv_bias"):
                raise ValueError("k_bias_dims applies to sink='k_bias' or 'kv_bias'")
            if not 1 <= self.k_bias_dims <= self.head_dim:
                raise ValueError(f"k_bias_dims must be in [1, head_dim={self.head_dim}], got {self.k_bias_dims}")

    @property
    def op_params(self) -> OpParams:
        """The attention operator's settings, as the operator table takes them."""
        return OpParams.of(self)

    @property
    def proxy_metric(self) -> bool:
        """True when the attention has no probability normalization (the paper's Sink*)."""
        return OPERATORS[self.attention].proxy(self.op_params)

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_dict(cls, values: dict) -> "ModelConfig":
        """Build from a dict, rejecting unknown keys with the list of valid ones."""
        unknown = sorted(set(values) - set(cls.field_names()))
        if unknown:
            raise ValueError(f"unknown model config field(s) {', '.join(unknown)}; valid: {', '.join(cls.field_names())}")
        return cls(**values)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def definition_revisions(model: dict) -> dict[str, int]:
    """{field: revision} of the fields of a model config dict whose value (or, when the dict leaves the field
    out, whose ModelConfig default) has an entry in :data:`DEFINITION_REVISIONS`."""
    defaults = {f.name: f.default for f in dataclasses.fields(ModelConfig)}
    out = {}
    for name, revisions in sorted(DEFINITION_REVISIONS.items()):
        value = model.get(name, defaults.get(name))
        try:
            listed = value in revisions
        except TypeError:  # an unhashable value (a list) has no entry
            listed = False
        if listed:
            out[name] = int(revisions[value])
    return out
