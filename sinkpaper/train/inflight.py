"""Runs that outlive a sitting: the latest checkpoint of each unfinished run kept in the repository
(results/inflight/), so that the next sitting, on a new machine, resumes it instead of starting over.

A sitting ends with ``keep`` (after the runs' last checkpoints): for every run directory under ``runs`` with a
complete checkpoint and no stored result, its config, its log and its latest checkpoint are copied into
results/inflight/<the same relative path>, replacing the copy an earlier sitting kept; copies of runs now stored
are removed. A sitting starts with ``restore``: each kept run is copied back into ``runs`` unless a checkpoint there
is as far along. Every copy is written under a temporary name and renamed, so a killed copy leaves the last whole
one. Only the latest checkpoint travels, and it is large (35-38 MB for the 4-layer d 128 models, weights and
AdamW's moments in fp32; xz saves 8 %): a sitting keeps the runs that cannot finish within one (``only``), the paper's
default first."""
from __future__ import annotations

import fnmatch
import json
import os
import shutil
import tempfile
from pathlib import Path

from . import store as S
from .trainer import latest_checkpoint

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


def _finished(run: Path, store: Path) -> bool:
    return S.result_path(store, json.loads((run / "config.json").read_text())["hash"]).exists()


def keep(runs: str | Path = "runs", inflight: str | Path = INFLIGHT, store: str | Path = S.DEFAULT_STORE,
         say=print, only: str | None = None) -> list[Path]:
    """Copy the latest checkpoint of every unfinished run under ``runs`` (``only``: those whose path under it
    matches this glob, e.g. "default_cpu/*") into ``inflight``; drop finished ones."""
    runs, inflight, kept = Path(runs), Path(inflight), []
    for run in _run_dirs(runs):
        if only and not fnmatch.fnmatch(str(run.relative_to(runs)), only):
            continue
        ckpt = latest_checkpoint(run)
        target = inflight / run.relative_to(runs)
        if _finished(run, Path(store)):
            if target.exists():
                shutil.rmtree(target)
                say(f"{target}: its run is stored; the kept checkpoint is removed")
            continue
        if ckpt is None or _step(latest_checkpoint(target)) >= _step(ckpt):
            continue
        def fill(tmp: Path, run=run, ckpt=ckpt) -> None:
            for name in ("config.json", "log.jsonl"):
                if (run / name).exists():
                    shutil.copy2(run / name, tmp / name)
            shutil.copytree(ckpt, tmp / "checkpoints" / ckpt.name)
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
    ckpt = latest_checkpoint(kept)
    here = latest_checkpoint(target) if target.exists() else None
    if _step(ckpt) <= _step(here):
        if here is not None and say_when_behind:
            say(f"{target} is at step {_step(here):,} already (kept: {_step(ckpt):,})")
        return False
    _replace_dir(target, lambda tmp: shutil.copytree(kept, tmp, dirs_exist_ok=True))
    say(f"restored {target} at step {_step(ckpt):,} from the checkpoint an earlier sitting kept ({kept})")
    return True


def restore(runs: str | Path = "runs", inflight: str | Path = INFLIGHT, store: str | Path = S.DEFAULT_STORE,
            say=print) -> list[Path]:
    """Copy every kept run back into ``runs`` where no checkpoint there is as far along; say what was done."""
    runs, inflight = Path(runs), Path(inflight)
    return [runs / kept.relative_to(inflight) for kept in _run_dirs(inflight)
            if latest_checkpoint(kept) is not None and not _finished(kept, Path(store))
            and _restore_into(runs / kept.relative_to(inflight), kept, say)]


def restore_run(run_dir: str | Path, inflight: str | Path = INFLIGHT, say=print) -> bool:
    """Before a sweep trains ``run_dir``: the kept copy of the same run (its folder name holds the seed and the
    config hash) is put there when it is further along than any checkpoint already there. True when restored."""
    run_dir = Path(run_dir)
    kept = [p for p in _run_dirs(Path(inflight)) if p.name == run_dir.name] if Path(inflight).is_dir() else []
    return bool(kept) and latest_checkpoint(kept[0]) is not None and _restore_into(run_dir, kept[0], say, False)
