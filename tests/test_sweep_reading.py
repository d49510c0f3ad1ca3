"""The chapters' sweep reading (sinkpaper.results.reading, .sweeps, .curves) and training helpers
(sinkpaper.book.experiments). The scorecard's data moved to sinkpaper.paper (tests/test_paper.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from sinkpaper.book import experiments, tables
from sinkpaper.results import curves, reading, sweeps
from sinkpaper.train import open_run

REPO = Path(__file__).resolve().parents[1]


def test_stored_sweep_reads_the_committed_miniature_runs():
    sw = sweeps.stored_sweep(str(REPO / "configs/miniature.yaml"), "cpu", points=["recipe", "wd_5"],
                                  seeds=(0, 1, 2), store=str(REPO / "results/store"))
    assert not sw.missing and len(sw.payloads) == 6
    assert {reading.point_of(p) for p in sw.payloads} == {"recipe", "wd_5"}
    s = reading.spread(sweeps.values_of(sw.payloads, "recipe"))
    assert s["n"] == 3 and s["min"] <= s["mean"] <= s["max"]
    table = tables.points_table(sw.payloads, ["wd_5", "recipe"], paper={"recipe": "p"}, held_out=True)
    assert [r["point"] for r in table.rows] == ["wd_5", "recipe"] and table.rows[1]["paper"] == "p"
    prov = sweeps.payloads_provenance(sw.payloads, loaded=True)
    assert prov["runs"] == 6 and prov["computed_now"] is False and prov["loaded_from"] == "results/store"
    rows = curves.curve_rows(sw.payloads[0])
    assert rows and all({"step", "tokens", "Sink_1 %", "alpha_1"} <= set(r) for r in rows)


def test_stored_sweep_says_what_is_missing(tmp_path):
    sw = sweeps.stored_sweep(str(REPO / "configs/optimization.yaml"), "gpu", points=["default", "lr_x2"],
                                  store=str(tmp_path))
    assert sw.payloads == [] and sw.missing == [("default", 0), ("lr_x2", 0)]
    text = sw.missing_text()
    assert "Not in the results store" in text and "--profile gpu" in text and "default, lr_x2" in text
    with pytest.raises(ValueError, match="unknown sweep point"):
        sweeps.stored_sweep(str(REPO / "configs/optimization.yaml"), "gpu", points=["nope"])


def test_live_run_and_load_model_roundtrip(tmp_path):
    """A live run's payload has the store's shape, and its saved weights reload into the same model."""
    import torch

    assert experiments.steps_overrides(None) == {}
    assert experiments.steps_overrides(300) == {"optim.steps": 300, "eval.every": 100, "run.checkpoint_every": 300}
    run = experiments.live_run(str(REPO / "configs/miniature.yaml"), "cpu", "recipe", seed=0, steps=6,
                               overrides={"optim.warmup": 2, "eval.n_samples": 4}, out_root=str(tmp_path))
    p = run.payload
    assert p["result"]["step"] == 6 and p["result"]["provenance"]["source_of_numbers"] == "computed now"
    assert p["curve"] and p["name"] == "miniature/recipe"
    model = open_run(run.run_dir).model()
    ids = torch.randint(0, 64, (2, 16))
    out = model(ids)
    logits = out.logits if hasattr(out, "logits") else out
    assert torch.isfinite(logits).all()


def test_live_runs_of_one_point_get_a_directory_per_process(tmp_path):
    """Chapters run side by side may train the same point: each process its own directory; those of ended
    processes are cleared, a live one's kept."""
    import os
    import subprocess
    import sys

    parent = tmp_path / "recipe-seed0-abc"
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale, other = parent / f"pid{int(ended.stdout)}", parent / "pid1"  # pid 1 (init) is alive
    for d in (stale, other, parent / f"pid{os.getpid()}"):
        (d / "ckpt").mkdir(parents=True)
    mine = experiments.own_dir(parent)
    assert mine == parent / f"pid{os.getpid()}" and not mine.exists()
    assert not stale.exists() and (other / "ckpt").is_dir()


def test_smoke_variants_trains_every_point_on_the_committed_text_sample(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)  # the cpu profile reads data/sample/tokens.u16.xz relative to the repository
    monkeypatch.setattr(experiments, "LIVE_ROOT", str(tmp_path))
    rows = experiments.smoke_variants("configs/optimization.yaml", "cpu", points=["default", "batch_x0.5"], steps=2)
    assert [r["point"] for r in rows] == ["default", "batch_x0.5"]
    assert all(r["steps"] == 2 and r["loss last"] > 0 for r in rows)
