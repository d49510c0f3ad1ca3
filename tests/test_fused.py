"""The fused Triton kernels against fp64 PyTorch references, on CPU under TRITON_INTERPRET=1 (set by conftest)
or compiled on a GPU: outputs, row statistics, column statistics and every gradient, for every operator x
mask x sink (through `sinkpaper.fused.testing.compare`, the comparison chapter 12 shows); T not a multiple of
the tile; several head dims; fp16/bf16 error against PyTorch's own; NaN-poisoned allocations; metamorphic
causality per mask; argument errors."""
import math
import zlib

import pytest
import torch

from sinkpaper import fused as K
from sinkpaper.fused import testing as KT
from sinkpaper.attention import FUSED_OPERATORS, SINK_DESIGNS

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
pytestmark = pytest.mark.skipif(DEVICE == "cpu" and not K.interpreting(),
                                reason="no GPU and TRITON_INTERPRET is not 1: the kernels cannot run here")

B, H, T, D = 2, 2, 70, 32   # T = 70 is not a multiple of any tile size (32 interpreted, 64/128 on GPU)
DOCS = torch.tensor([[0] * 30 + [1] * 20 + [2] * 20, [0] * 5 + [1] * 65])
MASKS = {"causal": {}, "full": {"causal": False}, "window": {"window": 20}, "prefix": {"prefix": 37},
         "document": {"doc_ids": DOCS}}
SINKS = {"none": {}, "sink_logit": {"sink_logit": (H,)}, "kv_bias": {"k_bias": (H, D), "v_bias": (H, D)},
         "k_bias_shared": {"k_bias": (1, D)}, "v_bias": {"v_bias": (H, D)}}



def _seed(*parts) -> int:
    """A seed per test case that is the same in every process (hash() of a str is salted per process, which made
    a case's inputs, and so its errors, change from run to run)."""
    return zlib.crc32(repr(parts).encode()) % 1000

def _inputs(seed, dtype=torch.float32, t=T, d=D, dv=None, sink=None):
    g = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(B, H, t, d, generator=g) for _ in range(2))
    v = torch.randn(B, H, t, dv or d, generator=g)
    extra = {name: torch.randn(*shape, generator=g) for name, shape in (sink or {}).items()}
    return [x.to(DEVICE, dtype) for x in (q, k, v)], {n: x.to(DEVICE) for n, x in extra.items()}


def _masks(mask):
    return {n: x.to(DEVICE) if isinstance(x, torch.Tensor) else x for n, x in MASKS[mask].items()}


_rel = KT.rel_err   # max |a - b| / max |b|


