"""The section chapters 4-9 lead with (sinkpaper.book.realtext), on real stored text-profile payloads: what it
reads from the stored config, the row it builds per point, and what it says about the paper's base run."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

pytest.importorskip("altair")
from sinkpaper import paper  # noqa: E402
from sinkpaper.book import figures, realtext  # noqa: E402
from sinkpaper.results.sweeps import LMSweep, StoredSweep  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _stored_text_run() -> dict:
    from sinkpaper.train.store import entries

    for _, p in entries(REPO / "results/store"):
        if p.get("profile") == "text" and p["name"] == "optimization/default":
            return p
    pytest.skip("no stored text-profile base run in results/store")


def _as(p: dict, point: str, seed: int, sink_1: float, val_loss: float) -> dict:
    q = copy.deepcopy(p)
    q["name"], q["hash"] = f"optimization/{point}", f"{point}-{seed}"
    q["config"]["run"]["seed"] = seed
    q["result"]["sink_k"]["1"], q["result"]["val_loss"] = sink_1, val_loss
    for c in q["curve"]:                 # its plateau too: the table reads each run there
        if "sink_k" in c:
            c["sink_k"]["1"] = sink_1
    return q


def test_section_reads_the_recipe_from_the_run_and_puts_the_paper_beside_each_point():
    base = _stored_text_run()
    ps = [_as(base, "default", 0, 20.0, 5.2), _as(base, "default", 1, 40.0, 5.0), _as(base, "lr_x2", 0, 60.0, 5.3)]
    lm = LMSweep("configs/optimization.yaml", "text", ps,
                 StoredSweep("configs/optimization.yaml", "text", missing=[("lr_x0.5", 0)]))
    PAPER = {p: paper.paper_text(p) for p in ("default", "lr_x2")}   # the registry's numbers, not retyped here
    out = realtext.section(lm, ["lr_x2", "default", "lr_x0.5"], paper=PAPER,
                           curves=["default"], maps=["default", "absent"])
    fold = out[0]   # the recipe and the per-seed table, folded under a title
    assert isinstance(fold, figures.Fold) and fold.title.startswith("The runs (text profile)")
    assert fold._repr_html_().startswith('<details class="spx-fold"><summary>')
    recipe = fold.items[0].data
    m, d = base["config"]["model"], base["config"]["data"]
    assert f"{m['n_layers']} layers x {m['n_heads']} heads, d {m['d_model']}" in recipe
    assert f"context {d['context']}" in recipe and "fixed first token" in recipe and f"{base['result']['tokens_seen']:,}" in recipe
    rows = fold.items[1].rows
    assert [r["point"] for r in rows] == ["lr_x2", "default"]           # lr_x0.5 has no run: left out of the table
    assert rows[1]["Sink_1 %"] == "30.0 [20.0, 40.0]" and rows[1]["held-out loss"] == "5.100 [5.000, 5.200]"
    assert rows[0]["paper"] == PAPER["lr_x2"]
    # the paper's base run packs without a fixed token; ours fixes one: the row says both numbers
    assert rows[1]["paper"] == f"{PAPER['default']} (no fixed token); {paper.paper_text('fixed_pos1')} with one at 1"
    # the curves: the seeds of a point as one mean line and a min-max band, the paper's final number dashed
    [emergence] = [o for o in out if isinstance(o, figures.Figure)]   # numbered figures with captions
    # where the sink sits, head by head: folded, one click away
    [maps_fold] = [o for o in out if isinstance(o, figures.Fold) and o.title.startswith("Where the sink sits")]
    [maps] = maps_fold.items
    assert isinstance(maps, figures.Figure)
    chart = emergence.content.to_dict()   # Sink_1 and mean alpha_1 in one frame, one at a time
    band = [v for v in figures.chart_values(chart) if v.get("metric") == "Sink_1 %"]
    assert {v["group"] for v in band} == {"default"} and all(v["n"] == 2 for v in band)
    assert band[-1]["seeds"].startswith("seed 0: 20, seed 1: 40") and (band[-1]["lo"], band[-1]["hi"]) == (20, 40)
    assert any(v.get("metric") == "alpha_1" for v in figures.chart_values(chart))
    assert figures.draws_the_paper(chart) and not figures.joined_lines(chart)
    caption = emergence.caption   # each point's plateau over its seeds beside the paper's number, seeds said once
    assert caption.startswith("Sink_1 on the plateau (text profile, mean [min, max] over 2 seeds): default 30.0 "
                              f"[20.0, 40.0] % (paper {paper.paper_value('default'):.2f} %).")
    assert "dashed: the paper's final Sink_1" in caption
    assert "Ours fix the first token; the paper's runs did not." in caption     # every point drawn does
    # points over different numbers of seeds say theirs; one the paper gives no number for has none beside it
    mixed = realtext.emergence_caption(ps, ["default", "lr_x2"], {"default": 18.18}, "text")
    assert "(text profile, mean [min, max] over seeds): default 30.0 [20.0, 40.0] % (seeds 0, 1) (paper 18.18 %); " \
           "lr_x2 60.0 % (seed 0)." in mixed
    zeros = [_as(base, "lr_x0.5", sd, 0.0, 5.3) for sd in (0, 1)]   # every seed the same: said once
    assert "lr_x0.5 0.0 % in every seed (paper" in realtext.emergence_caption(
        ps[:2] + zeros, ["default", "lr_x0.5"], realtext.paper_levels(["default", "lr_x0.5"]), "text")
    assert "default (seed 0): sink heads" in maps.caption and "absent" not in maps.caption
    assert not any("Provenance" in str(getattr(o, "data", "")) for o in out)   # said once per page, not here


def test_show_records_where_the_runs_came_from_and_what_is_missing(tmp_path, monkeypatch):
    from sinkpaper.book import sources

    monkeypatch.setenv("SINKPAPER_BOOK_RESULTS", str(tmp_path))
    base = _stored_text_run()
    ps = [_as(base, "default", 0, 20.0, 5.2), _as(base, "lr_x2", 0, 60.0, 5.3)]
    lm = LMSweep("configs/optimization.yaml", "text", ps,
                 StoredSweep("configs/optimization.yaml", "text", missing=[("lr_x0.5", 0), ("lr_x0.5", 1)]))
    with pytest.raises(RuntimeError, match="begin"):   # a chapter starts its ledger first
        sources.record({"runs": 1})
    sources.begin("04_optimization")
    realtext.show(lm, ["lr_x2", "default", "lr_x0.5"], curves=["default"], maps=[])
    [ledger] = sources.load_all(tmp_path)
    assert ledger["stem"] == "04_optimization" and ledger["counts"]["stored"] == 2
    assert ledger["counts"]["missing"] == 2 and "lr_x0.5" in ledger["missing"][0]["text"]
    assert "dtype=bf16" in ledger["entries"][0]["line"].replace("`", "")
    line = sources.line_text()
    assert line.startswith("*Sources:* 2 stored runs read") and "2 runs not stored yet" in line
    assert f"]({sources.APPENDIX}.ipynb)" in line


def test_section_without_runs_says_so_and_its_sources_say_what_is_missing(tmp_path, monkeypatch):
    from sinkpaper.book import sources

    monkeypatch.setenv("SINKPAPER_BOOK_RESULTS", str(tmp_path))
    lm = LMSweep("configs/optimization.yaml", "text", [],
                 StoredSweep("configs/optimization.yaml", "text", missing=[("default", 0)]))
    [said] = realtext.section(lm, ["default"])
    assert "No stored run" in said.data and "sources appendix" in said.data
    sources.begin("04_optimization")
    realtext.show(lm, ["default"])
    [ledger] = sources.load_all(tmp_path)
    assert not ledger["entries"] and "python -m sinkpaper sweep" in ledger["missing"][0]["text"]


def test_points_read_at_their_own_position_with_the_papers_number_there_and_their_onsets():
    """A fixed token at 2 is read at k = 2 (Sink_2 and alpha_2), beside the paper's Sink_2 of its point without the
    depth suffix; the onset is the first evaluation at or above the registry's 'has a sink'."""
    base = _stored_text_run()
    ps = []
    for seed, sink_2 in ((0, 30.0), (1, 2.0)):
        q = _as(base, "fixed_pos2_layers_4", seed, 0.0, 5.0)
        q["config"]["data"]["fixed_pos"] = 2
        evals = [c for c in q["curve"] if "sink_k" in c]
        for i, c in enumerate(evals):   # seed 0 crosses 10 % at its second evaluation; seed 1 never does
            c["sink_k"]["2"] = sink_2 if i >= 1 else 0.0
            c["alpha_k"] = {**(c.get("alpha_k") or {}), "2": 0.1}
        ps.append(q)
    fig, table = realtext.own_position(ps, {"fixed_pos2_layers_4": 2}, "4 layers")
    [row] = table
    assert row["k"] == 2 and row["paper"] == f"{paper.NUMBERS['fixed_pos2: Sink_2'].value:.2f}"
    assert row["Sink_k % (plateau)"] == "16.0 [2.0, 30.0]"
    second = [c for c in ps[0]["curve"] if "sink_k" in c][1]["step"]
    assert row["onset (Sink_k >= 10 %)"] == f"seed 0: step {second}, seed 1: never"
    chart = fig.content.to_dict()   # Sink_k and alpha_k at the position, one at a time in one frame
    assert {v["metric"] for v in figures.chart_values(chart) if "metric" in v} == {"Sink at its position %",
                                                                                     "alpha at its position"}
    assert figures.draws_the_paper(chart) and not figures.joined_lines(chart)
    assert "fixed_pos2_layers_4: Sink_2 16.0 [2.0, 30.0] %" in fig.caption


