"""Shared fixtures: the two offline pretrained models, loaded once per test session (CPU, fp32)."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def smollm2():
    from sinkpaper.lms import load_lm
    return load_lm("smollm2-135m")


@pytest.fixture(scope="session")
def gemma3():
    from sinkpaper.lms import load_lm
    return load_lm("gemma3-270m")
