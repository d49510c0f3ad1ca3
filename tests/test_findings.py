"""The finding card and the scorecard grid (sinkpaper.book.findings, sinkpaper.book.scorecard): every number they
show is the listing's, a missing paper number is said, never drawn, every verdict word comes with a reason, and a
scale the registry adds later is drawn without code changes."""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

pytest.importorskip("altair")

from sinkpaper import paper  # noqa: E402
from sinkpaper.book import families, findings, labels, scorecard  # noqa: E402

LISTING = Path(__file__).parent / "data" / "claims_listing.json"


@pytest.fixture(scope="module")
def listing():
    return json.loads(LISTING.read_text())


def _entry(listing, cid, seeded: str | None = None):
    """A listing entry; with ``seeded`` (a scale), three seeds' values at that scale for each of the paper's labels
    (test data: the stored listing predates seed values)."""
    e = copy.deepcopy(next(e for e in listing if e["id"] == cid))
    if seeded:
        seeds = {k: [v + 1.0, v + 2.0, v + 6.0] for k, v in e["paper"]["values"].items()}
        e["results"][seeded] = {"status": "found", "verdict": "disagrees", "why": "", "seeds": [0, 1, 2],
                                "seed_values": seeds, "values": {k: sum(v) / 3 for k, v in seeds.items()},
                                "measurement": "store test", "note": ""}
    return e


def _layers(spec):
    """Every unit spec of a chart dict (layers, concatenations), with its data values."""
    for key in ("layer", "vconcat", "hconcat", "concat"):
        for sub in spec.get(key, []):
            yield from _layers(sub)
    if "mark" in spec:
        yield spec


def _values(chart):
    spec = chart.to_dict()
    return [v for u in _layers(spec) for v in u.get("data", {}).get("values", [])] + \
        [v for u in [spec] for v in u.get("data", {}).get("values", [])]


def test_the_chart_draws_the_papers_values_and_every_seed_exactly(listing):
    e = _entry(listing, "opt_batch", seeded="real text (CPU)")
    chart = findings.claim_chart(e)
    rows = findings.chart_rows(e, [s for s in paper.SCALES if findings.has_values(findings.result_at(e, s))])
    drawn = {(r["key"], r["who"], r["kind"], r["value"]) for r in rows}
    for label, v in e["paper"]["values"].items():
        assert (label, "paper", "paper", v) in drawn
    checked = 0
    for s, res in e["results"].items():
        for label, seeds in (res.get("seed_values") or {}).items():
            assert sorted(r["value"] for r in rows if (r["key"], r["who"], r["kind"]) == (label, s, "seed")) \
                == sorted(seeds)
            checked += 1
    assert checked == len(e["paper"]["values"])
    assert chart is not None and chart.to_dict()


def test_no_paper_number_is_said_and_never_drawn(listing):
    e = _entry(listing, "loss_window")
    assert not e["paper"]["values"]
    rows = findings.chart_rows(e, paper.SCALES)
    assert rows and not [r for r in rows if r["kind"] == "paper"]
    assert "the paper gives no number" in findings.card_row(e)
    for s in findings.shown_scales(e):
        assert findings.headline(e, findings.result_at(e, s)).startswith("the paper gives no number")
    # another paper's claim: this paper could not number it, so its source line does not say so
    other = _entry(listing, "pack_bos_inference")
    assert not other["paper"]["values"] and findings.no_number_note(other) == ""
    assert findings.no_number_note(e).endswith("the paper gives no number")
    grid = scorecard.Scorecard([e, other])._repr_html_()
    assert grid.count("\u00b7 the paper gives no number</div>") == 1       # in loss_window's source line only


def test_every_verdict_word_comes_with_a_reason(listing):
    seen = set()
    for e in listing:
        for s in findings.shown_scales(e):
            res = findings.result_at(e, s)
            word = findings.verdict_word(e, res)
            seen.add(word)
            why = findings.reason(e, res)
            assert why.strip(), (e["id"], s, word)
            assert f">{word}</span>" in findings.chip(e, res, s)
    assert {"agrees", "disagrees", "no result"} <= seen


