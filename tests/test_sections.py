"""The helpers of the Sections 4-6 chapters (sinkpaper.book.sections): the metric's uniform floor under masks,
tables and charts of (synthetic) stored payloads, and the per-head mechanism."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("altair")
from sinkpaper.book import sections  # noqa: E402

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
    causal = sections.uniform_alpha(64)
    assert causal[0] == pytest.approx(sum(1 / t for t in range(1, 65)) / 64)          # H_64 / 64 = 0.074
    assert causal[-1] == pytest.approx(1 / 64)
    w4 = sections.uniform_alpha(64, window=4)
    assert w4[0] == pytest.approx((1 + 1 / 2 + 1 / 3 + 1 / 4) / 4)                      # H_4 / 4 = 0.52 > eps
    assert w4[10] == pytest.approx(1 / 4)                                              # full windows: 1/w
    p4 = sections.uniform_alpha(64, prefix=4)
    assert p4[0] == pytest.approx(p4[3])                                               # the prefix is symmetric
    assert sections.excess_alpha(w4[0], w4[0]) == 0 and sections.excess_alpha(1.0, 0.3) == 1


def test_means():
    ps = [payload("fixed_pos2", s, {2: 100, 1: 0}, 0.03) for s in (0, 1)]
    ps += [payload("fixed_pos3", 0, {}, 0.07)]
    assert sections.mean_sink(ps, "fixed_pos2", 2) == 100 and sections.mean_sink(ps, "nope") is None
    assert sections.mean_alpha_1(ps, "fixed_pos2") == pytest.approx(0.03)


def test_tables_and_charts_from_payloads():
    ps = [payload("recipe", s, {1: 100}, 0.9, curve([0, 50, 100])) for s in (0, 1, 2)]
    ps += [payload("window_4", 0, {1: 100, 2: 80}, 0.53, curve([100, 100]), mask="window", window=4)]
    t = sections.points_table(ps, ["window_4", "recipe", "missing"], ks=(1, 2), uniform=True, paper={"recipe": "41"})
    assert [r["point"] for r in t.rows] == ["window_4", "recipe"]
    w4 = t.rows[0]
    assert w4["uniform alpha_1"] == pytest.approx(0.521, abs=1e-3) and w4["excess"] < 0.05
    assert t.rows[1]["Sink_1 %"] == "100.0 [100.0, 100.0]" and t.rows[1]["paper"] == "41"
    e = sections.emergence_table(ps, ["recipe"]).rows
    assert len(e) == 3 and e[0]["first step with Sink_k >= 50 %"] == 200 and e[0]["tokens seen then"] == 2000
    for chart in (sections.sweep_chart(ps, ["recipe", "window_4"]),
                  sections.sweep_chart(ps, ["recipe"], value="alpha_1"),
                  sections.position_profile_chart(ps, ["recipe", "window_4"], "where"),
                  sections.curve_chart(sections.sink_curve_rows(ps[0], "seed 0", 1), "Sink_1 %", "c", dashed=["x"]),
                  sections.row(sections.sweep_chart(ps, ["recipe"]), sections.sweep_chart(ps, ["window_4"]))):
        assert chart.to_dict()
    labels, charts = sections.alpha_grid_steps(ps[0]["curve"])
    assert labels == ["step 100", "step 200", "step 300"] and len(charts) == 3
    assert sections.span([0.1, 0.1]) == "0.10" and sections.span([0.2, 0.1]) == "0.10-0.20"
    assert sections.sig(None) == "—"


def test_charts_with_nothing_to_draw_say_so_instead_of_an_empty_data_set():
    # vega-lite gives an empty data set an infinite domain: console errors and a broken SVG on the page (CI
    # caught it on 06_loss once the first text-profile runs, none of them a charted point, were stored)
    ps = [payload("recipe", 0, {1: 100}, 0.9, curve([0, 50, 100]))]
    for chart in (sections.sweep_chart(ps, ["wd_0"], title="t"),
                  sections.position_profile_chart(ps, ["wd_0", "prefix_5"], "t"),
                  sections.curve_chart([{"run": "r", "tokens": 0, "step": 0, "Sink_1 %": None}], "Sink_1 %", "t")):
        spec = chart.to_dict()
        values = spec["data"]["values"]
        assert len(values) == 1 and "no " in values[0]["message"] and spec["mark"]["type"] == "text"
    assert "wd_0, prefix_5" in sections.position_profile_chart(ps, ["wd_0", "prefix_5"], "t").to_dict()["data"]["values"][0]["message"]


def test_lm_sweep_at_cpu_reads_the_text_profile_and_says_what_is_missing(tmp_path):
    lm = sections.lm_sweep(str(REPO / "configs/optimization.yaml"), "cpu", (0,), points=["default"],
                           store=str(tmp_path))
    # at cpu the text sweep's seeds are read, whatever gpu_seeds says
    assert lm.profile == "text" and lm.payloads == [] and lm.missing.missing == [("default", s) for s in sections.TEXT_SEEDS]
    assert "Not in the results store" in lm.missing_text() and "`text`" in lm.missing_text()  # the profile exists; its runs do not


def test_mechanism_helpers_on_a_small_model():
    from sinkpaper import mechanism
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
    i = sections.pick_sequence(ids, 3, want=1)
    cells = sections.trigger_cells(ids[i], 3)
    assert cells and all(q - k == 1 and int(ids[i, q]) < 3 for q, k in cells)
    amap = sections.head_map(model, ids[i], 1, 0)
    assert amap.shape == (32, 32) and np.allclose(amap.sum(-1), 1, atol=1e-5)
    assert sections.attention_map_chart(amap, cells, "map").to_dict()