@pytest.mark.parametrize("sink", SINKS)
@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("op", K.OPS)
def test_matches_fp64_reference(op, mask, sink):
    (q, k, v), extra = _inputs(_seed(op, mask, sink), sink=SINKS[sink])
    grad_out = torch.randn(q.shape, generator=torch.Generator().manual_seed(_seed(op, mask, sink, "dO")))
    check = KT.compare(q, k, v, grad_out.to(DEVICE), op=op, **_masks(mask), **extra)
    e = check.errors

    assert e["out"].rel < 1e-5
    assert e["row statistic"].allclose(atol=1e-5, rtol=1e-5)
    grads = ["dq", "dk", "dv", *(f"d{n}" for n in extra)]
    assert [n for n in e if n.startswith("d")] == grads        # every input's gradient is compared
    for name in grads:
        assert e[name].rel < 1e-5 or e[name].ref_max < 1e-12, name

    # column statistics: values never enter the map, so v_bias is not an argument (alone it is the paper's
    # V bias, added after the attention: no column at all)
    cs, ref_cs = check.column_stats, check.reference_column_stats
    assert cs.alpha.dtype == torch.float32 and cs.alpha.shape == (B, H, T)
    assert e["alpha (column_stats)"].allclose(atol=1e-6, rtol=1e-5)
    assert (cs.sink is None) == (ref_cs.sink is None)
    if cs.sink is not None:
        assert cs.sink.shape == (B, H)
        assert e["sink column (column_stats)"].allclose(atol=1e-6, rtol=1e-5)
    assert check.row()["worst"] == max(x.rel for x in e.values())


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("mask", ["causal", "document"])
@pytest.mark.parametrize("op", K.OPS)
def test_v_bias_alone_is_added_after_the_attention(op, mask, shared):
    """The paper's V bias: out = A V + v* with A the plain attention (no extra key). Forward against the fp64
    formula (attention without bias, plus v*); dv* = the sum of dO over batch and tokens; dq, dk, dv are
    those of the attention without bias; the column statistics have no sink column."""
    (q, k, v), _ = _inputs(_seed(op, mask, shared, "v*"))
    vb = torch.randn(1 if shared else H, D, generator=torch.Generator().manual_seed(5)).to(DEVICE)
    masks = _masks(mask)
    leaves = [x.requires_grad_() for x in (q, k, v, vb)]
    out = K.attention(q, k, v, op=op, v_bias=vb, **masks)
    grad_out = torch.randn_like(out)
    dq, dk, dv, dvb = torch.autograd.grad(out, leaves, grad_out)

    rq, rk, rv = (x.detach().double().requires_grad_() for x in (q, k, v))
    plain = K.reference_attention(rq, rk, rv, op=op, **masks)   # no bias at all
    want = plain + vb.detach().double()[None, :, None, :]        # Softmax(QK^T/sqrt(d) + M) V + v*
    assert _rel(out, want) < 1e-5
    assert not torch.allclose(out.double(), plain, atol=1e-3)    # v* does move the output
    rdq, rdk, rdv = torch.autograd.grad(plain, [rq, rk, rv], grad_out.double())
    for name, g, rg in (("q", dq, rdq), ("k", dk, rdk), ("v", dv, rdv)):
        assert _rel(g, rg) < 1e-5, name
    want_dvb = grad_out.double().sum(dim=(0, 2))                 # [H, D]: every row of every sample adds dO
    want_dvb = want_dvb.sum(0, keepdim=True) if shared else want_dvb
    assert dvb.shape == vb.shape and _rel(dvb, want_dvb) < 1e-5
    cs = K.column_stats(q.detach(), k.detach(), op=op, **masks)
    assert cs.sink is None and cs.alpha.shape == (B, H, T)


@pytest.mark.parametrize("op", ["softmax", "sigmoid", "softpick"])
@pytest.mark.parametrize("d,dv,t", [(32, 32, 33), (64, 64, 45), (96, 96, 45), (128, 128, 17), (64, 96, 40)])
def test_head_dims(op, d, dv, t):
    (q, k, v), _ = _inputs(d + t, t=t, d=d, dv=dv)
    leaves = [x.requires_grad_() for x in (q, k, v)]
    out = K.attention(q, k, v, op=op)
    grads = torch.autograd.grad(out.sum(), leaves)
    ref_leaves = [x.detach().double().requires_grad_() for x in leaves]
    ref = K.reference_attention(*ref_leaves, op=op)
    ref_grads = torch.autograd.grad(ref.sum(), ref_leaves)
    assert out.shape == (B, H, t, dv)
    assert _rel(out, ref) < 1e-5
    for g, rg in zip(grads, ref_grads):
        assert _rel(g, rg) < 1e-5


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("op", K.OPS)
def test_low_precision_error_within_2x_pytorch(op, dtype):
    """Error against fp64 no worse than 2x the error of the same computation done by PyTorch in `dtype`."""
    (q, k, v), extra = _inputs(7, dtype=dtype, sink=SINKS["kv_bias"])
    extra = {n: x.to(dtype) for n, x in extra.items()}
    exact = K.reference_attention(q.double(), k.double(), v.double(), op=op,
                                  **{n: x.double() for n, x in extra.items()})
    ours = K.attention(q, k, v, op=op, **extra)
    theirs = K.reference_attention(q, k, v, op=op, **extra)
    assert ours.dtype == dtype
    err_ours = float((ours.double() - exact).abs().max())
    err_torch = float((theirs.double() - exact).abs().max())
    # The interpreter's fp32 -> bf16/fp16 cast truncates instead of rounding (kernels.md): one more ulp.
    slack = torch.finfo(dtype).eps * float(exact.abs().max()) if K.interpreting() else 0.0
    assert err_ours <= 2 * err_torch + slack, (err_ours, err_torch, slack)


