"""Shared fixtures: the two offline pretrained models, loaded once per test session (CPU, fp32)."""
from __future__ import annotations

import os

import pytest
import torch

# Without a GPU the Triton kernels run under the interpreter; it must be on before triton is imported.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")


@pytest.fixture(scope="session")
def smollm2():
    from sinkpaper.lms import load_lm
    return load_lm("smollm2-135m")


@pytest.fixture(scope="session")
def gemma3():
    from sinkpaper.lms import load_lm
    return load_lm("gemma3-270m")


def pytest_collection_modifyitems(config, items):
    """`gpu` tests need CUDA; `slow` ones are skipped only when SINKPAPER_SKIP_SLOW=1. Every skip says why in
    pytest's summary (addopts -ra)."""
    no_cuda = pytest.mark.skip(reason="needs a CUDA GPU (none on this machine); runs on the GPU profile")
    no_slow = pytest.mark.skip(reason="slow test skipped because SINKPAPER_SKIP_SLOW=1")
    for item in items:
        if "gpu" in item.keywords and not torch.cuda.is_available():
            item.add_marker(no_cuda)
        if "slow" in item.keywords and os.environ.get("SINKPAPER_SKIP_SLOW") == "1":
            item.add_marker(no_slow)
