"""The sink at long context on a CPU: the blocked column statistics (no T x T map) against the references for
every operator x mask x sink, per-layer masks for models that mix sliding-window and global layers (Gemma 3),
the refusals before compute (context length, text length, memory), and the stored sink-vs-length payload."""
from __future__ import annotations

import itertools
import json
import math
import re
import zlib
from types import SimpleNamespace

import pytest
import torch

from sinkpaper import fused as K
from sinkpaper import metrics
from sinkpaper.attention import attention_reference, visible_block, visible_mask
from sinkpaper.fused import api
from sinkpaper.fused.blocked import block_size, blocked_column_stats

H = 3
MASKS = {"causal": {}, "full": {"causal": False}, "window": {"window": 9}, "prefix": {"prefix": 13},
         "document": {"doc_ids": "docs"}}
SINKS = {"none": {}, "sink_logit": {"sink_logit": (H,)}, "k_bias": {"k_bias": (H, "D")},
         "k_bias_shared": {"k_bias": (1, "D")}}


def _seed(*parts) -> int:
    return zlib.crc32(repr(parts).encode())  # str hash() changes between processes


def _case(seed, B, T, D, mask, sink, dtype, scale=1.5):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (scale * torch.randn(B, H, T, D, generator=g, dtype=torch.float64) for _ in range(3))
    masks = dict(MASKS[mask])
    if masks.get("doc_ids") == "docs":  # documents of random lengths, one per row of the batch
        cuts = torch.randint(1, 4, (B, T), generator=g).cumsum(-1) // 7
        masks["doc_ids"] = cuts
    extra = {n: torch.randn(*(D if s == "D" else s for s in shape), generator=g, dtype=torch.float64)
             for n, shape in SINKS[sink].items()}
    return [x.to(dtype) for x in (q, k, v)], masks, {n: x.to(dtype) for n, x in extra.items()}