def test_the_sink_logit_gradient_in_bf16_sums_in_fp32_and_the_default_path_is_deterministic():
    """The sink logit's gradient sums a term over every query of every batch (here 2 x 256): in bf16 the fused
    path keeps it within 1 % of fp64 on the same bf16 inputs and upstream gradient, as the reference does (its core
    in fp32); two calls give bitwise-equal gradients (the default path is deterministic: no atomics)."""
    g = torch.Generator().manual_seed(3)
    B, H, T, D = 2, 2, 256, 16
    q, k, v = (torch.randn(B, H, T, D, generator=g).to(torch.bfloat16) for _ in range(3))
    sink = torch.randn(H, generator=g)
    up = torch.sin(torch.arange(B * H * T * D).float().view(B, H, T, D) / 7).to(torch.bfloat16)

    def grads(dtype, impl):
        leaves = [x.to(dtype).requires_grad_() for x in (q, k, v)] + [sink.clone().requires_grad_()]
        out = K.attention(*leaves[:3], sink_logit=leaves[3], impl=impl)
        out.backward(up.to(dtype))
        return [x.grad for x in leaves]
    ours, again = grads(torch.bfloat16, "triton"), grads(torch.bfloat16, "triton")
    assert all(torch.equal(a, b) for a, b in zip(ours, again))
    exact = grads(torch.float64, "reference")[3]
    for got in (ours[3], grads(torch.bfloat16, "reference")[3]):
        err = float(((got.double() - exact).abs() / exact.abs()).max())
        assert err < 1e-2, err


@pytest.mark.parametrize("op,mask,sink", [(op, mask, "none") for op in K.OPS for mask in ("causal", "full", "window",
                                                                                      "document")]
                         + [(op, "causal", sink) for op in K.OPS for sink in ("kv_bias", "v_bias")])
def test_the_backward_with_atomic_dq_matches_fp64_reference(op, mask, sink):
    """deterministic=False: the key-block programs add dQ with atomics (no second pass over S and dP); every
    gradient still matches fp64 (the sinks under the causal mask)."""
    (q, k, v), extra = _inputs(_seed(op, mask, sink, "atomic"), sink=SINKS[sink])
    grad_out = torch.randn(q.shape, generator=torch.Generator().manual_seed(_seed(op, mask, "atomic dO")))
    e = KT.compare(q, k, v, grad_out.to(DEVICE), op=op, deterministic=False, **_masks(mask), **extra).errors
    for name in ["dq", "dk", "dv", *(f"d{n}" for n in extra)]:
        assert e[name].rel < 1e-5 or e[name].ref_max < 1e-12, name


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("v_after", [False, True])
def test_the_delta_pre_pass_reads_o_and_do_once_and_sums_in_fp32(dtype, v_after):
    """delta_i = dO_i . (A V)_i, the backward's one pass over O and dO in their own dtype, against the sum
    written out in fp64 (the V bias added after the attention taken off first)."""
    from sinkpaper.fused import triton_kernels as tk
    g = torch.Generator().manual_seed(5)
    o, do = (torch.randn(B, H, T, 40, generator=g).to(DEVICE, dtype) for _ in range(2))
    v0 = torch.randn(H, 40, generator=g).to(DEVICE)
    delta = torch.full((B, H, T), float("nan"), device=DEVICE)
    tk.bwd_delta[(math.ceil(T / 64), B * H)](o, do, v0 if v_after else delta, delta, H, T, DV=40, BLOCK_DV=64,
                                            BLOCK_M=64, SUB_V0=v_after)
    attn = o.double() - (v0.double()[None, :, None, :] if v_after else 0)
    exact = (attn * do.double()).sum(-1)
    assert float((delta.double() - exact).abs().max()) <= 1e-5 * float(exact.abs().max())


@pytest.mark.parametrize("deterministic", [True, False])
@pytest.mark.parametrize("op,mask,sink", [("softmax", "causal", "none"), ("softmax", "document", "sink_logit"),
                                          ("sigmoid", "window", "none"), ("softpick", "causal", "kv_bias"),
                                          ("elu", "full", "v_bias")])
