"""One call of a lent GPU (scripts/lease.sh, sinkpaper.train.lease), rehearsed on the CPU at tiny shapes as the
device tool would run it: every slot is refilled as soon as a run ends, no run starts that the time left cannot
finish, a diverged run's record comes back, the call's files hold every finished run, and the import brings them
into a store once, refusing a rehearsal's runs and any entry whose code version or profile is not the lease's."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from sinkpaper.train.config import parse_sets
from sinkpaper.train.lease import (RunClock, best_width, bench_seconds, import_lease, parse_queue, resolve, run_lease)

REPO = Path(__file__).resolve().parents[1]
TINY = ["run.device=cpu", "run.compile=false", "model.d_model=32", "model.n_layers=4", "model.n_heads=2",
        "model.d_ff=64", "data.context=32", "model.max_seq_len=64", "optim.batch_size=4", "optim.steps=6",
        "eval.every=3", "eval.n_samples=8", "run.checkpoint_every=3", "run.log_every=3", "model.backend=eager",
        "data.path=data/sample/tokens.u16.xz"]


def _lease(*args, **env):
    return subprocess.run(["bash", str(REPO / "scripts" / "lease.sh"), *args], cwd=REPO, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "PYTHON": sys.executable, **env})


def _sinkpaper(*args):
    return subprocess.run([sys.executable, "-m", "sinkpaper", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})


@pytest.mark.slow
def test_a_rehearsed_lease_refills_each_slot_at_once_and_its_runs_import_once(tmp_path):
    out, lease_dir, dest = tmp_path / "out", tmp_path / "lease", tmp_path / "store"
    dest.mkdir()
    queue = tmp_path / "queue.txt"
    queue.write_text("calibration L4_d256_lr2e-3@1   # a comment\ndata random_first_two@0\n\ndata random_first@0\n")
    r = _lease("gpu", REHEARSE="1", OUT=str(out), LEASE_DIR=str(lease_dir), LEASE_SECONDS="300", SLOTS="2",
               QUEUE=str(queue))
    assert r.returncode == 0, r.stdout + r.stderr
    m = json.loads((out / "lease.json").read_text())
    runs = m["runs"]
    assert [x["state"] for x in runs] == ["stored"] * 3, r.stdout
    assert m["slots"] == 2 and m["finished"] == 3 and m["runs_per_minute"] > 0 and m["code_version"]
    # the third run took the first freed slot within seconds, not after the whole first wave
    first_end = min(x["started_s"] + x["wall_s"] for x in runs[:2])
    assert runs[2]["started_s"] - first_end < 5, runs
    assert all(x["started_s"] + x["wall_s"] <= m["budget_seconds"] for x in runs)
    with tarfile.open(out / "store.tgz") as t:
        names = [n for n in t.getnames() if n.endswith(".json.gz")]
    assert len(names) == 3
    left = subprocess.run(["pgrep", "-af", str(lease_dir)], capture_output=True, text=True).stdout
    assert not left.strip(), left                       # nothing of the call outlives it

    r = _lease("import", str(out), DEST=str(dest), ALLOW_REHEARSAL="1")
    assert r.returncode == 0 and "3 new run(s)" in r.stdout, r.stdout + r.stderr
    from sinkpaper.train.store import read_entry
    for f in dest.glob("*.json.gz"):
        entry = read_entry(f)
        assert entry["config"]["model"]["d_model"] == 32 and entry["profile"] == "gpu"   # the rehearsal's shapes
        assert entry["result"]["provenance"]["code_version"] == m["code_version"] and entry["curve"]
    assert "0 new run(s)" in _lease("import", str(out), DEST=str(dest), ALLOW_REHEARSAL="1").stdout  # never twice
    r = _lease("import", str(out))                     # a rehearsal never reaches results/store
    assert r.returncode == 2 and "rehearsal" in r.stderr


@pytest.mark.slow
def test_a_diverged_runs_record_comes_back_and_is_imported_as_diverged(tmp_path):
    out, dest = tmp_path / "out", tmp_path / "store"
    queue = tmp_path / "queue.txt"
    queue.write_text("data random_first@0\n")
    r = _sinkpaper("lease", "run", "--queue", str(queue), "--seconds", "200", "--slots", "1", "--out", str(out),
                   "--lease-dir", str(tmp_path / "lease"), "--store", str(tmp_path / "empty"), "--rehearsal",
                   *[x for s in [*TINY, "optim.lr=1e12"] for x in ("--set", s)])
    assert r.returncode == 0, r.stdout + r.stderr
    m = json.loads((out / "lease.json").read_text())
    assert [x["state"] for x in m["runs"]] == ["diverged"], r.stdout
    n, refused = import_lease(out, dest, allow_rehearsal=True)
    assert n == 1 and not refused
    [record] = (dest / "diverged").glob("*.json")
    assert "non-finite" in json.loads(record.read_text())["error"]

    # an entry whose code version is not the lease's is refused, one line naming it; the rest still comes in
    m["code_version"] = "0.0.0+gdeadbeef00"
    (out / "lease.json").write_text(json.dumps(m))
    n, refused = import_lease(out, tmp_path / "other", allow_rehearsal=True)
    assert n == 0 and len(refused) == 1 and "data/random_first seed 0 (diverged)" in refused[0]
    assert "the lease ran 0.0.0+gdeadbeef00" in refused[0]
    m["code_version"], m["profile"] = json.loads(record.read_text())["provenance"]["code_version"], "text"
    (out / "lease.json").write_text(json.dumps(m))
    refused = import_lease(out, tmp_path / "third", allow_rehearsal=True)[1]
    assert "is a gpu-profile run, the lease ran text" in refused[0]


def test_no_run_starts_that_its_measured_length_cannot_finish(tmp_path):
    queue = resolve(parse_queue("data random_first@0\n"), "gpu", overrides=parse_sets(TINY))
    clock = RunClock("test device", prior={queue[0].shape(): 60.0})     # measured: 60 s a run on this device
    lines = []
    m = run_lease(queue, profile="gpu", seconds=30, slots=2, out=tmp_path / "out", lease_dir=tmp_path / "lease",
                  store=tmp_path / "store", clock=clock, log=lines.append, poll=0.05)
    assert m["runs"] == [] and m["finished"] == 0, lines
    assert (tmp_path / "out" / "lease.json").exists()


def test_the_width_is_the_one_with_the_most_steps_per_second_and_sets_the_run_time():
    bench = {"shape": {"n_layers": 4, "d_model": 256, "context": 256, "batch_size": 128},
             "widths": [{"width": 1, "seconds_per_step": 0.010, "startup_seconds": 40.0},
                        {"width": 3, "seconds_per_step": 0.025, "startup_seconds": 50.0},
                        {"width": 6, "seconds_per_step": 0.070, "startup_seconds": 70.0}]}
    assert best_width(bench) == 3                    # 120 steps/s in all, against 100 and ~86
    assert best_width({"widths": []}) is None
    queue = resolve(parse_queue("calibration L4_d256_lr2e-3@1\ndata random_first@0\n"), "gpu")
    got = bench_seconds(bench, 3, queue)
    assert set(got) == {q.shape() for q in queue}
    assert got[queue[0].shape()] == pytest.approx(50.0 + 8000 * 0.025)
    assert bench_seconds(bench, 2, queue) == {}      # a width the benchmark did not measure gives no time


def test_the_committed_queue_resolves_at_the_gpu_profile_and_starts_with_the_calibration():
    queue = resolve(parse_queue((REPO / "scripts" / "gpu_queue.txt").read_text()), "gpu")
    assert [q.run.family for q in queue[:5]] == ["calibration"] * 5
    assert queue[0].label == "calibration/L4_d256_lr2e-3 seed 1"
    # every run of the points after calibration is at the gpu profile's recipe: no fixed token, no BOS unless the
    # point adds one, the calibrated shape
    for q in [q for q in queue[5:] if q.run.family != "cheaper"]:    # the exploratory cheaper recipe aside
        c = q.run.cfg
        assert (c.model["n_layers"], c.model["d_model"], c.data.context, c.optim.steps) == (4, 256, 256, 8000)
        assert c.data.fixed_token is None or q.run.point.startswith("fixed_pos")
    seeds0 = [q for q in queue[5:] if q.run.seed == 0]
    assert queue.index(seeds0[-1]) < min(queue.index(q) for q in queue[5:] if q.run.seed > 0)   # seed 0 first


def test_a_bad_queue_fails_before_any_compute_naming_the_line_or_the_valid_names(tmp_path):
    with pytest.raises(ValueError, match="line 2: 'data' is not 'FAMILY POINT"):
        parse_queue("data random_first\ndata\n")
    with pytest.raises(ValueError, match="seeds after '@' are integers"):
        parse_queue("data random_first@a\n")
    with pytest.raises(ValueError, match="unknown family 'dta'.*valid: .*data"):
        resolve(parse_queue("dta random_first\n"), "gpu")
    with pytest.raises(ValueError, match="unknown sweep point.*random_frist.*valid:"):
        resolve(parse_queue("data random_frist\n"), "gpu")
    r = _sinkpaper("lease", "run", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "--seconds" in r.stderr


def test_the_lease_script_says_how_to_call_it(tmp_path):
    r = _lease("nonsense", OUT=str(tmp_path / "out"), LEASE_DIR=str(tmp_path / "lease"))
    assert r.returncode == 2 and "usage:" in r.stderr
    r = _lease("gpu", OUT=str(tmp_path / "out"), LEASE_DIR=str(tmp_path / "lease"))
    assert r.returncode != 0 and "LEASE_SECONDS" in r.stderr


def test_every_point_a_claim_reads_at_the_gpu_scale_is_in_the_queue_with_three_seeds():
    from sinkpaper.paper import CLAIMS
    from sinkpaper.paper.claim import Runs
    from sinkpaper.paper.verdicts import GPU_SCALE
    from sinkpaper.train.sweep import sweep_configs
    queued = {q.run.cfg.hash() for q in resolve(parse_queue((REPO / "scripts" / "gpu_queue.txt").read_text()), "gpu")}
    queued |= {cfg.hash() for *_, cfg in sweep_configs(REPO / "configs/calibration.yaml", "gpu", ["L4_d256_lr2e-3"],
                                                        [0])}          # seed 0 of the base: stored
    read = [c for c in CLAIMS if isinstance(c.measure.get(GPU_SCALE), Runs)]
    assert len(read) >= 12
    for c in read:
        m = c.measure[GPU_SCALE]
        for label, spec in m.points.items():
            for *_, cfg in sweep_configs(REPO / (spec[2] if len(spec) > 2 else m.config), "gpu", [spec[0]], [0, 1, 2]):
                assert cfg.hash() in queued, f"{c.id}: {label} ({spec[0]} seed {cfg.run.seed}) is not queued"


@pytest.mark.slow
def test_the_width_measurement_times_real_runs_side_by_side(tmp_path):
    from sinkpaper.train.lease import measure_widths
    sets = [s for s in TINY if not s.startswith(("optim.steps", "eval.every", "run.log_every"))]
    r = measure_widths("configs/calibration.yaml", "gpu", [2], 2.0, tmp_path,
                       overrides=[*sets, "eval.every=20", "run.log_every=2"])
    assert [w["width"] for w in r["widths"]] == [2] and r["shape"]["d_model"] == 32
    [w] = r["widths"]
    assert w["runs_measured"] == 2 and w["seconds_per_step"] > 0 and w["startup_seconds"] > 0, r
    assert r["best_width"] == 2 and r["provenance"]["code_version"]
    assert not list(tmp_path.rglob("*.json.gz"))       # nothing stored


def test_the_lease_trains_a_calibration_seed_only_while_it_can_change_the_answer():
    from sinkpaper.results.calibration import lease_wants
    store = REPO / "results" / "store"
    q = {x.label: x for x in resolve(parse_queue(
        "calibration L4_d256_lr2e-3@0,1\ncalibration L4_d256_lr4e-3@1\ncheaper L4_d192@0\ndata random_first@0\n"),
        "gpu")}
    assert not lease_wants(q["calibration/L4_d256_lr2e-3 seed 0"], store, REPO)     # stored
    assert lease_wants(q["calibration/L4_d256_lr2e-3 seed 1"], store, REPO)         # seed 0 cleared the bar: open
    assert not lease_wants(q["calibration/L4_d256_lr4e-3 seed 1"], store, REPO)     # seed 0 below it: decided
    assert not lease_wants(q["cheaper/L4_d192 seed 0"], store, REPO)                # waits for the calibration
    assert lease_wants(q["data/random_first seed 0"], store, REPO)
