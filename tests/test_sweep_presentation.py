"""What the Sections 4-6 chapters read and draw (sinkpaper.results.sweeps / .curves / .numbers,
sinkpaper.book.tables / .figures, sinkpaper.mechanism): the metric's uniform floor under
masks, summaries over seeds, tables and charts of (synthetic) stored payloads, and the per-head mechanism."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("altair")
from sinkpaper import mechanism, metrics, paper  # noqa: E402
from sinkpaper.book import figures, tables  # noqa: E402
from sinkpaper.results import curves, numbers, reading, sweeps  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def payload(point, seed, sinks, alpha_1, curve=None, mask=None, window=None, prefix=None, steps=1500):
    sink_k = {str(k): 0.0 for k in range(1, 11)}
    sink_k.update({str(k): float(v) for k, v in sinks.items()})
    return {"name": f"miniature/{point}", "hash": f"{point}-{seed}", "profile": "cpu",
            "config": {"run": {"seed": seed}, "eval": {"seq_len": 64}, "model": {"mask": mask, "window": window},
                       "data": {"prefix_lm": prefix}},
            "result": {"sink_k": sink_k, "alpha_1_mean": alpha_1, "final_loss": 3.1, "tokens_seen": 1000,
                       "step": steps, "provenance": {"hardware": "cpu", "code_version": "x", "computed_at": "t"}},
            "curve": curve or []}


def curve(sinks):
    return [{"step": 100 * (i + 1), "tokens": 1000 * (i + 1), "sink_k": {"1": s, "2": 0.0}, "alpha_1_mean": s / 100,
             "alpha_1_matrix": [[s / 100, s / 200]], "loss": 3.0, "val_loss": 3.0} for i, s in enumerate(sinks)]


def test_uniform_floor_matches_the_closed_forms():
    causal = metrics.uniform_alpha(64)
    assert causal[0] == pytest.approx(sum(1 / t for t in range(1, 65)) / 64)          # H_64 / 64 = 0.074
    assert causal[-1] == pytest.approx(1 / 64)
    w4 = metrics.uniform_alpha(64, window=4)
    assert w4[0] == pytest.approx((1 + 1 / 2 + 1 / 3 + 1 / 4) / 4)                      # H_4 / 4 = 0.52 > eps
    assert w4[10] == pytest.approx(1 / 4)                                              # full windows: 1/w
    p4 = metrics.uniform_alpha(64, prefix=4)
    assert p4[0] == pytest.approx(p4[3])                                               # the prefix is symmetric
    assert metrics.excess_alpha(w4[0], w4[0]) == 0 and metrics.excess_alpha(1.0, 0.3) == 1


def test_means():
    ps = [payload("fixed_pos2", s, {2: 100, 1: 0}, 0.03) for s in (0, 1)]
    ps += [payload("fixed_pos3", 0, {}, 0.07)]
    assert figures.book_mean(ps, "fixed_pos2", "Sink_2") == 100 and figures.book_mean(ps, "nope") is None
    assert figures.book_mean(ps, "fixed_pos2", "alpha_1") == pytest.approx(0.03)
    # with a curve, the prose's number is the plateau the tables and verdicts read, not the last evaluation:
    # steps 100..1000, the last 20 % of the steps (>= 800) hold 30, 50 and 10 (the run ends at 10)
    c = curve([0, 0, 0, 0, 0, 0, 0, 30, 50, 10])
    runs = [payload("p", 0, {1: 10}, 0.1, curve=c, steps=1000), payload("p", 1, {1: 10}, 0.1, curve=c, steps=1000)]
    assert figures.book_mean(runs, "p") == pytest.approx(30.0)
    assert figures.book_peak(runs, "p") == (1, pytest.approx(30.0))


def test_tables_and_charts_from_payloads():
    ps = [payload("recipe", s, {1: 100}, 0.9, curve([0, 50, 100])) for s in (0, 1, 2)]
    ps += [payload("window_4", 0, {1: 100, 2: 80}, 0.53, curve([100, 100]), mask="window", window=4)]
    t = tables.points_table(ps, ["window_4", "recipe", "missing"], ks=(1, 2), uniform=True, paper={"recipe": "41"})
    assert [r["point"] for r in t.rows] == ["window_4", "recipe"]
    w4 = t.rows[0]
    assert w4["uniform alpha_1"] == pytest.approx(0.521, abs=1e-3) and w4["excess"] < 0.05
    # three evaluations, one of them in the last 20 % of the steps: too short for a plateau, so the final value, marked
    assert t.rows[1]["Sink_1 %"] == "100.0 [100.0, 100.0] (final)" and t.rows[1]["paper"] == "41"
    e = tables.emergence_table(ps, ["recipe"]).rows
    assert len(e) == 3 and e[0]["first step with Sink_k >= 50 %"] == 200 and e[0]["tokens seen then"] == 2000
    for chart in (figures.sweep_chart(ps, ["recipe", "window_4"]),
                  figures.sweep_chart(ps, ["recipe"], value="alpha_1"),
                  figures.position_profile_chart(ps, ["recipe", "window_4"], "where"),
                  figures.curve_chart(curves.curve_rows(ps[0], "seed 0", ("Sink_1",)), "Sink_1 %", "c", dashed=["x"]),
                  figures.row(figures.sweep_chart(ps, ["recipe"]), figures.sweep_chart(ps, ["window_4"]))):
        assert chart.to_dict()
    labels, charts = figures.alpha_grid_steps(ps[0]["curve"])
    assert labels == ["step 100", "step 200", "step 300"] and len(charts) == 3
    assert numbers.span([0.1, 0.1]) == "0.10" and numbers.span([0.2, 0.1]) == "0.10-0.20"
    assert numbers.sig(None) == "—"


def test_charts_with_nothing_to_draw_say_so_instead_of_an_empty_data_set():
    # vega-lite gives an empty data set an infinite domain: console errors and a broken SVG on the page (CI
    # caught it on 06_loss once the first text-profile runs, none of them a charted point, were stored)
    ps = [payload("recipe", 0, {1: 100}, 0.9, curve([0, 50, 100]))]
    for chart in (figures.sweep_chart(ps, ["wd_0"], title="t"),
                  figures.sweep_chart(ps, ["wd_0"], title="t", value=("Sink*", "Sink_1")),
                  figures.position_profile_chart(ps, ["wd_0", "prefix_5"], "t"),
                  figures.curve_chart([{"run": "r", "tokens": 0, "step": 0, "Sink_1 %": None}], "Sink_1 %", "t")):
        spec = chart.to_dict()
        values = spec["data"]["values"]
        assert len(values) == 1 and "no " in values[0]["message"] and spec["mark"]["type"] == "text"
    assert "wd_0, prefix_5" in figures.position_profile_chart(ps, ["wd_0", "prefix_5"], "t").to_dict()["data"]["values"][0]["message"]


def test_lm_sweep_at_cpu_reads_the_text_profile_and_says_what_is_missing(tmp_path):
    lm = sweeps.lm_sweep(str(REPO / "configs/optimization.yaml"), "cpu", (0,), points=["default"],
                           store=str(tmp_path))
    # at cpu the text sweep's seeds are read, whatever gpu_seeds says
    assert lm.profile == "text" and lm.payloads == [] and lm.missing.missing == [("default", s) for s in sweeps.TEXT_SEEDS]
    assert "Not in the results store" in lm.missing_text() and "`text`" in lm.missing_text()  # the profile exists; its runs do not


def test_mechanism_helpers_on_a_small_model():
    from sinkpaper.data.packing import Packing
    from sinkpaper.data.sources import bigram_backcopy
    from sinkpaper.models import ModelConfig, SinkModel

    torch.manual_seed(0)
    task = bigram_backcopy(vocab_size=16, n_tokens=20_000)
    model = SinkModel(ModelConfig(vocab_size=task.vocab_size, d_model=32, n_layers=2, n_heads=2, d_ff=64,
                                  max_seq_len=64)).eval()
    ids = Packing(context=32, bos_id=task.bos_id).eval_batch(task.val, 8)["input_ids"]
    rows = mechanism.head_rows(model, ids, n_triggers=3)
    assert [(r["layer"], r["head"]) for r in rows] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert all(0 <= r["to previous token from other queries"] <= 1 for r in rows)
    park = mechanism.attention_by_key(model, ids, 3, n_keys=4)
    assert len(park) == 4 and all(0 <= r["to position 4"] <= 1 for r in park)
    i = mechanism.pick_sequence(ids, 3, want=1)
    cells = mechanism.trigger_cells(ids[i], 3)
    assert cells and all(q - k == 1 and int(ids[i, q]) < 3 for q, k in cells)
    amap = mechanism.head_map(model, ids[i], 1, 0)
    assert amap.shape == (32, 32) and np.allclose(amap.sum(-1), 1, atol=1e-5)
    assert figures.attention_map_chart(amap, cells, "map").to_dict()


def test_one_metric_vocabulary_and_the_summaries_over_seeds():
    ps = [payload("prefix_4", s, {1: 40 + 10 * s, 3: 90 - s}, 0.5 + 0.1 * s, prefix=4) for s in (0, 1, 2)]
    ps[0]["result"]["sink_star"] = 12.5
    # every name reads the payload's own field; the statistics are the plain formulas
    assert sweeps.values_of(ps, "prefix_4", "Sink_1") == [40.0, 50.0, 60.0]
    assert sweeps.values_of(ps, "prefix_4", "Sink*") == [12.5]                   # runs without one are left out
    assert figures.book_mean(ps, "prefix_4", "loss") == 3.1 and figures.book_mean(ps, "prefix_4", "val_loss") is None
    assert reading.spread([1.0, 2.0, 6.0]) == {"mean": 3.0, "min": 1.0, "max": 6.0, "n": 3}
    u = float(metrics.uniform_alpha(64, prefix=4)[0])
    assert reading.uniform_floor(ps[0]["config"]) == u
    assert figures.book_mean(ps, "prefix_4", "excess alpha_1") == pytest.approx((0.6 - u) / (1 - u))
    assert reading.metric_of(ps[0], "prefix length") == 4 and reading.metric_of(ps[0], "first Sink_1") is None
    with pytest.raises(ValueError, match="unknown metric 'Sink star'; valid: Sink_k"):
        reading.metric_of(ps[0], "Sink star")
    # where the sink sits: the largest mean Sink_k, the smallest k on a tie; (None, None) without runs
    assert figures.book_peak(ps, "prefix_4") == (3, 89.0)
    assert figures.book_peak([payload("flat", 0, {}, 0.1)], "flat") == (1, 0.0)
    assert figures.book_peak(ps, "nope") == (None, None)


def test_when_the_sink_emerged_per_seed():
    from sinkpaper.book import prose

    ps = [payload("recipe", 0, {1: 100}, 0.9, curve([0, 60, 100])), payload("recipe", 1, {1: 100}, 0.9, curve([70])),
          payload("recipe", 2, {1: 0}, 0.1, curve([0, 10]))]
    first = curves.first_reaching(ps[0]["curve"])
    assert (first["step"], first["tokens"]) == (200, 2000)
    assert curves.first_reaching(ps[2]["curve"]) is None
    assert curves.reaching_steps(ps, "recipe") == [200, 100]
    assert prose.first_reached(ps, "recipe") == "at step 100-200" and prose.first_reached(ps, "nope") == "in no seed"


def test_the_formatters():
    assert numbers.fmt(87.54) == "87.5 %" and numbers.fmt(0.1234, 3, "") == "0.123" and numbers.fmt(None) == "—"
    assert numbers.sig(0.074123) == "0.0741" and numbers.sig(float("nan")) == "—"
    assert numbers.fmt_spread([1.0, 2.0, 6.0]) == "3.0 [1.0, 6.0]" and numbers.fmt_spread([5.0], 3) == "5.000"
    assert numbers.fmt_spread([]) == "—" and numbers.fmt_spread(reading.spread([1.0, 3.0])) == "2.0 [1.0, 3.0]"


def test_the_tables_and_dots_read_each_run_on_its_plateau_as_the_verdicts_do():
    """A run that ends one evaluation below its plateau shows its plateau, not the dip (what a reader
    compares with the verdict beside it); a seed without a plateau is shown final and says so."""
    from sinkpaper.paper import PLATEAU
    dip = curve([0, 0, 0, 0, 0, 0, 0, 40, 50, 10])           # steps 100..1000: the last 20 % holds 800, 900, 1000
    ps = [payload("recipe", 0, {1: 10}, 0.1, dip, steps=1000), payload("recipe", 1, {1: 10}, 0.1, dip, steps=1000)]
    assert PLATEAU == 0.2
    row = tables.points_table(ps, ["recipe"]).rows[0]
    assert row["Sink_1 %"] == "33.3 [33.3, 33.3]" and row["alpha_1"] == 0.333      # (40 + 50 + 10) / 3, not 10
    dots = figures.sweep_chart(ps, ["recipe"]).to_dict()
    assert {round(d["v"], 1) for d in dots["layer"][0]["data"]["values"]} == {33.3}
    ps.append(payload("recipe", 2, {1: 70}, 0.1, curve([70]), steps=100))
    assert tables.points_table(ps, ["recipe"]).rows[0]["Sink_1 %"] == "45.6 [33.3, 70.0] (final in 1 of 3)"


def test_the_per_point_table_with_points_names_and_the_registry():
    from sinkpaper.book.points import BIASES
    from sinkpaper.paper import paper_text

    ps = [payload("recipe", 0, {1: 100}, 0.9), payload("sink_token", 0, {1: 50}, 0.4, steps=3000)]
    ps[1]["result"]["sink_star"], ps[1]["result"]["tokens_seen"] = 90.0, 2000
    t = tables.points_table(ps, BIASES, names={"none": "recipe"}, paper=True)
    assert [r["point"] for r in t.rows] == ["recipe", "sink_token"]
    assert t.rows[1]["what changes"] == "learnable sink token at position 0" and t.rows[1]["Sink_1 %"] == "50.0 (final)"
    assert t.rows[1]["Sink* % (bias position)"] == "90.0 (final)" and t.rows[0]["Sink* % (bias position)"] == "—"
    assert t.rows[0]["paper"] == paper_text("none") and t.rows[1]["tokens"] == "2,000"   # tokens differ: shown
    plain = tables.points_table(ps[:1], ["recipe"])        # names only, no Sink* run, one token count
    assert plain.columns == ("point", "seeds", "Sink_1 %", "alpha_1", "loss")


def test_one_curve_chart_over_tokens_or_steps():
    rows = (curves.curve_rows(payload("b", 1, {}, 0.1, curve([0, 100])), "b")
            + curves.curve_rows(payload("a", 0, {}, 0.1, curve([-1.0, 5.0])), "a"))
    assert rows[0] == {"run": "b", "step": 100, "tokens": 1000, "loss": 3.0, "val_loss": 3.0, "Sink_1 %": 0,
                       "alpha_1": 0.0}
    spec = figures.curve_chart(rows, "Sink_1 %", "t", dashed=["a"]).to_dict()
    assert spec["encoding"]["x"]["title"] == "tokens seen" and spec["encoding"]["color"]["sort"] == ["b", "a"]
    assert {v["x"] for v in spec["data"]["values"]} == {1000, 2000} and spec["encoding"]["y"]["scale"]["zero"] is False
    spec = figures.curve_chart(rows, "Sink_1 %", "t", x="step", log_y=True).to_dict()
    assert spec["encoding"]["x"]["title"] == "step" and spec["encoding"]["y"]["scale"]["type"] == "log"
    assert sorted(v["y"] for v in spec["data"]["values"]) == [5.0, 100.0]          # log: non-positive dropped
    layered = figures.curve_chart(rows, "alpha_1", "t", zero=True, rule_y=0.3).to_dict()
    assert layered["layer"][0]["encoding"]["y"]["scale"]["zero"] is True
    assert layered["layer"][1]["mark"]["type"] == "rule"


def test_one_dot_and_tick_chart_with_one_or_several_metrics():
    ps = [payload("k_bias", s, {1: 10.0 * s}, 0.1) for s in (0, 1)] + [payload("recipe", 0, {1: 100}, 0.9)]
    ps[0]["result"]["sink_star"], ps[1]["result"]["sink_star"] = 80.0, 100.0
    dots, ticks, marks = figures.sweep_chart(ps, ["recipe", "k_bias"], value=("Sink*", "Sink_1")).to_dict()["layer"]
    assert sorted((d["point"], d["metric"], d["v"]) for d in dots["data"]["values"]) == [
        ("k_bias", "Sink* (bias position)", 80.0), ("k_bias", "Sink* (bias position)", 100.0),
        ("k_bias", "Sink_1", 0.0), ("k_bias", "Sink_1", 10.0), ("recipe", "Sink_1", 100.0)]
    assert {(m["point"], m["metric"]): m["v"] for m in ticks["data"]["values"]} == {
        ("k_bias", "Sink* (bias position)"): 90.0, ("k_bias", "Sink_1"): 5.0, ("recipe", "Sink_1"): 100.0}
    # the paper's numbers where the registry has them (k_bias), none for a point it does not give (recipe)
    assert {(m["point"], m["metric"]): m["v"] for m in marks["data"]["values"]} == {
        ("k_bias", "Sink* (bias position)"): paper.NUMBERS["k_bias: Sink*"].value,
        ("k_bias", "Sink_1"): paper.NUMBERS["k_bias: Sink_1"].value}
    dots, ticks, _ = figures.sweep_chart(ps, ["k_bias"]).to_dict()["layer"]
    assert [d["v"] for d in dots["data"]["values"]] == [0.0, 10.0] and ticks["data"]["values"] == [{"point": "k_bias",
                                                                                                    "v": 5.0}]




def test_loss_spikes_are_counted_against_the_running_median():
    flat = [{"step": 20 * i, "loss": 5.0 - 0.01 * i} for i in range(30)]
    assert curves.loss_spikes(flat) == []                          # a falling loss has no spike
    spiky = [dict(c) for c in flat]
    spiky[15]["loss"] += 0.6                                       # 0.6 nats above the median of the 10 before
    spiky[20]["loss"] += 0.4                                       # below the margin: not a spike
    spiky[25]["loss"] = float("nan")                               # a non-finite loss is a spike
    got = curves.loss_spikes(spiky)
    assert [s["step"] for s in got] == [300, 500] and abs(got[0]["median"] - 4.9) < 0.006
    assert curves.loss_spikes(spiky[:10]) == []                    # fewer logged steps than the window
    # a run restarted before its first checkpoint logged its first steps twice: each step is read once
    assert curves.loss_spikes(flat[:12] + flat) == []


def test_spike_and_massive_rows_read_each_run_and_name_the_runs_without_the_ratio():
    curve = [{"step": 20 * i, "loss": 5.0 + (1.0 if i == 14 else 0.0)} for i in range(1, 20)]
    curve[-1].update(sink_k={"1": 30.0}, massive_activation_ratio_by_layer=[1.0, 12.5, 30.0])
    run = {"name": "after_paper/gate_elementwise", "config": {"run": {"seed": 1}, "optim": {"warmup": 100}},
           "result": {"val_loss": 5.1}, "curve": curve}
    old = {**run, "name": "after_paper/softmax", "curve": [dict(c) for c in curve[:-1]]}
    [row] = curves.spike_rows([run], ["gate_elementwise"])
    assert row["loss spikes"] == 1 and row["at steps"] == "280" and row["highest logged loss after warm-up"] == 6.0
    rows, without = curves.massive_rows([run, old], ["softmax", "gate_elementwise"])
    assert rows == [{"point": "gate_elementwise", "seed": 1, "layer 0": 1.0, "layer 1": 12.5, "layer 2": 30.0}]
    assert without == ["softmax"]


def test_lm_sweep_at_gpu_reads_the_store_and_trains_nothing(tmp_path, monkeypatch):
    import sinkpaper.train.sweep as S
    monkeypatch.setattr(S, "run_sweep", lambda *a, **k: pytest.fail("a chapter never trains a family's sweep"))
    lm = sweeps.lm_sweep(str(REPO / "configs/data.yaml"), "gpu", (0, 1), points=["random_first"], store=str(tmp_path))
    assert lm.profile == "gpu" and lm.payloads == [] and lm.missing.missing == [("random_first", 0), ("random_first", 1)]
    assert "`gpu` profile" in lm.missing_text()
    # the committed store's gpu-profile base run (the calibration's seed 0) is read where a family's point is it
    lm = sweeps.lm_sweep(str(REPO / "configs/data.yaml"), "gpu", (0,), points=["no_fixed_token"])
    assert [(p["name"], p["hash"]) for p in lm.payloads] == [("data/no_fixed_token", "58e6dc504de4b0e9")]
    assert not lm.computed_now


def test_a_claims_table_prints_a_note_that_several_claims_share_once():
    from sinkpaper.book import tables

    family = "real text: each half is read where it can fail"
    rows = [{"claim": f"claim {i}", "paper": "1 %", "rule": "r", "notes": [family, f"only {i}"],
             "ours (miniature)": "not run: no point", "verdict (miniature)": "no result (not run)"} for i in (1, 2)]
    rows.append({"claim": "claim 3", "paper": "2 %", "rule": "r", "note": "its own"})
    html = tables.ClaimsTable(rows)._repr_html_()
    assert html.count(family) == 1 and "<ol><li>" + family in html
    assert html.count("shared note 1 (under the table)") == 2
    assert "only 1" in html and "only 2" in html and "its own" in html and "shared note" not in html.split("claim 3")[1]
    # the chip says "not run"; why the scale does not run the claim is on hover, not repeated in every row
    assert html.count(">no result (not run)</span>") == 2 and html.count('title="no point"') == 2
    assert ">no point<" not in html
    # a scale whose every value is a dash lists none of them
    dashes = {**rows[2], "ours (miniature)": "a \u2014, b (beside) \u2014", "verdict (miniature)": "no result: too few"}
    assert "\u2014" not in tables.ClaimsTable([dashes])._repr_html_().split("<tbody>")[1]
    alone = tables.ClaimsTable(rows[2:])._repr_html_()
    assert "Shared notes" not in alone and "its own" in alone