def test_views_of_the_projections_layout_are_read_in_place(op, mask, sink, deterministic):
    """q, k, v as the model makes them (transposed views of contiguous [B, T, H, D] tensors) are read where they
    lie: the output comes back in that layout, and every gradient matches fp64, as for contiguous inputs."""
    (q, k, v), extra = _inputs(_seed(op, mask, sink, "bthd"), sink=SINKS[sink])
    q, k, v = (x.transpose(1, 2).contiguous().transpose(1, 2) for x in (q, k, v))
    assert not q.is_contiguous()
    out = K.attention(q, k, v, op=op, impl="triton", **_masks(mask), **extra)
    assert out.stride() == v.stride()
    grad_out = torch.randn(q.shape, generator=torch.Generator().manual_seed(_seed(op, mask, "bthd dO")))
    e = KT.compare(q, k, v, grad_out.to(DEVICE), op=op, deterministic=deterministic, **_masks(mask), **extra).errors
    assert e["out"].rel < 1e-5 and e["alpha (column_stats)"].allclose(atol=1e-6, rtol=1e-5)
    for name in ["dq", "dk", "dv", *(f"d{n}" for n in extra)]:
        assert e[name].rel < 1e-5 or e[name].ref_max < 1e-12, name


def test_nan_poisoned_allocations(monkeypatch):
    """Every output element is written: allocations start as NaN and nothing NaN comes back."""
    empty, empty_like = torch.empty, torch.empty_like

    def poison(x):
        return x.fill_(math.nan) if x.is_floating_point() else x

    monkeypatch.setattr(torch, "empty", lambda *a, **kw: poison(empty(*a, **kw)))
    monkeypatch.setattr(torch, "empty_like", lambda *a, **kw: poison(empty_like(*a, **kw)))
    for op in K.OPS:
        for mask in ("causal", "window", "document"):
            (q, k, v), extra = _inputs(3, sink=SINKS["kv_bias"])
            leaves = [x.requires_grad_() for x in (q, k, v, *extra.values())]
            out, stat = K.attention(q, k, v, op=op, return_lse=True, **_masks(mask), **extra)
            grads = torch.autograd.grad(out.sum(), leaves)
            cs = K.column_stats(q.detach(), k.detach(), op=op, **_masks(mask), k_bias=extra["k_bias"].detach())
            for x in (out, stat, *grads, cs.alpha, cs.sink):
                assert torch.isfinite(x).all(), (op, mask)


def _future_perturbation(mask, t0):
    """(query rows that must not change, key rows that may change) when keys outside their view change."""
    if mask == "causal":
        return slice(0, t0), slice(t0, T)
    if mask == "window":        # queries >= t0 + 20 cannot see keys < t0
        return slice(t0 + 20, T), slice(0, t0)
    if mask == "prefix":        # keys past both the prefix and the query
        return slice(0, 45), slice(45, T)
    if mask == "document":      # document 0 of sample 0 (positions 0..29) never sees 30..69
        return slice(0, 30), slice(30, T)
    raise AssertionError(mask)


@pytest.mark.parametrize("op", K.OPS)
@pytest.mark.parametrize("mask", ["causal", "window", "prefix", "document"])
def test_metamorphic_causality(mask, op):
    """Changing the keys and values a query cannot see leaves its output and its alpha untouched."""
    (q, k, v), _ = _inputs(11)
    rows, keys = _future_perturbation(mask, 25)
    k2, v2 = k.clone(), v.clone()
    k2[:, :, keys] += 3 * torch.randn_like(k2[:, :, keys])
    v2[:, :, keys] += 3 * torch.randn_like(v2[:, :, keys])
    masks = _masks(mask)
    out, out2 = K.attention(q, k, v, op=op, **masks), K.attention(q, k2, v2, op=op, **masks)
    if mask == "document":   # only sample 0 has a document boundary at 30
        out, out2 = out[:1], out2[:1]
    assert torch.equal(out[:, :, rows], out2[:, :, rows])
    assert not torch.allclose(out, out2)  # the perturbation did reach the queries that see it


def test_column_stats_cross_check_with_value_gradient():
    """d(sum of outputs)/dV has every column equal to the column sums of P (kernels.md): alpha * count."""
    (q, k, v), _ = _inputs(5)
    v.requires_grad_()
    (gv,) = torch.autograd.grad(K.attention(q, k, v).sum(), [v])
    count = torch.arange(T, 0, -1, device=DEVICE, dtype=torch.float32)   # causal: T - j queries see key j
    alpha = K.column_stats(q, k).alpha
    assert torch.allclose(gv[..., 0], alpha * count, atol=1e-5, rtol=1e-5)


def test_backends_agree_for_auto_and_reference():
    (q, k, v), _ = _inputs(1)
    assert torch.allclose(K.attention(q, k, v), K.attention(q, k, v, impl="reference"), atol=1e-6)