def test_a_scale_the_registry_adds_is_drawn_and_one_without_results_is_not(listing, monkeypatch):
    e = _entry(listing, "opt_emergence")
    gpu = "GPU, the paper's default"
    e["results"][gpu] = {**copy.deepcopy(e["results"]["miniature"]), "verdict": "agrees"}
    monkeypatch.setattr(paper, "SCALES", (*paper.SCALES, gpu))
    assert gpu in findings.shown_scales(e)
    html = findings.card_row(e)
    assert gpu in html
    assert gpu in [v["who"] for v in _values(findings.claim_chart(e))]
    e["results"][gpu] = {"values": {}, "verdict": "no result", "status": paper.NOT_RUN}
    assert gpu not in findings.shown_scales(e) and gpu not in findings.card_row(e)


def test_the_headline_compares_the_claims_own_point_not_the_control(listing):
    e = _entry(listing, "data_random_first")
    res = next(findings.result_at(e, s) for s in paper.SCALES if findings.has_values(findings.result_at(e, s)))
    label = labels.key_label(e, res)
    assert not label.startswith("default"), label
    text = findings.headline(e, res)
    assert f"paper {paper.NUMBERS[label].value:.3g}" in text or f"paper {e['paper']['values'][label]:.3g}" in text


def test_a_check_has_its_own_status(listing):
    e = _entry(listing, "prop_repeat")
    for s in findings.shown_scales(e):
        assert findings.verdict_word(e, findings.result_at(e, s)) == "check"
    assert findings.claim_chart(e) is None


def test_ours_in_percent_reads_to_one_decimal_and_the_papers_as_given():
    assert labels._value(0.0972, True, ours=True) == "0.1 %" and labels._value(38.04, True, ours=True) == "38 %"
    assert labels._value(0.0972, False, ours=True) == "0.0972"       # not a percent: significant digits
    assert labels._value(1.98, True) == "1.98 %" and labels._value(None, True, ours=True) == "\u2014"


def test_every_status_has_a_colour_of_its_own():
    """The scorecard's stacked bar and its chips tell the statuses apart by colour alone."""
    colours = [*findings.VERDICT_COLORS.values(), findings.CHECK_COLOR]
    assert len(set(c.lower() for c in colours)) == len(colours)


def test_scorecard_rows_chips_and_links_follow_the_listing(listing):
    card = scorecard.Scorecard(listing)
    page = card._repr_html_()
    assert card.counts() == {s: __import__("collections").Counter(findings.result_at(e, s)["verdict"] for e in listing)
                             for s in paper.SCALES}
    assert page.count('<tr id="claim-') == len(listing)
    for e in listing:
        row = re.search(rf'<tr id="claim-{re.escape(e["id"])}">(.*?)</tr>', page, re.S).group(1)
        if re.fullmatch(r"\d\d_\w+", e["chapter"]):
            assert f'href="{e["chapter"]}.html"' in row
        else:   # "not run": no chapter page exists to link to
            assert "href=" not in row and "no chapter runs it" in row
        chips = re.findall(r'class="spx-chip"[^>]*>([a-z ]+)</span>', row)
        assert chips == [findings.verdict_word(e, findings.result_at(e, s)) for s in card.scales if s in findings.shown_scales(e)]
    # one readable value per cell: no "(n values)" ranges, no lists of every Sink_k
    assert "values)" not in page and "Sink_10" not in re.sub(r'title="[^"]*"', "", page)


