"""A run over training, read from its ``curve`` (one entry per logged step; the evaluated ones carry the
metrics): rows for a chart, when the sink emerged, and, for an operator without normalization, the raw weights
behind the |w| / sum |w| proxy the paper scores. No plotting here (the book draws the rows)."""
from __future__ import annotations

from typing import Mapping, Sequence

from .sweeps import point_of, value

CURVE_METRICS = ("loss", "val_loss", "Sink_1", "alpha_1")


def column(name: str) -> str:
    """The row key of a metric: Sink metrics in % ("Sink_1 %", "Sink* %"), the others by their name."""
    return f"{name} %" if name.startswith("Sink") else name


def curve_rows(payload: Mapping, label: str | None = None, metrics: Sequence[str] = CURVE_METRICS) -> list[dict]:
    """One row per evaluation of a run: run (``label``, default its point), step, tokens and each metric of
    ``metrics`` (:func:`sinkpaper.results.sweeps.value` names; None where an evaluation did not record it)
    under :func:`column`'s key."""
    label = label or point_of(payload)
    return [{"run": label, "step": c["step"], "tokens": c["tokens"], **{column(m): value(c, m) for m in metrics}}
            for c in payload["curve"] if "sink_k" in c]


def first_reaching(curve: Sequence[Mapping], k: int = 1, threshold: float = 50.0) -> Mapping | None:
    """THE first crossing: the first evaluation at which Sink_k reaches (>=) ``threshold`` %, as that curve entry
    (its step, tokens and the rest); None if never. ``curve`` is a stored payload's (Sink_k under "sink_k") or a
    :class:`~sinkpaper.results.records.RunRecord`'s (Sink_1 under "sink_1")."""
    for c in curve:
        value = c["sink_k"][str(k)] if "sink_k" in c else c.get(f"sink_{k}")
        if value is not None and value >= threshold:
            return c
    return None


def reaching_steps(payloads: Sequence[Mapping], point: str, k: int = 1, threshold: float = 50.0) -> list[int]:
    """The step at which Sink_k first reached ``threshold`` %, for each run of ``point`` that reached it."""
    return [e["step"] for p in payloads if point_of(p) == point
            if (e := first_reaching(p["curve"], k, threshold)) is not None]


# -------------------------------------------------------------------------- operators without normalization
RAW_KEYS = ("raw_weight_token_1", "raw_weight_others", "raw_row_sum")


def raw_curve_rows(payload: Mapping, label: str | None = None) -> list[dict]:
    """Per evaluation of a run of an operator without normalization: the proxy the paper scores (Sink*_1 %,
    alpha_1 of |w| / sum |w|) next to what it is made of, the raw weights: mean weight on token 1 (from the
    queries after it), mean weight on the other visible keys, and the mean row sum (sum of a query's weights).
    Evaluations without raw weights (runs stored before they were recorded) are left out."""
    label = label or point_of(payload)
    return [{"run": label, "step": c["step"], "tokens": c["tokens"], "proxy Sink*_1 %": c["sink_k"]["1"],
             "proxy alpha_1": c.get("alpha_1_mean"), "raw weight on token 1": c["raw_weight_token_1"],
             "raw weight on other keys": c["raw_weight_others"], "raw row sum": c["raw_row_sum"]}
            for c in payload["curve"] if "sink_k" in c and all(k in c for k in RAW_KEYS)]


def transient(payload: Mapping) -> dict | None:
    """The proxy's largest reading over training and the raw weights at that moment, at the first evaluation
    and at the end: {"first", "peak", "final"} rows of raw_curve_rows, or None without raw weights."""
    rows = raw_curve_rows(payload)
    if not rows:
        return None
    peak = max(rows, key=lambda r: (r["proxy Sink*_1 %"], r["proxy alpha_1"] or 0.0))
    return {"first": rows[0], "peak": peak, "final": rows[-1]}
