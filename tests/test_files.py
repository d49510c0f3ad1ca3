"""sinkpaper.files: every writer's one atomic path (a temporary beside the destination, renamed when complete)."""
from __future__ import annotations

import os
import stat

import pytest

from sinkpaper.files import AtomicWrite, atomic_open, atomic_path, atomic_write_text


def _usual(mode: int) -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mode & ~mask


def test_text_and_streamed_writes_appear_whole_with_the_usual_mode(tmp_path):
    atomic_write_text(tmp_path / "sub" / "a.txt", "café\n")
    assert (tmp_path / "sub" / "a.txt").read_bytes() == "café\n".encode()
    with atomic_open(tmp_path / "b.bin") as f:
        f.write(b"\x00\x01")
        assert not (tmp_path / "b.bin").exists()   # nothing at the destination until the block completes
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    assert stat.S_IMODE((tmp_path / "b.bin").stat().st_mode) == _usual(0o666)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.bin", "sub"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "a.json"
    atomic_write_text(path, "old")
    with pytest.raises(RuntimeError, match="broke"):
        with atomic_open(path, "w") as f:
            f.write("half of the new")
            raise RuntimeError("broke")
    with pytest.raises(RuntimeError, match="broke"):
        with atomic_path(path) as tmp:
            tmp.write_text("half")
            raise RuntimeError("broke")
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_a_folder_is_renamed_into_place_or_removed(tmp_path):
    with atomic_path(tmp_path / "model", directory=True) as tmp:
        (tmp / "config.json").write_text("{}")
        assert tmp.parent == tmp_path and not (tmp_path / "model").exists()
    assert (tmp_path / "model" / "config.json").read_text() == "{}"
    assert stat.S_IMODE((tmp_path / "model").stat().st_mode) == _usual(0o777)
    with pytest.raises(KeyboardInterrupt):
        with atomic_path(tmp_path / "other", directory=True) as tmp:
            (tmp / "x").write_text("x")
            raise KeyboardInterrupt
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_commit_and_abort_by_hand(tmp_path):
    w = AtomicWrite(tmp_path / "t.tok")
    w.open("wb").write(b"abc")
    with pytest.raises(ValueError, match="once"):
        w.open("wb")
    assert w.commit() == tmp_path / "t.tok" and (tmp_path / "t.tok").read_bytes() == b"abc"
    with pytest.raises(ValueError, match="already committed"):
        w.commit()
    w = AtomicWrite(tmp_path / "u.tok")
    w.open("wb").write(b"abc")
    w.abort()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.tok"]


def test_progress_bars_redraw_on_a_terminal_and_write_a_line_now_and_then_to_a_log(monkeypatch):
    import io
    import sys

    import tqdm

    from sinkpaper import progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(tqdm, "tqdm", lambda iterable=None, **kw: kw)   # what the bar is made with
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert progress.bar(range(3), unit="x")["mininterval"] == progress.LOG_INTERVAL_S
    assert "disable" not in progress.bar(range(3))
    monkeypatch.setattr(sys, "stderr", Tty())
    assert progress.bar(range(3))["mininterval"] == 0.1
    assert progress.bar(range(3), mininterval=5)["mininterval"] == 5   # the caller's own wins
    # inside a notebook kernel (its output is not a terminal) the bar is off: never a widget, never a text bar
    monkeypatch.setitem(sys.modules, "ipykernel", object())
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert progress.bar(range(3))["disable"] is True
