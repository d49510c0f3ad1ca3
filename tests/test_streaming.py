"""Streaming perplexity with a bounded KV cache (StreamingLLM) and perplexity with the sink removed.

Oracles: one ordinary forward pass (full cache), token-by-token streaming (chunk=1) for the chunked masks, and,
for a one-layer model, the forward pass over the cache contents as an ordinary sequence (positions 0..window-1),
which pins down position-in-cache and the re-rotation of the sink keys.
"""
from __future__ import annotations

import math

import pytest
import torch
from transformers import Gemma3ForCausalLM, Gemma3TextConfig, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

from sinkpaper.lms import LM
from sinkpaper.streaming import (DEFAULT_TEXT, POLICIES, binned_perplexity, perplexity, perplexity_without_sink,
                                 streaming_perplexity, past_window, text_ids)

VOCAB = 97


def _wrap(name, model) -> LM:
    model.eval()
    model.set_attn_implementation("eager")  # the oracle's attention; streaming swaps in its own and restores it
    return LM(name=name, model=model, tokenizer=None, source="random init", load_seconds=0.0)


def _llama(n_layers=2, seed=0) -> LM:
    torch.manual_seed(seed)  # a large init so attention is far from uniform and the policies differ
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=n_layers,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                      initializer_range=0.3)
    return _wrap(f"tiny-llama-{n_layers}", LlamaForCausalLM(cfg))


def _gemma(layer_types, sliding_window=6, seed=0) -> LM:
    torch.manual_seed(seed)
    cfg = Gemma3TextConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=len(layer_types),
                           num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=128,
                           initializer_range=0.3, layer_types=layer_types, sliding_window=sliding_window)
    return _wrap(f"tiny-gemma3-{len(layer_types)}", Gemma3ForCausalLM(cfg))


@pytest.fixture(scope="module")
def llama():
    return _llama()


@pytest.fixture(scope="module")
def gemma_sliding():  # local and global layers, with their two RoPE bases, and a native window of 6
    return _gemma(["sliding_attention", "full_attention", "sliding_attention"])


@pytest.fixture(scope="module")
def ids():
    return torch.randint(0, VOCAB, (50,), generator=torch.Generator().manual_seed(1))


@torch.no_grad()
def forward_nll(lm, ids, position_ids=None) -> torch.Tensor:
    ids = torch.as_tensor(ids).reshape(1, -1)
    logits = lm.model(ids, position_ids=position_ids).logits[0, :-1].float()
    return -logits.log_softmax(-1).gather(-1, ids[0, 1:, None])[:, 0]


# ------------------------------------------------------------------------------------------------ full cache
@pytest.mark.parametrize("chunk", [1, 7, 64], ids=lambda c: f"chunk{c}")
@pytest.mark.parametrize("which", ["llama", "gemma_sliding"])
def test_full_equals_one_forward_pass(which, chunk, ids, request):
    lm = request.getfixturevalue(which)
    r = streaming_perplexity(lm, ids, policy="full", chunk=chunk)
    torch.testing.assert_close(r.nll, forward_nll(lm, ids), atol=1e-5, rtol=0)
    assert r.perplexity == pytest.approx(perplexity(forward_nll(lm, ids)), rel=1e-5)
    assert r.max_keys_attended == ids.numel() - 1  # the last query sees every token (in a global layer)
    assert lm.model.config._attn_implementation == "eager"  # restored


def test_full_on_a_model_without_rope():  # "any HF causal LM": GPT-2's learned absolute positions
    torch.manual_seed(0)
    lm = _wrap("tiny-gpt2", GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                                                       initializer_range=0.3, bos_token_id=0, eos_token_id=0)))
    x = torch.randint(0, VOCAB, (30,))
    torch.testing.assert_close(streaming_perplexity(lm, x, policy="full", chunk=8).nll, forward_nll(lm, x),
                               atol=1e-5, rtol=0)
    with pytest.raises(NotImplementedError, match="RoPE"):
        streaming_perplexity(lm, x, policy="window", window=8)


# ------------------------------------------------------------------------------------------- window policies
def test_window_at_least_the_sequence_equals_full(llama, ids):
    full = streaming_perplexity(llama, ids, policy="full")
    for policy in ("window", "sink_window"):
        r = streaming_perplexity(llama, ids, policy=policy, window=ids.numel() - 1, chunk=9)
        torch.testing.assert_close(r.nll, full.nll, atol=1e-5, rtol=0)


def test_sink_window_without_sinks_is_window(llama, ids):
    w = streaming_perplexity(llama, ids, policy="window", window=12, chunk=5)
    s = streaming_perplexity(llama, ids, policy="sink_window", window=12, n_sink=0, chunk=5)
    torch.testing.assert_close(s.nll, w.nll, atol=0, rtol=0)
    assert s.n_sink == 0 and w.n_sink == 0


