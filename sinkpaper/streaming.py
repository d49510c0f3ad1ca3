"""Why the sink matters: streaming perplexity with a bounded KV cache, and perplexity with the sink removed.

Streaming (Xiao et al. 2024, "Efficient Streaming Language Models with Attention Sinks"). A long token
sequence is read left to right; at step j the model has a KV cache and predicts token j+1. Policies:

- ``full``: every earlier token stays in the cache (one ordinary forward pass gives the same numbers);
- ``window``: the cache holds the ``window`` most recent tokens, the current one included, and evicts the rest
  (the first tokens go first);
- ``sink_window``: the cache holds the first ``n_sink`` tokens (the "attention sinks") plus the
  ``window - n_sink`` most recent ones, so both streaming policies have the same budget of ``window`` KV entries.

Positions are assigned *within the cache*, as StreamingLLM does for RoPE models: once the cache is full the
query sits at cache position ``window - 1``, the recent token i at ``window - 1 - (j - i)`` and the sink token s
at s. Each token's keys and values are computed once, when it is read, from what the cache held then; later
steps reuse them (that is what a KV cache is), so the computation is recurrent, not a forward pass over the
window.

How it is computed, exactly and fast:

- RoPE scores depend only on the distance between query and key. A recent key's distance in the cache equals its
  distance in the text, so recent keys keep the rotation they got at their original position and queries use
  their original positions (``position_ids``). Only the sink keys move: their cache distance to query j is
  ``window - 1 - s`` instead of ``j - s``, so each sink key is **re-rotated** by ``j - window + 1`` positions
  for query j (the model's own rotary embedding and ``apply_rotary_pos_emb``; R(a) R(b) = R(a + b)). The tests
  check this against a one-layer model run on the cache contents as an ordinary sequence.
- Tokens are processed in chunks: every query of a chunk sees exactly the keys it would see token by token
  (sliding window plus its own re-rotated copy of the sinks), so ``chunk=64`` and ``chunk=1`` give the same
  NLL. Attention itself is the model family's ``eager_attention_forward`` (its scaling, soft-capping and
  grouped-query layout), called through the package's one attention override (`sinkpaper.hf_attention`, over
  transformers' ``AttentionInterface``) with a mask built here;
  the per-layer KV store is a list of tensors evicted after each chunk (transformers 5 has no public
  sink cache; the ``StartRecentKVCache`` idea of StreamingLLM is a few lines here).
- A layer's own sliding window (Gemma 3's local layers) applies on top, to the distance in the cache.

Sink removal: `perplexity_without_sink` runs the full-cache model with the attention to chosen key positions
(default: the first token) removed in all or chosen layers; the softmax renormalizes over the remaining keys.
The removed positions' own queries keep their attention (nothing else is visible to the first token).

Needs a RoPE model (Llama, Gemma 3, Qwen, Mistral, ...) for the streaming policies; ``full`` and sink removal
work with any causal LM whose attention goes through transformers' ``AttentionInterface``.
"""
from __future__ import annotations

import hashlib
import inspect
import math
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Sequence

import torch

from . import hf_attention

POLICIES = ("full", "window", "sink_window")
DEFAULT_TEXT = "/usr/share/common-licenses/GPL-3"  # the GNU GPL v3 (base-files: every Debian/Ubuntu system)


