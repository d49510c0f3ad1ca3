"""Runs that outlive a sitting (sinkpaper.train.inflight): the latest checkpoint of an unfinished run kept in the
repository and put back on the next machine; a finished run's copy removed; a copy never half-written."""
from __future__ import annotations

import json

import torch

from sinkpaper.train import inflight
from sinkpaper.train.store import result_path
from sinkpaper.train.trainer import latest_checkpoint, save_checkpoint


def _run(root, name="fam/point/seed-0-abc", step=100, config_hash="abc"):
    run = root / name
    run.mkdir(parents=True, exist_ok=True)
    (run / "config.json").write_text(json.dumps({"hash": config_hash}))
    (run / "log.jsonl").write_text(json.dumps({"step": step}) + "\n")
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.AdamW(model.parameters())
    model(torch.ones(1, 3)).sum().backward()
    opt.step()
    save_checkpoint(run, step, model, opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0), {"step": step})
    return run


def test_keep_then_restore_on_a_new_machine(tmp_path):
    runs, kept, store = tmp_path / "runs", tmp_path / "inflight", tmp_path / "store"
    _run(runs, step=100)
    lines = []
    assert inflight.keep(runs, kept, store, say=lines.append) == [kept / "fam/point/seed-0-abc"]
    assert latest_checkpoint(kept / "fam/point/seed-0-abc").name == "step-00000100"
    _run(runs, step=200)                                  # the run goes on; keep replaces the copy
    inflight.keep(runs, kept, store, say=lines.append)
    assert [p.name for p in (kept / "fam/point/seed-0-abc/checkpoints").glob("step-*")] == ["step-00000200"]
    assert not list(kept.rglob(".*"))                     # no temporary or old copy left beside it
    fresh = tmp_path / "new-machine-runs"                 # the next sitting: nothing under runs/
    assert inflight.restore(fresh, kept, store, say=lines.append) == [fresh / "fam/point/seed-0-abc"]
    assert latest_checkpoint(fresh / "fam/point/seed-0-abc").name == "step-00000200"
    assert "restored" in lines[-1] and "step 200" in lines[-1]
    assert inflight.restore(fresh, kept, store, say=lines.append) == []   # already as far along: left alone
    assert "already" in lines[-1]


def test_a_finished_run_is_not_kept(tmp_path):
    runs, kept, store = tmp_path / "runs", tmp_path / "inflight", tmp_path / "store"
    _run(runs, step=100)
    inflight.keep(runs, kept, store, say=lambda _: None)
    store.mkdir()
    result_path(store, "abc").write_text("{}")           # the run is stored now
    lines = []
    assert inflight.keep(runs, kept, store, say=lines.append) == []
    assert not (kept / "fam/point/seed-0-abc").exists() and "stored" in lines[0]
    assert inflight.restore(tmp_path / "fresh", kept, store, say=lines.append) == []


def test_a_sitting_whose_checkpoint_is_gone_says_so(tmp_path, capsys):
    from pathlib import Path

    from sinkpaper.train.store import write_partial
    from sinkpaper.train.sweep import sweep_configs
    from sinkpaper.train.trainer import _lost_sitting
    repo = Path(__file__).resolve().parents[1]
    [(_, _, cfg)] = sweep_configs(repo / "configs/default_cpu.yaml", "text", ["default_cpu_d128"], [0])
    assert _lost_sitting(tmp_path, cfg, 0) is None                  # no earlier sitting
    write_partial(tmp_path, cfg, [{"step": 300, "loss": 6.0}], {"step": 300})
    assert _lost_sitting(tmp_path, cfg, 300) is None                # resumed from where it stood
    assert _lost_sitting(tmp_path, cfg, 0) == 300
    assert "an earlier sitting reached step 300" in capsys.readouterr().err


def test_keep_only_the_runs_asked_for(tmp_path):
    runs, kept, store = tmp_path / "runs", tmp_path / "inflight", tmp_path / "store"
    _run(runs, "default_cpu/point/seed-0-a", config_hash="a")
    _run(runs, "text/point/seed-0-b", config_hash="b")
    assert inflight.keep(runs, kept, store, say=lambda _: None, only="default_cpu/*") == [
        kept / "default_cpu/point/seed-0-a"]


def test_a_sweep_restores_the_kept_copy_of_the_run_it_is_about_to_train(tmp_path):
    runs, kept, store = tmp_path / "runs", tmp_path / "inflight", tmp_path / "store"
    _run(runs, "fam/point/seed-0-abc", step=300)
    inflight.keep(runs, kept, store, say=lambda _: None)
    target = tmp_path / "other-runs" / "fam" / "point" / "seed-0-abc"
    said = []
    assert inflight.restore_run(target, kept, say=said.append)
    assert latest_checkpoint(target).name == "step-00000300" and "step 300" in said[0]
    assert not inflight.restore_run(target, kept, say=said.append)          # as far along already
    assert not inflight.restore_run(tmp_path / "x" / "seed-1-zzz", kept)    # no kept copy of that run
