"""Every variant of the model: forward/backward, finite gradients, causality per mask, hook points,
config validation, and the paper's propositions for repeated tokens."""
import pytest
import torch

from sinkpaper import propositions
from sinkpaper.models import (FFNS, POS_ENCODINGS, SINKS, ModelConfig, SinkModel)

TINY = dict(vocab_size=61, d_model=32, n_layers=2, n_heads=4, d_ff=48, max_seq_len=32)
T = 12

# One entry per variant the paper studies (ids read as the paper's names).
VARIANTS = {f"pos={p}": {"pos_encoding": p} for p in POS_ENCODINGS}
VARIANTS |= {"pos=relative,bucket": {"pos_encoding": "relative", "relative_bias": "bucket"}}
VARIANTS |= {f"ffn={f}": {"ffn": f} for f in FFNS}
VARIANTS |= {
    "post_norm": {"norm": "post"},
    "heads=1": {"n_heads": 1}, "heads=add": {"head_combine": "add"},
    "softmax_sum=0.2": {"softmax_sum": 0.2}, "softmax_p=2": {"attention": "softmax_p", "p_norm": 2.0},
    "sigmoid": {"attention": "sigmoid"}, "sigmoid_norm": {"attention": "sigmoid", "attn_normalize": True},
    "sigmoid_bias": {"attention": "sigmoid", "sigmoid_bias": -2.0},
    "elu": {"attention": "elu"}, "elu_norm": {"attention": "elu", "attn_normalize": True},
    "softpick": {"attention": "softpick"},
}
VARIANTS |= {f"kernel={phi},{z}": {"attention": "kernel", "kernel_phi": phi, "kernel_z": z}
             for phi in ("identity", "elu", "mlp") for z in ("one", "rowsum", "maxabs")}
VARIANTS |= {f"sink={s}": {"sink": s} for s in SINKS if s != "none"}
VARIANTS |= {
    "kv_bias_shared": {"sink": "kv_bias", "bias_shared": True},
    "k_bias_shared": {"sink": "k_bias", "bias_shared": True},
    "fixed_v_uniform_x5": {"sink": "k_bias_fixed_v", "fixed_v": "uniform", "fixed_v_scale": 5.0},
    "k_bias_dims=2": {"sink": "k_bias", "k_bias_dims": 2},
    "mask=prefix": {"mask": "prefix", "prefix_len": 4},
    "mask=window": {"mask": "window", "window": 3},
    "mask=document": {"mask": "document"},
    "sink_token+window+relative": {"sink": "sink_token", "mask": "window", "window": 3, "pos_encoding": "relative"},
    "kv_bias+sigmoid": {"sink": "kv_bias", "attention": "sigmoid"},
}
DOCS = torch.tensor([[0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2], [0, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 3]])


def build(**overrides):
    torch.manual_seed(0)
    return SinkModel(ModelConfig(**(TINY | overrides)))