# ------------------------------------------------------------------------------------------------ text
def read_text(path: str | Path = DEFAULT_TEXT) -> tuple[str, dict]:
    """A long plain-text file and its provenance (path, characters, sha256)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"text_path {str(p)!r} does not exist; any long plain-text file works (the default "
                                f"{DEFAULT_TEXT} ships with every Debian/Ubuntu system)")
    text = p.read_text(encoding="utf-8", errors="replace")
    return text, {"text_path": str(p), "text_chars": len(text),
                  "text_sha256": hashlib.sha256(text.encode()).hexdigest()[:16]}


def text_ids(tokenizer, path: str | Path = DEFAULT_TEXT, *, n_tokens: int = 1024, bos: bool = False
             ) -> tuple[torch.Tensor, dict]:
    """The first ``n_tokens`` tokens of a text file as [1, n_tokens] ids (BOS first when ``bos``), plus provenance."""
    if not isinstance(n_tokens, int) or n_tokens < 2:
        raise ValueError(f"n_tokens must be an int >= 2, got {n_tokens!r}")
    text, prov = read_text(path)
    ids = tokenizer(text, add_special_tokens=False).input_ids
    if bos:
        if tokenizer.bos_token_id is None:
            raise ValueError("bos=True but the tokenizer has no BOS token")
        ids = [tokenizer.bos_token_id] + ids
    if len(ids) < n_tokens:
        raise ValueError(f"{path} has only {len(ids)} tokens{' with BOS' if bos else ''}; n_tokens={n_tokens}")
    return torch.tensor([ids[:n_tokens]]), {**prov, "text_tokens": len(ids), "n_tokens": n_tokens, "bos": bos}


# ---------------------------------------------------------------------------------------------- results
def perplexity(nll: torch.Tensor, start: int = 0, stop: int | None = None) -> float:
    """exp(mean NLL) over ``nll[start:stop]`` (nll[j] is the loss of predicting token j+1)."""
    part = nll[start:stop]
    if part.numel() == 0:
        raise ValueError(f"no predictions in nll[{start}:{stop}] (length {nll.numel()})")
    return math.exp(float(part.double().mean()))


def binned_perplexity(nll: torch.Tensor, bin_size: int) -> list[float]:
    """Perplexity of consecutive blocks of ``bin_size`` predictions (the last block may be shorter)."""
    if not isinstance(bin_size, int) or bin_size < 1:
        raise ValueError(f"bin_size must be an int >= 1, got {bin_size!r}")
    return [perplexity(nll, s, s + bin_size) for s in range(0, nll.numel(), bin_size)]


@dataclass
class StreamingResult:
    """Per-token NLL of one streaming run. ``nll[j]`` = -log p(token j+1 | the cache at step j)."""
    policy: str
    window: int | None  # KV entries a query may attend to (None: unbounded)
    n_sink: int  # sink tokens kept (0 for full and window)
    chunk: int
    nll: torch.Tensor  # [n_tokens - 1], float32, CPU
    max_keys_attended: int  # the most keys any query attended to, over all layers (<= window)
    max_cache_entries: int  # the most KV entries stored per layer at once (window with chunk=1; + chunk - 1 else)
    seconds: float
    provenance: dict = field(default_factory=dict)

    @property
    def perplexity(self) -> float:
        return perplexity(self.nll)

    def perplexity_from(self, start: int) -> float:
        """Perplexity of the predictions made at steps >= start (e.g. start=window: after eviction began)."""
        return perplexity(self.nll, start)

    def to_dict(self) -> dict:
        return {"policy": self.policy, "window": self.window, "n_sink": self.n_sink, "chunk": self.chunk,
                "n_tokens": self.nll.numel() + 1, "perplexity": self.perplexity,
                "max_keys_attended": self.max_keys_attended, "max_cache_entries": self.max_cache_entries,
                "seconds": round(self.seconds, 2), "provenance": self.provenance}


@dataclass
class SinkRemovalResult:
    """Perplexity with the attention to ``positions`` removed in ``layers``, against the unmodified model."""
    positions: list[int]
    layers: list[int]
    score_from: int  # both perplexities are over nll[score_from:]
    nll: torch.Tensor  # [n_tokens - 1] with the removal
    baseline_nll: torch.Tensor  # [n_tokens - 1] without it
    seconds: float
    provenance: dict = field(default_factory=dict)

    @property
    def perplexity(self) -> float:
        return perplexity(self.nll, self.score_from)

    @property
    def baseline_perplexity(self) -> float:
        return perplexity(self.baseline_nll, self.score_from)

    def to_dict(self) -> dict:
        return {"positions": self.positions, "layers": self.layers, "score_from": self.score_from,
                "perplexity": self.perplexity, "baseline_perplexity": self.baseline_perplexity,
                "seconds": round(self.seconds, 2), "provenance": self.provenance}


# ------------------------------------------------------------------------------------------- validation
def _as_ids(ids) -> torch.Tensor:
    t = torch.as_tensor(ids)
    if t.dim() == 2 and t.shape[0] == 1:
        t = t[0]
    if t.dim() != 1:
        raise ValueError(f"ids must be one sequence, [T] or [1, T]; got shape {tuple(t.shape)}")
    if t.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
        raise ValueError(f"ids must be integer token ids, got dtype {t.dtype}")
    if t.numel() < 2:
        raise ValueError(f"ids must hold at least 2 tokens (one prediction), got {t.numel()}")
    return t.long()


def _check_ids(lm, ids: torch.Tensor) -> None:
    vocab = lm.model.get_input_embeddings().num_embeddings
    if int(ids.min()) < 0 or int(ids.max()) >= vocab:
        raise ValueError(f"token ids must lie in [0, {vocab}) for {lm.name}; got [{int(ids.min())}, {int(ids.max())}]")
    limit = getattr(lm.model.config.get_text_config(), "max_position_embeddings", None)
    if limit and ids.numel() > limit:
        raise ValueError(f"{ids.numel()} tokens exceed {lm.name}'s context length {limit} (queries keep their "
                         "position in the text; only distances up to the window reach the model)")


def _check_int(name: str, value, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")


def _attention_module(model) -> torch.nn.Module:
    for mod in model.modules():
        if hasattr(mod, "layer_idx") and type(mod).__name__.endswith("Attention"):
            return mod
    raise NotImplementedError(f"cannot find the attention modules of {type(model).__name__}")


def _rotary(model):
    """(rotary module, takes a layer_type argument) or None when the model has no rotary embedding."""
    rot = getattr(model.base_model, "rotary_emb", None)
    if rot is None:
        return None
    family = sys.modules[type(_attention_module(model)).__module__]
    if not hasattr(family, "apply_rotary_pos_emb"):
        return None
    return rot, "layer_type" in inspect.signature(rot.forward).parameters


# -------------------------------------------------------------------------------------------- the engine
@dataclass
class _Stream:
    """State of one run, read by `_streaming_attention` for every layer of every chunk."""
    n_sink: int  # sink tokens re-rotated into each query's cache (0: none)
    window: int  # keys a query may attend to (n_tokens + 1: unbounded)
    rotary: tuple | None
    removed: torch.Tensor | None = None  # key positions whose attention is removed
    removed_layers: frozenset = frozenset()
    store: dict = field(default_factory=dict)  # layer -> (keys, values) [B, Hkv, S, D], post-RoPE, in text order
    store_pos: torch.Tensor = None  # [S] text positions of the stored entries (the same for every layer)
    q_pos: torch.Tensor = None  # [c] text positions of the chunk's queries
    pos: torch.Tensor = None  # [S + c] store_pos then q_pos
    masks: dict = field(default_factory=dict)  # (sliding window, removal) -> (additive mask, n sink entries)
    rope: dict = field(default_factory=dict)  # layer type -> (cos, sin) for the sink copies
    calls: int = 0
    max_keys: int = 0
    max_entries: int = 0

    def begin_chunk(self, q_pos: torch.Tensor) -> None:
        self.q_pos, self.pos = q_pos, torch.cat([self.store_pos, q_pos])
        self.masks.clear()
        self.rope.clear()
        self.calls = 0
        self.max_entries = max(self.max_entries, self.pos.numel())

    def delta(self) -> torch.Tensor:
        """How far each query's sink copies are rotated: 0 until the cache is full, then j - window + 1."""
        return (self.q_pos - self.window + 1).clamp(min=0)

    def mask(self, sliding_window: int | None, removal: bool, dtype, device) -> tuple[torch.Tensor, int]:
        key = (sliding_window, removal)
        if key not in self.masks:
            self.masks[key] = self._build_mask(sliding_window, removal, dtype, device)
        return self.masks[key]

    def _build_mask(self, sw, removal, dtype, device):
        j = self.q_pos[:, None]  # [c, 1]
        is_sink = self.pos < self.n_sink
        n_s = int(is_sink.sum())  # the sinks are the first n_s stored entries (text order)
        rest = self.pos[n_s:][None, :]  # [1, S + c - n_s]
        # recent keys: causal, inside the window budget left after the sinks; cache distance = text distance
        first_recent = (j - self.window + self.n_sink + 1).clamp(min=self.n_sink)
        visible = (rest <= j) & (rest >= first_recent)
        if sw:
            visible &= (j - rest) < sw
        if removal:
            visible &= ~(torch.isin(rest, self.removed) & ~torch.isin(j, self.removed))
        parts = [visible]
        if n_s:  # query q sees its own copies q*n_s .. q*n_s + n_s - 1 of the sinks
            sink_pos = self.pos[:n_s][None, :]  # [1, n_s]
            vis_s = sink_pos <= j
            if sw:
                vis_s &= (j - self.delta()[:, None] - sink_pos) < sw  # distance in the cache
            eye = torch.eye(j.shape[0], dtype=torch.bool, device=j.device)
            parts.insert(0, (eye[:, :, None] & vis_s[:, None, :]).reshape(j.shape[0], -1))
        visible = torch.cat(parts, dim=1)
        self.max_keys = max(self.max_keys, int(visible.sum(1).max()))
        add = torch.zeros(visible.shape, dtype=dtype, device=device)
        add.masked_fill_(~visible.to(device), torch.finfo(dtype).min)
        return add[None, None], n_s

    def sink_rope(self, module, like: torch.Tensor, n_s: int):
        rot, takes_type = self.rotary
        layer_type = None
        if takes_type:
            layer_type = getattr(module, "layer_type", None) or module.config.layer_types[module.layer_idx]
        if layer_type not in self.rope:
            steps = self.delta().repeat_interleave(n_s)[None].to(like.device)  # [1, c * n_s]
            cos, sin = rot(like, steps, layer_type) if takes_type else rot(like, steps)
            scale = (cos.float() ** 2 + sin.float() ** 2).sqrt()  # a rotation only: drop any attention scaling
            self.rope[layer_type] = ((cos.float() / scale).to(like.dtype), (sin.float() / scale).to(like.dtype))
        return self.rope[layer_type]

    def evict(self) -> None:
        """Keep what the next chunk's first query may see: the sinks and the most recent window - n_sink - 1."""
        nxt = int(self.q_pos[-1]) + 1
        keep = (self.pos < self.n_sink) | (self.pos >= nxt - self.window + self.n_sink + 1)
        if not bool(keep.all()):
            idx = keep.nonzero()[:, 0]
            for layer, (k, v) in self.store.items():
                self.store[layer] = (k[:, :, idx.to(k.device)], v[:, :, idx.to(v.device)])
        self.store_pos = self.pos[keep]