@pytest.mark.parametrize("policy,n_sink", [("window", 0), ("sink_window", 1), ("sink_window", 4)])
@pytest.mark.parametrize("which", ["llama", "gemma_sliding"])
def test_chunks_equal_token_by_token(which, policy, n_sink, ids, request):
    lm = request.getfixturevalue(which)
    window = 10
    one = streaming_perplexity(lm, ids, policy=policy, window=window, n_sink=n_sink, chunk=1)
    for chunk in (3, 16, 64):
        r = streaming_perplexity(lm, ids, policy=policy, window=window, n_sink=n_sink, chunk=chunk)
        torch.testing.assert_close(r.nll, one.nll, atol=1e-5, rtol=0)
    # the first `window` predictions see the whole prefix: identical to the full cache
    full = streaming_perplexity(lm, ids, policy="full")
    torch.testing.assert_close(one.nll[:window], full.nll[:window], atol=1e-5, rtol=0)
    assert (one.nll[window:] - full.nll[window:]).abs().max() > 1e-3  # eviction does change later predictions


@pytest.mark.parametrize("policy,n_sink", [("window", 0), ("sink_window", 3)])
def test_cache_never_exceeds_its_budget(llama, ids, policy, n_sink):
    window = 8
    r = streaming_perplexity(llama, ids, policy=policy, window=window, n_sink=n_sink, chunk=1)
    assert r.max_cache_entries == window and r.max_keys_attended == window
    r = streaming_perplexity(llama, ids, policy=policy, window=window, n_sink=n_sink, chunk=6)
    assert r.max_keys_attended == window  # every query; the store briefly holds the chunk too
    assert r.max_cache_entries == window - 1 + 6


@pytest.mark.parametrize("which", ["llama", "gemma_global"])
@pytest.mark.parametrize("policy,n_sink", [("window", 0), ("sink_window", 3)])
def test_positions_in_the_cache_one_layer(which, policy, n_sink, ids):
    """One layer: its keys depend on the token alone, so step j equals a forward pass over the cache contents with
    positions 0..window-1 (StreamingLLM), and differs from the same tokens at their positions in the text."""
    lm = _llama(n_layers=1) if which == "llama" else _gemma(["full_attention"])
    window = 12
    r = streaming_perplexity(lm, ids, policy=policy, window=window, n_sink=n_sink, chunk=7)
    diff_text_positions = []
    for j in range(ids.numel() - 1):
        kept = torch.arange(j + 1) if j < window else torch.cat(
            [torch.arange(n_sink), torch.arange(j - window + n_sink + 1, j + 1)])
        ctx = torch.cat([ids[kept], ids[j + 1:j + 2]])
        expect = forward_nll(lm, ctx)[-1]
        assert r.nll[j].item() == pytest.approx(expect.item(), abs=1e-5), f"step {j}"
        if j >= window and n_sink:
            at_text_positions = forward_nll(lm, ctx, position_ids=torch.cat([kept, kept[-1:] + 1])[None])[-1]
            diff_text_positions.append(abs(at_text_positions.item() - expect.item()))
    if n_sink:  # the test can tell the positions apart (so it checks the sink keys' re-rotation)
        assert max(diff_text_positions) > 1e-3


# ----------------------------------------------------------------------------------------------- sink removal
def test_removal_one_layer_equals_dropping_the_token_keeping_positions(ids):
    lm = _llama(n_layers=1)
    r = perplexity_without_sink(lm, ids, positions=(0,), chunk=16)
    torch.testing.assert_close(r.baseline_nll, forward_nll(lm, ids), atol=1e-5, rtol=0)
    assert r.nll[0] == pytest.approx(r.baseline_nll[0].item(), abs=1e-6)  # the first token's own query is kept
    expect = forward_nll(lm, ids[1:], position_ids=torch.arange(1, ids.numel())[None])
    torch.testing.assert_close(r.nll[1:], expect, atol=1e-5, rtol=0)
    assert r.score_from == 1 and r.perplexity == pytest.approx(perplexity(r.nll, 1))


def _removal_mask(t, positions):
    q, k = torch.arange(t)[:, None], torch.arange(t)[None, :]
    hidden = (k > q) | (torch.isin(k, torch.tensor(positions)) & ~torch.isin(q, torch.tensor(positions)))
    return torch.zeros(1, 1, t, t).masked_fill(hidden, torch.finfo(torch.float32).min)


