"""Runs that outlive a sitting: the latest checkpoint of each unfinished run kept with the repository
(results/inflight/), so that the next sitting, on a new machine, resumes it instead of starting over.

A sitting ends with ``keep`` (after the runs' last checkpoints): for every run directory under ``runs`` with a
complete checkpoint and no stored result, its config, its log and its latest checkpoint, packed
(:mod:`sinkpaper.train.compact`: the weights exact, AdamW's moments in bf16, 15-19 MB for the 4-layer d 128
models), are copied into results/inflight/<the same relative path>, replacing the copy an earlier sitting kept;
copies of runs now stored are removed. A sitting starts with ``restore`` (a sweep does it for the run it is about
to train): each kept run is unpacked into ``runs`` unless a checkpoint there is as far along. Every copy is
written under a temporary name and renamed, so a killed copy leaves the last whole one.

The kept copies are too large for the tracked tree, which must fit a call to a lent GPU
(tests/test_repository.py), and the machine does not outlive the sitting. So ``park`` commits them to git and
takes them off the tree in the next commit: the history holds the latest copies, the tree does not, and
``unpark`` (called by ``restore`` and by a sweep when results/inflight/ is empty) reads them back out of the
newest commit that held them."""
from __future__ import annotations

import fnmatch
import functools
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from . import store as S
from .compact import pack, unpack
from .trainer import latest_checkpoint

PACKED = "checkpoint.xz"   # a kept copy's checkpoint: checkpoints/step-N/checkpoint.xz

INFLIGHT = Path("results/inflight")


def _replace_dir(target: Path, fill) -> None:
    """``fill(tmp)`` writes a folder under a temporary name beside ``target``, which then takes its place: the old
    copy is moved aside first and removed last, so a kill at any point leaves a whole copy (the old or the new)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    try:
        fill(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = target.with_name(f".{target.name}.old")
    if target.exists():
        shutil.rmtree(old, ignore_errors=True)
        os.rename(target, old)
    os.rename(tmp, target)
    shutil.rmtree(old, ignore_errors=True)


def _run_dirs(root: Path) -> list[Path]:
    """The run directories under ``root`` that hold checkpoints (never a copy still being written: a dot name)."""
    return sorted(p.parent for p in Path(root).rglob("config.json") if (p.parent / "checkpoints").is_dir()
                  and not any(part.startswith(".") for part in p.relative_to(root).parts))


def _step(ckpt: Path | None) -> int:
    return -1 if ckpt is None else int(ckpt.name.split("-")[-1])


def _kept(kept: Path) -> Path | None:
    """A kept copy's packed checkpoint (checkpoints/<latest>/checkpoint.xz), or None."""
    pointer = kept / "checkpoints" / "latest"
    if not pointer.is_file():
        return None
    path = kept / "checkpoints" / pointer.read_text().strip() / PACKED
    return path if path.is_file() else None


def _kept_step(kept: Path) -> int:
    path = _kept(kept)
    return -1 if path is None else _step(path.parent)


def _copy_run_files(src: Path, dst: Path) -> None:
    """A run's config and log (what travels with its checkpoint), where it has them."""
    for name in ("config.json", "log.jsonl"):
        if (src / name).exists():
            shutil.copy2(src / name, dst / name)


def _finished(run: Path, store: Path) -> bool:
    return S.result_path(store, json.loads((run / "config.json").read_text())["hash"]).exists()


