"""One LLaMA2-style decoder (RMSNorm, RoPE, SwiGLU, no biases, untied embeddings) covering every
architecture variant of the paper through `ModelConfig`.

Named hook points (identity modules, TransformerLens-style) let every analysis capture the same tensors
for every variant: register a forward hook on any of
  hook_embed, blocks.{i}.attn.hook_q / hook_k (after RoPE) / hook_v / hook_scores / hook_weights /
  hook_attn_map / hook_sink_map / hook_out, blocks.{i}.hook_resid_post.
The attention map (and, for operators without normalization, the paper's |sim| / row-sum proxy) is only
computed when something listens, so training pays nothing for it. `SinkModel.trace` collects them into a
`sinkpaper.trace.Trace` for `sinkpaper.metrics`.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..attention import OPERATORS, SINK_DESIGNS, attention_reference, visible_mask
from ..trace import Trace
from .config import ModelConfig
from .loss import CHUNK, linear_cross_entropy
from .positional import (RelativePositionBias, alibi_bias, apply_rope, rope_tables,
                         sinusoidal_embedding)


_EAGER_LOSS = []


def _eager_loss():
    """linear_cross_entropy behind torch.compiler.disable: under torch.compile the chunked loss runs eagerly between
    the compiled graphs (its chunk loop is not traced). Made on first use: the wrapper imports torch._dynamo (seconds
    of every process that imports the models, the registry's readers among them, and never builds one)."""
    if not _EAGER_LOSS:
        _EAGER_LOSS.append(torch.compiler.disable(linear_cross_entropy))
    return _EAGER_LOSS[0]


TRACE_METHODS = ("maps", "stats")
# On the CPU, plain causal softmax at short contexts trains faster compiled under bf16 autocast through the
# reference operator (its core in fp32, fused by inductor) than through SDPA's flash kernel, whose backward
# dominates there; SDPA is faster from T = 256, and eager or in fp32 at every T (per shape, dtype and compile mode:
# results/bench/cpu-routes.json, from scripts/bench_cpu_routes.py). Both are exact (tests/test_exact_routes.py).
CPU_REFERENCE_MAX_T = 128
# What every attention route computes in fp32 at least: the reference operator its whole core (autocast off), SDPA
# and the fused kernels their row statistics. A run's provenance names it; a stored run without it trained the
# reference operator's softmax in bf16 under CPU autocast (sinkpaper.train.recheck).
ATTENTION_NUMERICS = "fp32 core"
# On a GPU, plain causal softmax trains through SDPA (PyTorch picks its flash or cuDNN kernel) even under backend
# "triton": forward + backward, our kernels measured 0.61-0.80x SDPA's flash path and 0.34-0.53x its cuDNN path on
# an H200 (T 1k-16k, D 64 and 128: results/bench/kernels-gpu.json). The kernels train every variant SDPA does not
# compute. "fused Triton" here would put plain softmax back on the kernels once the benchmark says they are faster.
GPU_PLAIN_SOFTMAX_ROUTE = "SDPA"
# On the CPU the loss takes the chunked path compiled or not (inductor's fused loss over the full logits measured
# slower at the text shape), each chunk's fp32 logits about this size: 128 tokens at vocab 8192. Chunks of 64 to
# 256 tokens measured within 3 % of each other there, 512 and more slower (results/bench/cpu-routes.json)
CPU_LOSS_CHUNK_BYTES = 4 << 20
# Q, K, V (and a gated FFN's W1, W3) as one GEMM each over the concatenated weights (the stored parameters keep
# their layout). Off: at the text shape on the CPU it measured no faster (0.96x fp32, 0.99x bf16, as were inductor's
# cpp_wrapper and max_autotune: results/bench/cpu-options.json, from scripts/bench_cpu_options.py); the benchmark
# flips it to measure it again on another machine.
FUSED_PROJECTIONS = False
# The chunked loss with each chunk's softmax, one-hot and cast in one inductor kernel (linear_cross_entropy(fused=
# True)) instead of five ATen passes over its logits: as exact as them against fp64 (tests/test_train_speed.py),
# 1.04x the bf16 step and 1.01x the fp32 one at the text shape on an AMD EPYC Zen 4 (results/bench/cpu-options-
# epyc-zen4.json; the loss alone 1.4x). Off: no stored run trains on it before the routes check passes on it
# (sinkpaper.train.routes_check); scripts/bench_cpu_options.py flips it to measure it.
FUSED_LOSS = False
# positional encodings that add no score bias, so the fused kernels (which take none) cover them
FUSED_POSITIONS = ("rope", "nope", "absolute", "learnable")


class HookPoint(nn.Module):
    """Identity; exists so analyses can `register_forward_hook` on a named tensor."""

    def forward(self, x):
        return x

    @property
    def active(self) -> bool:
        return bool(self._forward_hooks)


@dataclass
class ModelOutput:
    logits: torch.Tensor | None     # [B, T, vocab]; None when a loss was asked for without logits
    loss: torch.Tensor | None = None


@dataclass
class _Context:
    """Per-forward tensors shared by all layers."""
    visible: torch.Tensor            # [B or 1, T', T'] over the sequence the attention sees
    cos: torch.Tensor | None = None  # RoPE tables [T', head_dim]
    sin: torch.Tensor | None = None
    score_bias: torch.Tensor | None = None  # [1, H, T', T'] ALiBi / relative
    fused_masks: dict | None = None   # the same mask as `visible`, as the fused kernels' arguments
    causal: bool = False             # `visible` is the plain causal mask (no sink token, no other mask)


class FeedForward(nn.Module):
    """Gated (SwiGLU, GeGLU, ReGLU): W2(act(W1 x) * W3 x); plain (ReLU, GeLU, Swish): W2 act(W1 x)."""

    _ACT = {"swiglu": F.silu, "geglu": F.gelu, "reglu": F.relu, "relu": F.relu, "gelu": F.gelu, "swish": F.silu}

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.act = self._ACT[cfg.ffn]
        self.gated = cfg.ffn.endswith("glu")
        self.w1 = nn.Linear(cfg.d_model, cfg.d_ff, bias=False)
        self.w3 = nn.Linear(cfg.d_model, cfg.d_ff, bias=False) if self.gated else None
        self.w2 = nn.Linear(cfg.d_ff, cfg.d_model, bias=False)

    def forward(self, x):
        if self.gated and FUSED_PROJECTIONS:
            a, b = F.linear(x, torch.cat([self.w1.weight, self.w3.weight])).chunk(2, dim=-1)
            return self.w2(self.act(a) * b)
        h = self.act(self.w1(x))
        if self.gated:
            h = h * self.w3(x)
        return self.w2(h)


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.compiled_bf16 = False     # trained compiled under CPU bf16 autocast (SinkModel.set_training_route)
        H, Dh, d = cfg.n_heads, cfg.head_dim, cfg.d_model
        # "add": every head reads d_model-wide values and head outputs are summed, not concatenated.
        self.v_dim = d if cfg.head_combine == "add" else Dh
        self.q_proj = nn.Linear(d, H * Dh, bias=False)
        self.k_proj = nn.Linear(d, H * Dh, bias=False)
        self.v_proj = nn.Linear(d, H * self.v_dim, bias=False)
        self.o_proj = nn.Linear(d if cfg.head_combine == "add" else H * Dh, d, bias=False)
        self.phi = None
        if cfg.attention == "kernel" and cfg.kernel_phi == "mlp":
            # The paper does not write the MLP out; its released code uses two bias-free linear maps and a ReLU.
            self.phi = nn.Sequential(nn.Linear(Dh, Dh, bias=False), nn.ReLU(), nn.Linear(Dh, Dh, bias=False))
        # The paper's attention biases (Section 7.2). KV / K biases: an extra key k* (value v*, or 0) every
        # query sees. V bias alone (the paper's control): v* added after the attention, no extra key.
        # zero_key_v_bias (ours, not the paper's): an extra key with logit 0 and a learnable value v*.
        # The parameters follow from the design's key and value (sinkpaper.attention.SINK_DESIGNS).
        self.design = design = SINK_DESIGNS[cfg.sink]
        n_bias = 1 if cfg.bias_shared else H
        self.k_bias = self.v_bias = None
        if design.key == "k_bias":
            self.k_bias = nn.Parameter(torch.randn(n_bias, Dh) * cfg.init_std)
        if design.value in ("learned", "after"):
            self.v_bias = nn.Parameter(torch.randn(n_bias, self.v_dim) * cfg.init_std)
        if design.value == "fixed":
            if cfg.fixed_v == "onehot":
                v_star = torch.zeros(n_bias, self.v_dim)
                v_star[:, 0] = 1.0
            else:
                v_star = torch.ones(n_bias, self.v_dim) / self.v_dim ** 0.5
            self.register_buffer("fixed_v_star", v_star * cfg.fixed_v_scale)
        self.sink_logit = nn.Parameter(torch.zeros(H)) if design.key == "logit" else None
        self.gate_proj = None
        if cfg.gate != "none":
            self.gate_proj = nn.Linear(d, H * Dh if cfg.gate == "elementwise" else H, bias=False)
        if cfg.k_bias_dims is not None:
            dims = torch.zeros(Dh)
            dims[: cfg.k_bias_dims] = 1.0
            self.register_buffer("k_bias_dims_mask", dims)
        for name in ("hook_q", "hook_k", "hook_v", "hook_scores", "hook_weights", "hook_attn_map",
                     "hook_sink_map", "hook_gate", "hook_out"):
            setattr(self, name, HookPoint())

    def _sink_args(self) -> dict:
        """The bias arguments of `attention_reference` / `fused.attention` (same meaning in both)."""
        k_bias = self.k_bias
        if k_bias is not None and self.cfg.k_bias_dims is not None:
            k_bias = k_bias * self.k_bias_dims_mask
        if k_bias is not None and self.cfg.attention == "kernel":
            k_bias = self._phi(k_bias)
        v_bias = self.fixed_v_star if self.design.value == "fixed" else self.v_bias
        sink_logit = None
        if self.design.key == "logit":           # a learnable logit per head (gpt-oss)
            sink_logit = self.sink_logit
        elif self.design.key == "zero_logit":    # a logit fixed at 0 (softmax plus one; our zero-key V bias)
            sink_logit = self.q_proj.weight.new_zeros(self.cfg.n_heads)
        return {"k_bias": k_bias, "v_bias": v_bias, "sink_logit": sink_logit}

    def _phi(self, x):
        kind = self.cfg.kernel_phi
        if kind == "identity":
            return x
        if kind == "elu":
            return F.elu(x) + 1.0
        return self.phi(x)

    def route(self, ctx: _Context, seq_len: int, device, want_map: bool = False,
              compiled_bf16: bool | None = None) -> str:
        """Which exact route computes this attention: "fused Triton" (backend triton, an operator the kernels
        cover; on a GPU plain causal softmax only where GPU_PLAIN_SOFTMAX_ROUTE says the kernels are faster), "SDPA"
        (plain causal softmax: PyTorch's fused attention, the same function without the T x T intermediates; on
        the CPU except compiled under bf16 autocast up to CPU_REFERENCE_MAX_T) or "reference" (everything else,
        and anything that reads the maps). ``compiled_bf16`` None: the model's own setting
        (:meth:`SinkModel.set_training_route`; not read from the call: a graph break runs the frame that decides
        it eagerly, where torch.compiler.is_compiling() is False, so a compiled step took SDPA while its
        provenance named the reference)."""
        if compiled_bf16 is None:
            compiled_bf16 = self.compiled_bf16
        cfg, params = self.cfg, self.cfg.op_params
        if want_map:
            return "reference"
        plain = (ctx.causal and cfg.attention == "softmax" and params.softmax_sum == 1.0 and ctx.score_bias is None
                 and all(v is None for v in self._sink_args().values()))
        on_cpu = torch.device(device).type == "cpu"
        if cfg.backend == "triton" and ctx.fused_masks is not None and not (
                plain and not on_cpu and GPU_PLAIN_SOFTMAX_ROUTE == "SDPA"):
            return "fused Triton"
        if plain and not (on_cpu and compiled_bf16 and seq_len <= CPU_REFERENCE_MAX_T):
            return "SDPA"
        return "reference"

    def forward(self, x: torch.Tensor, ctx: _Context) -> torch.Tensor:
        cfg = self.cfg
        B, T, _ = x.shape
        H, Dh = cfg.n_heads, cfg.head_dim
        if FUSED_PROJECTIONS:
            w = torch.cat([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight])
            q, k, v = F.linear(x, w).split([H * Dh, H * Dh, H * self.v_dim], dim=-1)
        else:
            q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        q = q.view(B, T, H, Dh).transpose(1, 2)          # [B, H, T, Dh]
        k = k.view(B, T, H, Dh).transpose(1, 2)
        v = v.view(B, T, H, self.v_dim).transpose(1, 2)
        if ctx.cos is not None:
            q, k = apply_rope(q, ctx.cos, ctx.sin), apply_rope(k, ctx.cos, ctx.sin)
        q, k, v = self.hook_q(q), self.hook_k(k), self.hook_v(v)
        if cfg.attention == "kernel":
            q, k = self._phi(q), self._phi(k)
        want_map = any(h.active for h in (self.hook_scores, self.hook_weights, self.hook_attn_map, self.hook_sink_map))
        params, sinks = cfg.op_params, self._sink_args()
        route = self.route(ctx, T, x.device, want_map)
        if route == "fused Triton":
            from .. import fused  # fused Triton kernels; same contract as attention_reference
            # on CPU without TRITON_INTERPRET=1, impl="auto" runs the reference with the same contract
            out = fused.attention(q, k, v, op=cfg.attention, softpick_eps=params.softpick_eps,
                                  sigmoid_bias=params.sigmoid_bias if cfg.attention == "sigmoid" else 0.0,
                                  **sinks, **ctx.fused_masks)
        elif route == "SDPA":
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            res = attention_reference(q, k, v, visible=ctx.visible, op=cfg.attention, score_bias=ctx.score_bias,
                                      params=params, return_map=want_map, **sinks)
            out = res.out
            if want_map:
                self.hook_scores(res.scores)
                self.hook_weights(res.weights)
                self.hook_attn_map(res.attn_map)
                if res.sink_map is not None:
                    self.hook_sink_map(res.sink_map)
        if self.gate_proj is not None:                                  # gated attention: Y * sigmoid(X W_g)
            g = torch.sigmoid(self.gate_proj(x)).view(B, T, H, -1).transpose(1, 2)   # [B, H, T, Dh or 1]
            if self.hook_gate.active:                                   # each head's gate, mean over its dims
                self.hook_gate(g.mean(-1))
            out = out * g.to(out.dtype)
        if cfg.head_combine == "add":
            out = out.sum(dim=1)                                        # [B, T, d_model]
        else:
            out = out.transpose(1, 2).reshape(B, T, H * Dh)
        return self.hook_out(self.o_proj(out))


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.pre_norm = cfg.norm == "pre"
        self.norm1 = nn.RMSNorm(cfg.d_model, eps=cfg.norm_eps)
        self.norm2 = nn.RMSNorm(cfg.d_model, eps=cfg.norm_eps)
        self.attn = Attention(cfg)
        self.ffn = FeedForward(cfg)
        self.hook_resid_post = HookPoint()

    def forward(self, x, ctx):
        if self.pre_norm:
            x = x + self.attn(self.norm1(x), ctx)
            x = x + self.ffn(self.norm2(x))
        else:  # post-norm (original Transformer): normalize after each residual sum
            x = self.norm1(x + self.attn(x, ctx))
            x = self.norm2(x + self.ffn(x))
        return self.hook_resid_post(x)


class SinkModel(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        if cfg.backend == "triton" and importlib.util.find_spec("sinkpaper.fused") is None:
            raise ValueError("backend='triton' needs the fused kernels in sinkpaper.fused, which this "
                             "installation does not have; use backend='eager'")
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.n_extra = 1 if cfg.sink == "sink_token" else 0   # a learnable sink token occupies position 0
        self._eager_loss = _eager_loss()
        self.sink_token = nn.Parameter(torch.randn(cfg.d_model) * cfg.init_std) if self.n_extra else None
        self.pos_embed = nn.Embedding(cfg.max_seq_len + self.n_extra, cfg.d_model) if cfg.pos_encoding == "learnable" else None
        self.relative = (RelativePositionBias(cfg.n_heads, cfg.relative_buckets, cfg.relative_max_distance,
                                              bidirectional=cfg.mask == "prefix", learned=cfg.relative_bias == "learned")
                         if cfg.pos_encoding == "relative" else None)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        # Post-norm blocks already end in a norm; pre-norm needs a final one before the LM head.
        self.final_norm = nn.RMSNorm(cfg.d_model, eps=cfg.norm_eps) if cfg.norm == "pre" else nn.Identity()
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.hook_embed = HookPoint()
        self.apply(self._init_weights)
        if cfg.tie_embeddings:
            self.lm_head.weight = self.embed.weight

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=self.cfg.init_std)
            if getattr(module, "bias", None) is not None:
                nn.init.zeros_(module.bias)

    def num_parameters(self, non_embedding: bool = True) -> int:
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n -= self.embed.weight.numel() + (0 if self.cfg.tie_embeddings else self.lm_head.weight.numel())
        return n

    def hook_points(self) -> dict[str, HookPoint]:
        return {name: m for name, m in self.named_modules() if isinstance(m, HookPoint)}

    def real_visible(self, seq_len: int, doc_ids: torch.Tensor | None, device=None) -> torch.Tensor:
        """[B or 1, T, T] which real token sees which (the mask the sink metric's divisor uses)."""
        cfg = self.cfg
        if cfg.mask == "document" and doc_ids is None:
            raise ValueError("mask='document' needs doc_ids [batch, T]")
        if cfg.mask != "document" and doc_ids is not None:
            raise ValueError(f"doc_ids given but mask={cfg.mask!r}; use mask='document'")
        return visible_mask(seq_len, prefix=cfg.prefix_len if cfg.mask == "prefix" else None,
                            window=cfg.window if cfg.mask == "window" else None, doc_ids=doc_ids, device=device)

    def _context(self, seq_len: int, doc_ids, device) -> _Context:
        cfg = self.cfg
        visible = self.real_visible(seq_len, doc_ids, device)
        total = seq_len + self.n_extra
        if self.n_extra:  # the sink token: sees itself only, and every query sees it
            padded = torch.zeros(visible.shape[0], total, total, dtype=torch.bool, device=device)
            padded[:, :, 0] = True
            padded[:, 1:, 1:] = visible
            visible = padded
        ctx = _Context(visible=visible, causal=cfg.mask == "causal" and not self.n_extra)
        if cfg.backend == "triton" and self.fused_supported():
            ctx.fused_masks = self._fused_mask_args(doc_ids)
        if cfg.pos_encoding == "rope":
            ctx.cos, ctx.sin = rope_tables(torch.arange(total, device=device), cfg.head_dim, cfg.rope_base)
        elif cfg.pos_encoding == "alibi":
            ctx.score_bias = alibi_bias(cfg.n_heads, total, device)[None]
        elif cfg.pos_encoding == "relative":
            ctx.score_bias = self.relative(total, device)[None]
        return ctx

    def _fused_mask_args(self, doc_ids) -> dict:
        """The model's mask as the fused kernels' arguments."""
        cfg = self.cfg
        return {"causal": True, "doc_ids": doc_ids, "prefix": cfg.prefix_len if cfg.mask == "prefix" else None,
                "window": cfg.window if cfg.mask == "window" else None}

    def fused_supported(self) -> bool:
        """True when the fused Triton path computes this model's attention (`backend="triton"` then trains
        through it, and `trace(method="stats")` reads alpha from its column statistics): the operator and its
        settings, and the sink design, as the operator table lists them; positions that add no score bias; heads
        that are concatenated. The rest run on the reference."""
        cfg = self.cfg
        op = OPERATORS[cfg.attention]
        return (op.fused_id is not None and op.fused_when(cfg.op_params) and SINK_DESIGNS[cfg.sink].fused
                and cfg.pos_encoding in FUSED_POSITIONS and cfg.head_combine == "concat")

    @property
    def gating_sink(self) -> bool:
        """A softmax sink whose extra key carries a zero value (the K bias, a sink logit, softmax plus one): it
        scales each query's attention by a gate, sigmoid(LSE - b), and adds nothing (the identity of
        :func:`sinkpaper.attention.operators.sink_logit_gate`)."""
        d = SINK_DESIGNS[self.cfg.sink]
        return self.cfg.attention == "softmax" and d.extra_key and d.value == "zero"

    @property
    def extra_columns(self) -> int:
        """Columns before the real keys in each attention map: the sink token's position, and the extra key
        column of a KV / K bias or sink logit (the paper's V bias alone adds none)."""
        return self.n_extra + (1 if SINK_DESIGNS[self.cfg.sink].extra_key else 0)

    def loss_route(self, device) -> str:
        """How a training loss is computed: "chunked" on the CPU (:func:`linear_cross_entropy`, compiled or not:
        it runs eagerly between compiled graphs), "plain" elsewhere when compiled (inductor fuses the plain loss
        over the full logits; eager there is chunked too). Both give the same loss and gradients."""
        return "chunked" if torch.device(device).type == "cpu" else "plain"

    def loss_chunk(self, device) -> int:
        """Tokens per chunk of the chunked loss: on the CPU about :data:`CPU_LOSS_CHUNK_BYTES` of fp32 logits
        (at least 64 tokens), elsewhere :data:`sinkpaper.models.loss.CHUNK`."""
        if torch.device(device).type != "cpu":
            return CHUNK
        return max(64, CPU_LOSS_CHUNK_BYTES // (4 * self.cfg.vocab_size))

    def set_training_route(self, dtype: str, compiled: bool) -> None:
        """How the model is trained (``dtype`` "bf16": under autocast, or "fp32"; compiled or not): plain causal
        softmax on the CPU takes the reference operator only compiled in bf16 (:meth:`Attention.route`). The
        trainer and the benchmarks set it before the first step; evaluation reads the same route."""
        for block in self.blocks:
            block.attn.compiled_bf16 = bool(compiled and dtype == "bf16")

    def training_route(self, seq_len: int, device, dtype: str = "bf16", compiled: bool = True) -> dict:
        """Which exact route a training step takes at ``seq_len`` on ``device`` in ``dtype`` ("bf16": autocast,
        or "fp32"), compiled or not (a run's provenance names it): the attention's (:meth:`Attention.route`), the
        loss's ("chunked by N tokens", or "plain" when compiled off the CPU) and what the attention computes in
        fp32 (:data:`ATTENTION_NUMERICS`)."""
        dev = torch.device(device)
        doc_ids = torch.zeros(1, seq_len, dtype=torch.long) if self.cfg.mask == "document" else None
        ctx = self._context(seq_len, doc_ids, "cpu")   # the route depends on the mask's kind, not its device
        loss = (f"chunked by {self.loss_chunk(dev)} tokens{', fused' if FUSED_LOSS else ''}"
                if self.loss_route(dev) == "chunked"
                else "plain when compiled, chunked when eager")
        attention = self.blocks[0].attn.route(ctx, seq_len, dev, compiled_bf16=compiled and dtype == "bf16")
        return {"attention": attention, "loss": loss, "numerics": ATTENTION_NUMERICS}

    def hidden(self, input_ids: torch.Tensor, *, doc_ids: torch.Tensor | None = None) -> torch.Tensor:
        """input_ids [B, T] -> the final-normed hidden states [B, T, d] of the real tokens, which the LM head reads
        (the forward pass up to the head: :meth:`forward` and :meth:`trace` both run it)."""
        cfg = self.cfg
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be [batch, T], got shape {tuple(input_ids.shape)}")
        B, T = input_ids.shape
        if T > cfg.max_seq_len:
            raise ValueError(f"sequence length {T} exceeds max_seq_len={cfg.max_seq_len}")
        device = input_ids.device
        x = self.embed(input_ids)
        if self.n_extra:
            x = torch.cat([self.sink_token.to(x.dtype).expand(B, 1, -1), x], dim=1)
        total = T + self.n_extra
        if cfg.pos_encoding == "absolute":
            x = x + sinusoidal_embedding(torch.arange(total, device=device), cfg.d_model).to(x.dtype)
        elif cfg.pos_encoding == "learnable":
            x = x + self.pos_embed(torch.arange(total, device=device))
        x = self.hook_embed(x)
        ctx = self._context(T, doc_ids, device)
        for block in self.blocks:
            x = block(x, ctx)
        return self.final_norm(x)[:, self.n_extra:]

    def forward(self, input_ids: torch.Tensor, *, doc_ids: torch.Tensor | None = None,
                targets: torch.Tensor | None = None, return_logits: bool | None = None) -> ModelOutput:
        """input_ids [B, T] -> logits [B, T, vocab]; with targets [B, T] (-100 = ignored) also the mean loss.

        With targets the logits are not materialised unless `return_logits=True`: the loss comes from
        `linear_cross_entropy` (chunked over tokens, the same value and gradients as the plain cross-entropy)."""
        h = self.hidden(input_ids, doc_ids=doc_ids)
        device = input_ids.device
        route = self.loss_route(device)
        chunked = targets is not None and not return_logits and (route != "plain" or not torch.compiler.is_compiling())
        logits = None if chunked else self.lm_head(h)
        loss = None
        if targets is not None and not chunked:
            flat = logits.reshape(-1, logits.shape[-1])       # softmax in fp32 at least, as the chunked loss
            loss = F.cross_entropy(flat.to(torch.promote_types(flat.dtype, torch.float32)), targets.reshape(-1),
                                   ignore_index=-100)
        elif targets is not None:
            loss = self._eager_loss(h.reshape(-1, h.shape[-1]), self.lm_head.weight, targets.reshape(-1),
                                    self.loss_chunk(device), FUSED_LOSS)
        return ModelOutput(logits=logits if return_logits or targets is None else None, loss=loss)

    @torch.no_grad()
    def trace(self, input_ids: torch.Tensor, *, doc_ids: torch.Tensor | None = None, method: str = "maps",
              logits: bool = False) -> Trace:
        """One forward pass that records maps, q/k/v and hidden states into a `Trace` (real tokens only;
        the sink token's or KV / K bias's column goes to `sink_attention`; the paper's V bias has no column).
        logits=True also runs the LM head and keeps its logits (they are the plain forward's); without it the
        head, most of a forward's FLOPs at a small model's vocabulary, is not run.

        method="stats" records no T x T map: each layer's alpha_k comes from `sinkpaper.fused.column_stats`
        (fused on GPU; the reference on CPU unless TRITON_INTERPRET=1), for any sequence length.
        """
        if method not in TRACE_METHODS:
            raise ValueError(f"method={method!r}; valid: {', '.join(TRACE_METHODS)}")
        if method == "stats":
            return self._trace_column_stats(input_ids, doc_ids)
        store: dict[str, list] = {}
        handles = []
        points = self.hook_points()
        wanted = ["hook_embed"] + [f"blocks.{i}.{n}" for i in range(self.cfg.n_layers)
                                   for n in ("attn.hook_q", "attn.hook_k", "attn.hook_v", "attn.hook_attn_map",
                                             "attn.hook_sink_map", "hook_resid_post")
                                   + (("attn.hook_gate",) if self.cfg.gate != "none" else ())]
        for name in wanted:
            key = name.split(".")[-1]
            handles.append(points[name].register_forward_hook(
                lambda _m, _i, out, key=key: store.setdefault(key, []).append(out.detach())))
        try:
            h = self.hidden(input_ids, doc_ids=doc_ids)
            out = self.lm_head(h) if logits else None
        finally:
            for h in handles:
                h.remove()
        e = self.n_extra
        maps = store["hook_attn_map"]
        sink = store.get("hook_sink_map")
        if e:  # the sink token is a real sequence position 0: split it off
            sink = [m[:, :, e:, 0] for m in maps]
            maps = [m[:, :, e:, e:] for m in maps]
        cut = lambda xs: [x[:, :, e:] for x in xs]  # noqa: E731  [B, H, T', D] -> real tokens
        gates = store.get("hook_gate")
        if gates is None and self.gating_sink and sink is not None:
            # a zero-valued extra key under softmax: its weight w is what the gate sigmoid(LSE - b) takes away
            # from the real keys (sinkpaper.attention.operators.sink_logit_gate), so the gate is 1 - w
            gates = [1.0 - s for s in sink]
        return Trace(
            attentions=maps,
            visible=self.real_visible(input_ids.shape[1], doc_ids, input_ids.device),
            hidden_states=[h[:, e:] for h in store["hook_embed"] + store["hook_resid_post"]],
            sink_attention=sink,
            queries=cut(store["hook_q"]), keys=cut(store["hook_k"]), values=cut(store["hook_v"]),
            proxy=self.cfg.proxy_metric, gates=gates, logits=out,
        )

    def _trace_column_stats(self, input_ids: torch.Tensor, doc_ids: torch.Tensor | None) -> Trace:
        cfg = self.cfg
        if not self.fused_supported():
            fused_ops = ", ".join(name for name, op in OPERATORS.items() if op.fused_id is not None)
            fused_sinks = ", ".join(name for name, d in SINK_DESIGNS.items() if d.fused)
            raise ValueError(f"method='stats' covers the fused operators ({fused_ops}; sigmoid and elu without "
                             f"normalization, softmax with softmax_sum=1), the sinks {fused_sinks}, positions "
                             f"{'/'.join(FUSED_POSITIONS)} and concatenated heads; this model (attention="
                             f"{cfg.attention}, pos_encoding={cfg.pos_encoding}, sink={cfg.sink}, head_combine="
                             f"{cfg.head_combine}) needs method='maps'")
        from .. import fused
        masks = self._fused_mask_args(doc_ids)
        alphas, sinks, hidden, pending_q = [], [], [], []
        handles = [self.hook_embed.register_forward_hook(lambda _m, _i, out: hidden.append(out.detach()))]
        for block in self.blocks:
            attn = block.attn

            def on_k(_m, _i, k, attn=attn):
                sink = attn._sink_args()
                # the values do not enter the map: only an extra key adds a column (the paper's V bias does not)
                extra = {n: sink[n] for n in ("k_bias", "sink_logit") if sink[n] is not None}
                stats = fused.column_stats(pending_q.pop(), k, op=cfg.attention, softpick_eps=cfg.softpick_eps,
                                             sigmoid_bias=cfg.sigmoid_bias if cfg.attention == "sigmoid" else 0.0,
                                             **masks, **extra)
                alphas.append(stats.alpha)
                if stats.sink is not None:
                    sinks.append(stats.sink)

            handles.append(attn.hook_q.register_forward_hook(lambda _m, _i, q: pending_q.append(q)))
            handles.append(attn.hook_k.register_forward_hook(on_k))
            handles.append(block.hook_resid_post.register_forward_hook(lambda _m, _i, out: hidden.append(out.detach())))
        try:
            self.hidden(input_ids, doc_ids=doc_ids)   # the maps' statistics need no LM head
        finally:
            for h in handles:
                h.remove()
        return Trace(attentions=[], alphas=alphas, sink_alphas=sinks or None,
                     visible=self.real_visible(input_ids.shape[1], doc_ids, input_ids.device),
                     hidden_states=hidden, proxy=cfg.proxy_metric)
