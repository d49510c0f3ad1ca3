"""Sink or not yet (sinkpaper.paper.budget): a "no sink" reading counts against the paper only where its run got as
far as the base's onset loss; warm-up flickers are not onsets. On a results store built for the test: a slow
learner, a real suppressor and a flicker, beside a base whose three seeds form their sink."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from sinkpaper.paper import budget, lookup, onsets
from sinkpaper.paper.claim import Claim, at_scales, family
from sinkpaper.paper.onsets import onset_step
from sinkpaper.paper.rules import MattersLittle, Sinks
from sinkpaper.paper.verdicts import AGREES, DISAGREES, INCONCLUSIVE, NOT_YET, judge

REPO = Path(__file__).resolve().parents[1]
TEXT = "real text (CPU)"
UNIGRAM = 6.95   # the committed unigram loss of the text corpus (results/data/unigram_loss.json)


def _loss(step: int, final: float) -> float:
    """A held-out loss that falls from near the unigram level to ``final``."""
    return final + (6.9 - final) * math.exp(-step / 500)


def _store(store: Path, config: str, point: str, seed: int, final: float, sink) -> dict:
    """A stored text run of ``config``/``point``: evaluations every 100 steps to its config's steps, held-out and
    training loss falling to ``final``, Sink_1 = sink(step)."""
    from sinkpaper.train.store import read_entry, write_result
    from sinkpaper.train.sweep import sweep_configs
    [(_, _, cfg)] = sweep_configs(REPO / config, "text", [point], [seed])
    per_step, steps = cfg.optim.batch_size * cfg.data.context, cfg.optim.steps
    curve = []
    for step in range(100, steps + 1, 100):
        curve.append({"step": step, "loss": _loss(step, final), "lr": 0.02})
        curve.append({"step": step, "tokens": per_step * step, "val_loss": _loss(step, final),
                      "sink_k": {"1": float(sink(step))}, "alpha_1_mean": sink(step) / 200})
    path = write_result(store, cfg, {"sink_k": {"1": float(sink(steps))}, "alpha_1_mean": 0.1,
                                     "val_loss": _loss(steps, final), "step": steps, "tokens_seen": per_step * steps,
                                     "provenance": {"hardware": "CPU test", "dtype": "fp32", "code_version": "v1",
                                                    "computed_at": "2000-01-01 00:00 UTC", "wall_seconds": 1.0}},
                        curve=curve)
    return read_entry(path)


def _forms_at(onset: int, level: float = 40.0):
    return lambda step: level if step >= onset else 0.0


@pytest.fixture()
def store(tmp_path):
    """The base (optimization/default) forms its sink at steps 1200 / 1300 / 1500; architecture's pos_rope is the
    same recipe; pos_nope learns slower and never gets to the base's onset loss; pos_alibi gets there early and
    stays at 0 %."""
    s = tmp_path / "store"
    s.mkdir()
    for seed, onset in zip((0, 1, 2), (1200, 1300, 1500)):
        _store(s, "configs/optimization.yaml", "default", seed, 5.10, _forms_at(onset))
        _store(s, "configs/architecture.yaml", "pos_rope", seed, 5.10, _forms_at(onset))
        _store(s, "configs/architecture.yaml", "pos_nope", seed, 5.30, lambda step: 0.0)
        _store(s, "configs/architecture.yaml", "pos_alibi", seed, 4.90, lambda step: 0.0)
    return s


def _claim(labels) -> Claim:
    return Claim("t", "7.1", "07_architecture", "test", "Section 7.1", rule=Sinks(["pos_rope", *labels]),
                 measure=at_scales(text=family("architecture", ["pos_rope", *labels])))


def test_the_onset_loss_is_where_every_base_seed_had_its_sink(store):
    onset, base = lookup.guard_onset_loss(_claim([]).measure[TEXT], TEXT, str(store))
    assert base == "default"
    # each seed's smoothed held-out loss at its onset (the onset evaluation and one either side); the lowest
    expect = {s: sum(_loss(t, 5.10) for t in (o - 100, o, o + 100)) / 3 for s, o in zip((0, 1, 2), (1200, 1300, 1500))}
    assert onset.per_seed == pytest.approx(expect)
    assert onset.loss == pytest.approx(min(expect.values()))


def test_a_slow_learner_reads_not_yet_and_names_its_loss(store):
    r = lookup.result(_claim(["pos_nope"]), TEXT, records={}, store=str(store))
    assert r["verdict"] == NOT_YET
    assert "pos_nope (seeds 0, 1, 2) never reached the base's onset loss" in r["why"]
    assert "in 10.2M tokens" in r["why"]


def test_a_real_suppressor_keeps_its_disagreement(store):
    r = lookup.result(_claim(["pos_alibi"]), TEXT, records={}, store=str(store))
    assert r["verdict"] == DISAGREES and r["budget"]["unripe"] == []


def test_a_disagreement_a_ripe_run_carries_stands_beside_an_unripe_one(store):
    r = lookup.result(_claim(["pos_nope", "pos_alibi"]), TEXT, records={}, store=str(store))
    assert r["verdict"] == DISAGREES   # pos_alibi's ripe no-sink decides, whatever pos_nope could still grow


def test_the_guard_fails_without_its_onset_loss(store, monkeypatch):
    """The same slow learner, read against a base whose sink never formed in one seed: no onset loss, no guard."""
    _store(store, "configs/optimization.yaml", "default", 2, 5.10, lambda step: 0.0)
    r = lookup.result(_claim(["pos_nope"]), TEXT, records={}, store=str(store))
    assert r["verdict"] == DISAGREES and "never formed in seed 2" in r["budget"]["why"]


def test_a_warm_up_flicker_is_not_an_onset(tmp_path):
    flicker = _store(tmp_path, "configs/architecture.yaml", "pos_learnable", 0, 5.10,
                     lambda step: 15.0 if step == 100 else 40.0 if step >= 1500 else 0.0)
    assert _loss(100, 5.10) > (1 - onsets.LEFT_UNIGRAM) * UNIGRAM          # step 100 is inside the warm-up
    assert onset_step(flicker, "sink") == 1500.0
    assert onsets.onset_record(flicker, "sink")["step"] == 1500
    never = _store(tmp_path, "configs/architecture.yaml", "pos_learnable", 1, 5.10,
                   lambda step: 15.0 if step == 100 else 0.0)
    assert onset_step(never, "sink") == 2600.0          # one evaluation past the end: never formed


def test_not_yet_agrees_only_where_a_sink_could_make_it_agree():
    rule = MattersLittle(["x"], "base")
    values = {"x": [0.0, 0.0, 0.0], "base": [40.0, 40.0, 40.0]}
    fn = lambda v: judge(rule, v)[0]  # noqa: E731
    assert fn(values) == DISAGREES
    assert budget.not_yet(fn, values, {"x": [0, 1, 2]}) == NOT_YET
    assert budget.not_yet(fn, values, {}) is None
    # one ripe seed with no sink: the unripe two cannot make it agree, only undo the disagreement
    assert budget.not_yet(fn, values, {"x": [0, 1]}) == INCONCLUSIVE
    # ripe seeds 5x the base's, an unripe one that could match it: the seeds would split
    assert budget.not_yet(fn, {"x": [0.0, 100.0, 100.0], "base": [20.0, 20.0, 20.0]}, {"x": [0]}) == INCONCLUSIVE
    # a second change with no sink on ripe runs: nothing the unripe one grows undoes the disagreement
    both = MattersLittle(["x", "y"], "base")
    fn2 = lambda v: judge(both, v)[0]  # noqa: E731
    assert budget.not_yet(fn2, {**values, "y": [0.0, 0.0, 0.0]}, {"x": [0, 1, 2]}) is None
    assert fn({"x": [40.0, 40.0, 40.0], "base": [40.0, 40.0, 40.0]}) == AGREES


def test_a_point_not_run_reads_every_value_its_seeds_could_take():
    rule = MattersLittle(["x"], "base")
    fn = lambda v: judge(rule, v)[0]  # noqa: E731
    base = {"base": [40.0, 40.0, 40.0]}
    assert budget.not_yet(fn, base, {}, {"x": 3}) == NOT_YET          # it could match the base, or not
    both = MattersLittle(["x", "y"], "base")
    fn2 = lambda v: judge(both, v)[0]  # noqa: E731
    # a ripe suppressor beside it decides, whatever it could take; unripe, it does not
    assert budget.not_yet(fn2, {**base, "y": [0.0, 0.0, 0.0]}, {}, {"x": 3}) == DISAGREES
    assert budget.not_yet(fn2, {**base, "y": [0.0, 0.0, 0.0]}, {"y": [0, 1, 2]}, {"x": 3}) == NOT_YET
    assert budget.not_yet(fn2, {**base, "y": [40.0, 40.0, 40.0]}, {}, {"x": 3}) == NOT_YET


def _plan_claim() -> Claim:
    from sinkpaper.paper.claim import BASE_BUDGET, at_budget_4_layers
    points = {"pos_rope": BASE_BUDGET, "pos_nope": "pos_nope_layers_4_steps_x4",
              "pos_alibi": "pos_alibi_layers_4_steps_x4"}
    return Claim("t", "7.1", "07_architecture", "test", "Section 7.1", rule=Sinks(list(points)),
                 measure=at_scales(layers_4=at_budget_4_layers(points)))


@pytest.fixture()
def plan_store(tmp_path):
    """The budget plan's runs at 4 layers, 10,000 steps: the base's three seeds form their sink; pos_nope's seed 0
    learns slower, never gets to the base's onset loss and has none (so the plan runs no further seed of it)."""
    s = tmp_path / "store"
    s.mkdir()
    for seed, onset in zip((0, 1, 2), (1200, 1300, 1500)):
        _store(s, "configs/budget.yaml", "base_layers_4_steps_x4", seed, 5.10, _forms_at(onset))
    _store(s, "configs/budget.yaml", "pos_nope_layers_4_steps_x4", 0, 5.30, lambda step: 0.0)
    return s


