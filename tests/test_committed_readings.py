"""Issue 59, item 1: every claim whose measurement is committed reads it in a fresh clone. The real-LM claims that the
committed BOS audit measures (results/bos) read it where no chapter record exists, saying so; s3_massive_activation
reads token 1's hidden-state norm ratio from the stored text runs, by the same kind of rule as at real LMs."""
from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from sinkpaper import paper
from sinkpaper.paper import committed, lookup
from sinkpaper.results import reading

REPO = Path(__file__).resolve().parents[1]
TEXT = "real text (CPU)"


# ------------------------------------------------------------------------------ (a) the committed BOS audit
def _model(name, forced, none, *, prepends: bool, bos_token: str | None = "<s>"):
    """One model of a hand-made BOS audit: Sink_1 under the forced BOS and with nothing in front."""
    default = forced if prepends else none
    rows = [{"policy": "default", "sink_1": default, "alpha_1": 0.4, "first_token": bos_token if prepends else "varies"},
            ({"policy": "forced", "sink_1": forced, "alpha_1": 0.4, "first_token": bos_token} if bos_token else
             {"policy": "forced", "sink_1": None, "alpha_1": None, "why": "the tokenizer has no BOS token"}),
            {"policy": "none", "sink_1": none, "alpha_1": 0.4, "first_token": "varies"}]
    return {"model": name, "inputs": "natural", "n_samples": 100, "seq_len": 64, "epsilon": 0.3,
            "default_prefix": [2] if prepends else [], "rows": rows,
            "provenance": {"code_version": "v1", "hardware": "CPU", "computed_at": "2026-01-02 03:04 UTC"}}


def _write_audit(root: Path, *models) -> Path:
    path = root / committed.BOS_AUDIT
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"audit": "bos", "models": list(models)}))
    return path


