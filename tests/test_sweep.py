"""Sweeps that run for hours: two workers on one store never train the same run, a dead worker's claim is
taken over, a diverged run is recorded and not retried, status counts done / running / left, and a profile
maps a sweep point onto its own base."""
import json
import os
import socket
import subprocess
import sys

import pytest

from sinkpaper.train import load
from sinkpaper.train.sweep import (claim, format_status, read_claim, release, run_sweep, status)

TINY = {
    "name": "tiny", "model": {"d_model": 32, "n_layers": 1, "n_heads": 2, "d_ff": 64, "max_seq_len": 64},
    "data": {"source": "bigram_backcopy", "vocab_size": 16, "n_tokens": 20_000, "context": 32, "bos": True},
    "optim": {"lr": 1e-2, "steps": 3, "batch_size": 8, "warmup": 1},
    "eval": {"every": 3, "n_samples": 8, "seq_len": 16}, "run": {"checkpoint_every": 3, "threads": 1},
    "sweep": {"wd_0": {"optim.weight_decay": 0.0}, "sigmoid": {"model.attention": "sigmoid"}},
}


@pytest.fixture
def family(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(json.dumps(TINY))
    return path


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_a_run_claimed_by_a_live_process_is_left_to_it(family, tmp_path):
    store = tmp_path / "store"
    cfg = load(family, "cpu", {"run.seed": 0}, "wd_0")
    (store / ".claims").mkdir(parents=True)
    live = {"host": socket.gethostname(), "pid": os.getppid(), "name": cfg.name, "seed": 0}
    (store / ".claims" / f"{cfg.hash()}.json").write_text(json.dumps(live))
    assert not claim(store, cfg.hash(), cfg.name, 0)
    done = run_sweep(family, "cpu", tmp_path / "runs", store, points=["wd_0"], seeds=[0, 1], progress=False)
    assert [p["config"]["run"]["seed"] for p in done] == [1]           # seed 0 left to its owner
    assert not list((tmp_path / "runs" / "tiny" / "wd_0").glob("seed-0-*"))
    rows = status([family], "cpu", store, seeds=[0, 1])
    assert rows[0]["done"] == 1 and rows[0]["running"] == 1 and rows[0]["left"] == 2
    assert "running" in format_status(rows)


def test_a_dead_workers_claim_is_taken_over_and_released_after_the_run(family, tmp_path):
    store = tmp_path / "store"
    cfg = load(family, "cpu", {"run.seed": 0}, "wd_0")
    (store / ".claims").mkdir(parents=True)
    dead = {"host": socket.gethostname(), "pid": _dead_pid(), "name": cfg.name, "seed": 0}
    (store / ".claims" / f"{cfg.hash()}.json").write_text(json.dumps(dead))
    done = run_sweep(family, "cpu", tmp_path / "runs", store, points=["wd_0"], seeds=[0], progress=False)
    assert len(done) == 1 and done[0]["hash"] == cfg.hash()
    assert read_claim(store, cfg.hash()) is None                        # released
    assert claim(store, cfg.hash(), cfg.name, 0) and read_claim(store, cfg.hash())["pid"] == os.getpid()
    held = read_claim(store, cfg.hash())
    assert held["host"] == socket.gethostname() and held["name"] == cfg.name
    release(store, cfg.hash())
    assert read_claim(store, cfg.hash()) is None


def test_two_sweep_processes_on_one_store_train_each_run_once(family, tmp_path):
    store, out = tmp_path / "store", tmp_path / "runs"
    code = ("import sys; from sinkpaper.train.sweep import run_sweep; "
            f"run_sweep({str(family)!r}, 'cpu', {str(out)!r}, {str(store)!r}, seeds=[0, 1], progress=False, "
            "log=lambda m: print(m, flush=True))")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
             for _ in range(2)]
    logs = [p.communicate(timeout=600)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), logs
    trained = [line for log in logs for line in log.splitlines() if line.startswith("training ")]
    assert len(trained) == 4 and len(set(trained)) == 4, logs               # 2 points x 2 seeds, each once
    assert len(list(store.glob("*.json.gz"))) == 4
    assert not list((store / ".claims").glob("*.json"))
    assert status([family], "cpu", store, seeds=[0, 1])[0]["done"] == 4


def test_a_diverged_run_is_recorded_and_not_retried(family, tmp_path):
    store = tmp_path / "store"
    bad = {**TINY, "sweep": {"huge_lr": {"optim.lr": 1e12}}}
    family.write_text(json.dumps(bad))
    first = run_sweep(family, "cpu", tmp_path / "runs", store, seeds=[0], progress=False)
    assert first == [] and len(list((store / "diverged").glob("*.json"))) == 1
    record = json.loads(next((store / "diverged").glob("*.json")).read_text())
    assert "non-finite" in record["error"] and record["name"] == "tiny/huge_lr"
    assert status([family], "cpu", store, seeds=[0])[0]["diverged"] == 1
    lines = []
    run_sweep(family, "cpu", tmp_path / "runs", store, seeds=[0], progress=False, log=lines.append)
    assert not any(line.startswith("training") for line in lines)