def test_a_point_the_plan_stops_at_seed_0_reads_not_yet_or_what_the_others_decide(plan_store):
    from sinkpaper.paper.verdicts import LAYERS_4_SCALE as FOUR
    c = _plan_claim()
    r = lookup.result(c, FOUR, records={}, store=str(plan_store))
    # pos_alibi is not stored: no result, and pos_nope's seeds 1-2 are named as stopped, not as runs to train
    assert r["verdict"] == "no result"
    assert "pos_alibi_layers_4_steps_x4 seeds 0, 1, 2" in r["note"] and "pos_nope_layers_4_steps_x4 seeds" not in r[
        "note"]
    assert "pos_nope_layers_4_steps_x4 (seed 0) never reached the base's onset loss" in r["note"]
    assert "configs/budget.yaml runs no further seed of it" in r["note"]
    for seed in (0, 1, 2):      # pos_alibi forms its sink: the claim waits on pos_nope
        _store(plan_store, "configs/budget.yaml", "pos_alibi_layers_4_steps_x4", seed, 5.10, _forms_at(1400))
    r = lookup.result(c, FOUR, records={}, store=str(plan_store))
    assert r["verdict"] == NOT_YET and "pos_nope_layers_4_steps_x4 (seed 0) never reached" in r["why"]
    assert r["values"]["pos_nope"] == 0.0 and "pos_nope" not in r["seed_values"]
    for seed in (0, 1, 2):      # pos_alibi gets past the onset loss early and stays at 0 %: a suppression decides
        _store(plan_store, "configs/budget.yaml", "pos_alibi_layers_4_steps_x4", seed, 4.90, lambda step: 0.0)
    r = lookup.result(c, FOUR, records={}, store=str(plan_store))
    assert r["verdict"] == DISAGREES and r["why"] == "whatever pos_nope_layers_4_steps_x4 could still grow"


