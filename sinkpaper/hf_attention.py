"""The one way this package overrides a Hugging Face model's attention (used by `lms` and `streaming`).

transformers lets a model's attention go through a function registered under a name (`AttentionInterface`,
plus `AttentionMaskInterface` for the mask it is given). This module registers one such name, `ATTN_NAME`,
whose function is the model family's own `eager_attention_forward` unless an override is active: inside
``with overridden(model, attention): ...`` every attention call goes to ``attention(module, query, key, value,
attention_mask, *args, **kwargs)`` instead (bind per-run state with a closure or `functools.partial`), and the
mask it gets is the eager additive mask, or None with ``eager_mask=False`` (an override that builds its own).
Overrides nest (the innermost one answers); on leaving the block the model's previous attention implementation
is restored. `eager_attention(module)` is the family's eager function, for an override that wraps it.

No other module registers an attention function with transformers (tests/test_layers.py checks it), so a
second override is a second function passed here, never a second registry that could drift from this one.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

ATTN_NAME = "sinkpaper"


@dataclass(frozen=True)
class _Override:
    attention: Callable
    eager_mask: bool


_ACTIVE: list[_Override] = []  # the overrides of the forward passes in flight, innermost last


def eager_attention(module) -> Callable:
    """The model family's `eager_attention_forward` for this attention module (NotImplementedError if none)."""
    family = sys.modules[type(module).__module__]
    eager = getattr(family, "eager_attention_forward", None)
    if eager is None:
        raise NotImplementedError(f"{type(module).__name__} has no eager_attention_forward to wrap")
    return eager


def _attention(module, query, key, value, attention_mask, *args, **kwargs):
    if _ACTIVE:
        return _ACTIVE[-1].attention(module, query, key, value, attention_mask, *args, **kwargs)
    return eager_attention(module)(module, query, key, value, attention_mask, *args, **kwargs)


def _mask(*args, **kwargs):
    """The eager additive mask, so an override sees exactly what attn_implementation="eager" gets; None when the
    active override builds its own."""
    if _ACTIVE and not _ACTIVE[-1].eager_mask:
        return None
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS
    return ALL_MASK_ATTENTION_FUNCTIONS["eager"](*args, **kwargs)


def install(model) -> None:
    """Route `model`'s attention through `ATTN_NAME` (eager attention until an override is active)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface
    AttentionInterface.register(ATTN_NAME, _attention)
    AttentionMaskInterface.register(ATTN_NAME, _mask)
    model.set_attn_implementation(ATTN_NAME)


@contextmanager
def overridden(model, attention: Callable, *, eager_mask: bool = True):
    """Inside the block, `model`'s attention calls go to ``attention`` (see the module docstring)."""
    previous = model.config._attn_implementation
    if previous != ATTN_NAME:
        install(model)
    _ACTIVE.append(_Override(attention, eager_mask))
    try:
        yield
    finally:
        _ACTIVE.pop()
        if previous != ATTN_NAME:
            model.set_attn_implementation(previous)