def ids(seed=0, n=2):
    return torch.randint(0, TINY["vocab_size"], (n, T), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("overrides", VARIANTS.values(), ids=VARIANTS.keys())
def test_variant_trains_and_is_causal(overrides):
    model = build(**overrides)
    x = ids()
    docs = DOCS if overrides.get("mask") == "document" else None
    out = model(x, doc_ids=docs, targets=x, return_logits=True)
    assert out.logits.shape == (2, T, TINY["vocab_size"])
    out.loss.backward()
    fixed = set()
    for name, p in model.named_parameters():
        assert p.grad is not None, f"{name} got no gradient"
        assert torch.isfinite(p.grad).all(), f"{name} has a non-finite gradient"
        if p.grad.abs().sum() == 0:
            fixed.add(name)
    # Metamorphic causality: changing token j changes no output before j (for prefix-LM: j outside the prefix).
    j = 8
    y = x.clone()
    y[:, j:] = (y[:, j:] + 7) % TINY["vocab_size"]
    with torch.no_grad():
        a, b = model(x, doc_ids=docs).logits, model(y, doc_ids=docs).logits
    torch.testing.assert_close(a[:, :j], b[:, :j], atol=1e-5, rtol=1e-5)
    assert not torch.allclose(a[:, j:], b[:, j:])


def test_document_mask_isolates_documents():
    model = build(mask="document")
    x = ids()
    y = x.clone()
    y[0, :4] = (y[0, :4] + 3) % TINY["vocab_size"]  # rewrite document 0 of sample 0
    with torch.no_grad():
        a, b = model(x, doc_ids=DOCS).logits, model(y, doc_ids=DOCS).logits
    torch.testing.assert_close(a[0, 4:], b[0, 4:])  # later documents do not see it
    assert not torch.allclose(a[0, :4], b[0, :4])


def test_prefix_is_bidirectional():
    model = build(mask="prefix", prefix_len=5)
    x = ids()
    y = x.clone()
    y[:, 4] = (y[:, 4] + 1) % TINY["vocab_size"]
    with torch.no_grad():
        a, b = model(x).logits, model(y).logits
    assert not torch.allclose(a[:, 0], b[:, 0])  # position 0 sees the whole prefix


@pytest.mark.parametrize("sink", ["none", "sink_token", "kv_bias", "k_bias", "v_bias", "zero_key_v_bias"])
def test_trace_contract(sink):
    model = build(sink=sink)
    tr = model.trace(ids())
    assert len(tr.attentions) == 2 and tr.attentions[0].shape == (2, 4, T, T)
    assert len(tr.hidden_states) == 3 and tr.hidden_states[0].shape == (2, T, 32)
    assert tr.queries[0].shape == tr.keys[0].shape == (2, 4, T, 8)
    rows = tr.attentions[1].sum(-1)
    if sink in ("none", "v_bias"):  # the paper's V bias is added after the attention: no column, rows sum to 1
        assert tr.sink_attention is None
        torch.testing.assert_close(rows, torch.ones_like(rows))
    else:
        assert tr.sink_attention[1].shape == (2, 4, T)
        torch.testing.assert_close(rows + tr.sink_attention[1], torch.ones_like(rows))
    # the trace's attention is what the model used: re-running the forward gives the same logits
    with torch.no_grad():
        torch.testing.assert_close(model(ids()).logits, model(ids()).logits)


def _attention_io(model, x):
    """Per layer: q (after RoPE), k, v and the attention block's output (after W_O), from the hook points."""
    seen = {}
    handles = [getattr(b.attn, n).register_forward_hook(
        lambda _m, _i, out, key=(i, n): seen.__setitem__(key, out.detach()))
        for i, b in enumerate(model.blocks) for n in ("hook_q", "hook_k", "hook_v", "hook_out")]
    try:
        with torch.no_grad():
            model(x)
    finally:
        for h in handles:
            h.remove()
    return seen


def test_v_bias_is_the_papers_control_in_fp64():
    """sink='v_bias' is the paper's Table 5 control: Softmax(Q K^T / sqrt(d_h) + M) V + v*, v* added after the
    softmax. Checked per layer against the formula written out in fp64; the output moves with v* (by W_O v*),
    the map does not."""
    model = build(sink="v_bias").double()
    with torch.no_grad():
        for b in model.blocks:
            b.attn.v_bias.normal_(0, 1.0)  # large enough that a zero-logit key would take a visible share
    x = ids()
    io = _attention_io(model, x)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    for i, b in enumerate(model.blocks):
        q, k, v = io[(i, "hook_q")], io[(i, "hook_k")], io[(i, "hook_v")]
        s = (q @ k.transpose(-1, -2) / 8 ** 0.5).masked_fill(~mask, float("-inf"))
        heads = torch.softmax(s, -1) @ v + b.attn.v_bias[None, :, None, :]
        expected = b.attn.o_proj(heads.transpose(1, 2).reshape(2, T, 32))
        torch.testing.assert_close(io[(i, "hook_out")], expected)
    tr = model.trace(x)
    assert tr.sink_attention is None and all(a.shape == (2, 4, T, T) for a in tr.attentions)
    torch.testing.assert_close(tr.attentions[0].sum(-1), torch.ones(2, 4, T, dtype=torch.float64))
    # moving v* of layer 0 moves its output by exactly W_O [v*_1; ...; v*_H] on every row, and not its map
    delta = torch.randn(4, 8, dtype=torch.float64)
    with torch.no_grad():
        model.blocks[0].attn.v_bias += delta
    moved = _attention_io(model, x)
    shift = model.blocks[0].attn.o_proj(delta.reshape(1, 32))
    torch.testing.assert_close(moved[(0, "hook_out")] - io[(0, "hook_out")], shift.expand(2, T, 32))
    torch.testing.assert_close(model.trace(x).attentions[0], tr.attentions[0])


def test_zero_key_v_bias_is_an_extra_column_and_v_bias_is_not():
    """Our zero_key_v_bias (an extra key with logit 0 and value v*) takes a share of every row; the paper's
    v_bias does not. Same parameters, different models."""
    zk, vb = build(sink="zero_key_v_bias"), build(sink="v_bias")
    vb.load_state_dict(zk.state_dict())
    tz, tv = zk.trace(ids()), vb.trace(ids())
    assert tv.sink_attention is None and tz.sink_attention[0].min() > 0
    torch.testing.assert_close(tz.attentions[0].sum(-1) + tz.sink_attention[0], torch.ones(2, 4, T))
    assert not torch.allclose(tz.attentions[0], tv.attentions[0])


@pytest.mark.parametrize("sink", ["v_bias", "kv_bias", "zero_key_v_bias"])
def test_column_statistics_trace_has_a_sink_column_only_for_an_extra_key(sink):
    model = build(sink=sink)
    maps, cols = model.trace(ids(), method="maps"), model.trace(ids(), method="stats")
    from sinkpaper import metrics
    ref = [metrics.alpha(a, maps.visible[:, None]) for a in maps.attentions]
    for got, want in zip(cols.alphas, ref):
        torch.testing.assert_close(got, want.float(), atol=1e-5, rtol=1e-5)
    if sink == "v_bias":
        assert cols.sink_alphas is None and maps.sink_attention is None
    else:
        torch.testing.assert_close(cols.sink_alphas[0], maps.sink_attention[0].mean(-1), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("z", ["one", "maxabs", "rowsum"])
def test_kernel_model_scores_carry_one_over_sqrt_dh(z):
    """attention='kernel': the weights are phi(q) phi(k)^T / sqrt(d_h) / Z, phi applied after RoPE."""
    model = build(attention="kernel", kernel_phi="identity", kernel_z=z).double()
    seen = {}
    handles = [model.blocks[0].attn.hook_q.register_forward_hook(lambda _m, _i, o: seen.__setitem__("q", o)),
               model.blocks[0].attn.hook_k.register_forward_hook(lambda _m, _i, o: seen.__setitem__("k", o)),
               model.blocks[0].attn.hook_weights.register_forward_hook(lambda _m, _i, o: seen.__setitem__("w", o))]
    with torch.no_grad():
        model(ids())
    for h in handles:
        h.remove()
    sim = (seen["q"] @ seen["k"].transpose(-1, -2)) / 8 ** 0.5 * torch.ones(T, T, dtype=torch.bool).tril()
    rows = sim.sum(-1, keepdim=True)
    denom = {"one": torch.ones_like(rows), "rowsum": rows, "maxabs": rows.abs().clamp_min(1.0)}[z]
    torch.testing.assert_close(seen["w"], sim / denom)


def test_hook_points_are_named_and_cost_nothing_when_idle():
    model = build()
    names = set(model.hook_points())
    assert {"hook_embed", "blocks.0.attn.hook_q", "blocks.1.attn.hook_attn_map", "blocks.1.hook_resid_post"} <= names
    seen = []
    h = model.blocks[0].attn.hook_attn_map.register_forward_hook(lambda m, i, o: seen.append(o.shape))
    model(ids())
    h.remove()
    model(ids())
    assert seen == [(2, 4, T, T)]


@pytest.mark.parametrize("bad, match", [
    ({"pos_encoding": "xpos"}, "rope, nope, absolute, learnable, relative, alibi"),
    ({"attention": "relu"}, "softmax, softmax_p, sigmoid, elu, kernel, softpick"),
    ({"sink": "register"}, "sink_token, kv_bias"),
    ({"ffn": "moe"}, "swiglu"),
    ({"mask": "prefix"}, "prefix_len"),
    ({"mask": "window", "window": 0}, "window"),
    ({"d_model": 30, "n_heads": 4}, "divisible"),
    ({"k_bias_dims": 3}, "k_bias_dims"),
    ({"sink": "k_bias", "k_bias_dims": 99}, "head_dim"),
    ({"backend": "cuda"}, "eager, triton"),
])
def test_config_errors_list_valid_choices(bad, match):
    with pytest.raises(ValueError, match=match):
        ModelConfig(**(TINY | bad))


def test_from_dict_rejects_unknown_fields():
    with pytest.raises(ValueError, match="unknown model config field.*n_embd.*valid: vocab_size"):
        ModelConfig.from_dict({"n_embd": 3})
    assert ModelConfig.from_dict(ModelConfig(**TINY).to_dict()) == ModelConfig(**TINY)


def test_input_errors():
    model = build()
    with pytest.raises(ValueError, match="max_seq_len"):
        model(torch.zeros(1, 40, dtype=torch.long))
    with pytest.raises(ValueError, match="doc_ids"):
        build(mask="document")(ids())


def test_paper_default_size():
    """The paper's 60M model: d=768, 10 layers, 8 heads, FFN 1536 (~60M non-embedding parameters)."""
    model = SinkModel(ModelConfig(vocab_size=16, max_seq_len=64))
    assert 55e6 < model.num_parameters() < 65e6


# ---- Propositions for repeated tokens (Section 3.2 / Appendix of the paper), via sinkpaper.propositions ----

def test_nope_gives_exactly_uniform_attention_on_repeats():
    r = propositions.nope_uniform(seq_len=32)
    assert r["max_deviation_from_uniform"] < 1e-5
    assert abs(r["max_alpha_1"] - sum(1 / t for t in range(1, 33)) / 32) < 1e-5  # H_T / T, far below 0.3


@pytest.mark.parametrize("pos", ["alibi", "relative"])
def test_relative_encodings_have_distance_only_scores_and_no_sink_on_repeats(pos):
    r = propositions.distance_only(pos, seq_len=64)
    assert r["max_diagonal_spread"] < 1e-5
    assert r["max_alpha_1"] < 0.3, "a relative encoding put a sink on token 1 of a repeated sequence"


def test_relative_bucket_bias_is_the_released_bucket_index():
    """relative_bias="bucket" adds the T5 bucket of the distance t - j itself to every head's logits (the authors'
    released model_relpos.py): exact below 16, logarithmic up to 128, 31 beyond; 0 for future keys. Reference:
    the bucket written out per (t, j) in plain Python."""
    import math
    from sinkpaper.models.positional import RelativePositionBias

    def bucket(distance):   # 32 unidirectional buckets, max distance 128
        if distance < 16:
            return distance
        return min(16 + int(math.log(distance / 16) / math.log(128 / 16) * 16), 31)

    n = 200
    bias = RelativePositionBias(n_heads=3, learned=False)(n)
    want = torch.tensor([[float(bucket(max(t - j, 0))) for j in range(n)] for t in range(n)])
    assert bias.shape == (3, n, n) and torch.equal(bias[1], want) and torch.equal(bias[0], bias[2])
    assert want[150, 0] == 31 and want[20, 3] == 16 + int(math.log(17 / 16) / math.log(8) * 16)
    assert not list(RelativePositionBias(3, learned=False).parameters())   # fixed: nothing to learn
    m = SinkModel(ModelConfig(**TINY, pos_encoding="relative", relative_bias="bucket"))
    assert torch.equal(m._context(T, None, None).score_bias[0, 2], want[:T, :T])
    with pytest.raises(ValueError, match="learned, bucket"):
        ModelConfig(**TINY, pos_encoding="relative", relative_bias="fixed")


def test_rope_first_layer_respects_the_bound_on_repeats():
    """Attention to token 1 on repeats is at most e^{2 xi} / (e^{2 xi} + t - 1), xi = scale |q| |k|."""
    r = propositions.rope_bound(seq_len=256)
    t = torch.arange(1, 257)
    bound = torch.exp(2 * r["xi"])[:, None] / (torch.exp(2 * r["xi"])[:, None] + t - 1)  # recomputed here
    assert r["bound_holds"] and (r["attention_to_1"] <= bound + 1e-6).all()
    assert bound[:, -1].max() < bound[:, 1].min()  # the bound decays with t
    assert (r["attention_to_1"][:, 1:] > 0).all()  # and the map is a real softmax, not all zeros


def test_absolute_positions_can_single_out_token_1():
    """The contrast the propositions draw: with absolute/learnable PE the first-layer scores on repeats are not
    a function of t - j alone (token 1 has its own embedding), so nothing forbids a sink there."""
    r = propositions.distance_only("learnable", seq_len=64)
    assert r["max_diagonal_spread"] > 1e-3


def test_raw_weights_read_the_real_keys_whatever_the_bias():
    """The trainer's raw-weight summary (sigmoid / elu runs) drops an extra key column when there is one and
    nothing for the paper's V bias: a one-layer model with v* has exactly the weights of the model without it."""
    from sinkpaper.train.trainer import raw_weights
    one = dict(TINY, n_layers=1, attention="sigmoid")
    torch.manual_seed(0)
    plain = SinkModel(ModelConfig(**one))
    with_v = SinkModel(ModelConfig(**one, sink="v_bias"))
    with_v.load_state_dict(plain.state_dict() | {"blocks.0.attn.v_bias": torch.randn(4, 8)})
    a, b = raw_weights(plain, ids()), raw_weights(with_v, ids())
    assert a == pytest.approx(b)
    kv = SinkModel(ModelConfig(**one, sink="kv_bias"))
    kv.load_state_dict(with_v.state_dict() | {"blocks.0.attn.k_bias": torch.randn(4, 8)})
    # sigmoid is not normalized: the real keys' weights do not depend on the extra column, which is dropped
    assert raw_weights(kv, ids()) == pytest.approx(a, abs=1e-6)


@pytest.mark.parametrize("overrides", [{}, {"ffn": "relu"}, {"head_combine": "add"}], ids=["swiglu", "relu", "add"])
def test_fused_projections_give_the_plain_paths_loss_and_gradients(overrides, monkeypatch):
    """Q, K, V (and W1, W3) as one GEMM each: the same loss and the same gradient on every stored parameter as
    the separate projections, in fp64, and the parameter names (what a checkpoint stores) unchanged."""
    from sinkpaper.models import model as M
    x = ids()
    grads = {}
    for fused in (False, True):
        monkeypatch.setattr(M, "FUSED_PROJECTIONS", fused)
        model = build(**overrides).double()
        loss = model(x[:, :-1], targets=x[:, 1:]).loss
        loss.backward()
        grads[fused] = (loss.item(), {n: p.grad for n, p in model.named_parameters()})
    (loss0, g0), (loss1, g1) = grads[False], grads[True]
    assert loss1 == pytest.approx(loss0, rel=1e-12)
    assert g0.keys() == g1.keys()
    for n in g0:
        torch.testing.assert_close(g1[n], g0[n], rtol=1e-10, atol=1e-12, msg=n)
