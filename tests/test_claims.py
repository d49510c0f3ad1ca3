"""The scorecard's data (sinkpaper.book.claims) and the chapters' training helpers (sinkpaper.book.experiments)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sinkpaper.book import claims, experiments

REPO = Path(__file__).resolve().parents[1]


def test_claims_are_unique_and_belong_to_toc_chapters():
    ids = [c.id for c in claims.CLAIMS]
    assert len(ids) == len(set(ids))
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    files = {ch["file"].split("/")[-1] for part in toc["parts"] for ch in part["chapters"]}
    for c in claims.CLAIMS:
        assert c.chapter in files, f"{c.id}: chapter {c.chapter} is not in _toc.yml"
        assert c.paper and c.text


def test_record_load_and_scorecard(tmp_path):
    prov = {"profile": "cpu", "hardware": "CPU", "code_version": "abc", "tokens_seen": 1000,
            "source_of_numbers": "computed now"}
    claims.record("opt_lr", ours="Sink_1 100 %", agrees=True, setting="miniature", provenance=prov,
                  kind="miniature", directory=tmp_path)
    claims.record("opt_lr", ours="no stored GPU run", agrees=None, setting="gpu", provenance=prov,
                  directory=tmp_path)
    claims.record("opt_lr", ours="Sink_1 0 %", agrees=False, setting="miniature again", provenance=prov,
                  kind="miniature", directory=tmp_path)  # replaces the first miniature record
    saved = json.loads((tmp_path / "04_optimization.json").read_text())
    assert set(saved["records"]["opt_lr"]) == {"lm", "miniature"}
    rows = {r["id"]: r for r in claims.scorecard_rows(tmp_path)}
    assert len(rows) == len(claims.CLAIMS)
    assert rows["opt_lr"]["miniature direction"] == "disagrees" and rows["opt_lr"]["miniature"] == "Sink_1 0 %"
    assert rows["opt_lr"]["direction"] == "not comparable"
    assert "1,000 tokens" in rows["opt_lr"]["provenance"] and "code abc" in rows["opt_lr"]["provenance"]
    assert rows["loss_wd"]["direction"] == "no result yet" and rows["loss_wd"]["ours"] == "—"
    card = claims.scorecard(tmp_path)
    assert card.counts()["no result yet"] == len(claims.CLAIMS) - 1
    page = card._repr_html_()
    assert '<a href="04_optimization.html">' in page and "verdict-disagrees" in page
    assert card.to_markdown().count("\n") == len(claims.CLAIMS) + 1


def test_record_rejects_bad_input(tmp_path):
    with pytest.raises(ValueError, match="unknown claim 'nope'; valid: s3_massive_activation"):
        claims.record("nope", ours="1", agrees=True, setting="", provenance={}, directory=tmp_path)
    with pytest.raises(ValueError, match="unknown kind 'gpu'; valid: lm, miniature"):
        claims.record("opt_lr", ours="1", agrees=True, setting="", provenance={}, kind="gpu", directory=tmp_path)
    with pytest.raises(ValueError, match="agrees must be True, False or None"):
        claims.record("opt_lr", ours="1", agrees="yes", setting="", provenance={}, directory=tmp_path)
    assert not list(tmp_path.iterdir())


def test_results_dir_follows_the_runner(monkeypatch, tmp_path):
    monkeypatch.setenv(claims.RESULTS_ENV, str(tmp_path / "r"))
    assert claims.results_dir() == tmp_path / "r"
    monkeypatch.delenv(claims.RESULTS_ENV)
    monkeypatch.chdir(tmp_path)
    assert claims.results_dir() == Path("sinkpaper_results")


def test_stored_sweep_reads_the_committed_miniature_runs():
    sw = experiments.stored_sweep(str(REPO / "configs/miniature.yaml"), "cpu", points=["recipe", "wd_5"],
                                  seeds=(0, 1, 2), store=str(REPO / "results/store"))
    assert not sw.missing and len(sw.payloads) == 6
    assert {experiments.point_of(p) for p in sw.payloads} == {"recipe", "wd_5"}
    mean, lo, hi = experiments.sink_at(sw.payloads, "recipe")
    assert lo <= mean <= hi
    table = experiments.sweep_table(sw.payloads, paper={"recipe": "p"}, order=["wd_5", "recipe"])
    assert [r["point"] for r in table.rows] == ["wd_5", "recipe"] and table.rows[1]["paper"] == "p"
    prov = experiments.payloads_provenance(sw.payloads, loaded=True)
    assert prov["runs"] == 6 and prov["computed_now"] is False and prov["loaded_from"] == "results/store"
    rows = experiments.curve_rows(sw.payloads[0])
    assert rows and all({"step", "tokens", "Sink_1 %", "alpha_1"} <= set(r) for r in rows)


def test_stored_sweep_says_what_is_missing(tmp_path):
    sw = experiments.stored_sweep(str(REPO / "configs/optimization.yaml"), "gpu", points=["default", "lr_x2"],
                                  store=str(tmp_path))
    assert sw.payloads == [] and sw.missing == [("default", 0), ("lr_x2", 0)]
    text = sw.missing_text()
    assert "Not in the results store" in text and "--profile gpu" in text and "default, lr_x2" in text
    with pytest.raises(ValueError, match="unknown sweep point"):
        experiments.stored_sweep(str(REPO / "configs/optimization.yaml"), "gpu", points=["nope"])


def test_live_run_and_load_model_roundtrip(tmp_path):
    """A live run's payload has the store's shape, and its saved weights reload into the same model."""
    import torch

    run = experiments.live_run(str(REPO / "configs/miniature.yaml"), "cpu", "recipe", seed=0,
                               overrides={"optim.steps": 6, "optim.warmup": 2, "eval.every": 6,
                                          "eval.n_samples": 4, "run.checkpoint_every": 6},
                               out_root=str(tmp_path))
    p = run.payload
    assert p["result"]["step"] == 6 and p["result"]["provenance"]["source_of_numbers"] == "computed now"
    assert p["curve"] and p["name"] == "miniature/recipe"
    model = experiments.load_model(run.run_dir)
    ids = torch.randint(0, 64, (2, 16))
    out = model(ids)
    logits = out.logits if hasattr(out, "logits") else out
    assert torch.isfinite(logits).all()


def test_smoke_variants_trains_every_point_on_the_committed_text_sample(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)  # the cpu profile reads data/sample/tokens.u16.xz relative to the repository
    monkeypatch.setattr(experiments, "LIVE_ROOT", str(tmp_path))
    rows = experiments.smoke_variants("configs/optimization.yaml", "cpu", points=["default", "batch_x0.5"], steps=2)
    assert [r["point"] for r in rows] == ["default", "batch_x0.5"]
    assert all(r["steps"] == 2 and r["loss last"] > 0 for r in rows)
