"""The spike rule, the runs that trained the reference softmax in bf16, and the rule that decides whether a point's
stored seeds stand beside its rerun: each against hand-made records."""
import pytest

from sinkpaper.train.recheck import judge, margin, trained_bf16_softmax
from sinkpaper.train.spikes import find_spikes, spikes_of


def curve(losses, grads=None, every=20):
    return [{"step": every * (i + 1), "loss": loss, **({"grad_norm_max": grads[i]} if grads else {})}
            for i, loss in enumerate(losses)]


def test_a_loss_jump_after_warm_up_is_one_spike_until_it_falls_back():
    c = curve([9.0, 7.0, 6.5, 6.4, 8.0, 8.5, 6.9, 6.3])     # steps 20 .. 160
    assert find_spikes(c, warmup=40) == [{"step": 100, "until": 120, "kind": "loss", "peak": 2.1, "grad_ratio": 0.0}]


def test_a_loss_jump_on_one_log_line_is_batch_noise_not_a_spike():
    assert find_spikes(curve([7.0, 6.0, 7.2, 6.1, 6.0]), warmup=0) == []
    assert [s["step"] for s in find_spikes(curve([7.0, 6.0, 7.2, 7.1, 6.0]), warmup=0)] == [60]


def test_warm_up_and_a_jump_of_one_nat_or_less_are_not_spikes():
    assert find_spikes(curve([6.0, 8.0, 6.0]), warmup=40) == []       # the jump at step 40 is in warm-up
    assert find_spikes(curve([7.0, 6.0, 7.0, 6.9]), warmup=0) == []   # exactly 1 nat: not more than 1


def test_a_gradient_norm_twenty_times_its_median_is_a_spike():
    grads = [0.3, 0.3, 0.31, 0.29, 0.3, 0.3, 6.1, 0.3]
    found = find_spikes(curve([6.0] * 8, grads), warmup=0)
    assert [(s["step"], s["kind"]) for s in found] == [(140, "grad_norm")]
    assert found[0]["grad_ratio"] == pytest.approx(20.3, abs=0.1)
    assert find_spikes(curve([6.0] * 8, [*grads[:6], 5.9, 0.3]), warmup=0) == []     # 19.7x: not a spike


def test_a_stored_run_reads_the_spikes_of_its_curve_or_those_it_recorded():
    assert spikes_of({"result": {"spikes": [{"step": 5}]}, "curve": []}) == [{"step": 5}]
    # with a curve, today's rule decides (a record written under an earlier form of the rule is not read)
    smooth = {"result": {"spikes": [{"step": 5}]}, "config": {"optim": {"warmup": 0}}, "curve": curve([6.0, 5.9])}
    assert spikes_of(smooth) == []
    run = {"result": {}, "config": {"optim": {"warmup": 40}}, "curve": curve([9.0, 7.0, 6.5, 8.0, 7.9])}
    assert [s["step"] for s in spikes_of(run)] == [80]


def _run(hardware="CPU AMD EPYC, 1 threads", dtype="bf16", route=None, model=None):
    pv = {"hardware": hardware, "dtype": dtype, **({"route": route} if route else {})}
    config = {"name": "t", "profile": "text", "model": model or {}, "data": {"context": 64}, "run": {"dtype": dtype}}
    return {"config": config, "result": {"provenance": pv}}


def test_which_stored_runs_trained_the_reference_softmax_in_bf16():
    ref = {"attention": "reference", "loss": "chunked by 128 tokens"}
    assert trained_bf16_softmax(_run(route=ref))
    assert not trained_bf16_softmax(_run(route={**ref, "numerics": "fp32 core"}))      # trained since the fix
    assert not trained_bf16_softmax(_run(route={**ref, "attention": "SDPA"}))
    assert not trained_bf16_softmax(_run(route=ref, dtype="fp32"))
    assert not trained_bf16_softmax(_run(route=ref, hardware="NVIDIA H200"))             # CUDA autocast: fp32
    # before the route was recorded: plain softmax took SDPA, a variant the reference
    assert not trained_bf16_softmax(_run(model={"n_layers": 2, "d_model": 32, "n_heads": 2}))
    assert trained_bf16_softmax(_run(model={"n_layers": 2, "d_model": 32, "n_heads": 2, "sink": "kv_bias"}))
    assert trained_bf16_softmax({"error": "non-finite loss", "config": {"run": {"dtype": "bf16"}},
                                 "provenance": {"hardware": "CPU AMD EPYC, 1 threads"}})