def test_a_seed_0_past_the_onset_loss_or_with_a_sink_is_not_stopped(plan_store):
    from sinkpaper.paper.verdicts import LAYERS_4_SCALE as FOUR
    for seed in (0, 1, 2):
        _store(plan_store, "configs/budget.yaml", "pos_alibi_layers_4_steps_x4", seed, 5.10, _forms_at(1400))
    for sink in (lambda step: 0.0, _forms_at(1400)):   # ripe without a sink; or a sink: seeds 1-2 are the plan's
        _store(plan_store, "configs/budget.yaml", "pos_nope_layers_4_steps_x4", 0, 4.90, sink)
        r = lookup.result(_plan_claim(), FOUR, records={}, store=str(plan_store))
        assert r["verdict"] == "no result" and "pos_nope_layers_4_steps_x4 seeds 1, 2" in r["note"]


def test_ripeness_is_read_at_the_window_start(store):
    from sinkpaper.train.store import entries
    slow = next(p for _, p in entries(store) if p["name"].endswith("pos_nope"))
    r = budget.ripeness(slow, 5.325)   # pos_nope reaches 5.325 at step 2100, inside its window (from step 2000)
    assert not r.ripe and r.reached is not None and r.reached > r.window == 2000
    assert budget.ripeness(slow, 5.5).ripe