def test_a_run_that_did_not_learn_or_diverged_is_named_in_its_row_and_never_read():
    """Some seeds fail: one that did not learn (its losses at the unigram level) and one
    that diverged (a divergence record) are named in the onset column and left out of the values and the chart."""
    base = _stored_text_run()
    ps = []
    for seed, sink_2 in ((0, 30.0), (2, 12.0), (3, 90.0)):
        q = _as(base, "fixed_pos2_layers_4", seed, 0.0, 5.0)
        q["config"]["data"]["fixed_pos"] = 2
        for c in q["curve"]:
            if "sink_k" in c:
                c["sink_k"]["2"] = sink_2
            if seed == 3:   # no better than token frequencies: not a result, whatever its Sink_2
                c.update({k: 9.0 for k in ("val_loss", "loss") if k in c})
        ps.append(q)
    fig, table = realtext.own_position(ps, {"fixed_pos2_layers_4": 2}, "4 layers",
                                       diverged=[("fixed_pos2_layers_4", 1, "non-finite loss (first at step 155)")])
    [row] = table
    assert row["Sink_k % (plateau)"] == "21.0 [12.0, 30.0]"
    onset = row["onset (Sink_k >= 10 %)"]
    assert onset.startswith("seed 0: step ") and ", seed 2: step " in onset
    assert onset.endswith("seed 1: diverged (non-finite loss (first at step 155)), not counted, "
                          "seed 3: did not learn, not counted")
    bands = [v for v in figures.chart_values(fig.content.to_dict()) if "seeds" in v]
    assert bands and all(v["n"] == 2 and "seed 3" not in v["seeds"] for v in bands)
    # every run of a point failed: the row says so and shows no value
    _, [row] = realtext.own_position(ps[2:], {"fixed_pos2_layers_4": 2}, "4 layers")
    assert row["Sink_k % (plateau)"] == "\u2014" and row["onset (Sink_k >= 10 %)"] == "seed 3: did not learn, not counted"