@pytest.mark.parametrize("kwargs,match", [
    ({"deterministic": "yes"}, "deterministic must be True or False"),
    ({"op": "softmax_p"}, "valid: softmax, sigmoid, elu, softpick"),
    ({"window": 4, "prefix": 3}, "window and prefix"),
    ({"window": 0}, "window must be"),
    ({"causal": False, "window": 4}, "causal=False conflicts"),
    ({"sink_logit": torch.zeros(H), "k_bias": torch.zeros(H, D)}, "either sink_logit"),
    ({"sink_logit": torch.zeros(H + 1)}, r"sink_logit must be a tensor \[heads\]"),
    ({"k_bias": torch.zeros(H, D + 1)}, "k_bias must be a tensor"),
    ({"v_bias": torch.zeros(3, D)}, "v_bias must be a tensor"),
    ({"doc_ids": torch.zeros(B, T - 1, dtype=torch.long)}, "doc_ids must be a tensor"),
    ({"doc_ids": torch.zeros(B, T)}, "integer document ids"),
    ({"sigmoid_bias": 1.0}, "only applies to op='sigmoid'"),
    ({"scale": -1.0}, "scale must be"),
    ({"impl": "cuda"}, "impl="),
])
def test_bad_options(kwargs, match):
    (q, k, v), _ = _inputs(0)
    kwargs = {n: x.to(DEVICE) if isinstance(x, torch.Tensor) else x for n, x in kwargs.items()}
    with pytest.raises(ValueError, match=match):
        K.attention(q, k, v, **kwargs)


def test_bad_tensors():
    (q, k, v), _ = _inputs(0)
    with pytest.raises(ValueError, match=r"q must be \[batch, heads, T, head_dim\]"):
        K.attention(q[0], k, v)
    with pytest.raises(ValueError, match="dtype torch.float64"):
        K.attention(q.double(), k.double(), v.double())
    with pytest.raises(ValueError, match="v has dtype"):
        K.attention(q, k, v.half())
    with pytest.raises(ValueError, match="k has head_dim"):
        K.attention(q, k[..., :16], v)
    with pytest.raises(ValueError, match=r"k has \[batch, heads, T\]"):
        K.attention(q, k[:, :, :5], v)
    with pytest.raises(ValueError, match="head_dim 320"):
        K.attention(*(torch.zeros(1, 1, 4, 320, device=DEVICE) for _ in range(3)))
    with pytest.raises(ValueError, match="is on meta"):
        K.attention(q, k.to("meta"), v)
    with pytest.raises(ValueError, match="op="):
        K.column_stats(q, k, op="kernel")


# ------------------------------------------------------------------------------------------------ integration
# every fused operator and every sink design the fused path takes (from the operator table), then settings
MODEL_VARIANTS = {name: {"attention": name} for name in FUSED_OPERATORS}
MODEL_VARIANTS |= {name: {"sink": name} for name, d in SINK_DESIGNS.items() if d.fused and name != "none"}
MODEL_VARIANTS |= {
    "sigmoid_bias": {"attention": "sigmoid", "sigmoid_bias": -1.0},
    "k_bias_shared": {"sink": "k_bias", "bias_shared": True}, "fixed_v_uniform": {"sink": "k_bias_fixed_v", "fixed_v": "uniform"},
    "k_bias_dims=2": {"sink": "k_bias", "k_bias_dims": 2},
    "window": {"mask": "window", "window": 3}, "prefix": {"mask": "prefix", "prefix_len": 4},
    "document": {"mask": "document"}, "nope": {"pos_encoding": "nope"}, "learnable": {"pos_encoding": "learnable"},
}