def test_the_sink_against_loss_figure_draws_each_run_and_the_onset_band(store):
    pytest.importorskip("altair")
    from sinkpaper.book import figures
    from sinkpaper.book.figures import budget as fig

    data = budget.sink_against_loss({"pos_nope": ("configs/architecture.yaml", "pos_nope"),
                                     "pos_relative": ("configs/architecture.yaml", "pos_relative")},
                                    ("configs/optimization.yaml", "default"), store=str(store))
    assert data["missing"] == ["pos_relative"]
    runs = {(r["change"], r["run"]) for r in data["rows"]}
    assert runs == {("pos_nope", f"{role} seed {s}") for role in ("base", "change") for s in (0, 1, 2)}
    assert sum(r["last"] for r in data["rows"]) == 6               # one end dot per run
    figure = fig.sink_against_loss_figure({"pos_nope": ("configs/architecture.yaml", "pos_nope"),
                                           "pos_relative": ("configs/architecture.yaml", "pos_relative")},
                                          ("configs/optimization.yaml", "default"), "2 layers", store=str(store))
    assert f"{data['onset'].loss:.3f}" in figure.caption and "Not stored yet: pos_relative." in figure.caption
    [panel] = figure.content.charts        # one panel per change stored: pos_nope's
    band, line, ends, level = panel.to_dict()["layer"]
    evals = line["data"]["values"]
    assert {v["change"] for v in evals} == {"pos_nope"} and ends["data"] == line["data"]
    edge = max(data["onset"].per_seed.values()) + fig.ZOOM
    assert max(v["loss"] for v in evals) <= max(edge, *(v["loss"] for v in evals if v["last"]))
    assert sum(v["last"] for v in evals) == 6                      # every run's end in view
    assert band["mark"]["type"] == "rect" and band["data"]["values"][0]["hi"] == max(data["onset"].per_seed.values())
    assert figures.draws_the_paper(panel.to_dict()) and level["mark"]["type"] == "rule"
    # a second figure of the chart points to the first for how to read it, and says only what differs
    again = fig.sink_against_loss_figure({"pos_nope": ("configs/architecture.yaml", "pos_nope")},
                                         ("configs/optimization.yaml", "default"), "2 layers again", store=str(store),
                                         as_figure="Figure 7.1")
    assert again.caption.startswith("On each run's plateau, not yet: pos_nope. As Figure 7.1, at 2 layers again: "
                                    "pos_nope beside the base default")
    assert f"{data['onset'].loss:.3f}" in again.caption and "blue band" not in again.caption
    # a base of one seed has no spread: its onset loss is drawn as a line, which a zero-width band would not show
    import dataclasses
    one = dataclasses.replace(data["onset"], per_seed={0: data["onset"].per_seed[0]})
    [panel] = fig.sink_against_loss_chart({**data, "onset": one}).charts
    assert panel.to_dict()["layer"][0]["mark"]["type"] == "rule"


def test_a_run_every_reading_leaves_out_is_named_and_an_extra_seed_drawn(store):
    pytest.importorskip("altair")
    from sinkpaper.book.figures import budget as fig
    from sinkpaper.train.store import read_entry, write_result
    from sinkpaper.train.sweep import sweep_configs
    spiked = _store(store, "configs/architecture.yaml", "pos_nope", 1, 5.30, lambda step: 0.0)
    curve = [dict(c, grad_norm_max=40.0 if c["step"] == 1500 else 0.5) if "loss" in c and "val_loss" not in c
             else c for c in spiked["curve"]]
    [(_, _, cfg)] = sweep_configs(REPO / "configs/architecture.yaml", "text", ["pos_nope"], [1])
    read_entry(write_result(store, cfg, spiked["result"], curve=curve))
    _store(store, "configs/architecture.yaml", "pos_nope", 3, 5.30, lambda step: 0.0)
    changes = {"pos_nope": ("configs/architecture.yaml", "pos_nope")}
    data = budget.sink_against_loss(changes, ("configs/optimization.yaml", "default"), store=str(store))
    assert [r.seed for r in data["readings"]] == [0, 2, 3]
    [why] = data["left_out"]
    assert why.startswith("pos_nope seed 1: a gradient spike at step 1500")
    figure = fig.sink_against_loss_figure(changes, ("configs/optimization.yaml", "default"), "2 layers",
                                          store=str(store))
    assert f"Left out: {why}." in figure.caption


