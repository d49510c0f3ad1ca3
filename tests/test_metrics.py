"""The sink metric of Section 3.2 against a loop-by-loop reference, plus the other Section-3 measurements."""
import json
import math

import numpy as np
import pytest
import torch

from sinkpaper.metrics import (
    TraceStats, alpha, alpha_matrix, check_epsilon, check_seq_len, first_key_alpha, head_norms, hidden_norms,
    massive_activation_ratio, measure, per_layer_sink_rate, proxy_attention, qk_decomposition, sink_rate,
    sink_rates, summarize,
)
from sinkpaper.trace import Trace


# ---------------------------------------------------------------------------------------------- references
def causal_mask(T):
    return np.array([[j <= t for j in range(T)] for t in range(T)])


def prefix_mask(T, p):
    return np.array([[j <= t or (t < p and j < p) for j in range(T)] for t in range(T)])


def window_mask(T, w):
    return np.array([[t - w + 1 <= j <= t for j in range(T)] for t in range(T)])


def document_mask(doc):
    T = len(doc)
    return np.array([[j <= t and doc[t] == doc[j] for j in range(T)] for t in range(T)])


def random_attention(rng, vis, n=1):
    """n random row-normalized maps [n, T, T] over the visible keys."""
    logits = rng.normal(size=(n,) + vis.shape) * 2.0
    e = np.where(vis, np.exp(logits), 0.0)
    return e / e.sum(-1, keepdims=True)


def ref_alpha_causal(A):
    """The paper's formula, 1-based: alpha_k = 1/(T-k+1) * sum_{t=k..T} A[t, k]."""
    T = A.shape[0]
    out = []
    for k in range(1, T + 1):
        s = 0.0
        for t in range(k, T + 1):
            s += A[t - 1, k - 1]
        out.append(s / (T - k + 1))
    return np.array(out)


def ref_alpha(A, vis):
    """Mean of A[t, k] over the queries t that see k; 0 when none does."""
    T = A.shape[0]
    out = []
    for k in range(T):
        seen = [A[t, k] for t in range(T) if vis[t, k]]
        out.append(sum(seen) / len(seen) if seen else 0.0)
    return np.array(out)


def ref_sink_rate(alphas, eps, k):
    """alphas [N, L, H, T] numpy: percent of (sample, layer, head) with alpha_k > eps."""
    N, L, H, _ = alphas.shape
    hits = 0
    for n in range(N):
        for l in range(L):
            for h in range(H):
                hits += alphas[n, l, h, k - 1] > eps
    return 100.0 * hits / (N * L * H)


def t(x):
    return torch.as_tensor(x)