def test_scorecard_escapes_and_puts_the_scale_with_results_first(listing):
    entry = {"id": "x", "chapter": "04_optimization", "claim": "<b>bold</b> claim", "kind": "reproduction",
             "rule": "a <rule>", "paper": {"source": "Table 1", "values": {"k": 1.0}},
             "results": {s: {"verdict": "no result", "values": {}, "status": "missing", "measurement": "store"}
                         for s in paper.SCALES}}
    last = paper.SCALES[-1]
    entry["results"][last] = {"verdict": "agrees", "values": {"k": 2.0}, "status": "found", "measurement": "m"}
    page = scorecard.Scorecard([entry])._repr_html_()
    assert "<b>bold</b>" not in page and "&lt;b&gt;bold&lt;/b&gt;" in page
    assert scorecard.Scorecard([entry]).scales[0] == last
    assert "paper 1 % / ours 2 % (k)" in page


def test_a_rule_set_after_its_runs_is_marked_in_its_cell_only(listing):
    e = _entry(listing, "opt_batch", seeded="real text (CPU)")
    scale = next(s for s in findings.shown_scales(e) if findings.has_values(findings.result_at(e, s)))
    page = scorecard.Scorecard([e], late_rules={(e["id"], scale): "2 of 3"})._repr_html_()
    cells = re.findall(r'<td data-scale="([^"]+)">(.*?)</td>', page, re.S)
    marked = [s for s, cell in cells if 'class="spx-late"' in cell]
    assert marked == [scale] and "set after 2 of 3 of the runs it judges" in page
    assert 'class="spx-late"' not in scorecard.Scorecard([e])._repr_html_()


def test_config_keys_read_as_words_and_stay_in_the_tooltip(listing):
    assert labels.human_label("lr_x2_steps_x0.5") == "LR \u00d7 2, steps \u00d7 0.5"
    assert labels.human_label("fixed_pos2: Sink_2") == "fixed token at 2: Sink_2"
    assert labels.human_label("pos_rope") == "pos_rope"          # no pattern: kept as it is
    e = _entry(listing, "opt_batch", seeded="real text (CPU)")
    rows = findings.chart_rows(e, ["real text (CPU)"])
    assert {r["key"] for r in rows} == set(e["paper"]["values"])
    assert {r["label"] for r in rows} == {labels.human_label(k) for k in e["paper"]["values"]}


def test_our_models_are_compared_with_the_papers_on_the_same_input(listing):
    e = _entry(listing, "t1_natural")
    e["results"]["real LMs"] = {"status": "found", "verdict": "agrees", "why": "", "measurement": "chapter 03",
                                "values": {"m: natural": 77.0}, "note": ""}
    first = next(iter(e["paper"]["values"]))
    text = findings.headline(e, e["results"]["real LMs"])
    assert text == f"paper {e['paper']['values'][first]:.3g} % ({first}) / ours 77 % (m: natural)"
    assert {r["unit"] for r in findings.chart_rows(e, ["real LMs"])} == {"%"}    # one panel, the paper's axis


def test_a_removal_that_agrees_where_removals_are_common_says_its_evidence_is_weak(monkeypatch):
    """'X removes the sink' agreeing at a scale where many changes that keep a sink in the paper have none there
    too: the reason leads with that base rate; where none lost their sink, or the verdict is not agrees, it does
    not."""
    e = {"id": "ops_sigmoid", "rule": "softmax >= 10 % and sigmoid < 5 %"}
    res = {"verdict": paper.AGREES, "status": "ok"}
    monkeypatch.setattr(findings, "_removal_base_rate", lambda scale, store: (29, 9))
    said = findings.reason(e, res, "real text (CPU)")
    assert said.startswith("weak evidence (here 9 of the 29 changes with a sink in the paper have none)")
    assert "meets the rule" in said
    assert findings.reason(e, res) == "meets the rule: softmax >= 10 % and sigmoid < 5 %"   # no scale: no rate
    assert "weak" not in findings.reason(e, {**res, "verdict": paper.DISAGREES}, "real text (CPU)")
    assert "weak" not in findings.reason({**e, "id": "opt_lr"}, res, "real text (CPU)")  # not a removal claim
    monkeypatch.setattr(findings, "_removal_base_rate", lambda scale, store: (29, 0))
    assert "weak" not in findings.reason(e, res, "real text (CPU)")


