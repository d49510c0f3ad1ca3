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
    # the gain reads the trace's own logits (one forward pass): they are the plain forward's, with a sink token too
    # (to float rounding: the trace reads the maps through the reference operator, the forward takes SDPA)
    assert tr.logits is None                        # the head runs only where its logits are asked for
    torch.testing.assert_close(net.trace(ids, logits=True).logits, net(ids).logits, atol=1e-6, rtol=1e-6)
    assert abs(out["in_context_gain"] - in_context_gain(net(ids).logits, ids, half)) < 1e-5
    sunk = SinkModel(ModelConfig(vocab_size=64, d_model=32, n_layers=2, n_heads=4, d_ff=64, max_seq_len=40,
                                 sink="sink_token")).eval()
    got = sunk.trace(ids, logits=True).logits
    assert torch.equal(got, sunk(ids).logits) and got.shape[:2] == ids.shape


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


def _run(point, seed, curve, steps=300):
    return {"name": f"family/{point}", "config": {"run": {"seed": seed}, "optim": {"steps": steps},
                                                  "eval": {"every": 100},
                                                  "data": {"source": "corpus", "path": "data/corpus/tokens.u16.xz"}},
            "curve": curve}


def test_the_onsets_figure_reads_each_run_and_says_the_order_it_shows():
    """The chapter's rows are each run's onsets as the registry defines them (a never-formed one one evaluation past
    the end, flagged); the caption's order and its count of seeds with the sink after the induction heads come
    from those rows, and the LR caption says when the seeds' ranges overlap."""
    from sinkpaper.book.figures import onsets as O
    from sinkpaper.results.reading import point_of

    def ev(step, sink, ind, prev=0.5, gain=1.0, norm=2.0):
        return {"step": step, "sink_k": {"1": sink}, "induction_max": ind, "previous_token_max": prev,
                "in_context_gain": gain, "massive_activation_ratio_by_layer": [1.0, norm]}
    runs = [_run("base", 0, [ev(100, 0.0, 0.1), ev(200, 12.0, 0.4), ev(300, 30.0, 0.5)]),
            _run("base", 1, [ev(100, 0.0, 0.4), ev(200, 5.0, 0.5), ev(300, 20.0, 0.5)]),
            _run("other", 0, [ev(100, 0.0, 0.0), ev(200, 0.0, 0.0), ev(300, 0.0, 0.0)])]
    assert point_of(runs[0]) == "base"
    rows = O.onset_rows(runs, ["base"], {"base": "the base"})
    got = {(r["seed"], r["quantity"]): (r["step"], r["never"]) for r in rows}
    assert got[0, "sink"] == (200.0, False) and got[1, "sink"] == (300.0, False)
    assert got[0, "induction"] == (200.0, False) and got[1, "induction"] == (100.0, False)
    assert got[0, "massive activation"] == (400.0, True)                     # never: one evaluation past the end
    assert {r["run"] for r in rows} == {"the base · seed 0", "the base · seed 1"}   # "other" is not asked for
    text = O.onset_caption(rows, {"base": "the base"})
    assert ("The base, 2 seeds: previous token at 100, then in-context gain at 100, then induction at 150, then "
            "sink at 250.") in text
    assert "Never formed: massive activation." in text
    assert text.endswith("The sink came after the induction heads in 1 of the 2 seeds with both.")
    assert O.onset_caption([]).startswith("No stored run records these onsets yet")
    # a quantity that formed in no run of any point drawn is said once, not once per point
    both = O.onset_caption(O.onset_rows(runs, ["base", "other"]))
    assert "Formed in no run: massive activation." in both and both.count("massive activation") == 1
    assert "Other, 1 seed: previous token" in both and "Never formed: induction, sink." in both
    moves = O.onset_moves_caption(O.onset_rows(runs, ["base", "other"]), ["base", "other"], "learning rate")
    assert "base 200-300; other never." in moves and "Seed ranges apart between base / other" in moves
    spec = O.onset_chart(rows, "t").to_dict()
    assert len(spec["layer"]) == 3                                              # ends, formed, never formed
    window = O.paper_sink_window()
    assert (window["lo"], window["hi"], window["who"]) == (1000, 2000, "paper")   # the registry's opt_emergence
    from sinkpaper.book.figures import draws_the_paper
    assert draws_the_paper(O.onset_chart(rows, "t", paper=window).to_dict()) and not draws_the_paper(spec)
    assert O.threshold_rows(runs, "base")[0] == {"step": 100, "seed": 0, "quantity": "previous token",
                                                 "ratio": 0.5 / 0.3}
    # a sink that flickered and is gone at the end is drawn faint and named; a run that did not learn (its
    # held-out loss above the corpus's unigram loss) is named in its row and left out of the sentence
    flicker = _run("deep", 0, [ev(100, 12.0, 0.1), ev(200, 0.0, 0.1), ev(300, 0.0, 0.1)])
    stuck = _run("deep", 1, [{**ev(st, 0.0, 0.1), "val_loss": 7.5} for st in (100, 200, 300)])
    deep = O.onset_rows([flicker, stuck], ["deep"])
    sink = {r["seed"]: r for r in deep if r["quantity"] == "sink"}
    assert sink[0]["lasted"] is False and sink[0]["step"] == 100 and sink[0]["learned"]
    assert sink[1]["run"] == "deep · seed 1 (did not learn)" and not sink[1]["learned"]
    text = O.onset_caption(deep)
    assert "induction heads in" not in text                # no induction head formed: no order to tell
    assert "Deep, 1 seed (seed 1 did not learn, left out):" in text
    assert "Faded: sink (seed 0)." in text and "faded: below its threshold at the end" in text


