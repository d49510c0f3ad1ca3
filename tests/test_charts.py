"""The book's charts of runs (sinkpaper.book.figures): seeds drawn as a mean line and a min-max band, never one
sawtooth line through several seeds; the paper's number drawn where the registry has one, and only there."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("altair")

from sinkpaper import paper  # noqa: E402
from sinkpaper.book import figures  # noqa: E402
from sinkpaper.book.figures import bands, sweep_charts  # noqa: E402


def _run(point: str, seed: int, ys: list[float]) -> dict:
    return {"config": {"run": {"seed": seed}}, "point": point,
            "rows": [{"step": 100 * (i + 1), "tokens": 1000 * (i + 1), "Sink_1 %": y} for i, y in enumerate(ys)]}


def _rows_of(p, label):
    return [{**r, "run": label} for r in p["rows"]]


@pytest.fixture
def runs(monkeypatch):
    monkeypatch.setattr(bands, "point_of", lambda p: p["point"])
    return [_run("softmax", 0, [1, 20, 30]), _run("softmax", 1, [2, 40, 50]), _run("softmax", 2, [0, 10, 60]),
            _run("sigmoid", 0, [0, 0, 1])]


def test_a_line_through_several_seeds_is_caught(runs):
    # every seed's rows under its point's name: the plotting bug that drew three seeds as one sawtooth
    same_label = [{**r, "run": p["point"]} for p in runs for r in p["rows"]]
    chart = figures.curve_chart(same_label, "Sink_1 %", "joined", x="step")
    assert figures.joined_lines(chart.to_dict())
    # one label per run: every line is one run
    per_run = [r for p in runs for r in _rows_of(p, f"{p['point']}, seed {p['config']['run']['seed']}")]
    assert not figures.joined_lines(figures.curve_chart(per_run, "Sink_1 %", "ok", x="step").to_dict())


def test_seeds_are_a_mean_line_and_a_min_max_band(runs):
    rows = figures.seed_rows(runs, _rows_of)
    assert {(r["point"], r["seed"]) for r in rows} == {("softmax", 0), ("softmax", 1), ("softmax", 2), ("sigmoid", 0)}
    chart = figures.band_chart(rows, "Sink_1 %", "bands", x="step")
    assert not figures.joined_lines(chart.to_dict())
    band = {(b["group"], b["x"]): b for b in figures.band_rows(rows, "Sink_1 %", "step")}
    last = band[("softmax", 300)]
    assert (last["lo"], last["hi"], last["mean"], last["n"]) == (30, 60, pytest.approx(140 / 3, rel=1e-3), 3)
    assert last["seeds"] == "seed 0: 30, seed 1: 50, seed 2: 60"


def test_the_paper_is_drawn_where_the_registry_has_a_number_and_nowhere_else(runs):
    assert figures.paper_number("softmax") == paper.NUMBERS["default"].value   # a family's default point
    assert figures.paper_number("fixed_pos2", "Sink_2") == paper.NUMBERS["fixed_pos2: Sink_2"].value
    assert figures.paper_number("no_such_point") is None and figures.paper_number("fixed_pos2", "Sink_7") is None
    rows = figures.seed_rows(runs, _rows_of)
    levels = {"softmax": figures.paper_number("softmax"), "sigmoid": None}
    spec = figures.band_chart(rows, "Sink_1 %", "bands", x="step", paper=levels).to_dict()
    drawn = [r for r in figures.chart_values(spec) if r.get("who") == "paper"]
    assert drawn == [{"group": "softmax", "paper": paper.NUMBERS["default"].value, "who": "paper"}]
    assert figures.draws_the_paper(spec)
    assert not figures.draws_the_paper(figures.band_chart(rows, "Sink_1 %", "none", x="step", paper={}).to_dict())
    # left out, the levels are looked up: softmax (a family's default point) has one, sigmoid's Sink_1 is its Sink*
    auto = [r for r in figures.chart_values(figures.band_chart(rows, "Sink_1 %", "auto", x="step").to_dict())
            if r.get("who") == "paper"]
    assert sorted(r["group"] for r in auto) == ["sigmoid", "softmax"]


def test_specs_are_read_back_from_a_page(runs):
    rows = figures.seed_rows(runs, _rows_of)
    charts = [figures.band_chart(rows, "Sink_1 %", "a", x="step", paper={"softmax": 18.18}),
              figures.curve_chart([{**r, "run": p["point"]} for p in runs for r in p["rows"]], "Sink_1 %", "b",
                                  x="step")]
    page = "<p>text</p>" + figures.Columns(*charts)._repr_html_()
    specs = figures.embedded_specs(page)
    assert len(specs) == 2
    assert [figures.draws_the_paper(s) for s in specs] == [True, False]
    assert [bool(figures.joined_lines(s)) for s in specs] == [False, True]


def test_table_1_puts_the_papers_bars_beside_ours():
    rows = [{"model": "m", "BOS": "on", "inputs": i, "Sink_1 (%)": v} for i, v in (("natural", 30.0), ("repeat", 1.0))]
    values = figures.chart_values(figures.table1_chart(rows).to_dict())
    paper_bars = {(v["model"], v["inputs"]): v["v"] for v in values if v["who"] == "paper"}
    expected = {tuple(k.split(": ")): n.value for k, n in paper.NUMBERS.items()
                if n.source == "Table 1" and k.split(": ")[-1] in ("natural", "repeat")}
    assert paper_bars == expected and expected          # every Table-1 number of those inputs, and nothing else
    assert {(v["model"], v["inputs"], v["v"]) for v in values if v["who"] == "ours"} == {
        ("m, BOS on", "natural", 30.0), ("m, BOS on", "repeat", 1.0)}


def test_a_variant_keeps_its_colour_from_chart_to_chart():
    one = dict(zip(["softmax", "sigmoid", "sigmoid_norm", "elu"], figures.variant_colors(["softmax", "sigmoid",
                                                                                           "sigmoid_norm", "elu"])))
    two = dict(zip(["elu", "sigmoid"], figures.variant_colors(["elu", "sigmoid"])))
    assert two == {k: one[k] for k in two}                 # the same variant, the same colour, whatever its company
    assert len(set(one.values())) == len(one)              # and never two groups of one chart in one colour
    many = [name for name in figures._variant_index()][:30]
    assert len(set(figures.variant_colors(many))) == min(30, len(figures.VARIANT_PALETTE))
    assert figures.variant_colors(["stored seeds (elu)"]) == [one["elu"]]


def test_a_chart_of_a_sink_rate_finds_the_papers_level_of_each_point_it_draws():
    # the registry's numbers, looked up by the point a group names (a live run's stored seeds included)
    assert figures.paper_levels(["fixed_pos2", "stored seeds (fixed_pos2)", "live fixed_pos2, seed 0"], "Sink_2 %") \
        == {"fixed_pos2": paper.NUMBERS["fixed_pos2: Sink_2"].value,
            "stored seeds (fixed_pos2)": paper.NUMBERS["fixed_pos2: Sink_2"].value}
    # an operation without normalization: the paper's bare number is its starred Sink_1
    assert figures.paper_levels(["sigmoid"], "proxy Sink*_1 %") == {"sigmoid": paper.NUMBERS["sigmoid"].value}
    assert figures.paper_levels(["k_bias"], "Sink* %") == {"k_bias": paper.NUMBERS["k_bias: Sink*"].value}
    # no number, no level: a point the paper does not give, a quantity it does not report, a live label
    assert figures.paper_levels(["fixed_pos2"], "Sink_1 %") == {}
    assert figures.paper_levels(["default"], "alpha_1") == {}
    assert figures.paper_levels(["window_16"], "Sink_1 %") == {}


def test_band_chart_draws_the_papers_level_by_itself_and_not_when_told(runs):
    rows = [{"point": "stored seeds (fixed_pos2)", "seed": s, "step": st, "Sink_2 %": 10.0 * s + st / 100}
            for s in range(3) for st in (100, 200)]
    assert figures.draws_the_paper(figures.band_chart(rows, "Sink_2 %", "t", x="step").to_dict())
    assert not figures.draws_the_paper(figures.band_chart(rows, "Sink_2 %", "t", x="step", paper={}).to_dict())


def test_figures_are_numbered_per_chapter_and_need_a_caption(runs):
    rows = [{"point": "softmax", "seed": 0, "step": 1, "Sink_1 %": 1.0}]
    chart = figures.band_chart(rows, "Sink_1 %", "t", x="step")
    figures.start_chapter("07_architecture")
    first, second = figures.Figure(chart, "the first"), figures.Figure(chart, "the second <b>")
    assert (first.number, second.number, second.anchor) == ("7.1", "7.2", "fig-7-2")
    html = second._repr_html_()
    assert '<figure class="spx-figure" id="fig-7-2">' in html and "Figure 7.2.</span> the second &lt;b&gt;" in html
    figures.start_chapter("08_biases")
    assert figures.Figure(chart, "again").number == "8.1"   # a new chapter counts from 1
    with pytest.raises(ValueError, match="caption"):
        figures.Figure(chart, "  ")
    with pytest.raises(ValueError, match="starts with its number"):
        figures.start_chapter("about")
    with pytest.raises(TypeError, match="not int"):
        figures.Figure(3, "x")._repr_html_()


def test_the_sink_layers_cap_sink_1_only_when_every_map_agrees_on_the_depth():
    from sinkpaper.book import realtext

    def run(m):
        return {"result": {"alpha_1_matrix": m}, "config": {"eval": {"epsilon": 0.3}}}

    two = [run([[0.1, 0.1, 0.2, 0.1], [0.9, 0.1, 0.5, 0.2]]), run([[0.1] * 4, [0.1, 0.6, 0.1, 0.1]])]
    assert realtext.sink_layer_cap(two) == (50.0, "1")   # only layer 1 ever sinks: half the heads at most
    assert realtext.sink_layer_cap(two + [run([[0.5] * 4, [0.1] * 4])]) == (100.0, "0, 1")
    assert realtext.sink_layer_cap([run([[0.1] * 4, [0.1] * 4])]) is None            # no sink head at all
    assert realtext.sink_layer_cap(two + [run([[0.1] * 4] * 3 + [[0.9] * 4])]) is None  # 2- and 4-layer maps


def test_each_alpha_map_sets_its_sink_1_beside_the_papers_number_and_invents_none():
    from sinkpaper.book import realtext

    def run(pt, m, sink_1):
        return {"result": {"alpha_1_matrix": m, "sink_k": {"1": sink_1}},
                "name": f"architecture/{pt}", "config": {"eval": {"epsilon": 0.3}, "run": {"seed": 0}, "data": {}}}

    ps = [run("heads_2", [[0.1, 0.9], [0.35, 0.2]], 50.0), run("no_such_point", [[0.1, 0.1], [0.1, 0.1]], 0.0)]
    charts = realtext.alpha_maps(ps, ["heads_2", "no_such_point"])
    bars = figures.chart_values(charts[-1].to_dict())
    assert {(b["point"], b["who"], b["v"]) for b in bars} == {
        ("heads_2", "ours (the map)", 50.0), ("heads_2", "paper", 12.95), ("no_such_point", "ours (the map)", 0.0)}
    dots = [r for r in figures.chart_values(charts[0].to_dict()) if "v" not in r]
    assert sorted((d["x"], d["y"]) for d in dots) == [(0, 1), (1, 0)]    # the heads above epsilon, nothing else
    caption = realtext.maps_caption(ps, ["heads_2", "no_such_point"])
    assert "Sink_1 50 % (paper 12.95 %)" in caption and "Sink_1 0 % (the paper gives no number)" in caption


def test_a_panel_with_more_series_than_a_reader_can_tell_apart_is_caught(runs):
    rows = [{"point": f"p{i}", "seed": 0, "step": st, "Sink_1 %": float(i)} for i in range(7) for st in (1, 2)]
    crowded = figures.crowded_panels(figures.band_chart(rows, "Sink_1 %", "seven", x="step", paper={}).to_dict())
    assert crowded and crowded[0].startswith("seven: 7 series")
    assert not figures.crowded_panels(figures.band_chart(rows[:12], "Sink_1 %", "six", x="step", paper={}).to_dict())


def test_a_sweep_caption_states_which_points_keep_a_sink_and_where_the_paper_reads_otherwise(monkeypatch):
    seeds = {"pos_rope": [30.0, 40.0, 35.0], "pos_nope": [0.0, 0.1, 0.0], "post_norm": [0.0, 25.0, 12.0]}
    monkeypatch.setattr(sweep_charts, "book_values",
                        lambda payloads, pt, name: (list(enumerate(seeds[pt])) if pt in seeds else [], 0))
    text = figures.sweep_caption([], ["pos_rope", "pos_nope", "post_norm", "not_stored"])
    assert "(3 seeds:" in text
    assert "A sink (>= 10 %) in every seed: pos_rope; none (< 5 %) in any seed: pos_nope; the seeds split: " \
           "post_norm." in text
    # the paper gives NoPE a sink: said; a split point is never set against the paper
    assert f"Where the paper reads the other way: pos_nope (paper {paper.NUMBERS['pos_nope'].value:g} %)." in text
    assert "post_norm (paper" not in text and "not_stored" not in text
    assert figures.sweep_caption([], ["pos_rope"], value="alpha_1").startswith("alpha_1 on each run's plateau")


def test_the_papers_table_1_models_are_marked_where_pretrained_models_are_drawn():
    marks = figures.table1_marks("natural", 64)
    assert {m["name"] for m in marks} == {"GPT2-XL", "Mistral-7B", "LLaMA2-7B Base", "LLaMA3-8B Base"}
    assert all(m["x"] == 64 and m["y"] == paper.NUMBERS[f"{m['name']}: natural"].value for m in marks)
    rows = [{"setting": "m, BOS on", "k": k, "Sink_k (%)": 50.0 / k} for k in (1, 2, 3)]
    assert figures.draws_the_paper(figures.sink_by_position_chart(rows, "t", paper=True).to_dict())
    assert not figures.draws_the_paper(figures.sink_by_position_chart(rows, "t").to_dict())
    payload = {"model": "m", "points": [{"T": t, "alpha_1_mean": 0.3, "uniform_alpha_1": 4 / t, "sink_1": 40.0,
                                         "per_layer_alpha_1": [0.3], "per_layer_sink_1": [40.0]} for t in (256, 512)]}
    assert figures.draws_the_paper(figures.sink_vs_length(payload).to_dict())


def test_a_band_chart_with_other_metrics_shows_one_at_a_time_and_keeps_the_papers_level_with_the_first():
    rows = [{"point": "default", "seed": sd, "tokens": t, "Sink_1 %": 10.0 * t + sd, "alpha_1": 0.1 * t}
            for sd in (0, 1) for t in (1, 2, 3)]
    spec = figures.band_chart(rows, "Sink_1 %", "Sink_1 (%) over training", y_domain=(0, 100),
                              also=[("alpha_1", "mean alpha_1 over training")]).to_dict()
    params = spec.get("params", []) + [p for layer in spec["layer"] for p in layer.get("params", [])]
    assert [(p["name"], p["value"], p["bind"]["options"]) for p in params] == [("show", "Sink_1 %",
                                                                                ["Sink_1 %", "alpha_1"])]
    rows_drawn = figures.chart_values(spec)
    assert {r["metric"] for r in rows_drawn if "metric" in r} == {"Sink_1 %", "alpha_1"}
    assert [r["paper"] for r in rows_drawn if r.get("who") == "paper"] == [18.18]   # the default's, once
    assert figures.draws_the_paper(spec) and not figures.joined_lines(spec)   # each metric its own line
    assert "show === 'Sink_1 %' ? 1 : 0" in json.dumps(spec)                 # the level hides with alpha_1
    one = figures.band_chart(rows, "Sink_1 %", "Sink_1 (%) over training", y_domain=(0, 100)).to_dict()
    assert "params" not in json.dumps(one) and "metric" not in json.dumps(one)   # a single view: no button


def test_a_fold_holds_tables_and_markdown_under_a_title_in_both_forms():
    """figures.Fold: a <details> under its title in the book (HTML) and in a notebook's Markdown view, a table's
    rows inside it in both; a fold without a title is refused."""
    from IPython.display import Markdown

    fold = figures.Fold("Every point over its seeds", Markdown("the recipe"), figures.Table([{"point": "a", "x": 1}]))
    page = fold._repr_html_()
    assert page.startswith('<details class="spx-fold"><summary>Every point over its seeds</summary>')
    assert "<p>the recipe</p>" in page and ">a</td>" in page and page.endswith("</details>")
    md = fold._repr_markdown_()
    assert md.startswith("<details><summary>Every point over its seeds</summary>") and "| a | 1 |" in md
    with pytest.raises(ValueError, match="title"):
        figures.Fold("  ", Markdown("x"))