def test_an_onset_that_never_came_reads_never_and_an_undecided_claim_without_a_paper_number_is_one_row():
    """The registry reads a quantity that never formed as one evaluation past the run's end: the headline says
    "never" for such a seed, not that step. A claim with no paper number and no verdict yet has nothing to set
    beside ours: one compact row, its chip still saying why; once decided it gets its chart."""
    e = paper.entry(paper.claim("onset_sink_after_induction"), records={})
    assert not e["paper"]["values"]
    seeds = {"base: onset: sink": [1800.0, 2600.0, 2600.0], "base: onset: induction": [2600.0] * 3,
             "base: steps": [2500.0] * 3}
    e["results"]["real text (CPU)"] = {
        "status": "found", "verdict": paper.NOT_COMPARABLE, "why": "base: onset: induction never formed",
        "seeds": [0, 1, 2], "seed_values": seeds, "values": {k: sum(v) / 3 for k, v in seeds.items()},
        "measurement": "store test", "note": ""}
    res = findings.result_at(e, "real text (CPU)")
    assert findings.headline(e, res, "real text (CPU)") == \
        "the paper gives no number / ours step 1,800 / never / never (base: onset: sink)"
    row = findings.card_row(e)
    assert "spx-waiting" in row and "never formed" in row and "<svg" not in row and "vega" not in row
    assert 'class="spx-headline"' not in row and "ours step 1,800 / never / never" in row   # in the tooltip only
    res["verdict"] = paper.DISAGREES
    assert "spx-waiting" not in findings.card_row(e)
    # every seed never: no "step" before it
    res["seed_values"]["base: onset: sink"] = [2600.0] * 3
    assert "ours never / never / never" in findings.headline(e, res, "real text (CPU)")


def test_an_onset_claims_chart_draws_a_seed_that_never_formed_at_its_runs_end_and_no_steps_row():
    """Onsets share one panel of steps; a seed whose quantity never formed is drawn at its run's last step as
    "never" (not at the registry's stand-in one evaluation past it), with no mean over such seeds; the runs' steps
    the onsets are read against are no row of the chart."""
    e = paper.entry(paper.claim("onset_sink_after_induction"), records={})
    seeds = {"base: onset: sink": [1800.0, 500.0, 1700.0], "base: onset: induction": [2600.0, 2600.0, 900.0],
             "base: steps": [2500.0] * 3}
    e["results"]["real text (CPU)"] = {
        "status": "found", "verdict": paper.INCONCLUSIVE, "why": "", "seeds": [0, 1, 2], "seed_values": seeds,
        "values": {k: sum(v) / 3 for k, v in seeds.items()}, "measurement": "store test", "note": ""}
    rows = findings.chart_rows(e, ["real text (CPU)"])
    assert {r["unit"] for r in rows} == {"onset step"} and not any(r["key"] == "base: steps" for r in rows)
    sink = [(r["kind"], r["value"]) for r in rows if r["key"] == "base: onset: sink"]
    assert sink == [("seed", 1800.0), ("seed", 500.0), ("seed", 1700.0), ("mean", 4000.0 / 3)]
    induction = [(r["kind"], r["value"], r["seed"]) for r in rows if r["key"] == "base: onset: induction"]
    assert induction == [("never", 2500.0, "0"), ("never", 2500.0, "1"), ("seed", 900.0, "2")]   # no mean
    spec = findings.claim_chart(e, ["real text (CPU)"]).to_dict()
    assert "triangle-right" in json.dumps(spec)


