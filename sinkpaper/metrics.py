"""The paper's measurements (Gu et al., ICLR 2025, Section 3), in plain PyTorch, reading only a `Trace`.

Positions are 1-based in the paper and 0-based in tensors: the paper's token k is index k-1.

- Importance of key k in one head (Sec. 3.2): alpha_k = 1/(T-k+1) * sum_{t=k..T} A[t, k] for a causal
  mask; in general the mean of A[t, k] over the queries t that see k (prefix-LM, sliding-window and
  intra-document masks change the divisor).
- Sink_k^epsilon: percentage of heads with alpha_k > epsilon (strict), thresholded per sample, then
  averaged over samples, layers and heads. epsilon = 0.3, T = 64 in the paper.
- Operators without normalization are scored on the proxy |sim| / sum|sim| (marked Sink* in the paper);
  a learnable sink token / KV or K bias at an extra position 0 gets Sink* on that position. The paper's
  V bias alone (v* added after the attention) is no position: it has no Sink*.
- Massive activations: L2 norm of each token's hidden state per layer; token 1 against the others.
- QK angle: q_t . k_j = |q_t| |k_j| cos(q_t, k_j).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields

import torch

from sinkpaper.attention.masks import column_mean
from sinkpaper.trace import Trace

EPSILON = 0.3
SEQ_LEN = 64  # the paper's T for every comparison (the metric falls as T grows)
KS = range(1, 11)
# Sequences longer than this are measured from the fused kernels' column statistics (no T x T map); up to it
# from the attention maps, the paper's own route. One rule for `sinkpaper sink` and the trainer's evaluation.
STATS_ABOVE = 1024


# ---------------------------------------------------------------------------------------------- checks
def check_epsilon(epsilon: float) -> None:
    """The threshold must lie strictly between 0 and 1 (attention weights are probabilities)."""
    if not 0 < float(epsilon) < 1:
        raise ValueError(f"epsilon must satisfy 0 < epsilon < 1 (the paper uses 0.3), got {epsilon}")


def check_seq_len(seq_len: int, k_max: int = 10) -> None:
    """Sink_k for k = 1..k_max needs T >= k_max + 1 tokens.

    alpha_k averages A[t, k] over the queries t >= k; with T = k only the diagonal A[k, k] is left, which
    says nothing about later tokens attending to k. So at least one later query is required.
    """
    if k_max < 1:
        raise ValueError(f"positions are 1-based: k must be >= 1, got {k_max}")
    if seq_len < k_max + 1:
        raise ValueError(f"sequences of length {seq_len} are too short for Sink_k with k up to {k_max}: "
                         f"need at least {k_max + 1} tokens (the paper uses T = 64)")


def _float(x: torch.Tensor) -> torch.Tensor:
    """float32, or float64 when the input already is."""
    return x if x.dtype == torch.float64 else x.float()


# ---------------------------------------------------------------------------------------------- sink metric
# alpha_k = mean of attn[t, k] over the queries t that see key k; it lives with the masks, so that the kernels'
# references (the compute layer) use the metric's own definition without importing this module
alpha = column_mean


def uniform_alpha(seq_len: int, window: int | None = None, prefix: int | None = None):
    """alpha_k (k = 1..T, a numpy array) of a head that spreads its attention uniformly over what each query may
    see, under the same mask the metric uses: the floor the metric reads without any sink. Causal T = 64:
    alpha_1 = H_64 / 64 = 0.074; a sliding window of w keys: alpha_1 = H_w / w (0.52 for w = 4, above 0.3)."""
    from sinkpaper.attention.masks import visible_mask

    vis = visible_mask(seq_len, window=window, prefix=prefix)[0]
    attn = vis.double() / vis.sum(-1, keepdim=True)
    return alpha(attn, vis).numpy()


def uniform_alpha_1(seq_len: int, window: int | None = None, prefix: int | None = None) -> float:
    """alpha_1 of the uniform head (:func:`uniform_alpha`). Plain causal attention has the closed form
    (1/T) * sum_{t=1..T} 1/t = H_T / T, in O(T): the long-context chapter asks for it at T = 32k, where the
    T x T mask would not fit."""
    if seq_len < 1:
        raise ValueError(f"seq_len must be >= 1, got {seq_len}")
    if window is None and prefix is None:
        return sum(1.0 / t for t in range(1, seq_len + 1)) / seq_len
    return float(uniform_alpha(seq_len, window=window, prefix=prefix)[0])


def excess_alpha(alpha_1: float, uniform: float) -> float:
    """How far alpha_1 sits from the uniform floor toward 1: (alpha_1 - u) / (1 - u). 0 = no more than uniform
    attention, 1 = every query on token 1. Comparable across masks, unlike Sink_1 when the floor exceeds eps."""
    return (alpha_1 - uniform) / (1 - uniform)


def percent_above(x: torch.Tensor, epsilon: float) -> torch.Tensor:
    """The share of entries of ``x`` strictly above ``epsilon``, in percent (a float64 scalar tensor): the
    thresholding of every sink rate (`sink_rate`, Sink*), for callers that hold the alpha values already."""
    return (x > epsilon).to(torch.float64).mean() * 100


def sink_rate(alphas: torch.Tensor, epsilon: float = EPSILON, k: int = 1) -> float:
    """Sink_k^epsilon in percent: share of entries with alpha_k > epsilon (strict).

    alphas: [..., T], e.g. [N, L, H, T]; each (sample, layer, head) is thresholded on its own, then the
    indicator is averaged over every leading dim. k is 1-based.
    """
    check_epsilon(epsilon)
    check_seq_len(alphas.shape[-1], k)
    return float(percent_above(alphas[..., k - 1], epsilon))


def sink_rates(alphas: torch.Tensor, epsilon: float = EPSILON, ks: Iterable[int] = KS) -> dict[int, float]:
    """{k: Sink_k^epsilon in percent} for each k in ks."""
    return {int(k): sink_rate(alphas, epsilon, k) for k in ks}


def per_layer_sink_rate(alphas: torch.Tensor, epsilon: float = EPSILON, k: int = 1) -> torch.Tensor:
    """[L]: Sink_k^epsilon of each layer in percent (over samples and heads); alphas [N, L, H, T]."""
    check_epsilon(epsilon)
    check_seq_len(alphas.shape[-1], k)
    if alphas.dim() != 4:
        raise ValueError(f"alphas must be [N, L, H, T], got {tuple(alphas.shape)}")
    return (alphas[..., k - 1] > epsilon).float().mean(dim=(0, 2)) * 100


def alpha_matrix(alphas: torch.Tensor, k: int = 1) -> torch.Tensor:
    """[L, H]: alpha_k averaged over samples (for layer x head heatmaps); alphas [N, L, H, T]."""
    if alphas.dim() != 4:
        raise ValueError(f"alphas must be [N, L, H, T], got {tuple(alphas.shape)}")
    check_seq_len(alphas.shape[-1], k)
    return alphas[..., k - 1].mean(0)


def proxy_attention(sim: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
    """The paper's proxy for operators without normalization: |sim[t, j]| / sum_{visible j'} |sim[t, j']|.

    Masked entries are 0 (whatever sim holds there, -inf included); a row summing to 0 gives 0, not NaN.
    """
    mag = torch.where(visible.to(sim.device), _float(sim).abs(), 0.0)
    z = mag.sum(-1, keepdim=True)
    return torch.where(z > 0, mag / torch.where(z > 0, z, 1.0), 0.0)


def first_key_alpha(attn: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
    """[B, H]: each query's attention on the first key it sees, averaged over the queries: alpha_1 read at each
    query's own first key. That key is position 1 under a causal mask (this is then alpha_1 exactly, the first
    query's weight of 1 on itself included, as the paper counts it), the first token of the query's document
    under intra-document masking, the first key of its window under a sliding window. ``attn`` [B, H, T, T],
    ``visible`` broadcastable to [B, 1, T, T]."""
    B, H, T, _ = attn.shape
    vis = visible if visible.dim() == 4 else visible[:, None]
    first = vis.to(torch.uint8).argmax(-1).expand(B, H, T)          # the first True of each query's row
    return _float(attn).gather(-1, first[..., None]).squeeze(-1).mean(-1)


def doc_start_alpha(attn: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
    """[B, H]: the attention of the queries whose first visible key is not position 1 (under intra-document
    masking, the queries of a document that starts inside the window) on that key (their document's first token),
    averaged over them; NaN for a sample with no such query. Unlike :func:`first_key_alpha` it leaves out the
    queries whose document began before the window, whose first key is the window's start."""
    B, H, T, _ = attn.shape
    vis = visible if visible.dim() == 4 else visible[:, None]
    first = vis.to(torch.uint8).argmax(-1)                            # [B or 1, 1, T]
    inside = (first > 0).expand(B, 1, T).to(torch.float32)
    a = _float(attn).gather(-1, first.expand(B, H, T)[..., None]).squeeze(-1)   # [B, H, T]
    n = inside.sum(-1)                                                 # [B, 1]
    return torch.where(n > 0, (a * inside).sum(-1) / n.clamp(min=1), torch.nan)


# ---------------------------------------------------------------------------------------------- norms, angles
def hidden_norms(hidden_states: list[torch.Tensor]) -> torch.Tensor:
    """[B, L+1, T]: L2 norm over the model dim of each hidden state [B, T, D] (embeddings, then each block)."""
    return torch.stack([_float(h).norm(dim=-1) for h in hidden_states], dim=1)


def massive_activation_ratio(norms: torch.Tensor) -> torch.Tensor:
    """[L+1]: per sample |h_1| / mean_{t=2..T} |h_t|, averaged over samples; norms [B, L+1, T]."""
    if norms.shape[-1] < 2:
        raise ValueError("massive_activation_ratio needs at least 2 tokens")
    ratio = norms[..., 0] / norms[..., 1:].mean(-1)
    return ratio.reshape(-1, ratio.shape[-1]).mean(0)


def head_norms(x_list: list[torch.Tensor]) -> torch.Tensor:
    """[B, L, H, T]: L2 norm of per-layer queries / keys / values [B, H, T, Dh]."""
    return torch.stack([_float(x).norm(dim=-1) for x in x_list], dim=1)


def qk_decomposition(q: torch.Tensor, k: torch.Tensor, visible: torch.Tensor | None = None) -> dict:
    """q_t . k_j = |q_t| |k_j| cos(q_t, k_j), each term as [..., T, T] for q, k [..., T, Dh].

    Returns {"product", "cosine", "norm_product"}; cosine is 0 where a norm is 0. Entries a query cannot
    see are NaN when visible is given (blank in a heatmap).
    """
    q, k = _float(q), _float(k)
    product = q @ k.transpose(-1, -2)
    norm_product = q.norm(dim=-1)[..., :, None] * k.norm(dim=-1)[..., None, :]
    cosine = torch.where(norm_product > 0, product / torch.where(norm_product > 0, norm_product, 1.0), 0.0)
    out = {"product": product, "cosine": cosine, "norm_product": norm_product}
    if visible is not None:
        visible = visible.to(q.device)
        out = {name: torch.where(visible, v, torch.nan) for name, v in out.items()}
    return out


# ---------------------------------------------------------------------------------------------- reductions
@dataclass
class TraceStats:
    """Per-sample reductions of Traces, small enough to keep for hundreds of samples (CPU float32).

    alphas [N, L, H, T]; sink_alphas [N, L, H] (mean over the T queries of the attention on the extra
    sink / bias position) or None; hidden_norms [N, L+1, T] or None; key_norms, value_norms [N, L, H, T]
    or None; proxy: the maps are the |sim| / sum|sim| proxy (numbers are Sink*).
    """
    alphas: torch.Tensor
    sink_alphas: torch.Tensor | None = None
    hidden_norms: torch.Tensor | None = None
    key_norms: torch.Tensor | None = None
    value_norms: torch.Tensor | None = None
    first_key_alphas: torch.Tensor | None = None   # [N, L, H]: where a query's first key is not always position 1
    doc_start_alphas: torch.Tensor | None = None   # [N, L, H]: at document starts inside the window (NaN: none)
    gates: torch.Tensor | None = None              # [N, L, H, T]: each head's gate per query (Trace.gates)
    proxy: bool = False

    @property
    def n_samples(self) -> int:
        return self.alphas.shape[0]

    @property
    def n_layers(self) -> int:
        return self.alphas.shape[1]

    @property
    def n_heads(self) -> int:
        return self.alphas.shape[2]

    @property
    def seq_len(self) -> int:
        return self.alphas.shape[3]

    @classmethod
    def from_trace(cls, trace: Trace) -> "TraceStats":
        """Reduce one Trace (layer by layer, so the [B, L, H, T, T] stack is never built)."""
        def cpu(x):
            return x.detach().to("cpu", torch.float32)

        if trace.alphas is not None:  # column-statistics route: already reduced, per layer's own mask
            alphas = torch.stack([cpu(a) for a in trace.alphas], dim=1)
        else:
            # each layer's own mask ([B or 1, 1, T, T] against [B, H, T, T]): sliding-window layers differ
            alphas = torch.stack([cpu(alpha(a.detach(), trace.visible_of(i)[:, None]))
                                  for i, a in enumerate(trace.attentions)], dim=1)
        first = starts = None
        if trace.attentions is not None and trace.alphas is None:
            masks = [trace.visible_of(i) for i in range(len(trace.attentions))]
            if any(bool((m.to(torch.uint8).argmax(-1) != 0).any()) for m in masks):
                first = torch.stack([cpu(first_key_alpha(a.detach(), m)) for a, m in zip(trace.attentions, masks)],
                                    dim=1)
                starts = torch.stack([cpu(doc_start_alpha(a.detach(), m)) for a, m in zip(trace.attentions, masks)],
                                     dim=1)
        sink = None
        if trace.sink_alphas is not None:
            sink = torch.stack([cpu(s) for s in trace.sink_alphas], dim=1)
        elif trace.sink_attention is not None:
            sink = torch.stack([cpu(_float(s.detach()).mean(-1)) for s in trace.sink_attention], dim=1)
        return cls(
            alphas=alphas,
            sink_alphas=sink,
            hidden_norms=cpu(hidden_norms([h.detach() for h in trace.hidden_states]))
            if trace.hidden_states else None,
            key_norms=cpu(head_norms([x.detach() for x in trace.keys])) if trace.keys else None,
            value_norms=cpu(head_norms([x.detach() for x in trace.values])) if trace.values else None,
            first_key_alphas=first,
            doc_start_alphas=starts,
            gates=torch.stack([cpu(g) for g in trace.gates], dim=1) if trace.gates else None,
            proxy=bool(trace.proxy),
        )

    @staticmethod
    def cat(stats: list["TraceStats"]) -> "TraceStats":
        """Concatenate along the sample dim; every part must have the same fields, shape and proxy flag."""
        if not stats:
            raise ValueError("TraceStats.cat needs at least one TraceStats")
        if len({s.proxy for s in stats}) > 1:
            raise ValueError("cannot concatenate proxy (Sink*) and normalized statistics")
        if len({tuple(s.alphas.shape[1:]) for s in stats}) > 1:
            raise ValueError("cannot concatenate statistics of different [L, H, T]: "
                             f"{sorted({tuple(s.alphas.shape[1:]) for s in stats})}")
        out = {}
        for f in fields(TraceStats):
            if f.name == "proxy":
                continue
            parts = [getattr(s, f.name) for s in stats]
            if f.name == "first_key_alphas" and any(p is not None for p in parts):
                # a batch whose masks let every query see position 1 first records none: there it is alpha_1
                # exactly (first_key_alpha), so an evaluation mixing such batches with document starts reads on
                parts = [s.alphas[..., 0] if p is None else p for s, p in zip(stats, parts)]
            if f.name == "doc_start_alphas" and any(p is not None for p in parts):
                # ... and has no document start inside its windows
                parts = [torch.full_like(s.alphas[..., 0], torch.nan) if p is None else p
                         for s, p in zip(stats, parts)]
            n_none = sum(p is None for p in parts)
            if 0 < n_none < len(parts):
                raise ValueError(f"field {f.name!r} is present in some TraceStats and None in others")
            out[f.name] = None if n_none else torch.cat(parts, dim=0)
        return TraceStats(**out, proxy=stats[0].proxy)


def _doc_start_summary(a: torch.Tensor | None, epsilon: float) -> dict:
    if a is None:
        return {}
    has = ~torch.isnan(a[:, 0, 0])                                   # samples with a document start inside
    if not bool(has.any()):
        return {"sink_doc_start": None, "doc_start_samples": 0}
    return {"sink_doc_start": float(percent_above(a[has], epsilon)), "doc_start_samples": int(has.sum())}


GATE_QUANTILES = (0.1, 0.5, 0.9)


def gate_quantiles(gates: torch.Tensor, qs=GATE_QUANTILES) -> torch.Tensor:
    """[N, L, H, T] gates -> [L, H, len(qs)]: each head's quantiles over every sample and query."""
    L, H = gates.shape[1], gates.shape[2]
    flat = gates.permute(1, 2, 0, 3).reshape(L, H, -1).double()
    return torch.quantile(flat, torch.tensor(qs, dtype=torch.float64), dim=-1).permute(1, 2, 0).float()


def summarize(stats: TraceStats, epsilon: float = EPSILON, ks: Iterable[int] = KS) -> dict:
    """JSON-ready summary: Sink_k (percent, keys "1".."10"), alpha_1, alpha_k (keys as Sink_k), per-layer Sink_1, the alpha_1 matrix,
    massive-activation ratio by layer, Sink* on the bias position (percent), and the sizes."""
    ks = [int(k) for k in ks]
    check_epsilon(epsilon)
    check_seq_len(stats.seq_len, max(ks, default=1))
    return {
        "sink_k": {str(k): v for k, v in sink_rates(stats.alphas, epsilon, ks).items()},
        "alpha_1_mean": float(stats.alphas[..., 0].mean()),
        # alpha_k averaged over samples, layers and heads, for every k of Sink_k: a sink forming at position 2 or
        # 3 shows its onset here before any head crosses epsilon
        "alpha_k": {str(k): float(stats.alphas[..., k - 1].mean()) for k in ks if k <= stats.alphas.shape[-1]},
        "per_layer_sink_1": per_layer_sink_rate(stats.alphas, epsilon, 1).tolist(),
        "alpha_1_matrix": alpha_matrix(stats.alphas, 1).tolist(),
        "massive_activation_ratio_by_layer": None if stats.hidden_norms is None
        else massive_activation_ratio(stats.hidden_norms).tolist(),
        "sink_star": None if stats.sink_alphas is None else float(percent_above(stats.sink_alphas, epsilon)),
        # Sink_1 read at each query's first visible key (a document's first token under intra-document masking)
        "sink_first_key": None if stats.first_key_alphas is None
        else float(percent_above(stats.first_key_alphas, epsilon)),
        # ... and at the document starts inside the windows only (the samples that have one)
        **_doc_start_summary(stats.doc_start_alphas, epsilon),
        # each head's gate over the held-out queries: its 10th, 50th and 90th percentiles, [layer][head][3]
        "gate_quantiles": None if stats.gates is None else gate_quantiles(stats.gates).tolist(),
        "proxy": bool(stats.proxy),
        "n_samples": stats.n_samples,
        "seq_len": stats.seq_len,
        "n_layers": stats.n_layers,
        "n_heads": stats.n_heads,
    }


def measure(trace_fn: Callable[[torch.Tensor], Trace], input_ids: torch.Tensor, batch_size: int = 16,
            progress: bool = True) -> TraceStats:
    """Run trace_fn on input_ids [N, T] batch by batch (no grad) and keep only each batch's TraceStats."""
    if input_ids.dim() != 2:
        raise ValueError(f"input_ids must be [N, T], got {tuple(input_ids.shape)}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    batches = list(torch.split(input_ids, batch_size))
    if progress and len(batches) > 1:
        from .progress import bar
        batches = bar(batches, desc="measure", unit="batch")
    parts = []
    with torch.no_grad():
        for ids in batches:
            part = TraceStats.from_trace(trace_fn(ids))
            if part.n_samples != ids.shape[0]:
                raise ValueError(f"trace_fn returned {part.n_samples} samples for a batch of {ids.shape[0]}")
            parts.append(part)
    return TraceStats.cat(parts)