@pytest.mark.parametrize("positions", [[0], [0, 1, 2, 3], [5, 9]], ids=str)
def test_removal_in_all_layers_equals_a_custom_mask(llama, ids, positions):
    """Every layer: the same as an ordinary forward pass with a 4-D additive mask that hides the positions."""
    with torch.no_grad():
        logits = llama.model(ids[None], attention_mask=_removal_mask(ids.numel(), positions)).logits[0, :-1]
    expect = -logits.log_softmax(-1).gather(-1, ids[1:, None])[:, 0]
    r = perplexity_without_sink(llama, ids, positions=positions, chunk=16)
    torch.testing.assert_close(r.nll, expect, atol=1e-5, rtol=0)


def test_removal_in_one_layer_equals_a_mask_in_that_layer(llama, ids):
    """Layer 1 only: an ordinary forward pass whose layer-1 attention gets the removal mask (a pre-hook)."""
    mask = _removal_mask(ids.numel(), [0, 1])
    attn = llama.model.model.layers[1].self_attn
    handle = attn.register_forward_pre_hook(lambda _m, args, kwargs: (args, {**kwargs, "attention_mask": mask}),
                                            with_kwargs=True)
    try:
        expect = forward_nll(llama, ids)
    finally:
        handle.remove()
    r = perplexity_without_sink(llama, ids, positions=[0, 1], layers=[1], chunk=16)
    torch.testing.assert_close(r.nll, expect, atol=1e-5, rtol=0)
    assert (r.nll - perplexity_without_sink(llama, ids, positions=[0, 1], chunk=16).nll).abs().max() > 1e-3


def test_removal_in_chosen_layers_and_positions(llama, ids):
    full = streaming_perplexity(llama, ids, policy="full")
    r = perplexity_without_sink(llama, ids, positions=[0, 1, 2, 3], layers=[1], baseline=full, chunk=8)
    assert r.positions == [0, 1, 2, 3] and r.layers == [1] and r.score_from == 4
    torch.testing.assert_close(r.nll[:4], full.nll[:4], atol=1e-5, rtol=0)  # nothing lost before position 4
    assert (r.nll[4:] - full.nll[4:]).abs().max() > 1e-3
    computed = perplexity_without_sink(llama, ids, positions=[0, 1, 2, 3], layers=[1], chunk=64)
    torch.testing.assert_close(computed.nll, r.nll, atol=1e-5, rtol=0)
    assert computed.baseline_perplexity == pytest.approx(r.baseline_perplexity, rel=1e-5)
    middle = perplexity_without_sink(llama, ids, positions=[20], score_from=21, baseline=full)
    torch.testing.assert_close(middle.nll[:21], full.nll[:21], atol=1e-5, rtol=0)


# ------------------------------------------------------------------------------------------ pretrained models
@pytest.mark.parametrize("name", ["smollm2", "gemma3"])
def test_pretrained_short_sequence(name, request):
    lm = request.getfixturevalue(name)
    x, prov = text_ids(lm.tokenizer, n_tokens=40)
    assert prov["text_path"] == DEFAULT_TEXT and prov["n_tokens"] == 40
    full = streaming_perplexity(lm, x, policy="full", chunk=16)
    torch.testing.assert_close(full.nll, forward_nll(lm, x), atol=1e-4, rtol=0)
    # chunk boundaries on both sides of the window (chunk=1 itself is covered on the tiny models above)
    few = streaming_perplexity(lm, x, policy="sink_window", window=12, chunk=8)  # a chunk across the first eviction
    many = streaming_perplexity(lm, x, policy="sink_window", window=12, chunk=32)
    torch.testing.assert_close(many.nll, few.nll, atol=2e-4, rtol=0)
    assert few.max_keys_attended == 12 and few.max_cache_entries == 12 - 1 + 8
    assert few.perplexity_from(12) != pytest.approx(full.perplexity_from(12), rel=1e-3)
    assert {"code_version", "hardware", "model", "policy", "window", "n_sink"} <= set(few.provenance)