def keep(runs: str | Path = "runs", inflight: str | Path = INFLIGHT, store: str | Path = S.DEFAULT_STORE,
         say=print, only: str | list[str] | None = None) -> list[Path]:
    """Copy the latest checkpoint of every unfinished run under ``runs`` (``only``: those whose path under it
    matches this glob, or one of these globs, e.g. "default_cpu/*") into ``inflight``; drop finished ones."""
    runs, inflight, kept = Path(runs), Path(inflight), []
    globs = [only] if isinstance(only, str) else list(only or [])
    for run in _run_dirs(runs):
        if globs and not any(fnmatch.fnmatch(str(run.relative_to(runs)), g) for g in globs):
            continue
        ckpt = latest_checkpoint(run)
        target = inflight / run.relative_to(runs)
        if _finished(run, Path(store)):
            if target.exists():
                shutil.rmtree(target)
                say(f"{target}: its run is stored; the kept checkpoint is removed")
            continue
        if ckpt is None or _kept_step(target) >= _step(ckpt):
            continue
        def fill(tmp: Path, run=run, ckpt=ckpt) -> None:
            _copy_run_files(run, tmp)
            (tmp / "checkpoints" / ckpt.name).mkdir(parents=True)
            pack(ckpt, tmp / "checkpoints" / ckpt.name / PACKED)
            (tmp / "checkpoints" / "latest").write_text(ckpt.name)
        _replace_dir(target, fill)
        kept.append(target)
        say(f"kept {run.relative_to(runs)} at step {_step(ckpt):,} in {target}")
    for run in _run_dirs(inflight):   # a kept run that has since been stored (on another machine) is dropped
        if _finished(run, Path(store)):
            shutil.rmtree(run)
            say(f"{run}: its run is stored; the kept checkpoint is removed")
    return kept


def _restore_into(target: Path, kept: Path, say, say_when_behind: bool = True) -> bool:
    """Put the kept copy ``kept`` of a run at ``target`` when it is further along than any checkpoint there."""
    packed, step = _kept(kept), _kept_step(kept)
    here = latest_checkpoint(target) if target.exists() else None
    if step <= _step(here):
        if here is not None and say_when_behind:
            say(f"{target} is at step {_step(here):,} already (kept: {step:,})")
        return False

    def fill(tmp: Path) -> None:
        _copy_run_files(kept, tmp)
        (tmp / "checkpoints").mkdir()
        unpack(packed, tmp / "checkpoints" / packed.parent.name)
        (tmp / "checkpoints" / "latest").write_text(packed.parent.name)
    _replace_dir(target, fill)
    say(f"restored {target} at step {step:,} from the checkpoint an earlier sitting kept ({kept}; "
        "AdamW's moments were rounded to bf16)")
    return True


def restore(runs: str | Path = "runs", inflight: str | Path = INFLIGHT, store: str | Path = S.DEFAULT_STORE,
            say=print) -> list[Path]:
    """Copy every kept run back into ``runs`` where no checkpoint there is as far along; say what was done."""
    runs, inflight = Path(runs), Path(inflight)
    unpark(inflight, say=say)
    return [runs / kept.relative_to(inflight) for kept in _run_dirs(inflight)
            if _kept(kept) is not None and not _finished(kept, Path(store))
            and _restore_into(runs / kept.relative_to(inflight), kept, say)]


def restore_run(run_dir: str | Path, inflight: str | Path = INFLIGHT, say=print) -> bool:
    """Before a sweep trains ``run_dir``: the kept copy of the same run (its folder name holds the seed and the
    config hash) is put there when it is further along than any checkpoint already there. True when restored."""
    run_dir = Path(run_dir)
    unpark(inflight, say=say)
    kept = [p for p in _run_dirs(Path(inflight)) if p.name == run_dir.name] if Path(inflight).is_dir() else []
    return bool(kept) and _kept(kept[0]) is not None and _restore_into(run_dir, kept[0], say, False)


# ------------------------------------------------------------------------------------------------ git history
def _git(repo: Path, *args: str, text: bool = True):
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, check=True, text=text).stdout


def _repo_of(path: Path) -> tuple[Path, str] | None:
    """(the git checkout holding ``path``, ``path`` relative to its root), or None outside one."""
    path = Path(path).resolve()
    probe = next((p for p in (path, *path.parents) if p.is_dir()), None)
    try:
        root = Path(_git(probe, "rev-parse", "--show-toplevel").strip())
    except (OSError, subprocess.CalledProcessError, TypeError):
        return None
    return root, path.relative_to(root).as_posix()


