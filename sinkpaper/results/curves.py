"""A run over training, read from its ``curve`` (one entry per logged step; the evaluated ones carry the
metrics): rows for a chart, when the sink emerged, and, for an operator without normalization, the raw weights
behind the |w| / sum |w| proxy the paper scores. No plotting here (the book draws the rows)."""
from __future__ import annotations

import math
from typing import Callable, Mapping, Sequence

from .reading import logged, point_of, value

CURVE_METRICS = ("loss", "val_loss", "Sink_1", "alpha_1")


def column(name: str) -> str:
    """The row key of a metric: Sink metrics in % ("Sink_1 %", "Sink* %"), the others by their name."""
    return f"{name} %" if name.startswith("Sink") else name


def curve_rows(payload: Mapping, label: str | None = None, metrics: Sequence[str] = CURVE_METRICS) -> list[dict]:
    """One row per evaluation of a run: run (``label``, default its point), step, tokens and each metric of
    ``metrics`` (:func:`sinkpaper.results.reading.value` names; None where an evaluation did not record it)
    under :func:`column`'s key."""
    label = label or point_of(payload)
    return [{"run": label, "step": c["step"], "tokens": c["tokens"], **{column(m): value(c, m) for m in metrics}}
            for c in logged(payload["curve"]) if "sink_k" in c]


def first_reaching(curve: Sequence[Mapping], k: int = 1, threshold: float = 50.0,
                   metric: Callable[[Mapping], float | None] | None = None) -> Mapping | None:
    """THE first crossing: the first evaluation at which Sink_k (or ``metric`` of the entry) reaches (>=)
    ``threshold``, as that curve entry (its step, tokens and the rest); None if never. ``curve`` is a stored
    payload's (Sink_k under "sink_k") or a :class:`~sinkpaper.results.reading.RunRecord`'s (Sink_1 under
    "sink_1")."""
    for c in curve:
        if metric is not None:
            value = metric(c)
        else:
            value = c["sink_k"][str(k)] if "sink_k" in c else c.get(f"sink_{k}")
        if value is not None and value >= threshold:
            return c
    return None


def reaching_steps(payloads: Sequence[Mapping], point: str, k: int = 1, threshold: float = 50.0) -> list[int]:
    """The step at which Sink_k first reached ``threshold`` %, for each run of ``point`` that reached it."""
    return [e["step"] for p in payloads if point_of(p) == point
            if (e := first_reaching(p["curve"], k, threshold)) is not None]


# ------------------------------------------------------------------------------------------------ loss spikes
SPIKE_WINDOW = 10   # a logged loss is compared with the median of the `window` logged losses before it
SPIKE_MARGIN = 0.5  # nats above that median make a spike (fixed before any run was counted)


def loss_spikes(curve: Sequence[Mapping], window: int = SPIKE_WINDOW, margin: float = SPIKE_MARGIN) -> list[dict]:
    """The logged steps whose training loss exceeds the median of the ``window`` logged losses before it by more
    than ``margin`` nats: {"step", "loss", "median"} each. The trainer logs one batch's loss every ``log_every``
    steps, so a spike between two logged steps is not seen: this counts spikes among the logged batches."""
    losses = [(c["step"], c["loss"]) for c in logged(curve) if c.get("loss") is not None]
    out = []
    for i in range(window, len(losses)):
        before = sorted(x for _, x in losses[i - window:i])
        median = (before[(window - 1) // 2] + before[window // 2]) / 2
        step, loss = losses[i]
        if not math.isfinite(loss) or loss > median + margin:
            out.append({"step": step, "loss": loss, "median": median})
    return out


def spike_rows(payloads: Sequence[Mapping], points: Sequence[str]) -> list[dict]:
    """Per run of ``points`` (in that order, seeds ascending): the loss spikes among its logged steps
    (:func:`loss_spikes`), the steps they fell at, its highest logged loss after warm-up and its held-out loss."""
    rows = []
    for pt in points:
        for p in sorted((p for p in payloads if point_of(p) == pt), key=lambda p: p["config"]["run"]["seed"]):
            spikes = loss_spikes(p["curve"])
            warm = p["config"]["optim"].get("warmup", 0)
            after = [c["loss"] for c in p["curve"] if c.get("loss") is not None and c["step"] > warm]
            rows.append({"point": pt, "seed": p["config"]["run"]["seed"], "loss spikes": len(spikes),
                         "at steps": ", ".join(str(x["step"]) for x in spikes[:6]) + (" ..." if len(spikes) > 6 else ""),
                         "highest logged loss after warm-up": round(max(after), 3) if after else None,
                         "held-out loss": round(p["result"]["val_loss"], 3)})
    return rows


MASSIVE_KEY = "massive_activation_ratio_by_layer"


def massive_rows(payloads: Sequence[Mapping], points: Sequence[str]) -> tuple[list[dict], list[str]]:
    """Token 1's hidden-state norm over the other tokens' mean, per layer (0: the embeddings), at each run's last
    evaluation, one row per run of ``points`` that recorded it; and the points with runs that did not (stored
    before evaluations recorded it)."""
    rows, without = [], []
    for pt in points:
        for p in sorted((p for p in payloads if point_of(p) == pt), key=lambda p: p["config"]["run"]["seed"]):
            last = next((c for c in reversed(p["curve"]) if c.get(MASSIVE_KEY)), None)
            if last is None:
                without.append(pt)
                continue
            rows.append({"point": pt, "seed": p["config"]["run"]["seed"],
                         **{f"layer {i}": round(x, 2) for i, x in enumerate(last[MASSIVE_KEY])}})
    return rows, list(dict.fromkeys(without))


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