def _streaming_attention(module, query, key, value, attention_mask, *args, st: _Stream, **kwargs):
    """The family's eager attention over the stored keys plus this chunk's, with this run's visibility."""
    family = sys.modules[type(module).__module__]
    eager = hf_attention.eager_attention(module)
    layer = module.layer_idx
    st.calls += 1
    if layer in st.store:
        old_k, old_v = st.store[layer]
        key, value = torch.cat([old_k, key], dim=2), torch.cat([old_v, value], dim=2)
    st.store[layer] = (key, value)
    sw = kwargs.get("sliding_window", None) or getattr(module, "sliding_window", None)
    mask, n_s = st.mask(sw, layer in st.removed_layers, query.dtype, query.device)
    if n_s:
        c = query.shape[2]
        b, h, _, d = key.shape
        copies_k = key[:, :, None, :n_s].expand(b, h, c, n_s, d).reshape(b, h, c * n_s, d)
        copies_v = value[:, :, None, :n_s].expand(b, h, c, n_s, d).reshape(b, h, c * n_s, d)
        if bool((st.delta() > 0).any()):
            cos, sin = st.sink_rope(module, copies_k, n_s)
            copies_k = family.apply_rotary_pos_emb(copies_k, copies_k, cos, sin)[1]
        key = torch.cat([copies_k, key[:, :, n_s:]], dim=2)
        value = torch.cat([copies_v, value[:, :, n_s:]], dim=2)
    return eager(module, query, key, value, mask, *args, **kwargs)


