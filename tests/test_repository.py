"""The repository as files: what every tracked file must be (no merge leftovers), and how big the checkout that
travels to a lent GPU machine may grow."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DEVICE_CALL_LIMIT = 64 * 2**20   # what the device tool sends to a lent GPU machine per call: the whole checkout
# the tracked tree stays this far under it: 6 MiB of room for the store and what a call carries; a run with the
# circuits' evaluations costs ~40 KB at fp32 precision (sinkpaper.train.store.at_fp32). Checkpoints a sitting keeps
# for the next live in git history, off the tree (sinkpaper.train.inflight.park)
TREE_BUDGET = 58 * 2**20
# the first or last line of a conflict git leaves: 7 of < or > and a label ("<<<<<<< HEAD", ">>>>>>> branch");
# "=======" alone is also a setext heading's underline, so it is not looked for
CONFLICT = re.compile(rb"^(<{7}|>{7}) \S", re.MULTILINE)


def _tracked() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [REPO / f for f in out.decode().split("\0") if f and (REPO / f).is_file()]


def _is_text(data: bytes) -> bool:
    return b"\0" not in data[:8192]


def test_no_tracked_text_file_holds_a_merge_conflict_marker():
    hits = []
    for p in _tracked():
        data = p.read_bytes()
        if _is_text(data) and CONFLICT.search(data):
            line = data[: CONFLICT.search(data).start()].count(b"\n") + 1
            hits.append(f"{p.relative_to(REPO)}:{line}")
    assert not hits, f"merge conflict markers: {hits}"


def test_the_conflict_check_catches_a_conflict_and_not_a_rule_of_equals_signs():
    conflicted = b"a\n<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> branch\nb\n"
    assert CONFLICT.search(conflicted)
    assert not CONFLICT.search(b"Title\n=======\n# a heading's rule\n<<<<<<<< eight, not a marker\n")


def test_the_tracked_tree_fits_a_call_to_a_lent_gpu_with_room_to_grow():
    paths = _tracked()
    size = sum(p.stat().st_size for p in paths)
    biggest = sorted(((p.stat().st_size, str(p.relative_to(REPO))) for p in paths), reverse=True)[:3]
    assert size < TREE_BUDGET < DEVICE_CALL_LIMIT, f"tracked tree {size / 2**20:.1f} MiB; largest: {biggest}"