def test_a_profile_maps_a_point_onto_its_own_base(tmp_path):
    path = tmp_path / "fam.yaml"
    path.write_text(json.dumps({
        **TINY, "profiles": {"text": {"data.bos": False, "data.fixed_token": "bos", "data.fixed_pos": 1,
                                      "sweep": {"wd_0": {"data.fixed_token": None}}}}}))
    base = load(path, "text")
    moved = load(path, "text", None, "wd_0")
    other = load(path, "text", None, "sigmoid")
    assert base.data.fixed_token == "bos" and moved.data.fixed_token is None and other.data.fixed_token == "bos"
    assert moved.optim.weight_decay == 0.0
    assert load(path, "cpu", None, "wd_0").data.bos is True                 # other profiles unchanged
    path.write_text(json.dumps({**TINY, "profiles": {"text": {"sweep": {"no_such_point": {}}}}}))
    with pytest.raises(ValueError, match="unknown point.*no_such_point.*valid: wd_0, sigmoid"):
        load(path, "text")


def test_keep_going_logs_a_failing_run_releases_its_claim_and_trains_the_rest(family, tmp_path, monkeypatch):
    import sinkpaper.train.sweep as S
    real = S.train

    def train(cfg, *a, **k):   # one point breaks mid-run (a bug, an out-of-memory): not a divergence
        if cfg.name == "tiny/wd_0":
            raise RuntimeError("boom")
        return real(cfg, *a, **k)
    monkeypatch.setattr(S, "train", train)
    store = tmp_path / "store"
    with pytest.raises(RuntimeError, match="boom"):   # the default stops at the first failure
        run_sweep(family, "cpu", tmp_path / "runs", store, seeds=[0], progress=False)
    assert not list((store / ".claims").glob("*.json"))
    lines = []
    done = run_sweep(family, "cpu", tmp_path / "runs", store, seeds=[0], progress=False, log=lines.append,
                     keep_going=True)
    assert [p["name"] for p in done] == ["tiny/sigmoid"]
    assert any(line.startswith("failed tiny/wd_0") and "boom" in line for line in lines)
    assert not list((store / ".claims").glob("*.json")) and not (store / "diverged").exists()


def test_start_before_begins_no_run_after_it_and_still_reads_the_stored_ones(family, tmp_path):
    from datetime import datetime, timedelta, timezone
    from sinkpaper.train.sweep import parse_start_before
    store = tmp_path / "store"
    done = run_sweep(family, "cpu", tmp_path / "runs", store, points=["wd_0"], seeds=[0], progress=False,
                     start_before=datetime.now(timezone.utc) + timedelta(hours=1))
    assert len(done) == 1                                                # before the time: trained
    lines = []
    past = datetime.now(timezone.utc) - timedelta(seconds=1)
    done = run_sweep(family, "cpu", tmp_path / "runs", store, seeds=[0], progress=False, log=lines.append,
                     start_before=past)
    assert [p["name"] for p in done] == ["tiny/wd_0"]                   # the stored run is still read
    assert lines == [f"not starting tiny/sigmoid seed 0: it is past {past.isoformat(timespec='minutes')}"]
    assert not (tmp_path / "runs" / "tiny" / "sigmoid").exists() and not list((store / ".claims").glob("*.json"))
    assert status([family], "cpu", store, seeds=[0])[0]["left"] == 1
    assert parse_start_before("2026-11-25T20:05") == datetime(2026, 11, 25, 20, 5, tzinfo=timezone.utc)
    assert parse_start_before("2026-11-25T21:05+01:00") == datetime(2026, 11, 25, 20, 5, tzinfo=timezone.utc)
    with pytest.raises(ValueError, match="not an ISO 8601 date and time"):
        parse_start_before("20h05")


def test_pending_keeps_the_queue_entries_with_a_run_left(family, tmp_path, capsys):
    from sinkpaper.cli import main
    from sinkpaper.train.sweep import pending
    store = tmp_path / "store"
    run_sweep(family, "cpu", tmp_path / "runs", store, points=["wd_0"], seeds=[0], progress=False)
    entries = ["wd_0", "wd_0@0", "wd_0@0,1", "sigmoid@1"]
    assert pending([family], "cpu", store, entries, seeds=[0]) == ["wd_0@0,1", "sigmoid@1"]
    assert pending([family], "cpu", store, entries, seeds=[1]) == ["wd_0", "wd_0@0,1", "sigmoid@1"]
    with pytest.raises(ValueError, match=r"unknown sweep point\(s\) nope; valid: sigmoid, wd_0"):
        pending([family], "cpu", store, ["wd_0", "nope"])
    with pytest.raises(ValueError, match="'wd_0@x'.*integers"):
        pending([family], "cpu", store, ["wd_0@x"])
    queue = tmp_path / "queue.txt"
    queue.write_text("wd_0 wd_0@0,1\n\nsigmoid@1\n")
    assert main(["sweep", "--config", str(family), "--store", str(store), "--seeds", "0", "--pending", str(queue)]) == 0
    assert capsys.readouterr().out.split() == ["wd_0@0,1", "sigmoid@1"]
    assert main(["sweep", "--config", str(family), "--pending", str(tmp_path / "missing.txt")]) == 2
    assert "missing.txt" in capsys.readouterr().err