def test_the_summary_counts_add_up_to_the_pages_claims(listing):
    """A claim the book does not run at a scale is counted as such, so a scale's words add up to the page's claims
    (a reader who sees "6 claims" and five verdicts is told where the sixth is)."""
    run = _entry(listing, "opt_batch", seeded="real text (CPU)")
    unrun = _entry(listing, "opt_batch")
    unrun["results"]["real text (CPU)"] = {"values": {}, "verdict": paper.NO_RESULT, "status": paper.NOT_RUN}
    assert findings.summary([run, unrun]) == "2 claims \u2014 real text (CPU): 1 disagrees, 1 not run here."
    assert findings.summary([run]) == "1 claim \u2014 real text (CPU): 1 disagrees."


def test_a_finding_card_leads_with_its_decided_claims_and_folds_the_rest():
    """Claims with a verdict a reader can read a finding in come first; those without one (not comparable here,
    not run, waiting for runs) fold under one titled line; a card with no verdict yet keeps every row open."""
    def entry(cid, verdict):
        e = paper.entry(paper.claim(cid), records={})
        e["results"]["real text (CPU)"] = {"status": "found", "verdict": verdict, "why": "test", "seeds": [0, 1, 2],
                                           "seed_values": {}, "values": {}, "measurement": "store test", "note": ""}
        return e

    agrees, waiting = entry("opt_emergence", paper.AGREES), entry("opt_batch", paper.NOT_COMPARABLE)
    card = findings.FindingCard("04_optimization", entries=[waiting, agrees])._repr_html_()
    fold = card.index('<details class="spx-fold spx-undecided">')
    assert card.index('id="finding-opt_emergence"') < fold < card.index('id="finding-opt_batch"')
    assert "1 more claim without a verdict here yet" in card
    undecided = findings.FindingCard("04_optimization", entries=[waiting])._repr_html_()
    assert "<details" not in undecided and 'id="finding-opt_batch"' in undecided


def test_the_grid_is_as_long_as_what_is_measured_and_an_agreement_says_no_more_than_its_chip():
    """A scale where no claim reads a verdict takes no column (it is named under the grid); a claim without a
    verdict at any scale folds below it; an *agrees* chip keeps its rule in the tooltip, not under its headline."""
    first, last = paper.SCALES[0], paper.SCALES[-1]

    def entry(cid, verdict, values):
        results = {s: {"verdict": "no result", "values": {}, "status": "missing", "measurement": "store"}
                   for s in paper.SCALES}
        results[first] = {"verdict": verdict, "values": values, "status": "found", "measurement": "m"}
        return {"id": cid, "chapter": "04_optimization", "claim": f"claim {cid}", "kind": "reproduction",
                "rule": "k >= 10 %", "paper": {"source": "Table 1", "values": {"k": 1.0}}, "results": results}

    read, waiting = entry("read", "agrees", {"k": 2.0}), entry("waiting", "no result", {})
    card = scorecard.Scorecard([read, waiting])
    page = card._repr_html_()
    assert card.scales == [first] and last in card.waiting_scales
    assert f"<th>{last}</th>" not in page and "No verdict yet at" in page and last in page
    grid, _, fold = page.partition('<details class="spx-fold">')
    assert 'id="claim-read"' in grid and 'id="claim-waiting"' not in grid and 'id="claim-waiting"' in fold
    cell = re.search(r'<td data-scale="[^"]+">(.*?)</td>', grid, re.S).group(1)
    assert 'class="spx-why"' not in cell and "meets the rule: k &gt;= 10 %" in cell    # in the title only
    # a disagreement keeps its reason in view
    worse = entry("read", "disagrees", {"k": 0.0})
    assert 'class="spx-why">fails the rule' in scorecard.Scorecard([worse])._repr_html_()


