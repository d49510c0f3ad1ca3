"""Which of a claim's values a cell compares, and how a reader says its name: the claim's own point before a
shared control ("default", "softmax"), the paper's counterpart of our label, a config key in words."""
from __future__ import annotations

import re
from collections import Counter
from typing import Mapping

from .. import paper as registry
from ..results.numbers import sig

_HUMAN = ((r"lr_x([\d.]+)", "LR \u00d7 \\1"), (r"steps_x([\d.]+)", "steps \u00d7 \\1"),
          (r"batch_x([\d.]+)", "batch \u00d7 \\1"), (r"^wd_([\d.]+)", r"WD \1"), (r"^heads_(\d+)", r"\1 heads"),
          (r"^fixed_pos(\d+)", r"fixed token at \1"), (r"^softmax_sum_([\d.]+)", r"softmax rows sum to \1"))


def human_label(label: str) -> str:
    """A config key as a reader says it ("lr_x2_steps_x0.5" -> "LR \u00d7 2, steps \u00d7 0.5", "wd_0.5" -> "WD
    0.5"); a key no pattern knows is kept as it is. The key itself stays in the tooltips."""
    point, sep, metric = label.partition(": ")
    if point == "default":   # the paper's default run beside our point of that name (OUR_DEFAULT)
        return "default (ours: base run)" + sep + metric
    words = point
    for pattern, repl in _HUMAN:
        words = re.sub(pattern, repl, words)
    if words != point:
        words = words.replace("_", ", ")
    return words + sep + metric


def _point(label: str) -> str:
    return label.split(": ")[0]


def _specificity() -> Counter:
    """How many claims' paper values name each point: a control ("default", "softmax") is named by many."""
    return Counter(_point(k) for c in registry.CLAIMS for k in c.paper_values())


def key_label(e: Mapping, res: Mapping) -> str | None:
    """The label a cell compares: among the labels both the paper and our result have, the one named by the
    fewest claims (the claim's own point, not a shared control); else our first sink rate (else our first label),
    else the paper's first. A label the rule reads only as a premise (``Rule.premises``: the run's sink, for a
    property of its sink token) is not the finding, and comes last."""
    ours = [k for k, v in (res.get("values") or {}).items() if v is not None]
    try:
        rule = registry.claim(e["id"]).rule
    except (KeyError, ValueError):
        rule = None
    premises = set(rule.premises()) if rule is not None else set()
    paper_vals = e["paper"]["values"] or {}
    common = [k for k in paper_vals if k in ours]
    if common:
        spec = _specificity()
        return min(common, key=lambda k: (spec[_point(k)], common.index(k)))
    # a sink rate before a setting such as a prefix length; a premise after both
    ours.sort(key=lambda k: (k in premises, not _is_percent(k, e)))
    return (ours or list(paper_vals) or [None])[0]


def _metric(label: str) -> str:
    return label.split(": ")[-1] if ": " in label else ""


def _is_percent(label: str, e: Mapping) -> bool:
    """A sink rate: a bare point, a Sink metric, or a label measured as the paper's labels are (our model on the
    same input kind as the paper's models, e.g. "gemma3-270m: natural" beside "GPT2-XL: natural")."""
    paper_vals = e["paper"]["values"] or {}
    metric = _metric(label)
    return (label in paper_vals or not metric or "Sink" in metric
            or any(_metric(k) == metric for k in paper_vals))


def paper_counterpart(e: Mapping, label: str) -> str | None:
    """The paper's label to compare ours with: the same label, else the paper's first on the same metric (another
    model on the same input kind); None where the paper has neither."""
    paper_vals = e["paper"]["values"] or {}
    if label in paper_vals:
        return label
    metric = _metric(label)
    return next((k for k in paper_vals if metric and _metric(k) == metric), None)


def _value(v: float | None, percent: bool, ours: bool = False) -> str:
    """A value for a card: the paper's as the paper gives it (3 significant digits); ours, in percent, to one
    decimal, as the seeds' spread of several points allows (0.0972 % reads 0.1 %)."""
    if v is None:
        return "\u2014"
    return f"{sig(round(v, 1) if ours and percent else v)}{' %' if percent else ''}"