@pytest.mark.parametrize("variant", MODEL_VARIANTS)
def test_model_same_loss_and_gradients_on_both_backends(variant):
    from sinkpaper.models import ModelConfig, SinkModel
    cfg = dict(vocab_size=61, d_model=32, n_layers=2, n_heads=2, d_ff=48, max_seq_len=40, **MODEL_VARIANTS[variant])
    torch.manual_seed(0)
    eager = SinkModel(ModelConfig(**cfg)).to(DEVICE)
    fused = SinkModel(ModelConfig(**cfg, backend="triton")).to(DEVICE)
    fused.load_state_dict(eager.state_dict())
    assert fused.fused_supported()
    ids = torch.randint(0, 61, (2, 37), device=DEVICE)
    docs = DOCS[:, :37].to(DEVICE) if variant == "document" else None
    losses, grads = [], []
    for model in (eager, fused):
        loss = model(ids[:, :-1], targets=ids[:, 1:], doc_ids=None if docs is None else docs[:, :-1]).loss
        losses.append(loss)
        grads.append(torch.autograd.grad(loss, [p for p in model.parameters() if p.requires_grad]))
    assert torch.allclose(losses[0], losses[1], atol=1e-5, rtol=1e-5)
    for ge, gf in zip(*grads):  # fp32 against fp32: relative to each gradient's scale
        assert _rel(gf, ge) < 1e-4


def test_model_trains_with_the_triton_backend():
    from sinkpaper.models import ModelConfig, SinkModel
    torch.manual_seed(0)
    model = SinkModel(ModelConfig(vocab_size=16, d_model=32, n_layers=1, n_heads=2, d_ff=48, max_seq_len=40,
                                  sink="kv_bias", backend="triton")).to(DEVICE)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    ids = torch.arange(33, device=DEVICE).remainder(8).repeat(4, 1)   # a periodic sequence: learnable
    losses = []
    for _ in range(15):
        loss = model(ids[:, :-1], targets=ids[:, 1:]).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0], losses


def test_a_compiled_model_with_the_fused_kernels_trains_like_the_eager_reference():
    """The gpu profile's path (torch.compile around the model, the kernels inside its graph as opaque operators)
    on the CPU, kernels interpreted: the same losses over the first AdamW steps as the uncompiled reference
    backend, to 1e-4 relative (fp32 both; the kernels' online softmax sums in another order)."""
    from sinkpaper.models import ModelConfig, SinkModel
    from sinkpaper.train import accel
    ok, why = accel.inductor_cpu_support()
    if not ok:
        pytest.skip(why)
    cfg = dict(vocab_size=32, d_model=32, n_layers=2, n_heads=2, d_ff=48, max_seq_len=40, sink="kv_bias")
    torch.manual_seed(0)
    reference = SinkModel(ModelConfig(**cfg))
    fused = SinkModel(ModelConfig(**cfg, backend="triton"))
    fused.load_state_dict(reference.state_dict())
    compiled = torch.compile(fused)
    ids = torch.randint(0, 32, (4, 33))
    losses = {}
    for name, model, params in (("reference", reference, reference), ("compiled", compiled, fused)):
        opt = torch.optim.AdamW(params.parameters(), lr=1e-2)
        losses[name] = []
        for _ in range(3):
            loss = model(ids[:, :-1], targets=ids[:, 1:]).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses[name].append(loss.item())
    assert losses["compiled"] == pytest.approx(losses["reference"], rel=1e-4), losses
    assert losses["reference"][-1] < losses["reference"][0]     # the steps moved the weights: not one loss thrice


@pytest.mark.parametrize("variant", ["softmax", "sigmoid", "softpick", "kv_bias", "v_bias", "zero_key_v_bias", "k_bias_shared",
                                     "window", "prefix", "document"])
def test_sink_metric_from_column_stats_matches_the_maps(variant):
    """metrics read alpha_k from column_stats (no T x T map) and from the maps: the same Sink_k."""
    from sinkpaper import metrics
    from sinkpaper.models import ModelConfig, SinkModel
    torch.manual_seed(1)
    model = SinkModel(ModelConfig(vocab_size=61, d_model=32, n_layers=2, n_heads=2, d_ff=48, max_seq_len=40,
                                  **MODEL_VARIANTS[variant])).to(DEVICE)
    ids = torch.randint(0, 61, (2, 36), device=DEVICE)
    docs = DOCS[:, :36].to(DEVICE) if variant == "document" else None
    maps = metrics.TraceStats.from_trace(model.trace(ids, doc_ids=docs))
    cols = metrics.TraceStats.from_trace(model.trace(ids, doc_ids=docs, method="stats"))
    assert cols.proxy == maps.proxy
    assert torch.allclose(cols.alphas, maps.alphas, atol=1e-5)  # fp32 against fp32
    assert (cols.sink_alphas is None) == (maps.sink_alphas is None)
    if cols.sink_alphas is not None:
        assert torch.allclose(cols.sink_alphas, maps.sink_alphas, atol=1e-5)
    assert torch.allclose(cols.hidden_norms, maps.hidden_norms)
    for eps in (0.05, 0.3):
        assert metrics.sink_rates(cols.alphas, eps) == metrics.sink_rates(maps.alphas, eps)