def test_a_cards_key_sits_under_the_charts_it_explains_and_only_where_a_row_drew_one():
    """The card's one key (the charts draw none of their own) comes after its rows, so the first screen keeps its
    room for a finding; a card whose rows drew no chart has no key."""
    e = paper.entry(paper.claim("opt_emergence"), records={})
    e["results"]["real text (CPU)"] = {"status": "found", "verdict": paper.AGREES, "why": "", "seeds": [0],
                                       "seed_values": {"default": [30.0]}, "values": {"default": 30.0},
                                       "measurement": "store test", "note": ""}
    drawn = findings.FindingCard("04_optimization", entries=[e])._repr_html_()
    assert drawn.count('class="spx-plot"') == 1 and 'class="spx-key"' in drawn
    assert drawn.index('class="spx-plot"') < drawn.index('class="spx-key"')
    assert "real text (CPU)</span>" in drawn[drawn.index('class="spx-key"'):]
    waiting = paper.entry(paper.claim("opt_batch"), records={})
    waiting["paper"]["values"], waiting["results"] = {}, {}    # nothing to draw: no number of the paper's, none of ours
    undrawn = findings.FindingCard("04_optimization", entries=[waiting])._repr_html_()
    assert 'class="spx-plot"' not in undrawn and 'class="spx-key"' not in undrawn


def test_a_family_of_claims_is_one_row_with_one_chart_of_all_their_points_and_each_claims_own_verdict():
    """Claims that share their reference point (Claim.chart_with) are one row: each claim keeps its id, its text
    and its chips; one chart draws every label of both, the shared one once, each value as the claim's own."""
    def entry(cid, verdict, seeds):
        e = paper.entry(paper.claim(cid), records={})
        e["results"]["real text (CPU)"] = {"status": "found", "verdict": verdict, "why": "test", "seeds": [0, 1],
                                           "seed_values": seeds, "measurement": "store test", "note": "",
                                           "values": {k: sum(v) / len(v) for k, v in seeds.items()}}
        return e

    ffn = entry("arch_ffn", paper.AGREES, {"ffn_relu": [40.0, 44.0], "ffn_swiglu": [30.0, 36.0]})
    more = entry("arch_ffn_swish_reglu", paper.NOT_YET, {"ffn_swish": [0.0, 1.0], "ffn_swiglu": [30.0, 36.0]})
    heads = entry("arch_heads", paper.AGREES, {"heads_1": [20.0, 22.0]})
    assert more["chart_with"] == "arch_ffn" and ffn["chart_with"] is None
    # the follower joins its lead wherever it stands; a claim whose lead is not on the page stands alone
    assert [[e["id"] for e in g] for g in families.families([more, heads, ffn])] == [
        ["arch_ffn", "arch_ffn_swish_reglu"], ["arch_heads"]]
    assert [[e["id"] for e in g] for g in families.families([more, heads])] == [["arch_ffn_swish_reglu"],
                                                                                  ["arch_heads"]]
    union = families.joined([ffn, more])
    res = union["results"]["real text (CPU)"]
    assert res["seed_values"] == {"ffn_relu": [40.0, 44.0], "ffn_swiglu": [30.0, 36.0], "ffn_swish": [0.0, 1.0]}
    assert set(union["paper"]["values"]) == set(ffn["paper"]["values"]) | set(more["paper"]["values"])
    rows = findings.chart_rows(union, ["real text (CPU)"])
    assert sum(r["key"] == "ffn_swiglu" and r["kind"] == "seed" for r in rows) == 2       # the shared label once
    assert {(r["key"], r["value"]) for r in rows if r["kind"] == "paper"} == {
        (k, v) for k, v in union["paper"]["values"].items()}
    card = findings.FindingCard("07_architecture", entries=[ffn, more, heads])._repr_html_()
    row = card[card.index('class="spx-finding spx-family"'):card.index('id="finding-arch_heads"')]
    assert row.count('class="spx-plot"') == 1 and row.count('class="spx-claim"') == 2
    assert 'id="finding-arch_ffn"' in row and 'id="finding-arch_ffn_swish_reglu"' in row
    assert ">agrees<" in row and ">not yet<" in row
    assert card.count('class="spx-plot"') == 2                          # the family's chart and arch_heads' own
    # a member without a verdict stays under the fold, alone: its points are not on the lead's chart
    more["results"]["real text (CPU)"]["verdict"] = paper.NO_RESULT
    card = findings.FindingCard("07_architecture", entries=[ffn, more, heads])._repr_html_()
    fold = card.index('<details class="spx-fold spx-undecided">')
    assert 'spx-family' not in card.replace(".spx-family", "") and card.index('id="finding-arch_ffn_swish_reglu"') > fold


