"""The torch device a user names (``--device``, ``run.device``), checked before anything is loaded or computed."""
from __future__ import annotations

import torch


def valid_devices() -> list[str]:
    """The device names that work on this machine."""
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    mps = getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()
    return ["cpu"] + (["cuda"] + [f"cuda:{i}" for i in range(n)] if n else []) + (["mps"] if mps else [])


def check_device(device: str | torch.device, what: str = "--device", also: tuple[str, ...] = ()) -> torch.device:
    """``device`` as a torch.device when this machine has it; otherwise a one-line ValueError naming the devices
    that do work here (after ``also``, other values the caller accepts, such as ``auto``)."""
    valid = [*also, *valid_devices()]
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(f"{what}={device!r} is not a device name; valid here: {', '.join(valid)}") from None
    if dev.type == "cpu":
        return dev
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            build = "a CPU-only build" if torch.version.cuda is None else f"built for CUDA {torch.version.cuda}"
            raise ValueError(f"{what}={device!r}: no CUDA device here (torch {torch.__version__}, {build}); "
                             f"valid here: {', '.join(valid)}")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"{what}={device!r}: this machine has {torch.cuda.device_count()} CUDA device(s); "
                             f"valid here: {', '.join(valid)}")
        return dev
    if dev.type in valid_devices():
        return dev
    raise ValueError(f"{what}={device!r} is not available; valid here: {', '.join(valid)}")
