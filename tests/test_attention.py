"""Reference attention operators against independent formulas (fp64), and the masks against loops."""
import math

import pytest
import torch
import torch.nn.functional as F

from sinkpaper.attention import (OPERATIONS, OPERATORS, OpParams, attention_reference, causal_mask, intra_document_mask,
                                 prefix_lm_mask, sliding_window_mask, visible_mask)

torch.manual_seed(0)
B, H, T, D = 2, 3, 11, 8


def qkv(dtype=torch.float64):
    g = torch.Generator().manual_seed(1)
    return [torch.randn(B, H, T, D, generator=g, dtype=dtype) for _ in range(3)]


def loop_mask(kind, T, p=None, w=None, docs=None):
    m = torch.zeros(T, T, dtype=torch.bool)
    for t in range(T):
        for j in range(T):
            if kind == "causal":
                m[t, j] = j <= t
            elif kind == "prefix":
                m[t, j] = j <= t or (t < p and j < p)
            elif kind == "window":
                m[t, j] = t - w < j <= t
            elif kind == "document":
                m[t, j] = j <= t and docs[t] == docs[j]
    return m


def test_masks_match_loops():
    assert torch.equal(causal_mask(T), loop_mask("causal", T))
    assert torch.equal(prefix_lm_mask(T, 4), loop_mask("prefix", T, p=4))
    assert torch.equal(sliding_window_mask(T, 3), loop_mask("window", T, w=3))
    docs = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2, 2, 3, 3])
    assert torch.equal(intra_document_mask(docs[None])[0], loop_mask("document", T, docs=docs))
    assert torch.equal(visible_mask(T, window=3, doc_ids=docs[None])[0],
                       loop_mask("window", T, w=3) & loop_mask("document", T, docs=docs))


def test_mask_errors():
    with pytest.raises(ValueError, match="window"):
        visible_mask(T, window=0)
    with pytest.raises(ValueError, match="cannot be combined"):
        visible_mask(T, window=2, prefix=2)


@pytest.mark.parametrize("kind", ["causal", "prefix", "window", "document"])
def test_softmax_matches_sdpa(kind):
    q, k, v = qkv()
    docs = torch.tensor([0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2])
    m = loop_mask(kind, T, p=4, w=3, docs=docs)
    res = attention_reference(q, k, v, visible=m[None], return_map=True)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    torch.testing.assert_close(res.out, ref)
    assert torch.all(res.attn_map[..., ~m] == 0)
    torch.testing.assert_close(res.attn_map.sum(-1), torch.ones(B, H, T, dtype=torch.float64))


def test_kv_bias_equals_an_extra_key_value():
    """k*, v* behave exactly like one more key/value that every query sees (independent route: SDPA)."""
    q, k, v = qkv()
    kb, vb = torch.randn(H, D, dtype=torch.float64), torch.randn(H, D, dtype=torch.float64)
    res = attention_reference(q, k, v, visible=causal_mask(T)[None], k_bias=kb, v_bias=vb, return_map=True)
    k2 = torch.cat([kb[None, :, None].expand(B, H, 1, D), k], 2)
    v2 = torch.cat([vb[None, :, None].expand(B, H, 1, D), v], 2)
    m2 = torch.cat([torch.ones(T, 1, dtype=torch.bool), causal_mask(T)], 1)
    torch.testing.assert_close(res.out, F.scaled_dot_product_attention(q, k2, v2, attn_mask=m2))
    torch.testing.assert_close(res.sink_map + res.attn_map.sum(-1), torch.ones(B, H, T, dtype=torch.float64))


def test_sink_logit_with_and_without_a_value():
    q, k, v = qkv()
    logit = torch.tensor([0.0, 2.0, -1.0], dtype=torch.float64)
    res = attention_reference(q, k, v, visible=causal_mask(T)[None], sink_logit=logit, return_map=True)
    s = (q @ k.transpose(-1, -2)) / math.sqrt(D)
    s = s.masked_fill(~causal_mask(T), float("-inf"))
    full = torch.softmax(torch.cat([logit.view(1, H, 1, 1).expand(B, H, T, 1), s], -1), -1)
    torch.testing.assert_close(res.out, full[..., 1:] @ v)  # zero value for the sink
    torch.testing.assert_close(res.sink_map, full[..., 0])
    # sink_logit = 0 with a value v*: an extra key with logit 0 carrying v* (our zero_key_v_bias, not the paper's)
    vb = torch.randn(H, D, dtype=torch.float64)
    res = attention_reference(q, k, v, visible=causal_mask(T)[None], sink_logit=torch.zeros(H, dtype=torch.float64),
                              v_bias=vb, return_map=True)
    full = torch.softmax(torch.cat([torch.zeros(B, H, T, 1, dtype=torch.float64), s], -1), -1)
    torch.testing.assert_close(res.out, full[..., 1:] @ v + full[..., :1] * vb[None, :, None])
    assert res.sink_map.min() > 0.01  # the zero-logit column takes a share of every row