def test_every_claim_a_family_names_is_a_claim_of_its_own_page():
    by_id = {c.id: c for c in paper.CLAIMS}
    named = [c for c in paper.CLAIMS if c.chart_with]
    assert named, "no family of claims: the cards draw a chart per claim again"
    for c in named:
        assert c.chart_with in by_id, f"{c.id}: chart_with={c.chart_with!r} is no claim"
        assert by_id[c.chart_with].chapter == c.chapter and not by_id[c.chart_with].chart_with, c.id


def test_a_reason_two_scales_share_is_printed_once_in_the_row(listing):
    e = _entry(listing, "opt_emergence")
    for s in ("real text (CPU)", "miniature"):
        e["results"][s] = {**copy.deepcopy(e["results"]["miniature"]), "verdict": "disagrees", "status": None}
    said = findings.shown_reason("disagrees", findings.reason_parts(e, e["results"]["miniature"]), False)
    assert said
    html = findings.card_row(e, ["real text (CPU)", "miniature"])
    assert html.count(f'<span class="spx-why">{findings._e(findings._cut(said, findings.REASON_CHARS))}') == 1
    assert html.count(">disagrees</span>") == 2           # both chips stay, the second without the repeat
    alone = findings.chip(e, e["results"]["miniature"], "miniature")
    assert 'class="spx-why"' in alone                    # a chip on its own keeps its reason


def test_an_agreeing_chip_drops_its_whole_rule_even_where_the_rule_holds_a_semicolon():
    """A rule's sentence may hold a ";" of its own (a Contrast with controls): the chip of an *agrees* drops the
    whole "meets the rule: ..." clause, never shows the rule's tail as if it were a caveat, and keeps a real
    caveat said beside it."""
    e = {"id": "bias_kv", "rule": "kv_bias >= 10 %. A reading is decided only where its control (default for kv_bias) "
                                  "has a sink (>= 10 %); where it has none, the reading cannot fail and is not comparable."}
    res = {"verdict": paper.AGREES, "status": "ok"}
    parts = findings.reason_parts(e, res)
    assert findings.shown_reason(paper.AGREES, parts) == ""
    assert findings.shown_reason(paper.AGREES, ["a caveat", *parts]) == "a caveat"
    assert "where it has none" in findings.reason(e, res)          # the tooltip keeps the whole rule


def test_a_reason_says_the_seeds_values_once_where_adjacent_clauses_read_the_same_ones():
    from sinkpaper.results.numbers import values_said_once
    two = "k: Sink_1 < 5 in 1 of 3 seeds (3.4 / 8.27 / 12.4); k: a sink (>= 10 %) in 1 of 3 seeds (3.4 / 8.27 / 12.4)"
    assert values_said_once(two) == \
        "k: Sink_1 < 5 in 1 of 3 seeds; k: a sink (>= 10 %) in 1 of 3 seeds (3.4 / 8.27 / 12.4)"
    # values that differ, or the same ones with another clause between, stay where they are
    assert values_said_once("a (1 / 2); b (3 / 4)") == "a (1 / 2); b (3 / 4)"
    assert values_said_once("a (x); b (y); c (x)") == "a (x); b (y); c (x)"
    assert values_said_once("a (x); b (x); c (x)") == "a; b; c (x)"
    assert values_said_once("no values; here") == "no values; here"
    e = {"id": "t", "rule": "x", "kind": "claim"}
    assert findings.reason(e, {"verdict": paper.INCONCLUSIVE, "why": two}) == values_said_once(two)