def test_the_margin_is_the_base_spread_and_at_least_five_points():
    assert margin([67.8, 74.7, 74.0]) == pytest.approx(6.9)
    assert margin([40.0, 41.0]) == 5.0


def _r(sink, learned=True, spiked=False):
    return {"sink": sink, "learned": learned, "spiked": spiked}


def test_stored_seeds_stand_when_the_rerun_lands_inside_their_widened_range():
    stored = [_r(40.0), _r(45.0), _r(42.0)]
    assert judge(stored, _r(49.0), 5.0)["stands"]
    assert judge(stored, _r(36.0), 5.0)["stands"]
    out = judge(stored, _r(51.0), 5.0)
    assert not out["stands"] and "outside" in out["why"]


def test_a_spiked_rerun_or_a_change_in_learning_sends_the_point_back():
    stored = [_r(0.0), _r(0.0), _r(0.0)]
    assert not judge(stored, _r(0.0, spiked=True), 5.0)["stands"]
    assert not judge(stored, _r(0.0, learned=False), 5.0)["stands"]
    assert not judge([_r(0.0), _r(9.0, learned=False), _r(0.0)], _r(0.0), 5.0)["stands"]
    assert judge([_r(9.0, learned=False)] * 3, _r(2.0, learned=False), 5.0)["stands"]


def test_a_run_resumed_across_the_in_graph_route_decision_has_that_sitting_corrected_only():
    """scripts/correct_route_provenance.py: code from 7f36984 up to be08bdf recorded the reference operator for
    compiled bf16 plain softmax while its compiled steps took SDPA. A run whose first sitting ran that code and
    whose second ran the fix has the first sitting's route corrected, the second's and the run's kept."""
    import importlib.util
    import subprocess
    from pathlib import Path

    from sinkpaper.train import load

    repo = Path(__file__).resolve().parents[1]
    if subprocess.run(["git", "cat-file", "-e", "be08bdf^{commit}"], cwd=repo, capture_output=True).returncode:
        pytest.skip("the repository's history is not here (a shallow clone or an sdist)")
    spec = importlib.util.spec_from_file_location("crp", repo / "scripts" / "correct_route_provenance.py")
    crp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(crp)
    cfg = load(repo / "configs/optimization.yaml", "text")
    ref = {"attention": "reference", "loss": "chunked by 128 tokens", "numerics": "fp32 core"}
    payload = {"config": cfg.to_dict(), "result": {"provenance": {
        "compiled": True, "dtype": "bf16", "code_version": "0.1.1.dev679+g134653dacc", "route": dict(ref),
        "routes": [{**ref, "code": "0.1.1.dev679+g7f36984a98", "from_step": 0},
                   {**ref, "code": "0.1.1.dev679+g134653dacc", "from_step": 750}]}}}
    assert crp.corrected(payload)
    pv = payload["result"]["provenance"]
    first, second = pv["routes"]
    assert (first["attention"], first["attention_recorded"]) == ("SDPA", "reference") and "graph" in first["note"]
    assert second["attention"] == "reference" and "attention_recorded" not in second
    assert pv["route"]["attention"] == "reference" and "route_recorded" not in pv
    assert not crp.corrected(payload)      # once corrected, nothing left to correct


def test_a_point_whose_settings_changed_after_its_affected_runs_reads_superseded_naming_the_setting():
    """The 4-layer points moved to fp32 after their bf16 runs: those runs are not rechecked against a rerun nor
    retrained as they were; the table names the setting that changed."""
    from sinkpaper.results.recheck import settings_changed
    from sinkpaper.train.config import load

    now = load("configs/data.yaml", "text", {"seed": 1}, sweep_point="fixed_pos2_layers_4_steps_x2").to_dict()
    ran = {**now, "run": {**now["run"], "dtype": "bf16"}}
    payload = {"name": "data/fixed_pos2_layers_4_steps_x2", "profile": "text"}
    assert settings_changed({**payload, "config": ran}) == "run.dtype fp32"
    assert settings_changed({**payload, "config": now}) == ""                       # the same run
    assert settings_changed({**payload, "name": "gone/nowhere", "config": ran}) == ""   # no config defines it


