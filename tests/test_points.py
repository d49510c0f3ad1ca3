"""What the Section-7 chapters show: the points (sinkpaper.book.points) are the
configs' and read the paper's numbers from sinkpaper.paper, the per-point table puts Sink* next to Sink_1 and marks
the proxy (sinkpaper.book.tables), and the raw-weight reading of a proxy run (sinkpaper.results.curves,
sinkpaper.book.prose)."""
from __future__ import annotations

import pytest

pytest.importorskip("altair")
from sinkpaper import paper  # noqa: E402
from sinkpaper.book import figures, points, prose, tables  # noqa: E402
from sinkpaper.results import curves, sweeps  # noqa: E402
from sinkpaper.train.config import sweep_points  # noqa: E402


def payload(point, seed, sink_1, *, sink_star=None, alpha_1=0.1, proxy=False, curve=None, family="biases"):
    """A results-store-shaped payload (synthetic, for the helpers only)."""
    return {"name": f"{family}/{point}", "hash": f"{point}-{seed}", "profile": "cpu",
            "config": {"run": {"seed": seed}, "model": {"n_layers": 1, "d_model": 64, "n_heads": 4},
                       "data": {"source": "bigram_backcopy", "context": 64}},
            "result": {"sink_k": {"1": sink_1}, "sink_star": sink_star, "alpha_1_mean": alpha_1, "proxy": proxy,
                       "final_loss": 3.1, "tokens_seen": 1000,
                       "provenance": {"hardware": "cpu", "code_version": "test", "computed_at": "now"}},
            "curve": curve if curve is not None else _flat_curve(sink_1, sink_star, alpha_1)}


def _flat_curve(sink_1, sink_star, alpha_1, n=10):
    """A curve that ends on a plateau at the run's final values (what a stored run's curve gives the tables)."""
    return [{"step": 100 * (i + 1), "sink_k": {"1": sink_1}, "sink_star": sink_star, "alpha_1_mean": alpha_1}
            for i in range(n)]


@pytest.mark.parametrize("config, family", [("configs/architecture.yaml", points.ARCHITECTURE),
                                            ("configs/biases.yaml", points.BIASES),
                                            ("configs/attention.yaml", points.ATTENTION)])
def test_points_are_the_sweep_points_and_read_the_registry(config, family):
    assert [p.name for p in family] == sweep_points(config)
    assert points.by_name(points.BIASES)["sink_token"].paper == "Sink* 74.12, Sink_1 0.00"
    assert points.by_name(points.ATTENTION)["elu_norm"].paper == "—"       # ours; the paper could not train it
    for p in points.ARCHITECTURE_NOT_RUN + points.BIASES_NOT_RUN + points.ATTENTION_NOT_RUN:
        assert p.paper != "—", p.name                                          # every not-run row has its number


def test_chapter_claims_exist():
    for chapter in ("07_architecture", "08_biases", "09_attention_ops"):
        assert [c for c in paper.CLAIMS if c.chapter == chapter], chapter


def test_point_table_puts_sink_star_next_to_sink_1():
    ps = [payload("recipe", 0, 100.0, alpha_1=0.9), payload("recipe", 1, 100.0, alpha_1=0.95),
          payload("sink_token", 0, 100.0, sink_star=100.0, alpha_1=0.5),
          payload("sink_token", 1, 50.0, sink_star=75.0, alpha_1=0.4)]
    t = tables.points_table(ps, points.BIASES, names={"none": "recipe"}, paper=True, held_out=True)
    assert [r["point"] for r in t.rows] == ["recipe", "sink_token"]          # points without runs are left out
    row = t.rows[1]
    assert row["Sink_1 %"] == "75.0 [50.0, 100.0]" and row["Sink* % (bias position)"] == "87.5 [75.0, 100.0]"
    assert row["seeds"] == "0,1" and row["alpha_1"] == 0.45 and row["paper"].startswith("Sink* 74.12")
    assert t.rows[0]["Sink* % (bias position)"] == "—"
    assert figures.book_mean(ps, "sink_token", "Sink*") == 87.5 and figures.book_mean(ps, "v_bias") is None


