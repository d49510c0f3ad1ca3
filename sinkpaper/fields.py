"""Dataclass fields as the configs use them: type checks against the annotations, and the canonical form of a
config section (fields at their default left out) that the results store hashes.

The config dataclasses (`ModelConfig`, the sections of `TrainConfig`) annotate every field with simple types
(``int``, ``float``, ``bool``, ``str``, ``list``, ``None`` and unions of them), written as strings because their
modules use ``from __future__ import annotations``. :func:`check_value` checks a value against such an
annotation with one-line errors that name the field and the accepted types; an ``int`` is accepted where a
``float`` is, a ``bool`` is never taken for a number.
"""
from __future__ import annotations

import dataclasses
import functools
import numbers
from typing import Any

_TYPE_NAMES = {"int": "an integer", "float": "a number", "bool": "true or false", "str": "a string",
               "list": "a list", "None": "null"}


@functools.lru_cache(maxsize=None)
def field_types(cls) -> dict[str, tuple[str, ...]]:
    """{field name: the type names of its annotation} for a dataclass, e.g. ``("int", "None")``."""
    out = {}
    for f in dataclasses.fields(cls):
        ann = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
        names = tuple(part.strip() for part in ann.split("|"))
        unknown = [n for n in names if n not in _TYPE_NAMES]
        if unknown:
            raise TypeError(f"{cls.__name__}.{f.name}: annotation {ann!r} has types the config checks do not "
                            f"know ({', '.join(unknown)}); use {', '.join(_TYPE_NAMES)}")
        out[f.name] = names
    return out


def _matches(value: Any, name: str) -> bool:
    if name == "None":
        return value is None
    if name == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool):  # YAML `true` is no number and no string
        return False
    if name == "int":
        return isinstance(value, numbers.Integral)
    if name == "float":
        return isinstance(value, numbers.Real)
    if name == "str":
        return isinstance(value, str)
    if name == "list":
        return isinstance(value, (list, tuple))
    return False


def check_value(cls, name: str, value: Any, prefix: str = "") -> None:
    """Raise ValueError (one line) unless ``value`` fits the annotation of field ``name`` of dataclass ``cls``."""
    types = field_types(cls)[name]
    if not any(_matches(value, t) for t in types):
        wanted = " or ".join(_TYPE_NAMES[t] for t in types)
        raise ValueError(f"{prefix}{name} must be {wanted}, got {value!r} ({type(value).__name__})")


def check_types(cls, values: dict, prefix: str = "") -> None:
    """Check every known field of ``values`` (a dict of field values) against ``cls``'s annotations."""
    types = field_types(cls)
    for name, value in values.items():
        if name in types:
            check_value(cls, name, value, prefix)


@functools.lru_cache(maxsize=None)
def _defaults(cls) -> dict[str, Any]:
    out = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            out[f.name] = f.default_factory()  # type: ignore[misc]
    return out


def _plain(value: Any) -> Any:
    """JSON-like form: tuples as lists, numpy scalars as Python numbers."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    return value


def canonical(cls, values: dict) -> dict:
    """``values`` without the fields that hold ``cls``'s default, with integers in float-only fields made floats
    (``lr: 1`` and ``lr: 1.0`` are the same config). Keys ``cls`` does not have are kept as they are, so a field
    removed from the dataclass still tells runs apart."""
    types, defaults = field_types(cls), _defaults(cls)
    out = {}
    for name, value in values.items():
        value = _plain(value)
        if name in types and "float" in types[name] and "int" not in types[name] and type(value) is int:
            value = float(value)
        if name in defaults:
            default = _plain(defaults[name])
            if type(value) is type(default) and value == default:
                continue
        out[name] = value
    return out