# ---------------------------------------------------------------- the rule sees what it judges (a store built for it)
def _stored(store, config, point, seed, sink_1, *, dtype="fp32", route=None, name=None, sink_star=None):
    """A text run of config/point that learned (held-out loss 5.1 against the corpus's unigram 6.95), Sink_1 flat."""
    from pathlib import Path

    from sinkpaper.train.store import read_entry, write_entry, write_result
    from sinkpaper.train.sweep import sweep_configs
    repo = Path(__file__).resolve().parents[1]
    [(_, _, cfg)] = sweep_configs(repo / config, "text", [point], [seed])
    ev = {"sink_k": {"1": sink_1}, "alpha_1_mean": 0.1, "val_loss": 5.1,
          **({"sink_star": sink_star} if sink_star is not None else {})}
    curve = [{"step": s, "loss": 5.1, "tokens": s * 4096, **ev} for s in range(100, 2501, 100)]
    pv = {"hardware": "CPU AMD EPYC, 1 threads", "dtype": dtype, "code_version": "v1",
          "computed_at": "2000-01-01 00:00 UTC", **({"route": route} if route else {})}
    path = write_result(store, cfg, {**ev, "step": 2500, "provenance": pv}, curve=curve)
    if name:   # stored under another name, as an early seed of the base was
        write_entry(path, {**read_entry(path), "name": name})
    return path


def test_the_base_spread_reads_every_seed_of_the_base_whatever_its_stored_name(tmp_path):
    from sinkpaper.results.recheck import _reading, base_seeds
    for seed, s1, name in ((0, 20.0, None), (1, 41.0, "optimization"), (2, 30.0, None)):
        _stored(tmp_path, "configs/optimization.yaml", "default", seed, s1, name=name)
    found = base_seeds(str(tmp_path))
    assert sorted(p["config"]["run"]["seed"] for p in found) == [0, 1, 2]
    assert margin([_reading(p)["sink"] for p in found]) == pytest.approx(21.0)   # all three seeds, not two


def test_the_rule_compares_sink_star_where_the_claims_read_it():
    from sinkpaper.paper.lookup import claim_metric
    assert claim_metric("biases/k_bias_fixed_v_no_bos") == "Sink*"
    assert claim_metric("after_paper/sink_logit") == "Sink*"
    assert claim_metric("attention/elu") == "Sink_1"


def test_a_run_that_trained_the_bf16_softmax_is_named_and_not_counted(tmp_path):
    from sinkpaper.paper import lookup
    from sinkpaper.paper.claim import family
    ref = {"attention": "reference"}
    for seed in (0, 1, 2):
        _stored(tmp_path, "configs/attention.yaml", "elu", seed, 30.0, dtype="bf16" if seed else "fp32",
                route=ref if seed else None)
    # seed 0 trained fp32 (not affected); seeds 1 and 2 through the faulty softmax
    r = lookup._read_runs(family("attention", ["elu"]), "text", str(tmp_path))
    assert sorted(r.got["elu"]) == [0]
    assert [x.split(":")[0] for x in r.excluded] == ["elu seed 1", "elu seed 2"]
    assert all("trained through the old bf16 softmax" in x and "not counted until its rerun lands" in x
               for x in r.excluded)


def test_runs_not_counted_for_one_reason_say_it_once():
    from sinkpaper.paper.lookup import grouped_runs
    why = "trained through the bf16 softmax: not counted until its rerun lands"
    assert grouped_runs([f"sigmoid_norm seed 3: {why}", f"sigmoid_norm seed 4: {why}", "elu seed 2: did not learn",
                         f"sigmoid seed 3: {why}", "the run stops at step 2,500: no result"]) == [
        f"sigmoid_norm seeds 3, 4 and sigmoid seed 3: {why}", "elu seed 2: did not learn",
        "the run stops at step 2,500: no result"]
    assert grouped_runs(["a seed 2: diverged, non-finite loss (first at step 270)"]) == [
        "a seed 2: diverged, non-finite loss (first at step 270)"]


def test_runs_rising_or_from_uncommitted_code_are_said_once_per_point():
    from sinkpaper.results.numbers import runs_by_point
    assert runs_by_point([("k", 1, "Sink_1 +8.4"), ("k", 0, "Sink_1 +23.2"), ("k", 0, "Sink_1 +23.2")]) == \
        "k seeds 0, 1 (Sink_1 +23.2, +8.4)"   # a run two labels read is said once
    # metrics that differ within a point keep their names; a run with nothing to say about it is just named
    assert runs_by_point([("b", 3, "Sink_1 +2.0"), ("b", 2, "Sink* +1.0"), ("d", 1, "")]) == \
        "b seeds 2, 3 (Sink* +1.0, Sink_1 +2.0); d seed 1"