@pytest.mark.parametrize("sink", SINKS)
@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("op", K.OPS)
def test_blocked_matches_the_reference(op, mask, sink):
    """fp32 inputs: column_stats(impl="blocked") against the reference's materialized maps."""
    (q, k, _), masks, extra = _case(_seed(op, mask, sink), 2, 45, 16, mask, sink, torch.float32)
    got = K.column_stats(q, k, op=op, impl="blocked", **masks, **extra)
    ref = K.reference_column_stats(q, k, op=op, **masks, **extra)
    assert got.alpha.dtype == torch.float32
    torch.testing.assert_close(got.alpha, ref.alpha, atol=1e-6, rtol=1e-5)
    assert (got.sink is None) == (ref.sink is None)
    if ref.sink is not None:
        torch.testing.assert_close(got.sink, ref.sink, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("op,mask,sink", list(itertools.product(K.OPS, MASKS, ["none", "sink_logit", "k_bias"])))
def test_blocked_fp64_on_unseen_shapes(op, mask, sink):
    """fp64 inputs on shapes no other test uses (odd T, D, batch 3, blocks of 16 that split T unevenly): alpha,
    the sink column and the output against an independent fp64 computation (the eager operator's map and the
    metric's own alpha), to 1e-12; fp32 accumulation of the same inputs to 1e-5."""
    B, T, D = 3, 53, 7
    (q, k, v), masks, extra = _case(_seed(op, mask, sink, "fp64"), B, T, D, mask, sink, torch.float64)
    scale = 0.8
    vis = visible_mask(T, **{n: x for n, x in masks.items()})
    ref = attention_reference(q, k, v, visible=vis, op=op, scale=scale, return_map=True, **extra)
    ref_alpha = metrics.alpha(ref.attn_map, vis[:, None])
    s0 = api._sink_logits(q, extra.get("sink_logit"), extra.get("k_bias"), None, scale, torch.float64)
    stats, out = blocked_column_stats(q, k, v, op=op, scale=scale, s0=s0, block=16, **masks)
    assert stats.alpha.dtype == torch.float64
    assert float((stats.alpha - ref_alpha).abs().max()) < 1e-12
    assert float((out - ref.out).abs().max()) < 1e-12
    if ref.sink_map is not None:
        assert float((stats.sink - ref.sink_map.mean(-1)).abs().max()) < 1e-12
    # the public entry point in fp32 (its own block size): within twice the error of PyTorch's own fp32 maps
    f32 = {impl: K.column_stats(q.float(), k.float(), op=op, scale=scale, impl=impl, **masks,
                                **{n: x.float() for n, x in extra.items()}).alpha.double()
           for impl in ("blocked", "reference")}
    err = {impl: float((a - ref_alpha).abs().max()) for impl, a in f32.items()}
    assert err["blocked"] <= 2 * err["reference"] + 1e-6, err


def test_attention_column_stats_blocked_output_and_alpha():
    (q, k, v), masks, _ = _case(3, 2, 40, 8, "window", "none", torch.float32)
    out, stats = K.attention_column_stats(q, k, v, impl="blocked", **masks)
    torch.testing.assert_close(out, K.reference_attention(q, k, v, **masks), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(stats.alpha, K.column_stats(q, k, impl="reference", **masks).alpha, atol=1e-6,
                               rtol=1e-5)


def test_auto_picks_blocked_on_cpu_without_the_interpreter(monkeypatch):
    calls = []
    real = api.blocked_column_stats

    def spy(*a, **kw):
        calls.append(kw.get("op"))
        return real(*a, **kw)

    monkeypatch.setattr(api, "blocked_column_stats", spy)
    monkeypatch.setattr(api, "_INTERPRET", False)
    (q, k, _), _, _ = _case(0, 1, 20, 8, "causal", "none", torch.float32)
    K.column_stats(q, k, op="sigmoid")
    assert calls == ["sigmoid"]
    K.column_stats(q.double(), k.double())  # fp64 is accepted where no Triton kernel runs
    assert len(calls) == 2
    K.column_stats(q, k, impl="reference")
    assert len(calls) == 2
    monkeypatch.setattr(api, "_INTERPRET", True)
    with pytest.raises(ValueError, match="float64"):
        K.column_stats(q.double(), k.double(), impl="triton")
    with pytest.raises(ValueError, match="impl='nope'"):
        K.column_stats(q, k, impl="nope")
    with pytest.raises(ValueError, match="impl='blocked'"):
        K.attention(q, k, k, impl="blocked")  # attention keeps triton | reference (it has a backward)


def test_block_size_bounds_the_tile():
    assert block_size(1, 9, 8192) == 128
    assert block_size(1, 9, 200_000) * 9 * 200_000 * 4 <= 256 * 2 ** 20
    assert block_size(64, 32, 10 ** 6) == 16  # never below 16 rows


def test_visible_block_is_a_block_of_visible_mask():
    docs = torch.tensor([[0] * 7 + [1] * 9 + [2] * 4])
    for kw in ({}, {"causal": False}, {"window": 4}, {"prefix": 6}, {"doc_ids": docs}, {"window": 3, "doc_ids": docs}):
        full = visible_mask(20, **kw)
        rows, cols = torch.arange(5, 13), torch.arange(2, 17)
        assert torch.equal(visible_block(rows, cols, **kw), full[:, 5:13, 2:17])


# ------------------------------------------------------------------------------------------------ models
def test_layer_windows_from_the_config():
    from sinkpaper.lms import layer_windows
    cfg = SimpleNamespace(num_hidden_layers=4, sliding_window=8, layer_types=[
        "sliding_attention", "full_attention", "sliding_attention", "full_attention"])
    assert layer_windows(cfg) == [8, None, 8, None]
    assert layer_windows(SimpleNamespace(num_hidden_layers=6, sliding_window=8, sliding_window_pattern=3)) == \
        [8, 8, None, 8, 8, None]
    assert layer_windows(SimpleNamespace(num_hidden_layers=2, sliding_window=16)) == [16, 16]  # Mistral
    assert layer_windows(SimpleNamespace(num_hidden_layers=2, sliding_window=16, use_sliding_window=False)) == \
        [None, None]
    assert layer_windows(SimpleNamespace(num_hidden_layers=2, sliding_window=None)) == [None, None]
    with pytest.raises(ValueError, match="3 layer_types for 2 layers"):
        layer_windows(SimpleNamespace(num_hidden_layers=2, sliding_window=4, layer_types=["full_attention"] * 3))


def test_gemma3_layer_windows(gemma3):
    w = gemma3.layer_windows()
    assert len(w) == gemma3.n_layers == 18
    assert w == [None if (i + 1) % 6 == 0 else 512 for i in range(18)]  # 5 local layers, then one global


def _natural(lm, T, n=1, bos=True):
    from sinkpaper.probes import make_inputs
    return make_inputs(lm.tokenizer, "natural", n_samples=n, seq_len=T, bos=bos, seed=1).input_ids


def test_gemma3_per_layer_masks_change_nothing_within_the_window(gemma3):
    """At T <= 512 every window covers the whole causal past: the per-layer masks give exactly today's numbers
    (one causal mask for every layer)."""
    tr = gemma3.trace(_natural(gemma3, 40, n=2), with_qkv=False)
    assert tr.layer_visible is not None and len(tr.layer_visible) == 18
    today = metrics.TraceStats.from_trace(type(tr)(attentions=tr.attentions, visible=tr.visible,
                                                   hidden_states=tr.hidden_states))
    now = metrics.TraceStats.from_trace(tr)
    assert torch.equal(now.alphas, today.alphas)


def test_gemma3_beyond_the_window_kernel_route_equals_maps(gemma3, monkeypatch):
    """At T = 600 > 512 the sliding-window layers see only their last 512 keys. The maps route divides by the
    number of queries each layer's own mask lets see a key; the blocked CPU route (no T x T map) agrees to 1e-5,
    and the local layers' alpha differs from what one causal mask would give."""
    monkeypatch.setattr(api, "_INTERPRET", False)  # the blocked CPU route, as on a machine without TRITON_INTERPRET
    ids = _natural(gemma3, 600)
    tr = gemma3.trace(ids, with_qkv=False)
    maps = metrics.TraceStats.from_trace(tr)
    cols = metrics.TraceStats.from_trace(gemma3.trace(ids, with_qkv=False, method="stats"))
    assert float((cols.alphas - maps.alphas).abs().max()) < 1e-5
    one_mask = metrics.alpha(tr.attentions[0], tr.visible[:, None])
    assert float((one_mask - maps.alphas[:, 0]).abs().max()) > 1e-3  # a key late in the window loses queries
    torch.testing.assert_close(one_mask[..., -400:], maps.alphas[:, 0, :, -400:])  # keys seen by every later query


def test_smollm2_kernel_route_blocked_equals_maps(smollm2, monkeypatch):
    monkeypatch.setattr(api, "_INTERPRET", False)
    ids = _natural(smollm2, 300, bos=False)
    maps = metrics.TraceStats.from_trace(smollm2.trace(ids, with_qkv=False))
    cols = metrics.TraceStats.from_trace(smollm2.trace(ids, with_qkv=False, method="stats"))
    assert float((cols.alphas - maps.alphas).abs().max()) < 1e-5


# ------------------------------------------------------------------------------------------------ bad input
def test_context_length_is_named(smollm2, gemma3):
    with pytest.raises(ValueError, match="context length 8192"):
        smollm2.check_seq_len(8193)
    with pytest.raises(ValueError, match="context length 32768"):
        gemma3.trace(torch.zeros(1, 32769, dtype=torch.long), method="stats")
    gemma3.check_seq_len(4096, "maps")  # the sliding window no longer limits the maps route


def test_text_shorter_than_the_sequence_says_how_much_there_is(smollm2):
    from sinkpaper.probes import make_inputs, natural_text
    _, meta = natural_text()
    with pytest.raises(ValueError) as e:
        make_inputs(smollm2.tokenizer, "natural", n_samples=1, seq_len=100_000)
    msg = str(e.value)
    assert "longer than the natural text" in msg and f"{meta['text_chars']:,} characters" in msg
    n = int(re.search(r"is ([\d,]+) tokens", msg).group(1).replace(",", ""))
    assert 20_000 < n < 100_000 and f"at most {n - 1}" in msg
    make_inputs(smollm2.tokenizer, "natural", n_samples=1, seq_len=n - 1)  # the longest that fits works


def test_memory_estimate_refuses_before_compute(smollm2):
    from sinkpaper.lms import MemoryEstimateError, measure_sink
    from sinkpaper.probes import make_inputs
    maps = smollm2.memory_estimate(1, 8192, "maps")
    kernel = smollm2.memory_estimate(1, 8192, "stats")
    assert maps > 30 * 9 * 8192 ** 2 * 4  # every layer's map is kept
    assert kernel < 2 * 2 ** 30 and kernel < maps / 50
    # linear in T on the stats route (tiles of a fixed number of rows), quadratic on the maps route
    assert smollm2.memory_estimate(1, 8192, "stats") == pytest.approx(2 * smollm2.memory_estimate(1, 4096, "stats"))
    probe = make_inputs(smollm2.tokenizer, "random", n_samples=1, seq_len=64)
    with pytest.raises(MemoryEstimateError, match=r"maps route at T=64, batch 1 needs about .* GiB .* the cap"):
        measure_sink(smollm2, probe, progress=False, memory_limit_bytes=1000)


def test_cli_refusals_exit_2(smollm2, capsys):
    from sinkpaper.cli import main
    assert main(["sink", "--model", "smollm2-135m", "--seq-len", "9000", "--method", "stats"]) == 2
    assert "context length 8192" in capsys.readouterr().err
    assert main(["sink", "--model", "smollm2-135m", "--seq-len", "8192", "--n-samples", "1", "--method", "maps",
                 "--max-memory-gib", "16"]) == 2
    err = capsys.readouterr().err
    assert "needs about 77.6 GiB" in err and "16.0 GiB" in err


# ------------------------------------------------------------------------------------------------ sink vs T
def test_sink_vs_length_payload_roundtrip(smollm2, tmp_path, monkeypatch):
    from sinkpaper import long_context as LC
    monkeypatch.setattr(api, "_INTERPRET", False)
    seen = []
    first = LC.measure_vs_length(smollm2, [16], tokens=48, command="test")
    assert first["complete"] and len(first["points"]) == 1
    # resumed: the stored T = 16 is kept, only T = 24 is measured
    payload = LC.measure_vs_length(smollm2, [24, 16], tokens=48, on_point=lambda p: seen.append(len(p["points"])),
                                   command="test", previous=first)
    assert seen == [2] and payload["complete"] and payload["lengths"] == [16, 24]
    assert payload["points"][0] is first["points"][0] and payload["points"][1]["code_version"]
    with pytest.raises(ValueError, match="measure it anew"):
        LC.measure_vs_length(smollm2, [16], tokens=48, bos=True, previous=first)
    p16, p24 = payload["points"]
    assert (p16["n_samples"], p24["n_samples"]) == (3, 2)
    assert len(p24["per_layer_sink_1"]) == len(p24["per_layer_alpha_1"]) == 30
    assert p24["uniform_alpha_1"] == pytest.approx(sum(1 / t for t in range(1, 25)) / 24)
    # the same numbers as one measure_sink at that T (maps route)
    from sinkpaper.lms import measure_sink
    from sinkpaper.probes import make_inputs
    r = measure_sink(smollm2, make_inputs(smollm2.tokenizer, "natural", n_samples=2, seq_len=24, seed=0),
                     progress=False)
    assert p24["sink_1"] == r["sink_k"]["1"] and abs(p24["alpha_1_mean"] - r["alpha_1_mean"]) < 1e-5
    assert math.isclose(sum(p24["per_layer_alpha_1"]) / 30, p24["alpha_1_mean"], rel_tol=1e-5)
    path = LC.write(payload, tmp_path / "x.json")
    back = LC.load(path)
    assert back["points"] == json.loads(path.read_text())["points"]
    assert back["provenance"]["loaded_from"] and back["provenance"]["command"] == "test"
    with pytest.raises(FileNotFoundError, match="sink-vs-length"):
        LC.load(tmp_path / "missing.json")
    with pytest.raises(ValueError, match="context length 8192"):
        LC.measure_vs_length(smollm2, [64, 16384])
