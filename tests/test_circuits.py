"""The quantities that form before the sink (sinkpaper.circuits), against hand-built attention patterns and a
hand-computed loss: a head that copies exactly scores 1, a uniform causal head the plain formula (about 1/T)."""
from __future__ import annotations

import math

import torch

from sinkpaper.circuits import (in_context_gain, induction_pairs, induction_score, measure_circuits,
                                previous_token_score, repeated_stream)


def _probe(n=3, half=8, vocab=(10, 500), seed=0):
    stream, h = repeated_stream(n, 2 * half, vocab, seed)
    return torch.from_numpy(stream.astype("int64")).reshape(n, 2 * half), h


def _rows(T, fill):
    """[T, T] attention with row p from fill(p) (a dict key -> weight), checked to be causal and to sum to 1."""
    a = torch.zeros(T, T)
    for p in range(T):
        for k, w in fill(p).items():
            a[p, k] = w
    assert torch.allclose(a.sum(-1), torch.ones(T)) and not a.triu(1).any()
    return a


def test_the_probe_repeats_each_random_row_once():
    ids, half = _probe()
    assert ids.shape == (3, 16) and half == 8
    assert torch.equal(ids[:, :8], ids[:, 8:]) and int(ids.min()) >= 10 and int(ids.max()) < 500
    assert induction_pairs(ids, half)[:, 8:].all() and not induction_pairs(ids, half)[:, :8].any()
    odd, h = repeated_stream(2, 17, (10, 500))
    assert h == 8 and len(odd) == 34


def test_a_head_that_copies_scores_1_and_a_uniform_head_the_mean_of_1_over_p():
    ids, half = _probe()
    T = ids.shape[1]
    copy = _rows(T, lambda p: {p - half + 1: 1.0} if p >= half else {p: 1.0})
    uniform = _rows(T, lambda p: {k: 1 / (p + 1) for k in range(p + 1)})
    attn = torch.stack([copy, uniform])[None].expand(3, 2, T, T)
    got = induction_score(attn, ids, half)
    want_uniform = sum(1 / (p + 1) for p in range(half, T)) / (T - half)
    assert math.isclose(float(got[0]), 1.0) and math.isclose(float(got[1]), want_uniform, rel_tol=1e-6)
    assert 0.5 / T < want_uniform < 2 / T                              # "about 1/T"
    prev = _rows(T, lambda p: {p - 1: 1.0} if p else {0: 1.0})
    got = previous_token_score(torch.stack([prev, uniform])[None])
    assert math.isclose(float(got[0]), 1.0)
    assert math.isclose(float(got[1]), sum(1 / (p + 1) for p in range(1, T)) / (T - 1), rel_tol=1e-6)


def test_a_pair_whose_first_occurrence_was_replaced_is_left_out():
    ids, half = _probe(n=1)
    ids[0, 0] = 3                                   # a fixed first token, as the text profile packs it
    ok = induction_pairs(ids, half)
    assert not ok[0, half] and ok[0, half + 1:].all()
    T = ids.shape[1]
    # a head that attends to key 1 (0-based) from query `half` only: its one "hit" is at the pair left out
    a = _rows(T, lambda p: {1: 1.0} if p == half else {p: 1.0})
    assert float(induction_score(a[None, None], ids, half)[0]) == 0.0


def test_the_in_context_gain_is_the_first_copys_loss_minus_the_seconds():
    ids, half = _probe(n=2, half=6, vocab=(0, 20))
    V, T = 20, ids.shape[1]
    # logits that know each second-copy token exactly and are uniform elsewhere: the gain is log V - ~0
    logits = torch.zeros(2, T, V)
    for b in range(2):
        for p in range(half, T - 1):
            logits[b, p, ids[b, p + 1]] = 30.0
    gain = in_context_gain(logits, ids, half)
    sure = -torch.log_softmax(torch.tensor([30.0] + [0.0] * (V - 1)), 0)[0]
    assert math.isclose(gain, math.log(V) - float(sure), rel_tol=1e-5)
    assert math.isclose(in_context_gain(torch.zeros(2, T, V), ids, half), 0.0, abs_tol=1e-6)   # no use of context


def test_measure_circuits_reads_every_layer_and_head_of_a_model():
    from sinkpaper.models import ModelConfig, SinkModel
    torch.manual_seed(0)
    net = SinkModel(ModelConfig(vocab_size=64, d_model=32, n_layers=2, n_heads=4, d_ff=64, max_seq_len=32)).eval()
    ids, half = _probe(n=5, half=8, vocab=(0, 64))
    out = measure_circuits(net, ids, half, batch_size=2)
    assert len(out["induction_by_head"]) == 2 and len(out["induction_by_head"][0]) == 4
    assert out["induction_max"] == max(max(r) for r in out["induction_by_head"])
    assert 0.0 <= out["previous_token_max"] <= 1.0 and math.isfinite(out["in_context_gain"])
    # the scores are means of attention weights read from the model's own maps
    tr = net.trace(ids, method="maps")
    want = induction_score(tr.attentions[1].float(), ids, half)
    assert torch.allclose(torch.tensor(out["induction_by_head"][1]), want, atol=1e-5)


def test_a_run_with_the_circuit_evaluations_records_them_at_log_spaced_early_steps(tmp_path):
    from sinkpaper.train import config as C
    from sinkpaper.train.trainer import read_log, train
    cfg = C.load("configs/miniature.yaml", "cpu", {"optim.steps": 40, "eval.every": 20, "eval.n_samples": 8,
                                                    "eval.circuits": True, "eval.early_ratio": 1.5})
    assert sorted(C.early_eval_steps(cfg)) == [2, 3, 4, 7, 10, 15, 23]   # 2 x 1.5^k, rounded, below 80 % of 40
    plain = C.load("configs/miniature.yaml", "cpu", {"optim.steps": 40})
    assert "circuits" not in str(plain.identity()) and C.early_eval_steps(plain) == frozenset()
    train(cfg, tmp_path / "run", progress=False)
    evals = [r for r in read_log(tmp_path / "run" / "log.jsonl") if "sink_k" in r]
    assert [r["step"] for r in evals] == [2, 3, 4, 7, 10, 15, 20, 23, 40]
    for r in evals:
        assert 0.0 <= r["induction_max"] <= 1.0 and 0.0 <= r["previous_token_max"] <= 1.0
        assert len(r["induction_by_head"]) == cfg.model["n_layers"] and math.isfinite(r["in_context_gain"])


def test_a_bad_early_ratio_fails_before_any_compute():
    import pytest

    from sinkpaper.train import config as C
    with pytest.raises(ValueError, match="eval.early_ratio must be > 1"):
        C.load("configs/miniature.yaml", "cpu", {"eval.early_ratio": 0.9})