def test_point_table_marks_the_proxy():
    t = tables.points_table([payload("sigmoid", 0, 0.0, proxy=True, family="attention")], points.ATTENTION,
                            paper=True, held_out=True)
    assert t.rows[0]["Sink_1 %"] == "0.0*" and "Sink* % (bias position)" not in t.columns


def _eval(step, sink, alpha, w1, wo, rs):
    return {"step": step, "tokens": step * 10, "loss": 3.0, "sink_k": {"1": sink}, "alpha_1_mean": alpha,
            "sink_star": None, "raw_weight_token_1": w1, "raw_weight_others": wo, "raw_row_sum": rs}


SIGMOID_CURVE = [{"step": 50, "tokens": 500, "loss": 3.3},                     # a log line without evaluation
                 _eval(100, 0.0, 0.075, 0.5, 0.5, 16.2), _eval(300, 99.0, 0.57, 0.98, 0.036, 2.1),
                 _eval(500, 0.0, 0.03, 0.0007, 0.003, 0.1), _eval(1500, 0.0, 0.02, 0.0002, 0.0015, 0.046)]


def test_raw_rows_and_the_transient():
    p = payload("sigmoid", 0, 0.0, proxy=True, curve=SIGMOID_CURVE, family="miniature")
    rows = curves.raw_curve_rows(p)
    assert [r["step"] for r in rows] == [100, 300, 500, 1500] and rows[0]["run"] == "sigmoid"
    t = curves.transient(p)
    assert (t["first"]["step"], t["peak"]["step"], t["final"]["step"]) == (100, 300, 1500)
    text = prose.transient_text(p, "seed 0")
    assert "peaks at step 300" in text and "**real** sink" in text and "attend to almost nothing" in text
    # the proxy high while every raw weight is tiny: not a sink in the raw weights
    flat = [_eval(100, 0.0, 0.075, 0.5, 0.5, 16.2), _eval(300, 60.0, 0.4, 0.002, 0.001, 0.05)]
    text = prose.transient_text(payload("elu", 0, 0.0, proxy=True, curve=flat), "elu")
    assert "only relative to the other keys" in text
    assert curves.transient(payload("softmax", 0, 10.0, curve=[{"step": 1, "tokens": 1, "sink_k": {"1": 0}}])) is None
    note = prose.transient_note([p, payload("elu", 0, 0.0, proxy=True, curve=flat)])
    assert note == ("in 2 of 2 run(s) the proxy peaked early at Sink*_1 60-99 % (step 300; raw weight on token 1 "
                    "then 0.00-0.98); at the end it reads 0-60 %")
    assert prose.transient_note([payload("softmax", 0, 10.0)]) == ""
    t = tables.transient_table([("s0", p), ("softmax", payload("softmax", 0, 10.0))])
    assert len(t.rows) == 1 and t.rows[0]["proxy peak: step"] == 300
    assert t.rows[0]["at peak: token 1 / others"] == "0.98 / 0.036"


def test_curves_and_charts_build():
    curve = [{"step": s, "tokens": s, "sink_k": {"1": 0.0}, "sink_star": 100.0, "alpha_1_mean": 0.0} for s in (1, 2)]
    ps = [payload("k_bias", 0, 0.0, sink_star=100.0, curve=curve), payload("recipe", 0, 100.0)]
    rows = curves.curve_rows(ps[0], "live", ("Sink_1", "Sink*", "alpha_1"))
    assert rows[0] == {"run": "live", "step": 1, "tokens": 1, "Sink_1 %": 0.0, "Sink* %": 100.0, "alpha_1": 0.0}
    figures.curve_chart(rows, "Sink* %", "t", x="step", zero=True, rule_y=30).to_dict()
    raw = curves.raw_curve_rows(payload("sigmoid", 0, 0.0, proxy=True, curve=SIGMOID_CURVE))
    spec = figures.curve_chart(raw, "raw weight on token 1", "t", x="step", log_y=True).to_dict()
    assert spec["encoding"]["y"]["scale"]["type"] == "log"
    spec = figures.curve_chart(raw, "proxy Sink*_1 %", "t", x="step", y_domain=(0, 100)).to_dict()
    assert spec["encoding"]["y"]["scale"]["domain"] == [0, 100]
    figures.sweep_chart(ps, ["recipe", "k_bias"], title="t", value=("Sink*", "Sink_1")).to_dict()
    assert len(figures.long_rows(raw, ["raw weight on token 1", "raw row sum"])) == 2 * len(raw)
    assert "1 layers" in prose.setting_text(ps) and prose.setting_text([]) == "no run"


