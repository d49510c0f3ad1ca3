"""Runs that outlive a sitting (sinkpaper.train.inflight, sinkpaper.train.compact): the latest checkpoint of an
unfinished run packed (weights exact, moments in bf16), kept in git history off the tracked tree and put back on the
next machine; a finished run's copy removed; a copy never half-written; a run resumed from a packed copy follows
the trajectory of one that never stopped."""
from __future__ import annotations

import json
import subprocess

import pytest
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
    assert inflight._kept(kept / "fam/point/seed-0-abc").parent.name == "step-00000100"
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
    _run(runs, "book/04/miniature/recipe-seed0-c/pid1", config_hash="c")   # a chapter's throwaway live run
    assert inflight.keep(runs, kept, store, say=lambda _: None, only=["default_cpu/*", "text/*"]) == [
        kept / "text/point/seed-0-b"]                                     # default_cpu's copy is there already


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


# ------------------------------------------------------------------------------------------------ packed checkpoints
def _moments(ckpt):
    st = torch.load(ckpt / "state.pt", weights_only=False)
    return st, {(i, k): v for i, s in st["optimizer"]["state"].items() for k, v in s.items() if k.startswith("exp_")}


def test_a_packed_checkpoint_keeps_the_weights_exact_and_rounds_only_the_moments(tmp_path):
    from safetensors.torch import load_file

    from sinkpaper.train.compact import pack, unpack
    run = _run(tmp_path / "runs", step=100)
    ckpt = latest_checkpoint(run)
    packed = pack(ckpt, tmp_path / "c.xz")
    back = unpack(packed, tmp_path / "back")
    w0, w1 = load_file(str(ckpt / "model.safetensors")), load_file(str(back / "model.safetensors"))
    assert w0.keys() == w1.keys() and all(torch.equal(w0[k], w1[k]) for k in w0)     # bit for bit
    (s0, m0), (s1, m1) = _moments(ckpt), _moments(back)
    assert m0.keys() == m1.keys() and len(m0) == 4
    for k in m0:   # each moment within one bf16 rounding of its fp32 value, and equal to that rounding
        assert m1[k].dtype == torch.float32 and torch.equal(m1[k], m0[k].to(torch.bfloat16).float())
        assert torch.allclose(m1[k], m0[k], rtol=2**-8, atol=0)
    assert s1["step"] == s0["step"] and torch.equal(s1["rng_torch"], s0["rng_torch"])
    assert s1["scheduler"] == s0["scheduler"] and s1["optimizer"]["param_groups"] == s0["optimizer"]["param_groups"]
    assert s1["compact"]["moments"] == "bf16" and "compact" not in s0


def test_a_file_that_is_not_a_whole_packed_checkpoint_is_refused_before_anything_is_written(tmp_path):
    from sinkpaper.train.compact import pack, unpack
    packed = pack(latest_checkpoint(_run(tmp_path / "runs")), tmp_path / "c.xz")
    (tmp_path / "cut.xz").write_bytes(packed.read_bytes()[:-200])
    with pytest.raises(ValueError, match="cut short or damaged"):
        unpack(tmp_path / "cut.xz", tmp_path / "a")
    (tmp_path / "other.xz").write_bytes(b"PK\x03\x04 not ours")
    with pytest.raises(ValueError, match="not a packed sinkpaper checkpoint"):
        unpack(tmp_path / "other.xz", tmp_path / "b")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_run_resumed_from_a_packed_checkpoint_follows_the_run_that_never_stopped(tmp_path):
    """The trajectory beside the reference's: the same batches, the weights exact at the restart, the moments one
    bf16 rounding off; the loss after the restart stays within 1e-3 of the uninterrupted run's at every logged
    step, and the run's routes say it was resumed from a packed copy."""
    from sinkpaper.train import build
    from sinkpaper.train.compact import pack, unpack
    from sinkpaper.train.trainer import read_log, train
    from test_train import TINY, train_until
    cfg = build(TINY, "cpu", {})
    full = train(cfg, tmp_path / "full", progress=False)
    train_until(cfg, tmp_path / "cut", 13)
    ckpts = tmp_path / "cut" / "checkpoints"
    ckpt = latest_checkpoint(tmp_path / "cut")
    assert ckpt.name == "step-00000012"
    packed = pack(ckpt, tmp_path / "step-12.xz")
    for p in ckpts.iterdir():   # the machine is gone: only the packed copy is left
        subprocess.run(["rm", "-rf", str(p)], check=True)
    unpack(packed, ckpts / "step-00000012")
    (ckpts / "latest").write_text("step-00000012")
    resumed = train(cfg, tmp_path / "cut", resume=True, progress=False)
    a = {r["step"]: r["loss"] for r in read_log(tmp_path / "full" / "log.jsonl") if "loss" in r}
    b = {r["step"]: r["loss"] for r in read_log(tmp_path / "cut" / "log.jsonl") if "loss" in r}
    after = [s for s in a if s > 12]
    assert after and set(a) == set(b)
    assert all(a[s] == b[s] for s in a if s <= 12)                   # the same run up to the restart
    assert max(abs(a[s] - b[s]) for s in after) < 1e-3
    assert abs(resumed["val_loss"] - full["val_loss"]) < 1e-3
    routes = resumed["provenance"]["routes"]
    assert routes[-1]["from_step"] == 12 and routes[-1]["resumed_from_packed"]["moments"] == "bf16"


# ------------------------------------------------------------------------------------------------ git history
def _git(repo, *args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout


def test_parked_copies_live_in_the_history_not_the_tree_and_come_back_on_a_new_machine(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    for k, v in {"user.name": "t", "user.email": "t@t"}.items():
        _git(repo, "config", k, v)
    (repo / ".gitignore").write_text("/results/inflight/\n")
    _git(repo, "add", ".gitignore")
    _git(repo, "commit", "-q", "-m", "start")
    runs, kept, store = tmp_path / "runs", repo / "results" / "inflight", tmp_path / "store"
    _run(runs, step=300)
    inflight.keep(runs, kept, store, say=lambda _: None)
    said = []
    held = inflight.park(kept, say=said.append)
    assert "step 300" in said[0]
    assert "results/inflight" not in _git(repo, "ls-files")                      # off the tracked tree
    assert any(p.endswith("checkpoint.xz") for p in _git(repo, "ls-tree", "-r", "--name-only", held).split())
    assert len(_git(repo, "log", "--format=%H").split()) == 3

    # the next machine: a clone of the history, nothing under results/inflight and nothing under runs
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    inflight._parked.cache_clear()
    fresh = tmp_path / "fresh-runs"
    restored = inflight.restore(fresh, clone / "results" / "inflight", store, say=said.append)
    assert restored == [fresh / "fam/point/seed-0-abc"]
    assert latest_checkpoint(restored[0]).name == "step-00000300"
    assert any("unparked fam/point/seed-0-abc at step 300" in line for line in said)
    (s0, m0), (s1, m1) = _moments(latest_checkpoint(runs / "fam/point/seed-0-abc")), _moments(
        latest_checkpoint(restored[0]))
    assert all(torch.equal(m1[k], m0[k].to(torch.bfloat16).float()) for k in m0)

    # a staged change is never swept into the park's commits
    (repo / "other.txt").write_text("x")
    _git(repo, "add", "other.txt")
    with pytest.raises(ValueError, match="other changes are staged"):
        inflight.park(kept, say=lambda _: None)