# ---------------------------------------------------------------------------------------------- alpha
def test_alpha_matches_the_paper_formula_on_random_causal_maps():
    rng = np.random.default_rng(0)
    T = 20
    vis = causal_mask(T)
    A = random_attention(rng, vis, n=6)
    got = alpha(t(A), t(vis))
    assert got.shape == (6, T) and got.dtype == torch.float64
    for i in range(6):
        np.testing.assert_allclose(got[i].numpy(), ref_alpha_causal(A[i]), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got[i].numpy(), ref_alpha(A[i], vis), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mask", ["prefix", "window", "document"])
def test_alpha_divides_by_the_queries_that_see_the_key(mask):
    rng = np.random.default_rng(1)
    T = 24
    vis = {"prefix": prefix_mask(T, 5), "window": window_mask(T, 4),
           "document": document_mask([0] * 7 + [1] * 10 + [2] * 7)}[mask]
    A = random_attention(rng, vis, n=4)
    got = alpha(t(A), t(vis)).numpy()
    for i in range(4):
        np.testing.assert_allclose(got[i], ref_alpha(A[i], vis), rtol=1e-12, atol=1e-12)
    # the causal divisor would be wrong here
    assert not np.allclose(got[0], ref_alpha_causal(A[0]))


def test_alpha_float32_input_and_broadcast_mask():
    rng = np.random.default_rng(2)
    T = 16
    vis = causal_mask(T)
    A = random_attention(rng, vis, n=6).reshape(2, 3, T, T)
    got = alpha(t(A).to(torch.bfloat16), t(vis))
    assert got.dtype == torch.float32 and got.shape == (2, 3, T)
    np.testing.assert_allclose(got[1, 2].numpy(), ref_alpha(A[1, 2], vis), atol=1e-2)


def test_alpha_key_seen_by_no_query_is_zero_and_mask_must_be_bool():
    T = 6
    vis = causal_mask(T)
    vis[:, 2] = False
    A = np.where(vis, 1.0, 0.0)
    A = A / A.sum(-1, keepdims=True)
    got = alpha(t(A), t(vis))
    assert got[2] == 0 and not torch.isnan(got).any()
    with pytest.raises(TypeError, match="bool"):
        alpha(t(A), t(vis).float())
    with pytest.raises(ValueError, match="square"):
        alpha(torch.zeros(3, 4), torch.ones(3, 4, dtype=torch.bool))


def test_uniform_causal_attention_gives_harmonic_alpha_and_no_sink():
    T = 64
    vis = causal_mask(T)
    A = np.where(vis, 1.0, 0.0) / np.arange(1, T + 1)[:, None]
    a = alpha(t(A)[None, None, None], t(vis))  # [1, 1, 1, T]
    h64 = sum(1 / i for i in range(1, 65))
    assert a[0, 0, 0, 0].item() == pytest.approx(h64 / 64, rel=1e-12)
    assert a[0, 0, 0, 0].item() == pytest.approx(0.0741, abs=1e-4)
    assert sink_rate(a) == 0.0


def test_one_hot_attention_to_token_one_is_a_full_sink():
    T = 64
    A = torch.zeros(2, 3, 4, T, T)
    A[..., 0] = 1.0
    a = alpha(A, t(causal_mask(T)))
    assert torch.all(a[..., 0] == 1)
    assert sink_rate(a, 0.3, 1) == 100.0
    assert sink_rate(a, 0.3, 2) == 0.0


# ---------------------------------------------------------------------------------------------- sink rate
def test_sink_rate_matches_reference_for_k_up_to_10_and_several_masks():
    rng = np.random.default_rng(3)
    N, L, H, T = 5, 3, 4, 16
    interior = 0
    for vis in (causal_mask(T), prefix_mask(T, 5), window_mask(T, 3)):
        # sharp maps so that a fair share of heads cross the threshold at various k
        A = random_attention(rng, vis, n=N * L * H).reshape(N, L, H, T, T) ** 3
        A = A / A.sum(-1, keepdims=True)
        alphas = alpha(t(A), t(vis))
        ref = np.stack([[[ref_alpha(A[n, l, h], vis) for h in range(H)] for l in range(L)] for n in range(N)])
        np.testing.assert_allclose(alphas.numpy(), ref, rtol=1e-12, atol=1e-12)
        for eps in (0.1, 0.3, 0.5):
            rates = sink_rates(alphas, eps)
            assert list(rates) == list(range(1, 11))
            for k in range(1, 11):
                assert rates[k] == pytest.approx(ref_sink_rate(ref, eps, k), abs=1e-9)
                assert sink_rate(alphas, eps, k) == rates[k]
                interior += 0 < rates[k] < 100
    assert interior > 20  # the comparison is not only on all-or-nothing rates


def test_threshold_is_strict():
    # exactly representable: alpha_1 = (1 + 12 * 0.1875) / 13 = 0.25
    T = 13
    A = torch.zeros(T, T)
    A[0, 0] = 1.0
    A[1:, 0] = 0.1875
    for i in range(1, T):
        A[i, 1:i + 1] = (1 - 0.1875) / i
    a = alpha(A, t(causal_mask(T)))
    assert a[0].item() == 0.25
    assert sink_rate(a, 0.25) == 0.0
    assert sink_rate(a, 0.2499) == 100.0
    for dtype in (torch.float32, torch.float64):
        assert sink_rate(torch.full((4, 12), 0.3, dtype=dtype), 0.3) == 0.0


def test_thresholding_is_per_sample_not_on_the_mean():
    # two samples, one head: alpha_1 = 0.5 and 0.2. Mean alpha 0.35 > 0.3 would say 100%; per sample it is 50%.
    alphas = torch.full((2, 1, 1, 12), 0.05)
    alphas[0, 0, 0, 0] = 0.5
    alphas[1, 0, 0, 0] = 0.2
    assert alpha_matrix(alphas)[0, 0].item() == pytest.approx(0.35)
    assert sink_rate(alphas, 0.3) == 50.0
    assert per_layer_sink_rate(alphas, 0.3).tolist() == [50.0]


def test_per_layer_rate_and_alpha_matrix():
    rng = np.random.default_rng(4)
    alphas = t(rng.uniform(size=(6, 3, 4, 12)))
    per_layer = per_layer_sink_rate(alphas, 0.3, 2)
    assert per_layer.shape == (3,)
    for l in range(3):
        assert per_layer[l].item() == pytest.approx(ref_sink_rate(alphas[:, l:l + 1].numpy(), 0.3, 2))
    assert per_layer.mean().item() == pytest.approx(sink_rate(alphas, 0.3, 2))
    m = alpha_matrix(alphas, 3)
    assert m.shape == (3, 4)
    torch.testing.assert_close(m, alphas[..., 2].mean(0))


# ---------------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("eps", [0, 1, -0.1, 1.5])
def test_bad_epsilon_is_rejected(eps):
    with pytest.raises(ValueError, match="0 < epsilon < 1"):
        check_epsilon(eps)
    with pytest.raises(ValueError, match="epsilon"):
        sink_rate(torch.rand(2, 12), eps)
    with pytest.raises(ValueError, match="epsilon"):
        per_layer_sink_rate(torch.rand(2, 1, 1, 12), eps)


def test_too_short_sequences_are_rejected_with_a_useful_message():
    with pytest.raises(ValueError, match="length 5 .*k up to 10: need at least 11 tokens"):
        check_seq_len(5)
    check_seq_len(11)
    check_seq_len(2, k_max=1)
    with pytest.raises(ValueError, match="need at least 2"):
        check_seq_len(1, k_max=1)
    with pytest.raises(ValueError, match="1-based"):
        check_seq_len(64, k_max=0)
    with pytest.raises(ValueError, match="too short"):
        sink_rate(torch.rand(3, 5), 0.3, k=5)
    with pytest.raises(ValueError, match="too short"):
        summarize(TraceStats(alphas=torch.rand(2, 1, 1, 8)))
    summarize(TraceStats(alphas=torch.rand(2, 1, 1, 8)), ks=range(1, 8))


# ---------------------------------------------------------------------------------------------- proxy
def test_proxy_attention():
    rng = np.random.default_rng(5)
    T = 10
    vis = t(causal_mask(T))
    A = t(random_attention(rng, causal_mask(T), n=3))
    torch.testing.assert_close(proxy_attention(A, vis), A)
    torch.testing.assert_close(proxy_attention(-2.5 * A, vis), A)  # |sim| / sum |sim|
    sim = torch.randn(3, T, T, dtype=torch.float64).masked_fill(~vis, -math.inf)
    sim[0, 4] = 0.0  # a row of zeros
    p = proxy_attention(sim, vis)
    assert not torch.isnan(p).any()
    assert torch.all(p[~vis.expand_as(p)] == 0)
    assert torch.all(p[0, 4] == 0)
    sums = p.sum(-1)
    sums[0, 4] = 1.0
    torch.testing.assert_close(sums, torch.ones_like(sums))


# ---------------------------------------------------------------------------------------------- norms, angles
def test_hidden_norms_and_massive_activation_ratio():
    B, T, D = 2, 8, 5
    states = []
    for layer in range(3):
        h = torch.zeros(B, T, D)
        h[:, :, 1] = 2.0              # norm 2 for every token
        h[0, 0] = 0.0
        h[0, 0, 0] = 10.0 * (layer + 1)   # sample 0: token 1 has norm 10 (layer+1)
        h[1, 0, :] = 0.0
        h[1, 0, 2] = -6.0             # sample 1: token 1 has norm 6
        states.append(h)
    norms = hidden_norms(states)
    assert norms.shape == (B, 3, T)
    ratio = massive_activation_ratio(norms)
    # per sample then averaged: (5 (l+1) + 3) / 2, not a ratio of means
    torch.testing.assert_close(ratio, torch.tensor([4.0, 6.5, 9.0]))


def test_head_norms():
    x = [torch.randn(2, 3, 7, 4) for _ in range(5)]
    n = head_norms(x)
    assert n.shape == (2, 5, 3, 7)
    torch.testing.assert_close(n[1, 4, 2, 6], x[4][1, 2, 6].norm())


def test_qk_decomposition():
    q, k = torch.randn(2, 3, 9, 8), torch.randn(2, 3, 9, 8)
    k[0, 0, 3] = 0.0
    d = qk_decomposition(q, k)
    assert set(d) == {"product", "cosine", "norm_product"}
    torch.testing.assert_close(d["product"], d["cosine"] * d["norm_product"])
    torch.testing.assert_close(d["product"][1, 2, 4, 5], q[1, 2, 4] @ k[1, 2, 5])
    torch.testing.assert_close(d["cosine"][1, 2, 4, 5], torch.cosine_similarity(q[1, 2, 4], k[1, 2, 5], dim=0))
    assert torch.all(d["cosine"][0, 0, :, 3] == 0) and d["cosine"].abs().max() <= 1 + 1e-6
    vis = t(causal_mask(9))
    m = qk_decomposition(q, k, vis)
    for v, full in zip(m.values(), d.values()):
        assert torch.isnan(v[..., ~vis]).all()
        torch.testing.assert_close(v[..., vis], full[..., vis])


# ---------------------------------------------------------------------------------------------- TraceStats
def make_trace(seed=0, B=2, L=2, H=3, T=12, D=6, Dh=4, sink=True, vis=None):
    """A hand-built Trace: sharp random causal maps, optionally with an extra sink position 0."""
    g = torch.Generator().manual_seed(seed)
    vis = t(causal_mask(T))[None] if vis is None else vis
    attentions, sinks = [], []
    for l in range(L):
        logits = torch.randn(B, H, T, T + 1, generator=g, dtype=torch.float64) * 3
        if sink:  # heads with a larger sink logit put more mass on position 0
            logits[..., 0] += torch.linspace(-3, 4, H, dtype=torch.float64)[:, None] + l
        else:
            logits[..., 0] = -math.inf
        full_vis = torch.cat([torch.ones(vis.shape[0], T, 1, dtype=torch.bool), vis], -1)[:, None]
        p = torch.softmax(logits.masked_fill(~full_vis, -math.inf), -1)
        attentions.append(p[..., 1:].float())
        sinks.append(p[..., 0].float())
    return Trace(
        attentions=attentions,
        visible=vis,
        hidden_states=[torch.randn(B, T, D, generator=g) for _ in range(L + 1)],
        sink_attention=sinks if sink else None,
        queries=[torch.randn(B, H, T, Dh, generator=g) for _ in range(L)],
        keys=[torch.randn(B, H, T, Dh, generator=g) for _ in range(L)],
        values=[torch.randn(B, H, T, Dh, generator=g) for _ in range(L)],
    )


KEYS = {"sink_k", "alpha_1_mean", "alpha_k", "per_layer_sink_1", "alpha_1_matrix", "massive_activation_ratio_by_layer",
        "sink_star", "sink_first_key", "gate_quantiles", "proxy", "n_samples", "seq_len", "n_layers", "n_heads"}


@pytest.mark.parametrize("with_sink", [True, False])
def test_trace_stats_and_summary(with_sink):
    tr = make_trace(sink=with_sink)
    st = TraceStats.from_trace(tr)
    assert st.alphas.shape == (2, 2, 3, 12) and st.alphas.dtype == torch.float32
    assert st.hidden_norms.shape == (2, 3, 12)
    assert st.key_norms.shape == st.value_norms.shape == (2, 2, 3, 12)
    vis = causal_mask(12)
    for n in range(2):
        for l in range(2):
            for h in range(3):
                np.testing.assert_allclose(st.alphas[n, l, h].numpy(),
                                           ref_alpha(tr.attentions[l][n, h].double().numpy(), vis), atol=1e-6)
    torch.testing.assert_close(st.hidden_norms, hidden_norms(tr.hidden_states))
    torch.testing.assert_close(st.key_norms, head_norms(tr.keys))

    s = summarize(st)
    assert set(s) == KEYS
    assert json.loads(json.dumps(s)) == s
    assert list(s["sink_k"]) == [str(k) for k in range(1, 11)]
    for k in range(1, 11):
        assert s["sink_k"][str(k)] == pytest.approx(ref_sink_rate(st.alphas.numpy(), 0.3, k))
    assert s["alpha_1_mean"] == pytest.approx(st.alphas[..., 0].mean().item())
    assert s["per_layer_sink_1"] == pytest.approx(per_layer_sink_rate(st.alphas).tolist())
    assert np.array(s["alpha_1_matrix"]).shape == (2, 3)
    assert s["massive_activation_ratio_by_layer"] == pytest.approx(
        massive_activation_ratio(hidden_norms(tr.hidden_states)).tolist())
    assert (s["n_samples"], s["seq_len"], s["n_layers"], s["n_heads"], s["proxy"]) == (2, 12, 2, 3, False)
    if with_sink:
        assert st.sink_alphas.shape == (2, 2, 3)
        hits = sum(tr.sink_attention[l][n, h].double().mean().item() > 0.3
                   for n in range(2) for l in range(2) for h in range(3))
        assert s["sink_star"] == pytest.approx(100 * hits / 12)
        assert 0 < s["sink_star"] < 100
        # rows of attentions plus the sink entry sum to 1, so the sink takes mass off token 1
        assert s["alpha_1_mean"] < summarize(TraceStats.from_trace(make_trace(sink=False)))["alpha_1_mean"]
    else:
        assert st.sink_alphas is None and s["sink_star"] is None


def test_trace_stats_per_sample_document_masks_when_batch_equals_heads():
    # B == H: a [B, T, T] mask broadcast naively against [B, H, T, T] would line samples up with heads
    T = 12
    docs = [[0] * 12, [0] * 4 + [1] * 8, [0] * 6 + [1] * 3 + [2] * 3]
    vis = torch.stack([t(document_mask(d)) for d in docs])
    tr = make_trace(B=3, H=3, T=T, vis=vis, sink=False)
    st = TraceStats.from_trace(tr)
    for n in range(3):
        for h in range(3):
            np.testing.assert_allclose(st.alphas[n, 1, h].numpy(),
                                       ref_alpha(tr.attentions[1][n, h].double().numpy(), vis[n].numpy()),
                                       atol=1e-6)


def test_trace_stats_cat_and_minimal_trace():
    a, b = TraceStats.from_trace(make_trace(0)), TraceStats.from_trace(make_trace(1))
    c = TraceStats.cat([a, b])
    assert c.n_samples == 4 and c.sink_alphas.shape == (4, 2, 3)
    torch.testing.assert_close(c.alphas[2:], b.alphas)
    bare = Trace(attentions=make_trace(0).attentions, visible=t(causal_mask(12))[None], proxy=True)
    sb = TraceStats.from_trace(bare)
    assert sb.hidden_norms is None and sb.key_norms is None and sb.sink_alphas is None and sb.proxy
    s = summarize(sb)
    assert s["massive_activation_ratio_by_layer"] is None and s["proxy"] is True
    with pytest.raises(ValueError, match="proxy"):
        TraceStats.cat([a, sb])
    with pytest.raises(ValueError, match="None"):
        TraceStats.cat([a, TraceStats.from_trace(make_trace(sink=False))])
    with pytest.raises(ValueError):
        TraceStats.cat([])


# ---------------------------------------------------------------------------------------------- measure
def toy_trace_fn(L=2, H=3, D=8):
    """A deterministic per-sample 'model': attention logits from a fixed embedding of the ids."""
    g = torch.Generator().manual_seed(0)
    emb = torch.randn(50, D, generator=g)
    wq, wk = torch.randn(L, H, D, D, generator=g), torch.randn(L, H, D, D, generator=g)

    def trace_fn(ids):
        assert not torch.is_grad_enabled()
        T = ids.shape[1]
        x = emb[ids]  # [B, T, D]
        vis = torch.ones(T, T, dtype=torch.bool).tril()[None]
        maps, keys = [], []
        for l in range(L):
            q = torch.einsum("btd,hde->bhte", x, wq[l])
            k = torch.einsum("btd,hde->bhte", x, wk[l])
            maps.append(torch.softmax((q @ k.transpose(-1, -2)).masked_fill(~vis[:, None], -math.inf), -1))
            keys.append(k)
        return Trace(attentions=maps, visible=vis, hidden_states=[x] * (L + 1), keys=keys, values=keys)

    return trace_fn


def test_measure_batches_equal_one_batch():
    ids = torch.randint(0, 50, (7, 16), generator=torch.Generator().manual_seed(1))
    fn = toy_trace_fn()
    one = measure(fn, ids, batch_size=100, progress=False)
    many = measure(fn, ids, batch_size=3, progress=True)
    assert one.alphas.shape == (7, 2, 3, 16) and one.alphas.device.type == "cpu"
    for name in ("alphas", "hidden_norms", "key_norms", "value_norms"):
        torch.testing.assert_close(getattr(many, name), getattr(one, name))
    s_many, s_one = summarize(many, ks=range(1, 6)), summarize(one, ks=range(1, 6))
    assert s_many["sink_k"] == s_one["sink_k"] and s_many["n_samples"] == 7
    assert s_many["alpha_1_mean"] == pytest.approx(s_one["alpha_1_mean"])
    with pytest.raises(ValueError, match=r"\[N, T\]"):
        measure(fn, ids[0])


@pytest.mark.parametrize("sink, has_star", [("v_bias", False), ("kv_bias", True), ("k_bias", True),
                                            ("zero_key_v_bias", True), ("none", False)])
def test_sink_star_only_for_an_extra_key(sink, has_star):
    """Sink* scores an extra position (sink token, K / KV bias, our zero-logit key). The paper's V bias adds v*
    after the attention: it is no position, so it has no Sink* (the paper's Table 5 reads "-" there)."""
    from sinkpaper.models import ModelConfig, SinkModel
    torch.manual_seed(0)
    model = SinkModel(ModelConfig(vocab_size=61, d_model=32, n_layers=2, n_heads=4, d_ff=48, max_seq_len=32,
                                  sink=sink))
    ids = torch.randint(0, 61, (3, 16), generator=torch.Generator().manual_seed(1))
    s = summarize(TraceStats.from_trace(model.trace(ids)))
    assert (s["sink_star"] is not None) == has_star
    assert 0 <= s["sink_k"]["1"] <= 100


def test_uniform_alpha_1_closed_form_and_masked_route_agree_with_the_formulas():
    from sinkpaper.metrics import uniform_alpha, uniform_alpha_1
    assert uniform_alpha_1(64) == pytest.approx(float(uniform_alpha(64)[0]), rel=1e-12)     # H_64 / 64 both ways
    assert uniform_alpha_1(64, window=4) == pytest.approx((1 + 1 / 2 + 1 / 3 + 1 / 4) / 4)  # H_w / w
    assert uniform_alpha_1(32768) == pytest.approx(sum(1 / t for t in range(1, 32769)) / 32768)
    with pytest.raises(ValueError, match="seq_len"):
        uniform_alpha_1(0)



def test_first_key_alpha_is_alpha_1_under_a_causal_mask_and_the_document_start_under_a_document_mask():
    g = torch.Generator().manual_seed(0)
    T = 6
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    a = torch.rand(2, 3, T, T, generator=g).masked_fill(~causal, 0)
    a = a / a.sum(-1, keepdim=True)
    torch.testing.assert_close(first_key_alpha(a, causal[None]), alpha(a, causal[None, None])[..., 0])
    docs = torch.tensor([0, 0, 0, 1, 1, 1])                         # a second document starts at position 4
    vis = causal & (docs[:, None] == docs[None, :])
    b = torch.rand(1, 1, T, T, generator=g).masked_fill(~vis, 0)
    b = b / b.sum(-1, keepdim=True)
    want = (b[0, 0, :3, 0].sum() + b[0, 0, 3:, 3].sum()) / T        # each query on its own document's first token
    torch.testing.assert_close(first_key_alpha(b, vis[None])[0, 0], want)
    # the summary reads it only where a first key is not position 1
    tr = Trace(attentions=[b], visible=vis[None])
    # one head: the percentage of (sample, layer, head) whose first-key alpha is above epsilon
    got = summarize(TraceStats.from_trace(tr), epsilon=0.3, ks=range(1, 3))["sink_first_key"]
    assert got == (100.0 if float(want) > 0.3 else 0.0)
    assert summarize(TraceStats.from_trace(tr), epsilon=float(want) - 1e-6, ks=range(1, 3))["sink_first_key"] == 100.0
    assert summarize(TraceStats.from_trace(tr), epsilon=float(want) + 1e-6, ks=range(1, 3))["sink_first_key"] == 0.0
    assert summarize(TraceStats.from_trace(Trace(attentions=[a], visible=causal[None])), ks=range(1, 3))[
        "sink_first_key"] is None


def test_an_evaluation_mixing_batches_with_and_without_document_starts_reads_the_first_key_everywhere():
    """Some held-out batches of a document-masked run hold no document start past position 1; their first key is
    position 1, so the concatenation reads alpha_1 there, never an error or a silent None."""
    g = torch.Generator().manual_seed(1)
    T = 6
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    docs = torch.tensor([0, 0, 1, 1, 1, 1])
    vis = causal & (docs[:, None] == docs[None, :])

    def weights(mask):
        w = torch.rand(2, 3, T, T, generator=g).masked_fill(~mask, 0)
        return w / w.sum(-1, keepdim=True)

    a, b = weights(causal), weights(vis)
    whole = TraceStats.cat([TraceStats.from_trace(Trace(attentions=[a], visible=causal[None])),
                            TraceStats.from_trace(Trace(attentions=[b], visible=vis[None]))])
    want = torch.cat([first_key_alpha(a, causal[None]), first_key_alpha(b, vis[None])])[:, None]
    torch.testing.assert_close(whole.first_key_alphas, want)
    # the share of (sequence, layer, head) cells above epsilon, in percent: a plain count over the same alphas, at
    # an epsilon between their least and largest so that cells fall on both sides
    eps = (float(want.min()) + float(want.max())) / 2
    above = sum(float(x) > eps for x in want.flatten())
    assert 0 < above < want.numel()
    assert summarize(whole, epsilon=eps, ks=range(1, 3))["sink_first_key"] == pytest.approx(100 * above / want.numel())


def test_the_doc_start_reading_counts_only_queries_of_a_document_that_starts_inside_the_window():
    from sinkpaper.metrics import doc_start_alpha
    g = torch.Generator().manual_seed(2)
    T = 6
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    docs = torch.tensor([0, 0, 0, 1, 1, 1])                         # a document starts at position 4
    vis = causal & (docs[:, None] == docs[None, :])
    b = torch.rand(1, 1, T, T, generator=g).masked_fill(~vis, 0)
    b = b / b.sum(-1, keepdim=True)
    want = b[0, 0, 3:, 3].mean()                                    # queries 4..6 on their document's first token
    torch.testing.assert_close(doc_start_alpha(b, vis[None])[0, 0], want)
    assert torch.isnan(doc_start_alpha(b, causal[None, None])).all()  # no document starts inside: no reading
    stats = TraceStats.from_trace(Trace(attentions=[b], visible=vis[None]))
    s = summarize(stats, epsilon=float(want) - 1e-6, ks=range(1, 3))
    assert s["sink_doc_start"] == 100.0 and s["doc_start_samples"] == 1
    assert summarize(stats, epsilon=float(want) + 1e-6, ks=range(1, 3))["sink_doc_start"] == 0.0
    plain = TraceStats.from_trace(Trace(attentions=[b], visible=causal[None]))
    assert "sink_doc_start" not in summarize(plain, ks=range(1, 3))