@pytest.mark.parametrize("op,normalize", [("softmax", False), ("sigmoid", False), ("elu", False), ("elu", True),
                                          ("kernel", False), ("softpick", False)])
def test_v_bias_alone_is_added_after_the_attention(op, normalize):
    """The paper's V bias (its control group, Table 5): Softmax(Q K^T / sqrt(d_h) + M) V + v*. No extra key:
    the map is that of plain attention (T columns, rows summing to 1 for softmax) and the output moves with v*."""
    q, k, v = qkv()
    vis = causal_mask(T)[None]
    vb = torch.randn(H, D, dtype=torch.float64)
    plain = attention_reference(q, k, v, visible=vis, op=op, normalize=normalize, return_map=True)
    res = attention_reference(q, k, v, visible=vis, op=op, normalize=normalize, v_bias=vb, return_map=True)
    assert res.sink_map is None and res.attn_map.shape == (B, H, T, T) and res.weights.shape == (B, H, T, T)
    torch.testing.assert_close(res.attn_map, plain.attn_map)
    torch.testing.assert_close(res.out, plain.out + vb[None, :, None, :])
    if op == "softmax":  # the fp64 formula, written out
        s = ((q @ k.transpose(-1, -2)) / math.sqrt(D)).masked_fill(~causal_mask(T), float("-inf"))
        torch.testing.assert_close(res.out, torch.softmax(s, -1) @ v + vb[None, :, None, :])
        torch.testing.assert_close(res.attn_map.sum(-1), torch.ones(B, H, T, dtype=torch.float64))
    shared = attention_reference(q, k, v, visible=vis, op=op, normalize=normalize, v_bias=vb[:1])
    torch.testing.assert_close(shared.out, plain.out + vb[None, :1, None, :])  # one v* for every head


def test_softmax_sum_and_p_norm():
    q, k, v = qkv()
    vis = causal_mask(T)[None]
    base = attention_reference(q, k, v, visible=vis, return_map=True)
    scaled = attention_reference(q, k, v, visible=vis, softmax_sum=0.2, return_map=True)
    torch.testing.assert_close(scaled.out, 0.2 * base.out)
    torch.testing.assert_close(scaled.weights.sum(-1), torch.full((B, H, T), 0.2, dtype=torch.float64))
    torch.testing.assert_close(scaled.attn_map, base.attn_map)
    torch.testing.assert_close(attention_reference(q, k, v, visible=vis, op="softmax_p", p_norm=1.0).out, base.out)
    p2 = attention_reference(q, k, v, visible=vis, op="softmax_p", p_norm=2.0, return_map=True)
    s = ((q @ k.transpose(-1, -2)) / math.sqrt(D)).masked_fill(~causal_mask(T), float("-inf"))
    e = s.exp()
    torch.testing.assert_close(p2.weights, e / (e ** 2).sum(-1, keepdim=True).sqrt())


@pytest.mark.parametrize("normalize", [False, True])
def test_sigmoid_and_elu(normalize):
    q, k, v = qkv()
    m = causal_mask(T)
    s = (q @ k.transpose(-1, -2)) / math.sqrt(D)
    for op, w in (("sigmoid", torch.sigmoid(s - 1.5)), ("elu", F.elu(s) + 1)):
        w = w * m
        if normalize:
            w = w / w.sum(-1, keepdim=True)
        res = attention_reference(q, k, v, visible=m[None], op=op, normalize=normalize,
                                  sigmoid_bias=-1.5, return_map=True)
        torch.testing.assert_close(res.out, w @ v)
        torch.testing.assert_close(res.attn_map, w.abs() / w.abs().sum(-1, keepdim=True))


def test_softpick_matches_naive_formula():
    q, k, v = qkv()
    m = causal_mask(T)
    s = (q @ k.transpose(-1, -2)) / math.sqrt(D) * 3  # some large scores to exercise the clamped max
    res = attention_reference(q * 3, k, v, visible=m[None], op="softpick", softpick_eps=1e-6, return_map=True)
    e = (s.exp() - 1) * m
    w = F.relu(e) / (e.abs().sum(-1, keepdim=True) + 1e-6)
    torch.testing.assert_close(res.weights, w)
    torch.testing.assert_close(res.out, w @ v)
    # stable with scores that would overflow exp in fp32
    big = attention_reference(q.float() * 200, k.float(), v.float(), visible=m[None], op="softpick")
    assert torch.isfinite(big.out).all()


