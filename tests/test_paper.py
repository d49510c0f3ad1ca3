"""The paper registry (sinkpaper.paper): every claim with all its fields, rules that can fail, one verdict
vocabulary, chapter records and the results store read the same way, and the `claims` command line."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sinkpaper import paper
from sinkpaper.paper.report import digits_of
from sinkpaper.results import sweeps
from sinkpaper.train import store as S

REPO = Path(__file__).resolve().parents[1]
FIELDS = {"id", "section", "chapter", "claim", "kind", "paper", "rule", "no_effect_means", "bos", "bos_why",
          "results", "rule_check", "note", "chart_with"}


@pytest.fixture(scope="module")
def listing():
    return paper.listing(directory=REPO / "no-records-here", store=str(REPO / "results/store"))


def test_at_least_40_claims_with_every_field(listing):
    assert len(listing) >= 40
    ids = [e["id"] for e in listing]
    assert len(ids) == len(set(ids))
    for e in listing:
        assert set(e) == FIELDS, e["id"]
        assert e["claim"] and e["section"] and e["paper"]["source"]
        assert set(e["results"]) == set(paper.SCALES)
        for scale, r in e["results"].items():
            assert r["verdict"] in paper.VERDICTS, (e["id"], scale)
            assert r["measurement"], (e["id"], scale)
            assert isinstance(r["values"], dict)


def test_every_paper_value_is_a_number_the_registry_holds_once(listing):
    for e in listing:
        for label, v in e["paper"]["values"].items():
            assert isinstance(v, float) and not isinstance(v, bool), (e["id"], label)
            assert v == paper.paper_value(label)
    # the default run's 18.18 is typed once and read under each family's default name
    assert [k for k, n in paper.NUMBERS.items() if n.value == 18.18] == ["default"]
    assert all(paper.paper_value(a) == 18.18 for a in paper.DEFAULT_ALIASES)


def test_every_rule_agrees_on_the_paper_and_not_on_no_effect(listing):
    with_rule = [e for e in listing if e["rule"] is not None]
    assert len(with_rule) >= 40
    for e in with_rule:
        assert e["rule_check"]["paper"] == paper.AGREES, e["id"]
        assert e["rule_check"]["no_effect"] != paper.AGREES, e["id"]
        assert e["no_effect_means"], e["id"]
    for e in listing:
        if e["rule"] is None:   # qualitative claims and checks: no verdict anywhere
            assert e["rule_check"] is None
            assert all(r["verdict"] == paper.NO_RESULT for r in e["results"].values()), e["id"]


def test_no_measurement_is_scored_twice(listing):
    """No two claims with a rule read the same set of stored runs and metrics (labels aside) at a scale."""
    seen = {}
    for c in paper.CLAIMS:
        if c.rule is None:
            continue
        for scale, m in c.measure.items():
            if not isinstance(m, paper.Runs):
                continue
            key = (scale, frozenset((spec[2] if len(spec) > 2 else m.config, spec[0], spec[1])
                                    for spec in m.points.values()), m.seeds)
            assert key not in seen, f"{c.id} and {seen[key]} score the same runs at {scale}"
            seen[key] = c.id
    # the pair that used to be scored twice
    mini = {e["id"]: e["results"]["miniature"]["measurement"] for e in listing}
    assert mini["pack_fixed_bos"] == paper.NOT_RUN and "recipe" in mini["data_no_fixed_token"]


def test_every_real_lm_claim_states_its_bos_choice(listing):
    chapter_lm = [e for e in listing if isinstance(paper.claim(e["id"]).measure["real LMs"], paper.Chapter)]
    assert chapter_lm
    for e in chapter_lm:
        if e["kind"] == "check":
            continue
        assert e["bos"] in (True, False), e["id"]
        assert e["bos_why"], e["id"]
    assert paper.claim("t1_repeat").bos is False and paper.claim("t1_natural").bos is True
    for e in listing:
        if not isinstance(paper.claim(e["id"]).measure["real LMs"], paper.Chapter) and e["id"] != "base_vs_chat":
            assert e["bos"] is None, e["id"]


def test_points_are_the_configs_names():
    """Store-backed measurements name points that the configs define (kernel_elu of the miniature comes with
    item 1 of issue 21; until it is there, its runs read as missing)."""
    for c in paper.CLAIMS:
        for scale, m in c.measure.items():
            if isinstance(m, paper.Runs):
                for label, spec in m.points.items():
                    cfg = spec[2] if len(spec) > 2 else m.config
                    sweep = yaml.safe_load((REPO / cfg).read_text())["sweep"]
                    if spec[0] != "kernel_elu":
                        assert spec[0] in sweep, (c.id, scale, spec)


def test_combinator_and_words():
    A, D, N, R = paper.AGREES, paper.DISAGREES, paper.NOT_COMPARABLE, paper.NO_RESULT
    assert paper.all_of([A, A]) == A
    assert paper.all_of([A, N]) == N
    assert paper.all_of([A, R, N]) == R
    assert paper.all_of([R, D]) == D
    assert paper.all_of([]) == R
    with pytest.raises(ValueError, match="unknown verdict 'maybe'; valid: agrees"):
        paper.all_of(["maybe"])
    I = paper.INCONCLUSIVE   # the grey band between the thresholds: neither a sink nor none
    assert paper.all_of([A, I, N]) == I and paper.all_of([I, R]) == R
    assert [paper.sink_verdict(x) for x in (None, 10.0, 9.99, 5.0, 4.99)] == [R, A, I, I, D]
    assert [paper.no_sink_verdict(x) for x in (None, 4.99, 5.0, 10.0)] == [R, A, I, D]


def test_prefix_rule_needs_the_sink_on_a_prefix_position_other_than_the_first():
    rule = paper.claim("loss_prefix").rule
    first_token = {"prefix: p": 4.0, "prefix: Sink_1": 80.0, **{f"prefix: Sink_{k}": 0.0 for k in range(2, 11)}}
    assert rule.apply(first_token) == paper.NOT_COMPARABLE          # an ordinary first-token sink
    moved = {**first_token, "prefix: Sink_1": 0.0, "prefix: Sink_4": 60.0}
    assert rule.apply(moved) == paper.AGREES
    assert rule.apply({**moved, "prefix: p": 3.0}) == paper.DISAGREES     # the run's own p decides
    beyond = {**first_token, "prefix: Sink_1": 0.0, "prefix: Sink_7": 60.0}
    assert rule.apply(beyond) == paper.DISAGREES
    assert rule.apply({**first_token, "prefix: Sink_1": 3.0}) == paper.DISAGREES   # no sink at all
    r = paper.result(paper.claim("loss_prefix"), "miniature", {}, str(REPO / "results/store"))
    assert r["values"]["prefix: p"] == 4.0 and "prefix_4" in r["measurement"]


def test_weight_decay_is_judged_on_sink_1_where_the_paper_reports_it():
    rule = paper.claim("loss_wd").rule
    ours = {"wd_0": 10.0, "wd_0.1": 20.0, "wd_0.5": 50.0, "wd_1": 0.0, "wd_2": 0.0, "wd_5": 0.0}
    assert rule.apply(ours) == paper.DISAGREES        # the sink gone at WD 1, where the paper has 37.71 %
    assert rule.apply({**ours, "wd_1": 30.0}) == paper.AGREES
    assert rule.apply({**ours, "wd_1": 30.0, "wd_5": 20.0}) == paper.DISAGREES


def test_random_first_compares_with_the_no_intervention_control():
    c = paper.claim("data_random_first")
    assert c.measure["miniature"].points["default"] == ("no_fixed_token", "Sink_1")
    assert c.rule.apply({"default": 18.0, "random_first": 18.0}) == paper.DISAGREES
    assert c.rule.apply({"default": 0.0, "random_first": 0.0}) == paper.NOT_COMPARABLE


def test_ops_elu_reads_the_kernel_at_every_scale():
    c = paper.claim("ops_elu")
    for scale in ("real text (CPU)", "miniature"):
        assert {p for p, _ in c.measure[scale].points.values()} == {"elu", "kernel_elu"}
    assert not any("elu_norm" in json.dumps(x.measure, default=str) for x in paper.CLAIMS)


def test_record_writes_values_and_the_rule_decides(tmp_path):
    prov = {"profile": "cpu", "code_version": "abc"}
    row = paper.record("t1_natural", values={"SmolLM2: natural": 74.0, "Gemma: natural": 3.0},
                       measurement="2 models x 10 samples", provenance=prov, note="BOS off: 0.5 %",
                       directory=tmp_path)
    assert row["verdict (real LMs)"] == paper.DISAGREES and "BOS off: 0.5 %" in row["note"]
    assert row["note"].startswith("BOS on:")
    row = paper.record("t1_natural", values={"SmolLM2: natural": 74.0, "Gemma: natural": 30.0},
                       measurement="again", provenance=prov, directory=tmp_path)   # replaces the first
    assert row["verdict (real LMs)"] == paper.AGREES
    saved = json.loads((tmp_path / "03_section3_measuring.json").read_text())
    assert saved["records"]["t1_natural"]["real LMs"]["values"]["Gemma: natural"] == 30.0
    e = paper.entry(paper.claim("t1_natural"), paper.load_records(tmp_path))
    assert e["results"]["real LMs"]["verdict"] == paper.AGREES


def test_record_rejects_bad_input(tmp_path):
    with pytest.raises(ValueError, match="unknown claim 'nope'; valid: s3_massive_activation"):
        paper.record("nope", values={}, measurement="", provenance={}, directory=tmp_path)
    with pytest.raises(ValueError, match="unknown scale 'gpu'; valid: real LMs"):
        paper.record("t1_natural", values={}, measurement="", provenance={}, scale="gpu", directory=tmp_path)
    with pytest.raises(ValueError, match="is not measured by a chapter"):
        paper.record("opt_lr", values={}, measurement="", provenance={}, scale="miniature", directory=tmp_path)
    with pytest.raises(ValueError, match="must be a number"):
        paper.record("t1_natural", values={"a": "74 %"}, measurement="", provenance={}, directory=tmp_path)
    assert not list(tmp_path.iterdir())


def test_results_dir_follows_the_runner(monkeypatch, tmp_path):
    monkeypatch.setenv(paper.RESULTS_ENV, str(tmp_path / "r"))
    assert paper.results_dir() == tmp_path / "r"
    monkeypatch.delenv(paper.RESULTS_ENV)
    monkeypatch.chdir(tmp_path)
    assert paper.results_dir() == Path("sinkpaper_results")


def test_miniature_results_come_from_the_store(listing):
    by = {e["id"]: e for e in listing}
    r = by["bias_kv"]["results"]["miniature"]
    # the bias's Sink*, token 1's Sink_1, and the control whose token-1 sink the reading asks the bias to take
    assert r["status"] == "found" and set(r["values"]) == {"kv_bias: Sink*", "kv_bias: Sink_1", "default"}
    assert r["verdict"] == paper.claim("bias_kv").rule.apply(r["values"])
    # the real-text CPU scale reads the "text" profile: a claim whose runs are all stored has the rule's verdict
    # on them, the others none (the sweep stores its runs over several sessions)
    for e in listing:
        t, rule = e["results"]["real text (CPU)"], paper.claim(e["id"]).rule
        if t["status"] == "found" and rule is not None:     # a claim without a rule is shown, never judged
            judged = paper.judge(rule, t["seed_values"])[0]
            if t["verdict"] != judged:   # only the budget guard changes a verdict, and only a disagreement
                assert judged == paper.DISAGREES and t["budget"]["unripe"], e["id"]
                assert t["verdict"] in (paper.NOT_YET, paper.INCONCLUSIVE), e["id"]
        else:
            assert t["verdict"] == paper.NO_RESULT, e["id"]


def test_a_stale_stored_run_reads_stale_and_never_counts(tmp_path):
    store = tmp_path / "store"
    shutil.copytree(REPO / "results/store", store)
    found = paper.store_lookup(str(REPO / "configs/miniature.yaml"), "cpu", "kv_bias", 0, str(store))
    assert found[1] == "found"
    path = store / f"{found[0]['hash']}.json.gz"
    old = S.read_entry(path)
    old["config"]["model"]["d_model"] = 999    # made under another (older) definition of the point
    S.write_entry(path, old)
    payload, status = paper.store_lookup(str(REPO / "configs/miniature.yaml"), "cpu", "kv_bias", 0, str(store))
    assert payload is None and status == paper.STALE
    # the results layer reads the same lookup: the point is missing and stale there too
    sw = sweeps.stored_sweep(str(REPO / "configs/miniature.yaml"), "cpu", ["kv_bias"], [0], str(store))
    assert sw.payloads == [] and sw.stale == [("kv_bias", 0)]
    r = paper.result(paper.claim("bias_kv"), "miniature", {}, str(store))
    assert r["verdict"] == paper.NO_RESULT and r["values"] == {} and paper.STALE in r["note"]
    assert paper.verdict_text(r) == f"{paper.NO_RESULT} ({paper.STALE})"


def test_a_claim_with_runs_left_to_store_has_no_verdict_yet(tmp_path):
    # the sigmoid claim needs sigmoid and softmax at 3 seeds; with one softmax seed taken out, the rule on the part
    # (sigmoid has no sink) would read something: it must say nothing
    store = tmp_path / "store"
    shutil.copytree(REPO / "results/store", store)
    payload, found = paper.store_lookup(str(REPO / "configs/attention.yaml"), "text", "softmax", 1, str(store))
    assert found == "found"         # the run is in the committed store, so the part below is a real part
    (store / f"{payload['hash']}.json.gz").unlink()
    c = paper.claim("ops_sigmoid")
    r = paper.result(c, "real text (CPU)", {}, str(store))
    assert r["status"] == "incomplete" and r["verdict"] == paper.NO_RESULT and paper.verdict_text(r) == paper.NO_RESULT


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "sinkpaper", "claims", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=300)


def test_cli_json_and_id(monkeypatch, capsys):
    from sinkpaper.cli import main
    monkeypatch.chdir(REPO)
    assert main(["claims", "--json", "--records", "no-records-here"]) == 0     # in this process; the error path
    data = json.loads(capsys.readouterr().out)                                  # below runs it as a program
    assert len(data) >= 40 and set(data[0]) == FIELDS
    assert main(["claims", "--id", "ops_elu", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == "ops_elu"
    bad = _cli("--id", "nope")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.count("\n") == 1 and "unknown claim 'nope'; valid: s3_massive_activation" in bad.stderr


def test_claims_belong_to_toc_chapters():
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    files = {ch["file"].split("/")[-1] for part in toc["parts"] for ch in part["chapters"]}
    for c in paper.CLAIMS:
        assert c.chapter in files or c.chapter == "not run", (c.id, c.chapter)
        if c.chapter == "not run":
            assert all(isinstance(m, paper.NotRun) for m in c.measure.values()), c.id


def test_chapter_rows_drop_a_scale_none_of_their_claims_ran():
    """Sections 4-7 are not run at the paper's own scale: their chapter tables lose the two real-LM columns (so
    the table fits the page); a scale that one of the claims ran keeps its columns for every row."""
    sec4 = paper.rows(["opt_emergence", "opt_lr"])
    assert all("ours (real LMs)" not in r and "verdict (real LMs)" not in r for r in sec4)
    assert all("verdict (miniature)" in r and "verdict (real text (CPU))" in r for r in sec4)
    mixed = paper.rows(["opt_emergence", "t1_natural"])
    assert all("verdict (real LMs)" in r and "verdict (miniature)" in r for r in mixed)
    assert paper.row("opt_emergence")["verdict (real LMs)"] == "no result (not run)"   # the scorecard's row keeps it


def test_markdown_table_of_a_scale_shows_the_seeds_spread_and_skips_what_it_does_not_test(listing):
    table = paper.markdown_table(listing, "real text (CPU)")
    rows = [ln for ln in table.splitlines() if ln.startswith("| `")]
    tested = [e for e in listing if e["results"]["real text (CPU)"]["status"] != paper.NOT_RUN]
    assert len(rows) == len(tested) and not any("`t1_natural`" in r for r in rows)   # a real-LM-only claim
    by = {e["id"]: e["results"]["real text (CPU)"] for e in tested}
    for e_id, r in by.items():
        for label, seeds in r.get("seed_values", {}).items():   # the mean is the seeds' mean, [min, max] theirs
            assert r["values"][label] == pytest.approx(sum(seeds) / len(seeds)), (e_id, label)
            row = next(x for x in rows if f"`{e_id}`" in x)
            onset = paper.onset_text(r["seed_values"], label)
            if onset:            # an onset reads per seed, "never" where the quantity never formed
                assert f"{label} {onset}" in row and onset.replace("step ", "").count(" / ") == len(seeds) - 1
            elif len(seeds) > 1:
                d = digits_of(label, 1)      # a budget in whole steps, alpha to 3 decimals, percentages to 1
                lo, hi = f"{min(seeds):.{d}f}", f"{max(seeds):.{d}f}"    # one printed value: said once
                spread = f"(all {len(seeds)} seeds)" if lo == hi else f"[{lo}, {hi}]"
                assert f"{label} {r['values'][label]:.{d}f} {spread}" in row, (label, row)
    summary = next(ln for ln in table.splitlines() if " claims tested at " in ln)
    assert summary.startswith(f"{len(tested)} claims tested at real text (CPU): ")
    assert table.splitlines()[-1].startswith("Base rate for 'X removes the sink', real text (CPU): of the ")
    assert all(len(re.findall(r"(?<!\\)\|", r)) == 6 for r in rows)   # 5 cells: a "|" in a claim is escaped
    with pytest.raises(ValueError, match="valid: real LMs, real text"):
        paper.markdown_table(listing, "gpu")
    bad = _cli("--markdown", "gpu")
    assert bad.returncode == 2 and bad.stdout == "" and "unknown scale 'gpu'; valid: real LMs" in bad.stderr


def test_an_onset_reads_per_seed_and_never_where_it_never_formed():
    """The registry reads a quantity that never formed as one evaluation past the run's end; the listings show
    each seed's onset step, "never" for such a seed, never that stand-in step or a mean over it."""
    seeds = {"base: onset: sink": [1800.0, 498.0, 2600.0], "base: onset: induction": [2600.0] * 3,
             "base: steps": [2500.0] * 3}
    values = {k: sum(v) / 3 for k, v in seeds.items()}
    assert paper.onset_text(seeds, "base: onset: sink") == "step 1,800 / 498 / never"
    assert paper.onset_text(seeds, "base: onset: induction") == "never / never / never"
    assert paper.onset_text(seeds, "base: steps") is None
    assert paper.onset_text({"base: onset: sink": [1800.0]}, "base: onset: sink") is None   # no steps: no reading
    assert paper.fmt_values(values, seed_values=seeds) == ("base: onset: sink step 1,800 / 498 / never, base: onset: "
                                                           "induction never / never / never, base: steps 2500")
    # a budget is a whole number of steps
    assert paper.fmt_values(values) == ("base: onset: sink 1632.67, base: onset: induction 2600.00, base: steps "
                                        "2500")


def test_the_bos_statement_says_a_reason_claims_share_once():
    """Claims judged on the same BOS choice for the same reason share one bullet; another reason is its own."""
    text = paper.bos_statement(["t1_natural", "t1_random", "t1_repeat"])
    lines = text.splitlines()
    assert len(lines) == 2 and lines[0].startswith("- `t1_natural` (") and " and `t1_random` (" in lines[0]
    assert "verdicts with **BOS on**" in lines[0] and lines[0].count("Table 1 used each tokenizer") == 1
    assert lines[1].startswith("- `t1_repeat` (") and "verdict with **BOS off**" in lines[1]
    assert paper.bos_statement(["opt_lr"]) == ""         # a claim with no BOS choice says nothing