def test_column_stats_route_refuses_what_it_does_not_model():
    from sinkpaper.models import ModelConfig, SinkModel
    model = SinkModel(ModelConfig(vocab_size=61, d_model=32, n_layers=1, n_heads=2, d_ff=48, max_seq_len=40,
                                  pos_encoding="alibi"))
    with pytest.raises(ValueError, match="needs method='maps'"):
        model.trace(torch.zeros(1, 12, dtype=torch.long), method="stats")
    with pytest.raises(ValueError, match="valid: maps, stats"):
        model.trace(torch.zeros(1, 12, dtype=torch.long), method="flash")


def _compile_env():
    import os
    return {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # @triton.jit must build JITFunctions


def test_every_kernel_variant_compiles_for_an_h100_without_a_gpu():
    """The interpreter runs the kernels' Python; only the GPU compiler sees what it refuses. triton.compile
    lowers each variant the api launches on a GPU to an sm_90 cubin here, with the ptxas in the triton wheel."""
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "sinkpaper.fused.gpu_compile"], capture_output=True, text=True,
                       env=_compile_env(), timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert " of " in r.stdout and "compile for sm_90" in r.stdout
    done, total = r.stdout.split(" kernel variants")[0].split(" of ")
    assert int(done) == int(total) >= 60


def test_the_compile_check_reports_what_only_the_gpu_compiler_refuses(tmp_path):
    """A kernel reading a plain Python global runs under the interpreter but does not compile for a GPU: the
    check names it, with Triton's reason; the same kernel with the global as a constexpr compiles."""
    import subprocess
    import sys
    for name, value in (("bad_kernel", "2.0"), ("good_kernel", "tl.constexpr(2.0)")):
        (tmp_path / f"{name}.py").write_text(
            f"import triton\nimport triton.language as tl\nSCALE = {value}\n\n\n@triton.jit\n"
            "def double(X, T, D: tl.constexpr):\n    i = tl.arange(0, D)\n"   # T: an int32 size, as in the kernels
            "    tl.store(X + i, tl.load(X + i, mask=i < T) * SCALE, mask=i < T)\n")
    code = ("import sys, importlib; sys.path.insert(0, sys.argv[1])\n"
            "from sinkpaper.fused.gpu_compile import compile_kernel, _reason\n"
            "for name in ('bad_kernel', 'good_kernel'):\n"
            "    try:\n        compile_kernel(importlib.import_module(name).double, 'fp32', {'D': 16}, {'num_warps': 1})\n"
            "    except Exception as e:\n        print(name, 'refused:', _reason(e))\n"
            "    else:\n        print(name, 'compiled')\n")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                       env=_compile_env(), timeout=300)
    lines = r.stdout.splitlines()
    assert len(lines) == 2, r.stdout + r.stderr[-2000:]
    assert lines[0].startswith("bad_kernel refused: CompilationError: NameError") and "SCALE" in lines[0]
    assert lines[1] == "good_kernel compiled"


def test_the_old_package_name_still_works_for_one_release_and_says_the_new_one():
    import importlib
    import subprocess
    import sys
    import warnings

    sys.modules.pop("sinkpaper.kernels", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = importlib.import_module("sinkpaper.kernels")
    assert any("sinkpaper.kernels is now sinkpaper.fused" in str(w.message) for w in caught)
    from sinkpaper.fused import testing
    assert old.attention is K.attention and importlib.import_module("sinkpaper.kernels.testing") is testing
    # `python -m sinkpaper.kernels.gpu_compile` (the one old path run as a program) finds a module that runs the
    # compile check's main, with no warning that runpy met an aliased module
    r = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c",
                        "import runpy; _, spec, code = runpy._get_module_details('sinkpaper.kernels.gpu_compile'); "
                        "print(spec.origin.endswith('kernels/gpu_compile.py'), 'main' in code.co_names)"],
                       capture_output=True, text=True, timeout=120)
    assert r.stdout.split() == ["True", "True"], r.stderr[-2000:]
