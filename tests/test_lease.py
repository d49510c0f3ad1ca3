"""The one-lease script (scripts/lease.sh), rehearsed on the CPU at tiny shapes as the device tool would run it:
it trains, returns what finished under $OUT as one tarball, and the import brings those runs into a store
without overwriting one, and refuses to bring a rehearsal's runs into results/store."""
from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _lease(*args, **env):
    return subprocess.run(["bash", str(REPO / "scripts" / "lease.sh"), *args], cwd=REPO, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "PYTHON": sys.executable, **env})


@pytest.mark.slow
def test_a_rehearsed_lease_returns_its_finished_runs_and_imports_them_once(tmp_path):
    out, lease_dir, dest = tmp_path / "out", tmp_path / "lease", tmp_path / "store"
    dest.mkdir()
    r = _lease("text", REHEARSE="1", OUT=str(out), LEASE_DIR=str(lease_dir), LEASE_SECONDS="45", WORKERS="1")
    assert r.returncode == 0, r.stdout + r.stderr
    time.sleep(3)   # nothing of the call outlives it: its workers loop over the queue, each would start the next point
    left = subprocess.run(["pgrep", "-af", str(lease_dir)], capture_output=True, text=True).stdout
    assert not left.strip(), left
    log = (out / "lease.log").read_text()
    assert "text-profile runs" in log and "done:" in log
    with tarfile.open(out / "store.tgz") as t:
        names = [n for n in t.getnames() if n.endswith(".json.gz")]
    assert names, log + (lease_dir / "text.log").read_text()

    r = _lease("import", str(out), DEST=str(dest))
    assert r.returncode == 0 and f"{len(names)} new run(s)" in r.stdout, r.stdout + r.stderr
    from sinkpaper.train.store import read_entry

    for f in dest.glob("*.json.gz"):
        entry = read_entry(f)
        assert entry["config"]["model"]["d_model"] == 32            # the rehearsal's tiny shapes
        assert entry["result"]["provenance"]["code_version"] and entry["curve"]
    assert "0 new run(s)" in _lease("import", str(out), DEST=str(dest)).stdout   # never overwritten

    r = _lease("import", str(out))                                   # a rehearsal never reaches results/store
    assert r.returncode == 2 and "rehearsal" in r.stderr


def test_the_lease_script_says_how_to_call_it(tmp_path):
    r = _lease("nonsense", OUT=str(tmp_path / "out"), LEASE_DIR=str(tmp_path / "lease"))
    assert r.returncode == 2 and "usage:" in r.stderr
