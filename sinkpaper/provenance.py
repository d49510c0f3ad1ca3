"""Where a number came from: code version, hardware, library versions. Attached to every reported result."""
from __future__ import annotations

import datetime as _dt
import functools
import platform
import subprocess
from pathlib import Path

import torch

from . import __version__


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """sinkpaper version plus the git commit (and '+dirty' for uncommitted changes) when run from a checkout."""
    root = Path(__file__).resolve().parent.parent
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=10", "HEAD"], capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return f"{__version__}+g{sha}{'.dirty' if dirty else ''}"
    except (OSError, subprocess.SubprocessError):
        return __version__


def hardware(device: str | torch.device | None = None) -> str:
    dev = torch.device(device) if device is not None else None
    if dev is not None and dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    cpu = platform.processor() or platform.machine()
    return f"CPU {cpu}, {torch.get_num_threads()} threads"


def stamp(device: str | torch.device | None = None, **extra) -> dict:
    """The provenance fields common to every result; `extra` adds the result-specific ones."""
    return {"code_version": code_version(), "hardware": hardware(device), "torch": torch.__version__,
            "python": platform.python_version(),
            "computed_at": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), **extra}