def test_a_base_of_one_seed_is_said_to_be_an_onset_loss_its_other_seeds_may_lower(tmp_path):
    pytest.importorskip("altair")
    from sinkpaper.book.figures import budget as fig
    store = tmp_path / "store"
    store.mkdir()
    _store(store, "configs/optimization.yaml", "default", 0, 5.10, _forms_at(1200))
    _store(store, "configs/architecture.yaml", "pos_nope", 0, 5.30, lambda step: 0.0)
    figure = fig.sink_against_loss_figure({"pos_nope": ("configs/architecture.yaml", "pos_nope")},
                                          ("configs/optimization.yaml", "default"), "2 layers", store=str(store))
    assert "one seed so far: its others may lower it" in figure.caption


def test_a_shorter_run_is_the_prefix_of_a_longer_one_bit_for_bit(tmp_path):
    """The constant schedule's promise, on the trainer: 24 steps then 48 steps of one seed log the same first 24
    steps, every loss and evaluation equal; the longer run read at 24 steps gives the shorter one's reading."""
    from sinkpaper.train import build, train
    from sinkpaper.train.trainer import read_log
    tiny = {"name": "tiny", "model": dict(d_model=32, n_layers=1, n_heads=2, d_ff=64),
            "data": dict(source="repeat", vocab_size=32, n_tokens=20_000, context=32),
            "optim": dict(lr=1e-2, steps=24, batch_size=8, warmup=4, schedule="constant"),
            "eval": dict(every=6, n_samples=8, seq_len=16), "run": dict(checkpoint_every=12, log_every=3, threads=1)}
    runs = {}
    for steps in (24, 48):
        cfg = build(tiny, "cpu", {"optim.steps": steps})
        train(cfg, tmp_path / str(steps), progress=False)
        runs[steps] = {"name": "tiny", "config": cfg.to_dict(), "curve": read_log(tmp_path / str(steps) / "log.jsonl")}
    assert budget.prefix_difference(runs[24], runs[48]) is None
    read = budget.at_budget(runs[48], 24)
    assert read["result"]["sink_k"] == [c for c in runs[24]["curve"] if c["step"] == 24 and "sink_k" in c][0]["sink_k"]
    # a different seed is not a prefix, and says where it first differs
    cfg = build(tiny, "cpu", {"optim.steps": 48, "run.seed": 1})
    train(cfg, tmp_path / "other", progress=False)
    other = {"name": "tiny", "config": cfg.to_dict(), "curve": read_log(tmp_path / "other" / "log.jsonl")}
    assert budget.prefix_difference(runs[24], other).startswith("step 3: loss")


def test_a_budget_a_run_cannot_give_is_refused_in_one_line():
    payload = {"name": "budget/x", "config": {"run": {"seed": 0}, "eval": {"every": 100},
                                              "optim": {"steps": 2500, "warmup": 100, "schedule": "constant"}},
               "curve": [{"step": s, "sink_k": {"1": 0.0}} for s in range(100, 2501, 100)]}
    with pytest.raises(budget.BudgetError, match="inside its 100-step warm-up"):
        budget.at_budget(payload, 50)
    with pytest.raises(budget.BudgetError, match=r"trained 2,500 steps, not 10,000: no result .*steps_scale x4"):
        budget.at_budget(payload, 10_000)
    with pytest.raises(budget.BudgetError, match="no evaluation at step 2,450"):
        budget.at_budget(payload, 2450)
    assert budget.at_budget(payload, 1000)["config"]["optim"]["steps"] == 1000