@pytest.fixture
def in_clone(tmp_path, monkeypatch):
    """A working directory standing for a fresh clone: no chapter records, and the committed files are the ones the
    test writes (the repository's own are out of reach)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(committed, "_ROOT", tmp_path / "no-repository")
    monkeypatch.delenv(paper.RESULTS_ENV, raising=False)
    return tmp_path


def test_t1_natural_reads_the_committed_audit_with_bos_on_where_the_tokenizer_has_one(in_clone):
    _write_audit(in_clone, _model("a", 60.0, 70.0, prepends=False), _model("b", 40.0, 0.0, prepends=True),
                 _model("c", 99.0, 30.0, prepends=False, bos_token=None))
    r = paper.result(paper.claim("t1_natural"), "real LMs")
    # BOS on (its forced policy) for a and b; c has no BOS token, so off (none)
    assert r["values"] == {"a: natural": 60.0, "b: natural": 40.0, "c: natural": 30.0}
    assert r["status"] == "found" and r["verdict"] == paper.AGREES
    assert r["read_from"] == committed.BOS_AUDIT and r["provenance"]["read_from"] == committed.BOS_AUDIT
    assert r["provenance"]["computed_now"] is False and "committed" in r["provenance"]["source_of_numbers"]
    assert r["measurement"].startswith(f"committed {committed.BOS_AUDIT}")
    assert "a BOS off: 70.00 %" in r["note"] and "b has no sink on natural text (0.00 %)" in r["note"]
    table = paper.markdown_table([paper.entry(paper.claim("t1_natural"))], "real LMs")
    assert f"(read from the committed {committed.BOS_AUDIT})" in table


def test_t1_natural_from_the_audit_can_fail(in_clone):
    _write_audit(in_clone, _model("a", 60.0, 70.0, prepends=False), _model("b", 3.0, 80.0, prepends=True))
    r = paper.result(paper.claim("t1_natural"), "real LMs")
    assert r["values"]["b: natural"] == 3.0 and r["verdict"] == paper.DISAGREES


@pytest.mark.parametrize("without, verdict", [(0.0, paper.AGREES), (50.0, paper.AGREES), (70.0, paper.DISAGREES)])
def test_pack_bos_inference_reads_a_model_trained_with_its_bos_and_names_the_control(in_clone, without, verdict):
    _write_audit(in_clone, _model("ctrl", 68.0, 75.0, prepends=False), _model("g", 80.0, without, prepends=True))
    r = paper.result(paper.claim("pack_bos_inference"), "real LMs")
    assert r["values"] == {"g: with BOS": 80.0, "g: without BOS": without}   # the control is not judged
    assert r["verdict"] == verdict            # a move of 25 % of 80 (20 points) or more
    assert "control ctrl (trained without a BOS): Sink_1 68.00 % with, 75.00 % without" in r["note"]


def test_a_chapter_record_is_read_before_the_committed_file(in_clone):
    _write_audit(in_clone, _model("a", 60.0, 70.0, prepends=False))
    rec = {"measurement": "computed now", "values": {"a: natural": 2.0}, "note": "", "provenance": {}}
    r = paper.result(paper.claim("t1_natural"), "real LMs", {"t1_natural": {"real LMs": rec}})
    assert r["measurement"].startswith("chapter 03_section3_measuring") and "read_from" not in r
    assert r["verdict"] == paper.DISAGREES


def test_without_a_committed_file_or_a_record_there_is_no_result(in_clone):
    for cid in ("t1_natural", "pack_bos_inference", "t1_random"):
        r = paper.result(paper.claim(cid), "real LMs", {})
        assert r["status"] == "missing" and r["verdict"] == paper.NO_RESULT and "run the chapter" in r["note"]
    bad = in_clone / committed.BOS_AUDIT
    bad.parent.mkdir(parents=True)
    bad.write_text(json.dumps({"audit": "something else"}))
    with pytest.raises(ValueError, match="is not a BOS audit"):
        paper.result(paper.claim("t1_natural"), "real LMs", {})


def test_a_fresh_clone_reads_the_committed_audit():
    """The real-LM claims the committed audit measures read it with no chapter record: the file is tracked by git,
    and its numbers are the ones the verdicts read."""
    assert committed.BOS_AUDIT == __import__("sinkpaper.analysis.packing_bos", fromlist=["x"]).BOS_AUDIT
    if (REPO / ".git").exists() and shutil.which("git"):
        tracked = subprocess.run(["git", "ls-files", "--error-unmatch", committed.BOS_AUDIT], cwd=REPO,
                                 capture_output=True, text=True)
        assert tracked.returncode == 0, f"{committed.BOS_AUDIT} is not committed: {tracked.stderr}"
    audit = json.loads((REPO / committed.BOS_AUDIT).read_text())
    sink = {(m["model"], r["policy"]): r["sink_1"] for m in audit["models"] for r in m["rows"]}
    listing = paper.listing(directory=REPO / "no-records-here", store=str(REPO / "results/store"))
    by = {e["id"]: e["results"]["real LMs"] for e in listing}
    t1, bos = by["t1_natural"], by["pack_bos_inference"]
    assert t1["values"] == {"smollm2-135m: natural": sink[("smollm2-135m", "forced")],
                            "gemma3-270m: natural": sink[("gemma3-270m", "forced")]}
    assert bos["values"] == {"gemma3-270m: with BOS": sink[("gemma3-270m", "forced")],
                             "gemma3-270m: without BOS": sink[("gemma3-270m", "none")]}
    for r in (t1, bos):
        assert r["status"] == "found" and r["read_from"] == committed.BOS_AUDIT and r["verdict"] != paper.NO_RESULT
    # the claims no committed file measures still ask for their chapter
    assert by["t1_random"]["status"] == "missing" and by["s3_massive_activation"]["status"] == "missing"


# ------------------------------------------------------------ (b) the massive activation at real text
def test_the_norm_ratio_metric_is_the_largest_over_the_layers():
    assert reading.value({reading.MASSIVE_KEY: [0.9, 12.5, 3.0]}, "token-1 norm ratio") == 12.5
    assert reading.value({"sink_k": {"1": 40.0}}, "token-1 norm ratio") is None   # a run from before it was recorded
    payload = {"name": "f/p", "config": {"run": {"seed": 0}}, "curve": [
        {"step": s, "sink_k": {"1": 30.0}, reading.MASSIVE_KEY: [1.0, v, 2.0]}
        for s, v in ((100, 50.0), (800, 4.0), (900, 6.0), (1000, 8.0))]}
    p = reading.plateau_of(payload, "token-1 norm ratio")
    assert p["mean"] == pytest.approx(6.0) and p["n"] == 3 and (p["min"], p["max"]) == (4.0, 8.0)


def test_the_claim_reads_the_text_base_by_the_rule_it_uses_on_pretrained_models():
    c = paper.claim("s3_massive_activation")
    m = c.measure[TEXT]
    assert m.config == "configs/optimization.yaml" and m.seeds == (0, 1, 2)
    assert m.points == {"default: token-1 norm ratio": ("default", "token-1 norm ratio"),
                        "default: Sink_1": ("default", "Sink_1")}
    assert isinstance(c.rule, paper.Bound) and c.rule.bound == paper.MASSIVE == 10.0 and c.rule.above
    assert isinstance(c.measure["real LMs"], paper.Chapter)
    assert paper.rule_check(c) == {"paper": paper.AGREES, "no_effect": paper.DISAGREES}
    # a chapter's record (the settings with a sink only) reads as before: no Sink label, no premise
    assert c.rule.apply({"SmolLM2: token-1 norm ratio": 30.0}) == paper.AGREES
    assert c.rule.apply({"SmolLM2: token-1 norm ratio": 3.0}) == paper.DISAGREES


@pytest.mark.parametrize("ratio, sink, verdict, why", [
    ([12.0, 15.0, 11.0], [40.0, 35.0, 45.0], paper.AGREES, ""),
    ([6.2, 7.3, 7.2], [32.0, 43.0, 39.0], paper.DISAGREES, ""),
    ([12.0, 8.0, 11.0], [40.0, 35.0, 45.0], paper.INCONCLUSIVE, "in 2 of 3 seeds"),
    ([3.0, 2.0, 2.5], [0.0, 1.0, 0.0], paper.NOT_COMPARABLE, "its run has no sink"),
    ([3.0, 2.0, 2.5], [0.0, 40.0, 0.0], paper.INCONCLUSIVE, ""),       # the premise itself splits the seeds
])
def test_the_rule_on_seeds_needs_a_sink_token_and_can_fail(ratio, sink, verdict, why):
    rule = paper.claim("s3_massive_activation").rule
    seeds = {"default: token-1 norm ratio": ratio, "default: Sink_1": sink}
    got, reason = paper.judge(rule, seeds)
    assert got == verdict
    if verdict == paper.NOT_COMPARABLE:
        reason = rule.reason({k: paper.Seeds(k, v) for k, v in seeds.items()})
    assert why in reason


def _store_with_ratios(tmp_path: Path, ratios: dict[int, float]) -> str:
    """The committed store's text base runs (optimization/default, seeds 0-2) alone, every evaluation's token-1 norm
    ratio set to the given largest value per seed."""
    store = tmp_path / "store"
    store.mkdir()
    for seed, r in ratios.items():
        payload, st = lookup.store_lookup(str(REPO / "configs/optimization.yaml"), "text", "default", seed,
                                          str(REPO / "results/store"))
        assert st == "found", (seed, st)
        src = Path(payload["loaded_from"])
        data = json.loads(gzip.decompress(src.read_bytes()) if src.suffix == ".gz" else src.read_text())
        for c in data["curve"]:
            if "sink_k" in c:
                c[reading.MASSIVE_KEY] = [0.9, r, r / 2]
        (store / src.name).write_bytes(gzip.compress(json.dumps(data).encode()) if src.suffix == ".gz"
                                       else json.dumps(data).encode())
    return str(store)


@pytest.mark.parametrize("ratios, verdict", [({0: 12.0, 1: 20.0, 2: 11.0}, paper.AGREES),
                                             ({0: 6.0, 1: 7.0, 2: 8.0}, paper.DISAGREES),
                                             ({0: 12.0, 1: 9.0, 2: 11.0}, paper.INCONCLUSIVE)])
def test_the_claim_reads_each_stored_seeds_plateau_at_real_text(tmp_path, ratios, verdict):
    store = _store_with_ratios(tmp_path, ratios)
    r = paper.result(paper.claim("s3_massive_activation"), TEXT, {}, store)
    assert r["status"] == "found" and r["seeds"] == [0, 1, 2]
    assert r["seed_values"]["default: token-1 norm ratio"] == pytest.approx([ratios[s] for s in (0, 1, 2)])
    assert all(v >= paper.SINK for v in r["seed_values"]["default: Sink_1"])   # the base has a sink in every seed
    assert r["verdict"] == verdict


def test_a_seed_not_stored_holds_the_text_verdict_back(tmp_path):
    store = _store_with_ratios(tmp_path, {0: 12.0, 1: 20.0})
    r = paper.result(paper.claim("s3_massive_activation"), TEXT, {}, store)
    assert r["verdict"] == paper.NO_RESULT and r["status"] in ("incomplete", "too few seeds")


def test_a_card_leads_with_the_norm_ratio_not_the_sink_it_is_read_under():
    from sinkpaper.book import labels

    e = {"id": "s3_massive_activation", "paper": {"values": {}}}
    res = {"values": {"default: token-1 norm ratio": 6.9, "default: Sink_1": 38.0}}
    assert paper.claim("s3_massive_activation").rule.premises() == ["default: Sink_1"]
    assert labels.key_label(e, res) == "default: token-1 norm ratio"
    assert labels.key_label({**e, "id": "opt_emergence"}, res) == "default: Sink_1"   # a sink rate first elsewhere