def test_a_stored_sweep_names_diverged_runs_and_reads_extra_seeds_only_where_stored(tmp_path):
    """A divergence record is a result (the paper's "-"): not missing, never a payload; seeds added where a seed
    failed are read where stored and never listed as missing."""
    from sinkpaper.results import sweeps
    from sinkpaper.train.store import write_result
    from sinkpaper.train.sweep import diverged_path, sweep_configs

    config = str(REPO / "configs/data.yaml")
    store = tmp_path / "store"
    store.mkdir()
    want = {cfg.hash(): (pt, sd) for pt, sd, cfg in sweep_configs(config, "text", ["fixed_pos3_layers_4_steps_x2"],
                                                                   [0, 1, 2, 3, 4])}
    template = _stored_text_run()      # a store built for the test: seeds 0 and 3 of the point, the base's curve
    for _, sd, cfg in sweep_configs(config, "text", ["fixed_pos3_layers_4_steps_x2"], [0, 3]):
        write_result(store, cfg, template["result"], template["curve"])
    h1 = next(h for h, (_, sd) in want.items() if sd == 1)
    diverged_path(store, h1).parent.mkdir()
    diverged_path(store, h1).write_text(json.dumps({"hash": h1, "error": "non-finite loss (first at step 155); "
                                                                         "stopped"}))
    sw = sweeps.stored_sweep(config, "text", ["fixed_pos3_layers_4_steps_x2"], (0, 1, 2), str(store),
                             extra_seeds=(3, 4))
    assert sorted(p["config"]["run"]["seed"] for p in sw.payloads) == [0, 3]
    assert sw.diverged == [("fixed_pos3_layers_4_steps_x2", 1, "non-finite loss (first at step 155)")]
    assert sw.missing == [("fixed_pos3_layers_4_steps_x2", 2)]
    text = sw.missing_text()   # the missing seed with its command, the diverged one named apart, never "produce it"
    assert "--seeds 2 " in text and text.endswith(
        "**Diverged** (stored as divergence records, the paper's \"-\", not shown): fixed_pos3_layers_4_steps_x2 "
        "seed 1: non-finite loss (first at step 155).")


