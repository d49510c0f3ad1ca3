"""The book's charts of runs (sinkpaper.book.figures): seeds drawn as a mean line and a min-max band, never one
sawtooth line through several seeds; the paper's number drawn where the registry has one, and only there."""
from __future__ import annotations

import pytest

pytest.importorskip("altair")

from sinkpaper import paper  # noqa: E402
from sinkpaper.book import figures  # noqa: E402


def _run(point: str, seed: int, ys: list[float]) -> dict:
    return {"config": {"run": {"seed": seed}}, "point": point,
            "rows": [{"step": 100 * (i + 1), "tokens": 1000 * (i + 1), "Sink_1 %": y} for i, y in enumerate(ys)]}


def _rows_of(p, label):
    return [{**r, "run": label} for r in p["rows"]]


@pytest.fixture
def runs(monkeypatch):
    monkeypatch.setattr(figures, "point_of", lambda p: p["point"])
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
    assert not figures.draws_the_paper(figures.band_chart(rows, "Sink_1 %", "none", x="step").to_dict())


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