@pytest.mark.parametrize("z", ["one", "rowsum", "maxabs"])
@pytest.mark.parametrize("phi", ["identity", "elu"])
def test_kernel_normalizers(z, phi):
    """The paper's kernel form: sim = phi(q) phi(k)^T / sqrt(d_h), divided by Z in {1, row sum, max(|row sum|, 1)}."""
    q, k, v = qkv()
    fq, fk = (F.elu(q) + 1, F.elu(k) + 1) if phi == "elu" else (q, k)
    m = causal_mask(T)
    sim = (fq @ fk.transpose(-1, -2)) / math.sqrt(D) * m
    denom = {"one": torch.ones_like(sim[..., :1]), "rowsum": sim.sum(-1, keepdim=True),
             "maxabs": sim.sum(-1, keepdim=True).abs().clamp_min(1.0)}[z]
    res = attention_reference(fq, fk, v, visible=m[None], op="kernel", kernel_z=z, return_map=True)
    torch.testing.assert_close(res.weights, sim / denom)
    torch.testing.assert_close(res.out, (sim / denom) @ v)
    torch.testing.assert_close(res.attn_map.sum(-1), torch.ones(B, H, T, dtype=torch.float64))
    if z == "one":  # without a normalizer the temperature shows: the unscaled product is sqrt(d_h) times larger
        torch.testing.assert_close(res.weights * math.sqrt(D), (fq @ fk.transpose(-1, -2)) * m)


def test_kernel_k_bias_is_scaled_like_the_keys():
    """A K bias under kernel attention is one more key phi(k*): its similarity carries the same 1/sqrt(d_h)."""
    q, k, v = qkv()
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    kb = F.elu(torch.randn(H, D, dtype=torch.float64)) + 1
    res = attention_reference(fq, fk, v, visible=causal_mask(T)[None], op="kernel", kernel_z="one", k_bias=kb,
                              return_map=True)
    torch.testing.assert_close(res.scores[..., 0], (fq * kb[None, :, None]).sum(-1) / math.sqrt(D))


def test_errors_name_the_argument():
    q, k, v = qkv()
    with pytest.raises(ValueError, match="valid: " + ", ".join(OPERATIONS)):   # the table, whatever it holds
        attention_reference(q, k, v, visible=causal_mask(T)[None], op="sparsemax")
    with pytest.raises(ValueError, match=r"\[batch, heads, T, head_dim\]"):
        attention_reference(q[0], k, v, visible=causal_mask(T)[None])
    with pytest.raises(ValueError, match="visible"):
        attention_reference(q, k, v, visible=causal_mask(T + 1)[None])
    with pytest.raises(ValueError, match="either sink_logit or k_bias"):
        attention_reference(q, k, v, visible=causal_mask(T)[None], sink_logit=torch.zeros(H),
                            k_bias=torch.zeros(H, D))
    with pytest.raises(ValueError, match=r"v_bias must be \[heads, 8\]"):
        attention_reference(q, k, v, visible=causal_mask(T)[None], v_bias=torch.zeros(H + 1, D))
    with pytest.raises(ValueError, match=r"k_bias must be \[heads, 8\]"):
        attention_reference(q, k, v, visible=causal_mask(T)[None], k_bias=torch.zeros(H, D + 1))
    with pytest.raises(ValueError, match=r"sink_logit must be \[heads\]"):
        attention_reference(q, k, v, visible=causal_mask(T)[None], sink_logit=torch.zeros(H, 1))
    assert {"softmax", "softmax_p", "sigmoid", "elu", "kernel"} <= set(OPERATIONS)   # the paper's Section 7.3


@pytest.mark.parametrize("name", OPERATORS)
def test_every_operator_in_the_table_gives_a_map_the_metric_can_read(name):
    """The table's reference weights, read as the metric reads them: non-negative, zero where a key is masked, rows
    of at most one, and rows of exactly one where the metric reads the proxy or the rows are a distribution."""
    q, k, v = qkv()
    vis = causal_mask(T)[None]
    res = attention_reference(q, k, v, visible=vis, op=name, return_map=True)
    m = res.attn_map
    assert (m >= 0).all() and (m[..., ~causal_mask(T)] == 0).all()
    assert (m.sum(-1) <= 1 + 1e-5).all()
    op = OPERATORS[name]
    if op.proxy(OpParams()) or op.denominator_logit(OpParams()):
        torch.testing.assert_close(m.sum(-1), torch.ones_like(m.sum(-1)))
    assert (res.lse is not None) == (op.row_stat == "logsumexp")