def test_every_stored_run_is_the_prefix_of_its_longer_run_where_both_took_the_same_route():
    """One run, every budget: with the recipe's constant schedule, a stored 2,500-step run equals, bit for bit, the
    start of the 5,000- or 10,000-step run of its point and seed trained on the same hardware, torch, dtype and
    compile mode (the store holds such pairs at 10,000 steps); on another route the same pair differs from the
    first logged step on, so the check can fail."""
    pairs = budget.stored_prefix_pairs()
    same = [p for p in pairs if p.same_route]
    assert [p for p in same if p.difference is not None] == []
    assert any("_steps_x4 " in p.longer for p in same), [p.longer for p in same]
    assert any(p.difference is not None for p in pairs if not p.same_route)


def test_one_change_at_two_budgets_draws_both_runs_of_a_seed_apart(store):
    """A change drawn with its longer run too: the two runs of one seed are two lines, each named by its point."""
    data = budget.sink_against_loss({"pos_nope": [("configs/architecture.yaml", "pos_nope"),
                                                  ("configs/architecture.yaml", "pos_nope")]},
                                    ("configs/optimization.yaml", "default"), store=str(store))
    runs = {r["run"] for r in data["rows"] if r["role"] == "change"}
    assert runs == {f"change seed {s} (pos_nope)" for s in (0, 1, 2)}
    assert sum(r["last"] for r in data["rows"] if r["role"] == "change") == 6      # each copy ends with its dot


def test_a_run_in_training_is_drawn_from_its_partial_curve_and_never_read_as_a_result(store):
    """A 10,000-step run still training: with ``running`` its partial curve is drawn (role "running") and the step
    it reached is said; without it, the change is "not stored"."""
    from sinkpaper.train.store import write_partial
    from sinkpaper.train.sweep import sweep_configs
    [(_, _, cfg)] = sweep_configs(REPO / "configs/budget.yaml", "text", ["pos_nope_layers_4_steps_x4"], [0])
    curve = [{"step": s, "tokens": 4096 * s, "val_loss": _loss(s, 5.3), "sink_k": {"1": 0.0}, "alpha_1_mean": 0.06}
             for s in range(100, 1501, 100)]
    write_partial(store, cfg, curve, {"step": 1500, "steps": 10_000})
    change = {"pos_nope": ("configs/budget.yaml", "pos_nope_layers_4_steps_x4")}
    base = ("configs/optimization.yaml", "default")
    assert budget.sink_against_loss(change, base, store=str(store))["missing"] == ["pos_nope"]
    data = budget.sink_against_loss(change, base, store=str(store), running=True)
    assert data["missing"] == [] and data["running"] == {"pos_nope": [1500]}
    assert {r["run"] for r in data["rows"] if r["role"] == "running"} == {"running seed 0"}
    from sinkpaper.book.figures import budget as fig
    figure = fig.sink_against_loss_figure(change, base, "4 layers", store=str(store), running=True)
    assert "In training (orange, to its last checkpoint): pos_nope at step 1,500." in figure.caption


def test_an_unripe_point_is_said_in_one_line_each_step_once():
    """Seeds that reached the onset loss late at the same step say it once; at different steps, each."""
    r = lambda reached: budget.Ripeness(False, reached, 2000.0, 5.2)  # noqa: E731
    assert budget.unripe_text("p", [(0, r(2100)), (1, r(2100))], 4.647) == (
        "p (seeds 0, 1) reached the base's onset loss 4.647 only at step 2,100, inside the window read (from step "
        "2,000)")
    assert "only at steps 2,100 / 2,300," in budget.unripe_text("p", [(0, r(2100)), (1, r(2300))], 4.647)
    never = budget.unripe_text("p", [(2, budget.Ripeness(False, None, 2000.0, 5.21))], 5.14, 10.24e6)
    assert never == "p (seed 2) never reached the base's onset loss 5.140 in 10.2M tokens (5.210 where read)"