def test_the_budget_caption_reads_each_runs_tokens_against_the_literatures_induction_onsets():
    """One shared budget reads as one sentence; several are named point by point; the ratio to the literature's
    earliest induction onset (20B tokens) is taken against the longest run and given as a scale (two figures)."""
    from sinkpaper.book.figures import onsets as O

    def run(point, seed, tokens, step):
        r = _run(point, seed, [])
        r["result"] = {"tokens_seen": tokens, "step": step}
        return r
    same = [run("a", 0, 10_240_000, 2500), run("a", 1, 10_240_000, 2500), run("b", 0, 10_240_000, 2500)]
    text = O.budget_caption(same, ["a", "b"])
    assert text.startswith("Every run here trains for 10.24M tokens (2,500 steps).")
    assert "at 23B (OLMo 1B) and 20B (OLMoE 1B-7B) tokens, about 2,000 times more" in text   # 20e9 / 10.24e6 = 1953
    mixed = same + [run("c", 0, 20_480_000, 5000)]
    text = O.budget_caption(mixed, ["a", "b", "c"], {"c": "the long one"})
    assert "10.24M tokens (2,500 steps): a, b; 20.48M tokens (5,000 steps): the long one" in text
    assert "about 980 times more" in text                                   # against the longest run: 976.6
    assert O.budget_caption(same, ["z"]) == "No stored run of these points yet."


def test_the_gates_figure_reads_each_heads_quantiles_at_the_last_evaluation_that_has_them():
    from sinkpaper.book.figures import gates as G
    q = lambda a, b: [[[a, b, 0.9], [0.1, 0.2, 0.3]]]   # noqa: E731 -- one layer, two heads
    runs = [{"name": "f/gated", "config": {"run": {"seed": 0}},
             "curve": [{"step": 100, "gate_quantiles": q(0.5, 0.6)}, {"step": 200, "gate_quantiles": q(0.4, 0.7)},
                       {"step": 300}]},
            {"name": "f/plain", "config": {"run": {"seed": 0}}, "curve": [{"step": 300}]}]
    rows = G.gate_rows(runs, ["gated", "plain"], {"gated": "the gate"})
    assert rows == [{"design": "the gate", "seed": 0, "head": "layer 1, head 1", "p10": 0.4, "p50": 0.7, "p90": 0.9,
                     "step": 200},
                    {"design": "the gate", "seed": 0, "head": "layer 1, head 2", "p10": 0.1, "p50": 0.2, "p90": 0.3,
                     "step": 200}]
    assert G.gate_caption(rows) == ("Each head's gate over the held-out queries at the last evaluation. The gate: "
                                    "median gates 0.20-0.70 over 2 heads and 1 seed, 1 head mostly closed (median "
                                    "< 0.5) in every seed.")
    assert G.gate_caption([]).startswith("No stored run records its gates yet")
    assert G.gate_chart(rows, "t").to_dict()["facet"]["row"]["field"] == "design"