def test_the_sources_appendix_lists_a_provenance_shared_by_several_sections_once():
    from sinkpaper.book import sources

    led = {"entries": [{"what": "", "line": "*Provenance:* the chapter's own run"},
                       {"what": "the sweep", "line": "*Provenance:* stored runs"},
                       {"what": "a table", "line": "*Provenance:* the chapter's own run"},
                       {"what": "a chart", "line": "*Provenance:* the chapter's own run"}]}
    assert sources.table_rows(led) == [
        {"#": "1, 3, 4", "what": "a table; a chart", "provenance": "the chapter's own run"},
        {"#": "2", "what": "the sweep", "provenance": "stored runs"}]
    # the parts at least half the sections share (the build's own machine and code) are said once, above the
    # chapters; a row holding all of them says "this build", a row holding some keeps them
    d = "\u00b7"
    a = {"entries": [{"what": "", "line": f"*Provenance:* profile `cpu` {d} device X {d} computed 10:00"},
                     {"what": "w", "line": f"*Provenance:* profile `text` {d} device X {d} runs=3"}]}
    b = {"entries": [{"what": "", "line": f"*Provenance:* profile `cpu` {d} device X"},
                     {"what": "v", "line": f"*Provenance:* model m {d} device Y"}]}
    build = sources.build_parts([a, b])
    assert build == ["profile `cpu`", "device X"] and sources.build_parts([{"entries": b["entries"][:1]}]) == []
    assert [r["provenance"] for r in sources.table_rows(a, build)] == [
        f"this build {d} computed 10:00", f"profile `text` {d} device X {d} runs=3"]
    assert [r["provenance"] for r in sources.table_rows(b, build)] == ["this build", f"model m {d} device Y"]