def test_live_vs_stored():
    live = payload("k_bias", 0, 0.0, sink_star=100.0, alpha_1=0.001)
    assert "reproduces it" in prose.live_vs_stored(live, [dict(live)])
    other = payload("k_bias", 0, 0.0, sink_star=50.0, alpha_1=0.001)
    assert "**differs**" in prose.live_vs_stored(live, [other])
    assert prose.live_vs_stored(live, [payload("k_bias", 1, 0.0)]) is None


@pytest.mark.parametrize("star, s1, expected", [
    (100.0, 0.0, ": the bias takes the whole sink and the BOS keeps none."),
    (96.0, 3.0, ": the bias takes the whole sink and the BOS keeps almost none."),
    (60.0, 0.0, ": the bias holds the sink in part of the heads (Sink* below 95 %) and the BOS keeps almost none."),
    (100.0, 30.0, ": both the bias and the BOS are sinks."),
    (0.0, 100.0, ": the sink stays on the BOS; the bias takes none of it."),
    (100.0, 7.0, "."),   # neither "takes the whole sink" (Sink_1 above 5 %) nor a sink on the BOS
    (3.0, 3.0, "."),
    (None, 0.0, "."),
])
def test_bias_share_follows_the_numbers(star, s1, expected):
    assert prose.bias_share(star, s1) == expected


def test_bias_share_whole_sink_needs_both_thresholds():
    # the chapter used to print "takes the whole sink" whatever the numbers; now each side of each bar is checked
    assert "whole sink" in prose.bias_share(prose.WHOLE, paper.NO_SINK)
    assert "whole sink" not in prose.bias_share(prose.WHOLE - 0.1, 0.0)
    assert "whole sink" not in prose.bias_share(100.0, paper.NO_SINK + 0.1)
    assert prose.bias_share(100.0, 0.0, "token 1", bias="the sink token") == (
        ": the sink token takes the whole sink and token 1 keeps none.")
    assert ", though present, keeps none" in prose.bias_share(100.0, 0.0, present=True)


def test_biases_share_one_clause_when_they_agree_else_one_each():
    same = prose.biases_share({"K bias": (100.0, 0.0), "KV biases": (100.0, 0.0)}, present=True)
    assert same == ": the bias takes the whole sink and the BOS, though present, keeps none."
    split = prose.biases_share({"K bias": (100.0, 0.0), "KV biases": (0.0, 100.0)})
    assert split == ("; K bias: the bias takes the whole sink and the BOS keeps none; KV biases: the sink stays on "
                     "the BOS; the bias takes none of it.")
    assert prose.biases_share({"K bias": (100.0, 0.0), "KV biases": (3.0, 3.0)}) == (
        "; K bias: the bias takes the whole sink and the BOS keeps none.")
    assert prose.biases_share({}) == "."


def test_prefix_peak_says_where_the_sink_sits():
    assert prose.prefix_peak(3, 4) == "inside the prefix of 4, on a position other than the first"
    assert prose.prefix_peak(5, 4) == "outside the prefix of 4"
    first = prose.prefix_peak(1, 4)
    assert first.startswith("inside the prefix of 4, but on its first position") and "ordinary" in first
    assert prose.prefix_peak(4, 4).startswith("inside")
    assert prose.prefix_peak(None, 4) == "" and prose.prefix_peak(2, None) == ""
