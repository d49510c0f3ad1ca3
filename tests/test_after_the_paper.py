"""The designs that came after the paper, each in its source's exact form, checked in fp64 against the formula
written out here: gated attention (Qiu et al. 2025), a learned sink logit per head (gpt-oss), softmax plus one
(Miller 2023). Combinations a design cannot take are refused when the config is built."""
from __future__ import annotations

import math

import pytest
import torch

from sinkpaper.models import ModelConfig, SinkModel

SMALL = dict(vocab_size=40, d_model=24, n_layers=1, n_heads=3, d_ff=32, max_seq_len=16, pos_encoding="nope")


def _attention_io(cfg: ModelConfig, seed: int = 0):
    """The one layer's attention module, its input x and its output (fp64), from a forward pass of the model."""
    torch.manual_seed(seed)
    model = SinkModel(cfg).double()
    attn = model.blocks[0].attn
    with torch.no_grad():
        for p in attn.parameters():        # weights large enough that every term matters
            p.normal_(0, 0.5)
    seen = {}
    attn.register_forward_pre_hook(lambda m, args: seen.__setitem__("x", args[0]))
    attn.register_forward_hook(lambda m, args, out: seen.__setitem__("out", out))
    ids = torch.randint(0, cfg.vocab_size, (2, 9))
    with torch.no_grad():
        model(ids)
    return attn, seen["x"], seen["out"]


def _by_formula(attn, x, sink_logit=None, gate=None):
    """softmax over the causal keys, with an optional extra logit b_h in the denominator and no value, then an
    optional sigmoid gate on each head's output, then the output projection: the sources' equations, looped."""
    B, T, d = x.shape
    H = attn.cfg.n_heads
    Dh = d // H
    q = (x @ attn.q_proj.weight.T).view(B, T, H, Dh)
    k = (x @ attn.k_proj.weight.T).view(B, T, H, Dh)
    v = (x @ attn.v_proj.weight.T).view(B, T, H, Dh)
    y = torch.zeros(B, T, H, Dh, dtype=x.dtype)
    for b in range(B):
        for h in range(H):
            for i in range(T):
                s = torch.stack([q[b, i, h] @ k[b, j, h] / math.sqrt(Dh) for j in range(i + 1)])
                z = torch.exp(s).sum() + (math.exp(float(sink_logit[h])) if sink_logit is not None else 0.0)
                y[b, i, h] = sum(torch.exp(s[j]) / z * v[b, j, h] for j in range(i + 1))
    if gate is not None:
        g = torch.sigmoid(x @ attn.gate_proj.weight.T)                 # [B, T, H*Dh] or [B, T, H]
        y = y * (g.view(B, T, H, Dh) if gate == "elementwise" else g.view(B, T, H, 1))
    return y.reshape(B, T, H * Dh) @ attn.o_proj.weight.T


def test_softmax_plus_one_is_exp_over_one_plus_the_row_sum():
    attn, x, out = _attention_io(ModelConfig(**SMALL, sink="softmax_plus_one"))
    torch.testing.assert_close(out, _by_formula(attn, x, sink_logit=torch.zeros(3)), rtol=1e-10, atol=1e-10)
    assert not any("sink" in n for n, _ in attn.named_parameters())     # nothing learned: the logit is 0