def test_the_sweep_caption_names_a_slow_learner_not_yet_apart_from_a_suppressor(store):
    """The dot-and-tick figure's caption: a point with no sink that the paper gives one reads 'the other way' only
    where every seed reached the base's onset loss before its plateau; a slow learner is named 'not yet'."""
    from sinkpaper.book.figures import sweep_caption
    from sinkpaper.results.reading import point_of
    from sinkpaper.train.store import read_entry

    order = ["pos_rope", "pos_nope", "pos_alibi"]
    ps = [p for p in (read_entry(f) for f in sorted(store.rglob("*.json*"))) if point_of(p) in order]
    onset = budget.base_onset_loss([p for p in ps if point_of(p) == "pos_rope"])
    assert onset.layers == ps[0]["config"]["model"]["n_layers"] and len(ps) == 9
    text = sweep_caption(ps, order, onset_loss=onset.loss)
    against, _, early = text.partition(" Not yet (")
    assert "Where the paper reads the other way: pos_alibi (paper" in against and "pos_nope (paper" not in against
    assert early.startswith(f"a seed had not reached the base's onset loss, {onset.loss:.3f}")
    assert "pos_nope (paper" in early
    assert "pos_alibi" not in early
    assert "Not yet" not in sweep_caption(ps, order)       # without the base's onset loss, both read as before


def test_a_run_that_stops_far_above_the_onset_loss_keeps_its_end_in_view(store):
    """The chart zooms to the stretch where the base's sink forms; a change that stopped above it still shows
    where it stopped (its end dot and the approach to it), never an empty panel."""
    pytest.importorskip("altair")
    from sinkpaper.book.figures import budget as fig

    for seed in (0, 1, 2):
        _store(store, "configs/architecture.yaml", "pos_absolute", seed, 5.90, lambda step: 0.0)
    data = budget.sink_against_loss({"pos_absolute": ("configs/architecture.yaml", "pos_absolute")},
                                    ("configs/optimization.yaml", "default"), store=str(store))
    assert min(r["loss"] for r in data["rows"] if r["last"] and r["role"] == "change") > \
        max(data["onset"].per_seed.values()) + fig.ZOOM                 # it stopped outside the zoom
    [panel] = fig.sink_against_loss_chart(data).charts
    evals = panel.to_dict()["layer"][1]["data"]["values"]
    assert sum(v["last"] for v in evals if v["role"] == "change") == 3


def test_the_sink_against_loss_caption_leads_with_what_each_run_reads(store):
    """The finding first, read by the guard from each stored run: a suppressor past the onset loss, a slow learner
    not yet, a change with a sink; a change whose seeds differ names them."""
    _store(store, "configs/architecture.yaml", "pos_relative", 0, 5.10, _forms_at(1200))
    _store(store, "configs/architecture.yaml", "pos_learnable", 0, 4.90, lambda step: 0.0)
    _store(store, "configs/architecture.yaml", "pos_learnable", 1, 5.30, lambda step: 0.0)
    data = budget.sink_against_loss({p: ("configs/architecture.yaml", p) for p in
                                     ("pos_nope", "pos_alibi", "pos_relative", "pos_learnable")},
                                    ("configs/optimization.yaml", "default"), store=str(store))
    assert budget.budget_finding(data["readings"]) == (
        "On each run's plateau, no sink past the base's onset loss: pos_alibi, pos_learnable (seed 0); not yet: "
        "pos_nope, pos_learnable (seed 1); a sink: pos_relative (seed 0).")
    one = [budget.Reading("a", 0, 0.0, True), budget.Reading("b", 0, 7.0, False)]
    assert budget.budget_finding(one) == ("On each run's plateau (seed 0 of each), no sink past the base's onset "
                                          "loss: a; between 5 and 10 %: b.")
    assert budget.budget_finding([]) == ""
    apart = [budget.Reading("a", 0, 0.0, True), budget.Reading("b", 1, 0.0, True)]   # one run each, other seeds
    assert budget.budget_finding(apart) == \
        "On each run's plateau, no sink past the base's onset loss: a (seed 0), b (seed 1)."


def test_a_run_just_begun_draws_each_smoothed_loss_once():
    """Two evaluations, fewer than the running mean spans, share one smoothed loss: the chart draws it once (at
    the later step), so the run's line never passes one loss twice."""
    p = {"config": {"run": {"seed": 1}, "optim": {"steps": 10000}},
         "curve": [{"step": 100, "val_loss": 6.3, "sink_k": {"1": 0.0}},
                   {"step": 200, "val_loss": 6.0, "sink_k": {"1": 1.0}}]}
    rows = budget.loss_rows(p, "pos_alibi", "running")
    assert [(r["step"], r["last"]) for r in rows] == [(200, True)] and rows[0]["loss"] == pytest.approx(6.15)