@torch.no_grad()
def _run(lm, ids: torch.Tensor, st: _Stream, chunk: int) -> torch.Tensor:
    """Stream ids [T] through lm chunk by chunk; return nll [T - 1] (float32, CPU)."""
    model, device = lm.model, lm.device
    n_layers = lm.n_layers
    ids = ids.to(device)
    st.store_pos = torch.zeros(0, dtype=torch.long, device=device)
    nll = []
    # the streaming attention builds its own mask (eager_mask=False)
    with hf_attention.overridden(model, partial(_streaming_attention, st=st), eager_mask=False):
        for start in range(0, ids.numel() - 1, chunk):  # the last token is only a target
            stop = min(start + chunk, ids.numel() - 1)
            q_pos = torch.arange(start, stop, device=device)
            st.begin_chunk(q_pos)
            logits = model(input_ids=ids[None, start:stop], position_ids=q_pos[None], use_cache=False).logits
            if st.calls != n_layers:
                raise RuntimeError(f"{st.calls} attention calls for {n_layers} layers: {type(model).__name__} "
                                   "does not route every layer through transformers' AttentionInterface")
            logp = logits[0].float().log_softmax(-1)
            nll.append(-logp.gather(-1, ids[start + 1:stop + 1, None])[:, 0].cpu())
            st.evict()
    return torch.cat(nll)