def test_a_learned_sink_logit_joins_the_denominator_with_no_value():
    attn, x, out = _attention_io(ModelConfig(**SMALL, sink="sink_logit"))
    assert attn.sink_logit.shape == (3,) and attn.sink_logit.requires_grad
    torch.testing.assert_close(out, _by_formula(attn, x, sink_logit=attn.sink_logit.detach()), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("gate", ["elementwise", "headwise"])
def test_gated_attention_multiplies_each_head_output_by_a_sigmoid_of_the_input(gate):
    attn, x, out = _attention_io(ModelConfig(**SMALL, gate=gate))
    assert attn.gate_proj.weight.shape == ((3 * 8, 24) if gate == "elementwise" else (3, 24))
    torch.testing.assert_close(out, _by_formula(attn, x, gate=gate), rtol=1e-10, atol=1e-10)


def _traced_gates(cfg: ModelConfig, seed: int = 0):
    """A fp64 model with large weights, the input x of its one attention layer and the gates its trace records."""
    torch.manual_seed(seed)
    model = SinkModel(cfg).double()
    attn = model.blocks[0].attn
    with torch.no_grad():
        for p in attn.parameters():
            p.normal_(0, 0.5)
    seen = {}
    attn.register_forward_pre_hook(lambda m, args: seen.__setitem__("x", args[0]))
    tr = model.trace(torch.randint(0, cfg.vocab_size, (2, 9)))
    return attn, seen["x"], tr


@pytest.mark.parametrize("sink", ["sink_logit", "softmax_plus_one"])
def test_a_sink_logit_is_recorded_as_the_gate_sigmoid_of_lse_minus_b(sink):
    """The trace's gate for a sink logit b_h (0 for softmax plus one) is sigmoid(LSE - b_h) of each query's
    scores, the scores written out here from the layer's input."""
    from sinkpaper.attention.operators import sink_logit_gate
    attn, x, tr = _traced_gates(ModelConfig(**SMALL, sink=sink))
    B, T, d = x.shape
    H, Dh = 3, d // 3
    q = (x @ attn.q_proj.weight.T).view(B, T, H, Dh).transpose(1, 2)
    k = (x @ attn.k_proj.weight.T).view(B, T, H, Dh).transpose(1, 2)
    b = attn.sink_logit.detach() if sink == "sink_logit" else torch.zeros(H, dtype=x.dtype)
    want = sink_logit_gate(q @ k.transpose(-1, -2) / math.sqrt(Dh), torch.ones(T, T, dtype=torch.bool).tril(), b)
    torch.testing.assert_close(tr.gates[0], want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("gate", ["elementwise", "headwise"])
def test_gated_attention_records_each_head_s_gate_per_query(gate):
    attn, x, tr = _traced_gates(ModelConfig(**SMALL, gate=gate))
    B, T, _ = x.shape
    g = torch.sigmoid(x @ attn.gate_proj.weight.T).view(B, T, 3, -1).mean(-1).transpose(1, 2)   # [B, H, T]
    torch.testing.assert_close(tr.gates[0], g, rtol=1e-10, atol=1e-10)


def test_only_gates_are_recorded_as_gates_and_their_quantiles_are_summarized():
    """A plain model and a KV bias (its extra key carries a value: not a gate) record none; the summary gives each
    head's 10th / 50th / 90th percentile over samples and queries."""
    from sinkpaper import metrics
    for cfg in (ModelConfig(**SMALL), ModelConfig(**SMALL, sink="kv_bias")):
        assert _traced_gates(cfg)[2].gates is None
    gates = torch.arange(1, 101, dtype=torch.float32).view(1, 1, 1, 100).expand(2, 1, 2, 100) / 100
    q = metrics.gate_quantiles(gates)
    assert q.shape == (1, 2, 3)
    torch.testing.assert_close(q[0, 0], torch.tensor([0.109, 0.505, 0.901]))   # numpy's linear interpolation


def test_the_sink_logit_column_is_measured_as_sink_star():
    """The share a head puts on the sink logit is the paper's Sink* column: it is in the trace, and the real
    tokens' weights plus it sum to one."""
    cfg = ModelConfig(**SMALL, sink="sink_logit")
    model = SinkModel(cfg).double()
    with torch.no_grad():
        model.blocks[0].attn.sink_logit.fill_(2.0)
    trace = model.trace(torch.randint(0, 40, (2, 9)))
    rows = trace.attentions[0].sum(-1) + trace.sink_attention[0]
    torch.testing.assert_close(rows, torch.ones_like(rows), rtol=1e-10, atol=1e-10)
    assert float(trace.sink_attention[0].min()) > 0


@pytest.mark.parametrize("kw", [dict(sink="sink_logit", attention="sigmoid"),
                                dict(sink="softmax_plus_one", attention="softmax", softmax_sum=2.0),
                                dict(sink="sink_logit", attention="softpick")])
def test_a_denominator_sink_without_rows_that_sum_to_one_is_refused(kw):
    with pytest.raises(ValueError, match=r"needs rows that sum to one.*valid combinations: sink in sink_logit, "
                                         r"softmax_plus_one with attention='softmax', softmax_sum=1"):
        ModelConfig(**{**SMALL, **kw})


def test_a_gate_needs_concatenated_heads():
    with pytest.raises(ValueError, match=r"gate='headwise' .* needs head_combine='concat' \(got 'add'\); valid"):
        ModelConfig(**SMALL, gate="headwise", head_combine="add")
    with pytest.raises(ValueError, match=r"gate='sideways' is not valid; choose one of: none, elementwise, headwise"):
        ModelConfig(**SMALL, gate="sideways")


def test_the_fused_path_takes_the_learned_sink_logit_and_its_gradient():
    """The Triton kernels (interpreter on the CPU) against the reference, forward and d(sink logit)."""
    pytest.importorskip("triton")
    import os

    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("the kernels run on the CPU under TRITON_INTERPRET=1 (tests/conftest.py sets it for kernel tests)")
    cfg = dict(SMALL, pos_encoding="rope", sink="sink_logit")
    torch.manual_seed(0)
    eager, fused = SinkModel(ModelConfig(**cfg)), SinkModel(ModelConfig(**cfg, backend="triton"))
    fused.load_state_dict(eager.state_dict())
    ids = torch.randint(0, 40, (2, 16))
    grads = []
    for m in (eager, fused):
        with torch.no_grad():
            m.blocks[0].attn.sink_logit.copy_(torch.tensor([0.5, -1.0, 2.0]))
        loss = m(ids, targets=ids).loss
        loss.backward()
        grads.append((float(loss), m.blocks[0].attn.sink_logit.grad.clone()))
    assert grads[0][0] == pytest.approx(grads[1][0], rel=1e-4)
    torch.testing.assert_close(grads[0][1], grads[1][1], rtol=1e-3, atol=1e-5)


def test_a_gated_run_stores_its_gates_and_its_route_at_every_evaluation(tmp_path):
    """The trainer keeps each evaluation's gate quantiles ([layer][head][10th, 50th, 90th percentile]) for a gated
    model, and the run's provenance names its training route."""
    from sinkpaper.train import build, read_log, train
    from tests.test_train import TINY
    cfg = build(TINY, "cpu", {"model.gate": "headwise", "optim.steps": 4, "eval.every": 2})
    result = train(cfg, tmp_path / "run", progress=False)
    L, H = cfg.model["n_layers"], cfg.model["n_heads"]
    evals = [r for r in read_log(tmp_path / "run" / "log.jsonl") if "sink_k" in r]
    assert len(evals) == 2
    for q in [result["gate_quantiles"]] + [r["gate_quantiles"] for r in evals]:
        assert len(q) == L and all(len(h) == H for h in q)
        assert all(0 < a <= b <= c < 1 for layer in q for a, b, c in layer)
    assert result["provenance"]["route"]["attention"] in ("reference", "SDPA")
    assert "gate_quantiles" not in train(build(TINY, "cpu", {"optim.steps": 2, "eval.every": 2}), tmp_path / "plain",
                                         progress=False)