@pytest.mark.parametrize("name", OPERATORS)
def test_the_fused_path_check_follows_the_operator_table(name):
    from sinkpaper.models import ModelConfig, SinkModel
    model = SinkModel(ModelConfig(vocab_size=11, d_model=16, n_layers=1, n_heads=2, d_ff=16, max_seq_len=8,
                                  attention=name))
    assert model.fused_supported() == (OPERATORS[name].fused_id is not None)
    assert model.cfg.proxy_metric == OPERATORS[name].proxy(OpParams())


def test_softpick_trains_compiled_in_bf16():
    """The text profile trains compiled with bf16 autocast. Inductor's backward of a row max recomputed at another
    precision than its forward found no element equal to the max and divided by zero (the loss went non-finite at
    the first step after the first update); the gradient must be finite there and match the eager fp32 one."""
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(1, 1, 16, 8, generator=g) for _ in range(3))
    vis = causal_mask(16)[None]

    def grads(q, k, v, run, dtype):
        q, k, v = (t.clone().requires_grad_(True) for t in (q, k, v))
        out = run(q.to(dtype), k.to(dtype), v.to(dtype))
        out.float().sum().backward()
        return [t.grad for t in (q, k, v)]

    def attend(q, k, v):
        return attention_reference(q, k, v, visible=vis, op="softpick").out

    got = grads(q, k, v, torch.compile(attend, dynamic=False), torch.bfloat16)
    want = grads(q, k, v, attend, torch.float32)
    for a, b in zip(got, want):
        assert torch.isfinite(a).all()
        torch.testing.assert_close(a, b, rtol=0.1, atol=0.05 * b.abs().max().item())


def test_a_sink_logit_is_a_query_dependent_gate_on_plain_softmax_attention():
    """softmax over [b, s_1..s_t], restricted to the real keys, equals softmax(s) x sigmoid(LSE(s) - b): checked in
    fp64 on random scores, against the operator's own sink-logit path."""
    from sinkpaper.attention.operators import attention_reference, sink_logit_gate
    g = torch.Generator().manual_seed(0)
    B, H, T, D = 2, 3, 7, 8
    q, k, v = (torch.randn(B, H, T, D, generator=g, dtype=torch.float64) for _ in range(3))
    b = torch.randn(H, generator=g, dtype=torch.float64) * 2
    causal = torch.ones(T, T, dtype=torch.bool).tril()[None, None]
    with_sink = attention_reference(q, k, v, visible=causal, sink_logit=b, return_map=True)
    plain = attention_reference(q, k, v, visible=causal, return_map=True)
    gate = sink_logit_gate(plain.scores, causal, b)                     # [B, H, T]
    torch.testing.assert_close(with_sink.weights[..., 1:], plain.weights * gate[..., None], rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(with_sink.out, plain.out * gate[..., None], rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(with_sink.weights[..., 0], 1 - gate, rtol=1e-12, atol=1e-14)   # what the sink takes
    assert float(gate.min()) > 0 and float(gate.max()) < 1


def test_an_operators_settings_come_whole_or_as_keywords_and_a_wrong_name_lists_the_valid_ones():
    from dataclasses import fields

    from sinkpaper.models import ModelConfig

    q = k = v = torch.randn(1, 2, 4, 8, dtype=torch.float64)
    visible = causal_mask(4)[None]
    whole = attention_reference(q, k, v, visible=visible, op="sigmoid", params=OpParams(normalize=True))
    words = attention_reference(q, k, v, visible=visible, op="sigmoid", normalize=True)
    torch.testing.assert_close(whole.out, words.out)
    with pytest.raises(ValueError, match="unknown operator setting.*normalise; valid: normalize, softmax_sum"):
        attention_reference(q, k, v, visible=visible, op="sigmoid", normalise=True)
    with pytest.raises(ValueError, match="either as params"):
        attention_reference(q, k, v, visible=visible, op="sigmoid", params=OpParams(), normalize=True)
    # every setting is read from the model config: a new one is a field of OpParams and one of ModelConfig
    cfg = ModelConfig(attention="softmax", softmax_sum=2.0, sigmoid_bias=-3.0)
    assert {f.name: getattr(cfg.op_params, f.name) for f in fields(OpParams)}["softmax_sum"] == 2.0
    assert cfg.op_params.sigmoid_bias == -3.0