def streaming_perplexity(lm, ids, *, policy: str, window: int | None = None, n_sink: int = 4, chunk: int = 64
                         ) -> StreamingResult:
    """Read ``ids`` (one sequence, [T] or [1, T]) with a KV cache of ``window`` entries; see the module docstring.

    policy: "full" (window must be None), "window" (the ``window`` most recent tokens; n_sink is not used) or
    "sink_window" (the first ``n_sink`` tokens plus the ``window - n_sink`` most recent). ``chunk`` tokens are
    processed per forward pass; the result does not depend on it (up to float rounding).
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; valid: {', '.join(POLICIES)}")
    ids = _as_ids(ids)
    _check_int("chunk", chunk, 1)
    if policy == "full":
        if window is not None:
            raise ValueError("policy 'full' keeps every token: pass window=None")
    else:
        _check_int("window", window, 1)
    n_sink_used = 0
    if policy == "sink_window":
        _check_int("n_sink", n_sink, 0)
        if n_sink >= window:
            raise ValueError(f"n_sink ({n_sink}) must be smaller than window ({window}) to leave room for recent "
                             "tokens")
        n_sink_used = n_sink
    _check_ids(lm, ids)
    rotary = _rotary(lm.model)
    if policy != "full" and window < ids.numel() - 1 and rotary is None:
        raise NotImplementedError(f"policy {policy!r} assigns positions within the cache, which needs a RoPE "
                                  f"model; {lm.name} has no rotary embedding (policy 'full' works)")
    limit = ids.numel() + 1 if policy == "full" else window
    st = _Stream(n_sink=n_sink_used, window=limit, rotary=rotary)
    t0 = time.perf_counter()
    nll = _run(lm, ids, st, chunk)
    seconds = time.perf_counter() - t0
    from . import provenance
    prov = provenance.stamp(lm.device, **lm.provenance(), policy=policy, window=window, n_sink=n_sink_used,
                            chunk=chunk, n_tokens=ids.numel(), positions="in the cache (StreamingLLM)",
                            measure_seconds=round(seconds, 2), source_of_numbers="computed now")
    return StreamingResult(policy=policy, window=window, n_sink=n_sink_used, chunk=chunk, nll=nll,
                           max_keys_attended=st.max_keys, max_cache_entries=st.max_entries, seconds=seconds,
                           provenance=prov)


def perplexity_without_sink(lm, ids, *, positions: Sequence[int] = (0,), layers: Sequence[int] | None = None,
                            score_from: int | None = None, baseline: StreamingResult | None = None,
                            chunk: int = 256) -> SinkRemovalResult:
    """Perplexity when no query attends to the keys at ``positions`` (default: the first token) in ``layers``
    (default: all); each head's softmax renormalizes over the keys left. The queries at ``positions`` themselves
    are left unchanged.

    Both perplexities are over the predictions made at steps >= ``score_from`` (default: max(positions) + 1, the
    first step that loses a key). ``baseline``: a ``streaming_perplexity(..., policy="full")`` result on the same
    ids or on a longer sequence that starts with them, reused instead of a second pass.
    """
    ids = _as_ids(ids)
    _check_int("chunk", chunk, 1)
    n_layers = lm.n_layers
    if isinstance(positions, int) or not len(positions):
        raise ValueError(f"positions must be a non-empty sequence of token positions, got {positions!r}")
    pos = sorted(set(int(p) for p in positions))
    if pos[0] < 0 or pos[-1] > ids.numel() - 2:
        raise ValueError(f"positions must lie in [0, {ids.numel() - 2}] (some later token must be predicted); "
                         f"got {pos}")
    layer_list = list(range(n_layers)) if layers is None else sorted(set(int(i) for i in layers))
    if not layer_list or layer_list[0] < 0 or layer_list[-1] >= n_layers:
        raise ValueError(f"layers must be a non-empty subset of 0..{n_layers - 1}, got {layers!r}")
    score_from = pos[-1] + 1 if score_from is None else score_from
    _check_int("score_from", score_from, pos[-1] + 1)
    if score_from > ids.numel() - 2:
        raise ValueError(f"score_from ({score_from}) leaves no prediction to score in {ids.numel()} tokens")
    if baseline is not None and (baseline.policy != "full" or baseline.nll.numel() < ids.numel() - 1):
        raise ValueError("baseline must be a policy='full' result on these ids (or a sequence that starts with them)")
    _check_ids(lm, ids)
    t0 = time.perf_counter()
    removed = torch.tensor(pos, device=lm.device)
    nll = _run(lm, ids, _Stream(n_sink=0, window=ids.numel() + 1, rotary=None, removed=removed,
                                removed_layers=frozenset(layer_list)), chunk)
    if baseline is None:
        base = _run(lm, ids, _Stream(n_sink=0, window=ids.numel() + 1, rotary=None), chunk)
    else:
        base = baseline.nll[:ids.numel() - 1]
    seconds = time.perf_counter() - t0
    from . import provenance
    prov = provenance.stamp(lm.device, **lm.provenance(), removed_positions=pos,
                            layers="all" if layer_list == list(range(n_layers)) else layer_list,
                            score_from=score_from, n_tokens=ids.numel(), baseline="reused" if baseline else "computed",
                            measure_seconds=round(seconds, 2), source_of_numbers="computed now")
    return SinkRemovalResult(positions=pos, layers=layer_list, score_from=score_from, nll=nll, baseline_nll=base,
                             seconds=seconds, provenance=prov)


# -------------------------------------------------------------------------------- past the window, in numbers
def past_window(full: StreamingResult, window: StreamingResult, sink_window: StreamingResult) -> dict:
    """The three caches' perplexities over the predictions made once eviction has begun (steps >= window), and
    what StreamingLLM's two claims are judged on (by the rules in :mod:`sinkpaper.paper`, not here):
    {"full ppl", "window ppl", "sink+window ppl", "ratio" (window / full), "recovered" (the share of the
    window's excess log-perplexity that the sinks recover; None when the window does not hurt), "past"}."""
    if (full.policy, window.policy, sink_window.policy) != POLICIES:
        raise ValueError("pass the full, window and sink_window results, in that order")
    if window.window != sink_window.window or len({r.nll.numel() for r in (full, window, sink_window)}) != 1:
        raise ValueError("the three results must share the sequence and the window")
    w = window.window
    if w >= full.nll.numel():
        raise ValueError(f"the window ({w}) must be shorter than the sequence's {full.nll.numel()} predictions")
    p_full, p_win, p_sink = (r.perplexity_from(w) for r in (full, window, sink_window))
    excess = math.log(p_win) - math.log(p_full)
    recovered = (math.log(p_win) - math.log(p_sink)) / excess if excess > 0 else None
    return {"full ppl": p_full, "window ppl": p_win, "sink+window ppl": p_sink, "ratio": p_win / p_full,
            "recovered": recovered, "past": f"past the window ({full.nll.numel() - w} predictions, window {w})"}
