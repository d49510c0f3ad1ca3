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


def triton_device(device: str | None, smoke: bool) -> str:
    """Where the Triton kernels run for a benchmark: ``cuda`` (compiled) or ``cpu`` (the interpreter, a smoke run
    only: its timings are not performance). On the CPU it turns the interpreter on, which triton reads when it is
    imported, so call this before anything imports :mod:`sinkpaper.fused`. A choice that cannot work is a
    one-line ValueError saying what to do instead."""
    import os
    import sys

    interp, cuda = os.environ.get("TRITON_INTERPRET") == "1", torch.cuda.is_available()
    device = device or ("cuda" if cuda and not interp else "cpu")
    if not smoke and not cuda:
        raise ValueError("no CUDA device: the kernel benchmark needs a GPU; use --smoke to exercise the code path "
                         "on CPU under TRITON_INTERPRET=1")
    if not smoke and device == "cpu":
        raise ValueError("CPU timings under the Triton interpreter are not performance: use --device cuda, or --smoke")
    if device == "cuda" and not cuda:
        raise ValueError("no CUDA device: drop --device cuda to run the smoke benchmark on CPU")
    if device == "cuda" and interp:
        raise ValueError("TRITON_INTERPRET=1 runs Triton on the CPU: unset it to benchmark on CUDA")
    if device == "cpu" and not interp and "triton" in sys.modules:
        raise ValueError("triton was imported before TRITON_INTERPRET=1 could be set; set it in the environment")
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    return device
