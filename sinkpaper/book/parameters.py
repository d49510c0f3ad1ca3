"""One check of a chapter's papermill parameters, run before any compute.

A chapter passes its parameters by name; the name says the rule, so every chapter checks ``live_steps`` or
``miniature_seeds`` the same way and says the same thing when one is wrong:

* ``profile``: one of :data:`PROFILES`; ``gpu`` and ``paper`` need a CUDA GPU;
* ``*_seeds``: a non-empty list of ints >= 0;  ``seed`` / ``*_seed``: an int >= 0;
* ``*_steps``: None (the point's own steps) or an int >= 1;
* ``*_samples``, ``batch_size``: an int >= 1 (``minimum`` lowers or raises it per name);
* ``epsilon``, ``seq_len``: the metric's own checks;
* ``choices``: ``{name: (value, valid values)}``, e.g. the live point among the miniature's points;
* a comma-separated list ("softmax, sigmoid"): :func:`listed`, each entry among the valid values.

It returns the chapter's provenance stamp (device, profile, code version) for its first line.

The runner's side of the same parameters (``-p NAME VALUE`` parsed and checked against a chapter's
``parameters`` cell, and what a reader of the executed page sees of them) is :mod:`sinkpaper.site.pages`.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from .. import metrics, provenance

PROFILES = ("cpu", "gpu", "paper")


def device_of(profile: str) -> str:
    """The torch device a profile runs on: cpu, or cuda for gpu / paper (an error when there is none)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; valid: {', '.join(PROFILES)}")
    if profile == "cpu":
        return "cpu"
    import torch

    if not torch.cuda.is_available():
        raise ValueError(f"profile {profile!r} trains on a CUDA GPU; none here: use profile='cpu'")
    return "cuda"


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check(name: str, value: Any, minimum: Mapping[str, int]) -> None:
    if name.endswith("_seeds"):
        if not isinstance(value, (list, tuple)) or not value or not all(_is_int(s) and s >= 0 for s in value):
            raise ValueError(f"{name} must be a non-empty list of seeds (ints >= 0), got {value!r}")
    elif name == "seed" or name.endswith("_seed"):
        if not _is_int(value) or value < 0:
            raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    elif name.endswith("_steps"):
        if value is not None and (not _is_int(value) or value < 1):
            raise ValueError(f"{name} must be None (the point's own steps) or an int >= 1, got {value!r}")
    elif name.endswith("_samples") or name == "batch_size":
        low = minimum.get(name, 1)
        if not _is_int(value) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    elif name == "epsilon":
        metrics.check_epsilon(value)
    elif name == "seq_len":
        metrics.check_seq_len(value)
    else:   # a chapter passed a parameter no rule covers: the chapter's mistake, not the reader's
        raise TypeError(f"parameters.check has no rule for {name!r}; check it in the chapter or name it by a rule")


def check(profile: str, *, choices: Mapping[str, tuple[Any, Sequence]] | None = None,
          minimum: Mapping[str, int] | None = None, **values: Any) -> dict:
    """Check ``profile`` and every named parameter (rules in the module docstring); return the provenance
    stamp of the chapter's run. Raises ValueError with the valid values on the first wrong one."""
    device = device_of(profile)
    for name, (value, valid) in (choices or {}).items():
        if value not in valid:
            raise ValueError(f"unknown {name} {value!r}; valid: {', '.join(map(str, valid))}")
    for name, value in values.items():
        _check(name, value, minimum or {})
    return provenance.stamp(device, profile=profile)


def listed(text: Any, what: str, valid: Sequence[str] | None = None, *, empty: bool = True) -> list[str]:
    """A comma-separated parameter ("a, b") as its entries; with ``valid`` each must be one of them, and with
    ``empty=False`` at least one is needed. ValueError naming the valid values on a wrong one."""
    chosen = [x.strip() for x in str(text).split(",") if x.strip()]
    bad = [x for x in chosen if valid is not None and x not in valid]
    if bad:
        raise ValueError(f"unknown {what} {bad}; valid: {', '.join(valid)}")
    if not chosen and not empty:
        raise ValueError(f"{what} must name at least one entry" + (f"; valid: {', '.join(valid)}" if valid else ""))
    return chosen
