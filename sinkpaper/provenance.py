"""Where a number came from: code version, hardware, library versions. Attached to every reported result."""
from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import platform
import subprocess
from pathlib import Path

import torch

from . import __version__


_ROOT = Path(__file__).resolve().parent.parent  # the checkout, when sinkpaper runs from one


def shown_path(path) -> str:
    """A path as a page may print it: relative to the checkout (or the working directory) when inside it,
    else its last two components after an ellipsis; never an absolute path of the machine that ran it."""
    import os

    p = Path(os.path.abspath(path))
    for base in (_ROOT, Path.cwd()):
        try:
            return p.relative_to(base.resolve() if base.exists() else base).as_posix() or "."
        except ValueError:
            try:
                return p.relative_to(base).as_posix() or "."
            except ValueError:
                pass
    return "\u2026/" + "/".join(p.parts[-2:])


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(_ROOT), *args], capture_output=True, text=True, timeout=10,
                          check=True).stdout.strip()


@functools.lru_cache(maxsize=1)
def _checkout() -> tuple[str, bool] | None:
    """(full commit, dirty) when sinkpaper runs from a git checkout of its own, else None. A package installed
    inside some other repository (a virtual environment in a project) is not a checkout of sinkpaper."""
    try:
        if Path(_git("rev-parse", "--show-toplevel")).resolve() != _ROOT:
            return None
        sha = _git("rev-parse", "HEAD")
        dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
        return sha, dirty
    except (OSError, subprocess.SubprocessError):
        return None


def _installed_commit() -> str | None:
    """The abbreviated commit setuptools-scm put in an installed version (``...+g<commit>``), else None."""
    local = __version__.partition("+")[2]
    for part in local.split("."):
        if part.startswith("g") and len(part) > 7 and all(c in "0123456789abcdef" for c in part[1:]):
            return part[1:]
    return None


def checkout_commit() -> str | None:
    """The full commit of the git checkout sinkpaper runs from, or None when it is not run from one."""
    here = _checkout()
    return here[0] if here else None


def commit() -> str | None:
    """The commit of the code that runs: the checkout's HEAD (full), or, for an installed package, the
    abbreviated commit in its version; None when neither is known."""
    here = _checkout()
    return here[0] if here else _installed_commit()


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """sinkpaper's version with the commit: from a checkout, ``<version>+g<commit>`` ('.dirty' for uncommitted
    changes to tracked files); installed, the version setuptools-scm derived from git when it was built, which
    carries the commit too (``0.1.1.devN+g<commit>``); ``+commit-unknown`` when neither says."""
    here = _checkout()
    if here:
        sha, dirty = here
        return f"{__version__.partition('+')[0]}+g{sha[:10]}{'.dirty' if dirty else ''}"
    if _installed_commit() is None:
        return f"{__version__.partition('+')[0]}+commit-unknown"
    return __version__


def hardware(device: str | torch.device | None = None) -> str:
    dev = torch.device(device) if device is not None else None
    if dev is not None and dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    return f"CPU {cpu_model()}, {torch.get_num_threads()} threads"


def on_cpu(provenance: dict) -> bool:
    """Did the result with this provenance run on a CPU? (`hardware` above names a CPU "CPU <model>, ...")."""
    return str(provenance.get("hardware", "")).startswith("CPU")


@functools.lru_cache(maxsize=1)
def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo on Linux), else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@functools.lru_cache(maxsize=1)
def uncommitted_diff() -> str | None:
    """The sha256 of `git diff HEAD` (tracked files) when the checkout has uncommitted changes, else None: a result
    computed from a dirty tree names exactly which changes it ran with (read once, when first asked: a long
    sweep records the diff it started with)."""
    here = _checkout()
    if not here or not here[1]:
        return None
    try:
        diff = subprocess.run(["git", "-C", str(_ROOT), "diff", "HEAD"], capture_output=True, timeout=30,
                              check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return hashlib.sha256(diff).hexdigest()


def stamp(device: str | torch.device | None = None, **extra) -> dict:
    """The provenance fields common to every result; `extra` adds the result-specific ones. A result computed from
    a checkout with uncommitted changes also carries the hash of those changes (``diff_sha256``)."""
    diff = uncommitted_diff()
    return {"code_version": code_version(), "hardware": hardware(device), "torch": torch.__version__,
            "python": platform.python_version(),
            "computed_at": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            **({"diff_sha256": diff} if diff else {}), **extra}
