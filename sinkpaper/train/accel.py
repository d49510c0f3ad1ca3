"""How a run uses the machine: the dtype it computes in (bf16 autocast, fp32 master weights), whether the model
is compiled (inductor; eager when it cannot), and its threads. One place for the trainer and the benchmark.

Every fallback says so in one line on stderr and runs the slower path: never a silent slowdown.
"""
from __future__ import annotations

import contextlib
import functools
import os
import shutil
import sys
from pathlib import Path

import torch

BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")   # native bf16 dot products (AMX tiles, AVX-512 BF16)


def _say(message: str) -> None:
    print(f"sinkpaper: {message}", file=sys.stderr, flush=True)


@functools.lru_cache(maxsize=None)
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags from /proc/cpuinfo (empty where there is none, e.g. macOS)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, with its native bf16 flags ('' where unknown)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""
    name = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")), "")
    return f"{name} ({', '.join(sorted(cpu_flags() & set(BF16_CPU_FLAGS))) or 'no native bf16'})"


def bf16_support(device: torch.device) -> tuple[bool, str]:
    """(supported, why not). On the CPU: oneDNN present and native bf16 instructions (amx_bf16 / avx512_bf16);
    without /proc/cpuinfo, oneDNN's own bf16 check."""
    if device.type == "cuda":
        ok = torch.cuda.is_bf16_supported()
        return ok, "" if ok else f"{torch.cuda.get_device_name(device)} has no bf16"
    if device.type != "cpu":
        return False, f"bf16 autocast is not wired for device {device.type}"
    if not torch.backends.mkldnn.is_available():
        return False, "this torch build has no oneDNN (mkldnn), which runs bf16 matmuls on the CPU"
    flags = cpu_flags()
    if flags:
        if not flags & set(BF16_CPU_FLAGS):
            return False, f"this CPU has none of {', '.join(BF16_CPU_FLAGS)} (no native bf16 matmuls)"
        return True, ""
    ok = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    return ok, "" if ok else "oneDNN reports no bf16 support on this CPU"


def resolve_dtype(dtype: str, device: torch.device) -> str:
    """The dtype a run computes in: `dtype` ('fp32' | 'bf16'), or fp32 with one line on stderr saying why."""
    if dtype == "bf16":
        ok, why = bf16_support(device)
        if not ok:
            _say(f"run.dtype=bf16 is not supported here ({why}); running fp32")
            return "fp32"
    return dtype


def autocast(device: torch.device, dtype: str):
    """bf16 autocast for the forward (matmuls in bf16, weights and optimizer stay fp32); fp32: nothing."""
    if dtype == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def inductor_cpu_support() -> tuple[bool, str]:
    """(can compile, why not): inductor's CPU backend writes C++ and needs a compiler to build it."""
    try:
        from torch._inductor import config as ic
    except Exception as e:  # pragma: no cover - torch without inductor
        return False, f"torch._inductor is unavailable ({type(e).__name__}: {e})"
    cxx = ic.cpp.cxx[-1] if isinstance(ic.cpp.cxx, tuple) else ic.cpp.cxx
    names = [cxx] if cxx else []
    names += [os.environ.get("CXX") or "", "g++", "clang++", "c++"]
    if not any(n and shutil.which(n) for n in names):
        return False, "no C++ compiler found (g++, clang++ or $CXX): inductor's CPU backend builds C++"
    return True, ""


def maybe_compile(model: torch.nn.Module, device: torch.device, compile: bool) -> torch.nn.Module:
    """torch.compile(model) when asked and possible; otherwise the eager model, with one line saying why.
    The returned module wraps `model` (whose state dict and hooks stay the ones to save and evaluate)."""
    if not compile:
        return model
    if device.type == "cpu":
        ok, why = inductor_cpu_support()
        if not ok:
            _say(f"run.compile=true falls back to eager: {why}")
            return model
    return torch.compile(model)


_INTEROP_SET: list[int] = []


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def set_threads(n: int | None) -> None:
    """A run uses the threads it is given: intra-op = n, inter-op = 1 (the model has no parallel branches
    to overlap, and n inter-op threads on top of n intra-op ones would oversubscribe the cores), n capped at
    the CPUs this process may run on (a `taskset`, a container's cpuset, a book chapter run with --jobs):
    more threads than CPUs only wait on each other. Provenance records the threads actually used.
    `torch.set_num_interop_threads` works once per process, before any parallel work: later calls keep
    whatever was set then."""
    if not n:
        return
    torch.set_num_threads(min(int(n), usable_cpus()))
    if _INTEROP_SET or torch.get_num_interop_threads() == 1:
        return
    try:
        torch.set_num_interop_threads(1)
        _INTEROP_SET.append(1)
    except RuntimeError:  # parallel work already started in this process (a test, a notebook): keep it
        _INTEROP_SET.append(torch.get_num_interop_threads())
