"""The attention explorer's payload: the paper's probes run through a model, alpha_1 of every sample, layer and
head (exact float32) and the first samples' attention maps (uint8, lower triangle, zlib), as one JSON-able dict
(:func:`collect`), and its reading back (:func:`decode`, :func:`sink_1`). The page that draws it is
:mod:`sinkpaper.book.explorer`, which documents the format.
"""
from __future__ import annotations

import base64
import math
import numbers
import time
import warnings
import zlib
from collections.abc import Mapping, Sequence

import numpy as np

FORMAT = "sinkpaper.explorer/1"
MAP_SCALE = 255  # maps are stored as round(MAP_SCALE * A) in uint8
MAP_LAYOUT = "lower-triangle, column-major: key k = 0..T-1, then query t = k..T-1"
_LARGE_MAPS = 64 << 20  # raw map bytes per model above which collect() warns that the page will be heavy


# ------------------------------------------------------------------------------------------------ checks
def check_collect_args(lm, name, inputs, bos, n_samples, n_map_samples, seq_len, seed, batch_size,
                        map_scale=MAP_SCALE):
    """Every argument of collect(), checked before any model runs. Returns (inputs, bos, skipped)."""
    from sinkpaper import metrics
    from sinkpaper.probes import INPUTS

    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"name must be a non-empty string (the model's label in the explorer), got {name!r}")
    if isinstance(inputs, str):
        inputs = (inputs,)
    try:
        inputs = tuple(inputs)
    except TypeError:
        raise ValueError(f"inputs must be a sequence of input kinds; valid: {', '.join(INPUTS)}") from None
    if not inputs:
        raise ValueError(f"inputs must name at least one input kind; valid: {', '.join(INPUTS)}")
    for kind in inputs:
        if kind not in INPUTS:
            raise ValueError(f"unknown input kind {kind!r}; valid: {', '.join(INPUTS)}")
    if len(set(inputs)) != len(inputs):
        raise ValueError(f"inputs lists an input kind twice: {list(inputs)}")
    if isinstance(bos, bool):
        bos = (bos,)
    try:
        bos = tuple(bos)
    except TypeError:
        raise ValueError(f"bos must be a sequence of booleans such as (False, True), got {bos!r}") from None
    if not bos or not all(isinstance(b, (bool, np.bool_)) for b in bos):
        raise ValueError(f"bos must be a non-empty sequence of booleans such as (False, True), got {bos!r}")
    bos = tuple(bool(b) for b in bos)
    if len(set(bos)) != len(bos):
        raise ValueError(f"bos lists a value twice: {list(bos)}")
    for label, v, low in (("n_samples", n_samples, 1), ("n_map_samples", n_map_samples, 0),
                          ("seq_len", seq_len, 2), ("batch_size", batch_size, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise ValueError(f"{label} must be an int, got {v!r}")
        if v < low:
            if label == "seq_len":
                raise ValueError(f"seq_len {v} is too short: alpha_1 needs at least one query after token 1, "
                                 "so seq_len >= 2 (the paper uses T = 64)")
            raise ValueError(f"{label} must be >= {low}, got {v}")
    if n_map_samples > n_samples:
        raise ValueError(f"n_map_samples ({n_map_samples}) cannot exceed n_samples ({n_samples}): the maps are "
                         "those of the first n_map_samples samples")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be an int, got {seed!r}")
    if isinstance(map_scale, bool) or not isinstance(map_scale, (int, np.integer)) or not 1 <= map_scale <= 255:
        raise ValueError(f"map_scale must be an int in 1..255 (maps are stored as round(map_scale * A) in uint8), "
                         f"got {map_scale!r}")
    metrics.check_seq_len(int(seq_len), 1)
    for attr in ("tokenizer", "trace", "check_seq_len", "n_layers", "provenance"):
        if not hasattr(lm, attr):
            raise ValueError(f"collect needs a sinkpaper.lms.LM (from load_lm), got {type(lm).__name__}")
    lm.check_seq_len(int(seq_len), "maps")
    skipped = []
    if True in bos and lm.tokenizer.bos_token_id is None:
        if bos == (True,):
            raise ValueError(f"{name}: the tokenizer has no BOS token; use bos=(False,)")
        skipped.append("bos=True: the tokenizer has no BOS token")
        warnings.warn(f"{name}: the tokenizer has no BOS token; the explorer shows BOS off only", stacklevel=3)
        bos = tuple(b for b in bos if not b)
    n_tri = seq_len * (seq_len + 1) // 2
    raw = n_map_samples * len(inputs) * len(bos) * lm.n_layers * _n_heads(lm) * n_tri
    if raw > _LARGE_MAPS:
        warnings.warn(f"{name}: {raw / 2**20:.0f} MiB of uint8 attention maps before compression; the page will "
                      "be large (lower n_map_samples or seq_len)", stacklevel=3)
    return inputs, bos, skipped


def _n_heads(lm) -> int:
    return int(lm.model.config.get_text_config().num_attention_heads)


# ------------------------------------------------------------------------------------------------ collect
def collect(lm, name: str, *, inputs: Sequence[str] = ("natural", "random", "repeat"),
            bos: Sequence[bool] = (False, True), n_samples: int = 20, n_map_samples: int = 2, seq_len: int = 64,
            seed: int = 0, batch_size: int = 16, map_scale: int = MAP_SCALE) -> dict:
    """Run `lm` on the paper's probes and return the explorer's JSON-able payload for one model.

    For every (input kind, BOS) setting: alpha_1 of all `n_samples` samples x layers x heads (exact float32),
    the attention maps of the first `n_map_samples` samples (uint8, lower triangle, zlib) and their tokens.
    Inputs come from :func:`sinkpaper.probes.make_inputs` (same seed, same sequences as `measure_sink`); alpha_1
    from :func:`sinkpaper.metrics.measure` over ``lm.trace`` with the same batching as
    :func:`sinkpaper.lms.measure_sink`, so Sink_1 recomputed from the payload equals measure_sink's.
    A tokenizer without BOS skips the BOS-on settings (recorded under ``skipped``). Every argument is checked
    before the model runs (ValueError).

    `map_scale` sets the maps' quantization, round(map_scale * A) in uint8, error at most 1/(2 map_scale):
    255 (default) keeps every 8-bit level; 127 or 63 make the deflated maps about 25% or 45% smaller.
    """
    from sinkpaper import metrics, provenance
    from sinkpaper.probes import make_inputs

    inputs, bos, skipped = check_collect_args(lm, name, inputs, bos, n_samples, n_map_samples, seq_len, seed,
                                               batch_size, map_scale)
    map_scale = int(map_scale)
    n_samples, n_map_samples, seq_len, seed = int(n_samples), int(n_map_samples), int(seq_len), int(seed)
    probes = [make_inputs(lm.tokenizer, kind, n_samples=n_samples, seq_len=seq_len, bos=b, seed=seed)
              for b in bos for kind in inputs]  # all built (and checked) before the first forward pass
    if int(max(int(p.input_ids.max()) for p in probes)) >= lm.model.get_input_embeddings().num_embeddings:
        raise ValueError(f"a probe token id is outside {name}'s embedding table")
    low_tri = np.tril_indices(seq_len)
    col_major = np.lexsort((low_tri[0], low_tri[1]))  # sort by key, then query
    rows, cols = low_tri[0][col_major], low_tri[1][col_major]
    n_layers, n_heads = int(lm.n_layers), _n_heads(lm)
    settings = []
    t_start = time.perf_counter()
    for probe in probes:
        maps: list[np.ndarray] = []  # uint8 [b, L, H, n_tri] for the first n_map_samples samples

        def trace_fn(ids, _maps=maps):
            tr = lm.trace(ids, with_qkv=False, method="maps")
            need = n_map_samples - sum(m.shape[0] for m in _maps)
            if need > 0:
                a = np.stack([x[:need].detach().to("cpu").float().numpy() for x in tr.attentions], axis=1)
                _maps.append(_quantize(a[..., rows, cols], map_scale))
            return tr

        t0 = time.perf_counter()
        stats = metrics.measure(trace_fn, probe.input_ids, batch_size=batch_size, progress=False)
        seconds = time.perf_counter() - t0
        alpha_1 = stats.alphas[..., 0].numpy().astype("<f4")  # [S, L, H]: exactly what measure_sink thresholds
        if alpha_1.shape != (n_samples, n_layers, n_heads):
            raise RuntimeError(f"alpha_1 has shape {alpha_1.shape}, expected {(n_samples, n_layers, n_heads)}")
        ids = probe.input_ids[:n_map_samples].tolist()
        setting = {
            "inputs": probe.inputs,
            "bos": bool(probe.bos),
            "alpha_1": {"shape": [n_samples, n_layers, n_heads], "dtype": "float32", "byte_order": "little",
                        "encoding": "base64", "data": base64.b64encode(alpha_1.tobytes()).decode("ascii")},
            "maps": None,
            "token_ids": ids,
            "tokens": [[lm.tokenizer.decode([int(i)]) for i in row] for row in ids],
            "provenance": {**probe.provenance, "bos": bool(probe.bos), "measure_seconds": round(seconds, 2)},
        }
        if n_map_samples:
            q = np.concatenate(maps, axis=0)[:n_map_samples]
            setting["maps"] = {"shape": list(q.shape), "dtype": "uint8", "scale": map_scale, "layout": MAP_LAYOUT,
                               "encoding": "zlib+base64", "data": _deflate_b64(q)}
        settings.append(setting)
    prov = provenance.stamp(lm.device, **{**lm.provenance(), "model": name, "n_samples": n_samples,
                                          "seq_len": seq_len, "seed": seed, "method": "maps",
                                          "batch_size": int(batch_size),
                                          "measure_seconds": round(time.perf_counter() - t_start, 2),
                                          "source_of_numbers": "computed now"})
    return {"format": FORMAT, "model": name, "n_layers": n_layers, "n_heads": n_heads, "seq_len": seq_len,
            "n_samples": n_samples, "n_map_samples": n_map_samples, "map_scale": map_scale, "seed": seed,
            "skipped": skipped,
            "provenance": prov, "settings": settings}


def _quantize(a: np.ndarray, scale: int = MAP_SCALE) -> np.ndarray:
    return np.rint(np.clip(a, 0.0, 1.0) * scale).astype(np.uint8)


def _deflate_b64(q: np.ndarray) -> str:
    c = zlib.compressobj(9, zlib.DEFLATED, 15, 9, zlib.Z_FILTERED)  # measured smallest for these maps
    return base64.b64encode(c.compress(np.ascontiguousarray(q).tobytes()) + c.flush()).decode("ascii")


# ------------------------------------------------------------------------------------------------ decode
def _setting(payload: Mapping, inputs: str, bos: bool) -> Mapping:
    for s in payload["settings"]:
        if s["inputs"] == inputs and bool(s["bos"]) == bool(bos):
            return s
    have = ", ".join(f"({s['inputs']}, bos={s['bos']})" for s in payload["settings"])
    raise ValueError(f"{payload.get('model')!r} has no setting ({inputs}, bos={bos}); it has {have}")


def _alpha_1(setting: Mapping) -> np.ndarray:
    a = setting["alpha_1"]
    return np.frombuffer(base64.b64decode(a["data"]), dtype="<f4").reshape(a["shape"]).astype(np.float32)


def decode(payload: Mapping, inputs: str, bos: bool) -> dict:
    """One setting of a payload as arrays: ``alpha_1`` [S, L, H] float32 (exact), ``maps`` [M, L, H, T, T]
    float32 (dequantized, zeros above the diagonal; None without maps), ``tokens`` and ``token_ids``."""
    s = _setting(payload, inputs, bos)
    alpha_1 = _alpha_1(s)
    maps = None
    if s.get("maps"):
        m = s["maps"]
        T = int(payload["seq_len"])
        q = np.frombuffer(zlib.decompress(base64.b64decode(m["data"])), dtype=np.uint8).reshape(m["shape"])
        low_tri = np.tril_indices(T)
        order = np.lexsort((low_tri[0], low_tri[1]))
        maps = np.zeros(tuple(m["shape"][:3]) + (T, T), dtype=np.float32)
        maps[..., low_tri[0][order], low_tri[1][order]] = q.astype(np.float32) / float(m["scale"])
    return {"alpha_1": alpha_1, "maps": maps, "tokens": s["tokens"], "token_ids": s["token_ids"]}


def sink_1(payload: Mapping, inputs: str, bos: bool, epsilon: float = 0.3) -> float:
    """Sink_1^epsilon in percent from a payload's embedded alpha_1, with the metric's own thresholding."""
    import torch

    from sinkpaper import metrics

    metrics.check_epsilon(epsilon)
    alpha_1 = torch.from_numpy(_alpha_1(_setting(payload, inputs, bos)))
    return float(metrics.percent_above(alpha_1, epsilon))