def park(inflight: str | Path = INFLIGHT, say=print) -> str | None:
    """Commit the kept copies under ``inflight`` to git, then take them off the tree in a second commit (they stay
    in the history, where ``unpark`` finds them). Refuses when other changes are staged, so that neither commit
    carries anything else. Returns the commit that holds them (None when nothing is kept)."""
    inflight = Path(inflight)
    found = _repo_of(inflight)
    if found is None:
        raise ValueError(f"{inflight} is not inside a git checkout; nothing to park it in")
    repo, rel = found
    if not _run_dirs(inflight):
        say(f"nothing kept under {inflight}; nothing parked")
        return None
    if subprocess.run(["git", "diff", "--cached", "--quiet"], cwd=repo).returncode != 0:
        raise ValueError("other changes are staged; commit or unstage them before parking the kept checkpoints")
    runs = [f"{p.relative_to(inflight)} at step {_kept_step(p):,}" for p in _run_dirs(inflight)]
    _git(repo, "add", "--force", "--", rel)
    _git(repo, "commit", "-q", "-m", "Kept checkpoints of the unfinished runs, for the next sitting: "
         + "; ".join(runs) + " (weights exact, AdamW's moments in bf16; python -m sinkpaper store restore)")
    held = _git(repo, "rev-parse", "HEAD").strip()
    _git(repo, "rm", "-r", "-q", "--cached", "--", rel)
    _git(repo, "commit", "-q", "-m", f"Kept checkpoints off the tracked tree (they stay in {held[:12]}), which "
         "must fit a call to a lent GPU")
    say(f"parked {len(runs)} run(s) in commit {held[:12]}: " + "; ".join(runs))
    return held


@functools.lru_cache(maxsize=None)
def _parked(repo: Path, rel: str) -> tuple[str, tuple[str, ...]] | None:
    """(the newest commit whose tree holds files under ``rel``, those files), or None (looked up once a process)."""
    try:
        for commit in _git(repo, "log", "--format=%H", "--", rel).split():
            files = _git(repo, "ls-tree", "-r", "--name-only", commit, "--", rel).split("\n")
            files = tuple(f for f in files if f)
            if files:
                return commit, files
    except (OSError, subprocess.CalledProcessError):
        return None
    return None


def unpark(inflight: str | Path = INFLIGHT, say=print) -> list[Path]:
    """Read the kept copies back out of the newest commit that held them (``park``) into ``inflight``, each run
    only where no copy there is as far along; the run folders written. Nothing outside a git checkout."""
    inflight = Path(inflight)
    found = _repo_of(inflight)
    if found is None:
        return []
    repo, rel = found
    parked = _parked(repo, rel)
    if parked is None:
        return []
    commit, files = parked
    by_run: dict[str, list[str]] = {}
    for f in files:
        run_rel = Path(f).relative_to(rel)
        if "checkpoints" in run_rel.parts:
            by_run.setdefault(Path(*run_rel.parts[:run_rel.parts.index("checkpoints")]).as_posix(), []).append(f)
        else:
            by_run.setdefault(run_rel.parent.as_posix(), []).append(f)
    written = []
    for run_rel, names in sorted(by_run.items()):
        target = inflight / run_rel
        step = max((_step(Path(n).parent) for n in names if n.endswith(PACKED)), default=-1)
        if step < 0 or _kept_step(target) >= step:
            continue

        def fill(tmp: Path, names=names, target_rel=f"{rel}/{run_rel}") -> None:
            for name in names:
                out = tmp / Path(name).relative_to(target_rel)
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(_git(repo, "show", f"{commit}:{name}", text=False))
        _replace_dir(target, fill)
        written.append(target)
        say(f"unparked {run_rel} at step {step:,} from commit {commit[:12]}")
    return written