# ------------------------------------------------------------------------------------------------ errors
def test_argument_errors(llama, ids):
    with pytest.raises(ValueError, match="valid: full, window, sink_window"):
        streaming_perplexity(llama, ids, policy="sinks", window=8)
    assert POLICIES == ("full", "window", "sink_window")
    with pytest.raises(ValueError, match="window=None"):
        streaming_perplexity(llama, ids, policy="full", window=8)
    for bad in (None, 0, 2.5, True):
        with pytest.raises(ValueError, match="window must be an int >= 1"):
            streaming_perplexity(llama, ids, policy="window", window=bad)
    with pytest.raises(ValueError, match="smaller than window"):
        streaming_perplexity(llama, ids, policy="sink_window", window=4, n_sink=4)
    with pytest.raises(ValueError, match="n_sink must be an int >= 0"):
        streaming_perplexity(llama, ids, policy="sink_window", window=8, n_sink=-1)
    with pytest.raises(ValueError, match="chunk must be an int >= 1"):
        streaming_perplexity(llama, ids, policy="full", chunk=0)
    with pytest.raises(ValueError, match="at least 2 tokens"):
        streaming_perplexity(llama, ids[:1], policy="full")
    with pytest.raises(ValueError, match="one sequence"):
        streaming_perplexity(llama, torch.zeros(2, 5, dtype=torch.long), policy="full")
    with pytest.raises(ValueError, match="integer token ids"):
        streaming_perplexity(llama, ids.float(), policy="full")
    with pytest.raises(ValueError, match=r"\[0, 97\)"):
        streaming_perplexity(llama, torch.tensor([1, 2, VOCAB]), policy="full")
    with pytest.raises(ValueError, match="context length 128"):
        streaming_perplexity(llama, torch.zeros(129, dtype=torch.long), policy="window", window=8)


def test_removal_argument_errors(llama, ids):
    with pytest.raises(ValueError, match="non-empty sequence"):
        perplexity_without_sink(llama, ids, positions=())
    with pytest.raises(ValueError, match="non-empty sequence"):
        perplexity_without_sink(llama, ids, positions=0)
    with pytest.raises(ValueError, match=r"positions must lie in \[0, 48\]"):
        perplexity_without_sink(llama, ids, positions=(49,))
    with pytest.raises(ValueError, match="subset of 0..1"):
        perplexity_without_sink(llama, ids, layers=[2])
    with pytest.raises(ValueError, match="subset of 0..1"):
        perplexity_without_sink(llama, ids, layers=[])
    with pytest.raises(ValueError, match="score_from must be an int >= 4"):
        perplexity_without_sink(llama, ids, positions=(0, 3), score_from=2)
    with pytest.raises(ValueError, match="no prediction to score"):
        perplexity_without_sink(llama, ids, score_from=49)
    window = streaming_perplexity(llama, ids, policy="window", window=8)
    with pytest.raises(ValueError, match="baseline must be a policy='full' result"):
        perplexity_without_sink(llama, ids, baseline=window)


def test_text_and_helpers(tmp_path):
    class Tok:  # the two tokenizer features text_ids uses
        bos_token_id = 5

        def __call__(self, text, add_special_tokens=False):
            return type("Enc", (), {"input_ids": [ord(c) % 50 for c in text]})()

    f = tmp_path / "t.txt"
    f.write_text("abcdefghij")
    x, prov = text_ids(Tok(), f, n_tokens=4, bos=True)
    assert x.tolist() == [[5, ord("a") % 50, ord("b") % 50, ord("c") % 50]]
    assert prov["text_chars"] == 10 and prov["text_tokens"] == 11 and len(prov["text_sha256"]) == 16
    with pytest.raises(ValueError, match="only 10 tokens"):
        text_ids(Tok(), f, n_tokens=11)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        text_ids(Tok(), tmp_path / "missing.txt")
    with pytest.raises(ValueError, match="n_tokens must be an int >= 2"):
        text_ids(Tok(), f, n_tokens=1)
    nll = torch.tensor([0.0, 0.0, 1.0, 1.0, 2.0])
    assert binned_perplexity(nll, 2) == pytest.approx([1.0, 2.718281828, 7.389056099])
    assert perplexity(nll, 2, 4) == pytest.approx(2.718281828)
    with pytest.raises(ValueError, match="no predictions"):
        perplexity(nll, 5)
    with pytest.raises(ValueError, match="bin_size"):
        binned_perplexity(nll, 0)


def test_past_window(llama, ids):
    runs = [streaming_perplexity(llama, ids, policy="full")]
    runs += [streaming_perplexity(llama, ids, policy=p, window=10, n_sink=2) for p in ("window", "sink_window")]
    v = past_window(*runs)
    ratio = runs[1].perplexity_from(10) / runs[0].perplexity_from(10)
    assert v["ratio"] == pytest.approx(ratio) and v["window ppl"] == pytest.approx(runs[1].perplexity_from(10))
    if v["recovered"] is not None:
        f, w, s = v["full ppl"], v["window ppl"], v["sink+window ppl"]
        assert v["recovered"] == pytest.approx((math.log(w) - math.log(s)) / (math.log(w) - math.log(f)))
    with pytest.raises(ValueError, match="in that order"):
        past_window(runs[1], runs[0], runs[2])
    other = streaming_perplexity(llama, ids, policy="sink_window", window=12, n_sink=2)
    with pytest.raises(ValueError, match="share the sequence and the window"):
        past_window(runs[0], runs[1], other)
