"""The paper, once: every table and figure value of Gu et al. (2025) that code uses, its claims, and the rules
that say whether a result of ours agrees with each claim.

* ``NUMBERS`` holds each number exactly as the paper prints it, typed once, with its source (table or figure).
  Keys are the sweep-point names of ``configs/*.yaml`` where the book runs the point (``lr_x2``, ``wd_0.5``,
  ``sink_token``, ``kernel_elu``); a point the book does not run gets the name it would have there
  (``ffn_swish``, ``heads_4``). A metric other than Sink_1 is named after a colon (``sink_token: Sink*``).
* ``CLAIMS`` lists every claim the book checks, and the paper's experiments it does not run, each with one
  agreement rule. There is ONE threshold set (``SINK``, ``NO_SINK``, ``FACTOR``, ``CHANGE``, ``MASSIVE``), ONE
  combinator (:func:`all_of`, in which a missing value means ``no result``) and ONE verdict vocabulary
  (``VERDICTS``). Nothing else in the project decides a verdict.
* :func:`listing` gives every claim with its results at three scales (``SCALES``): the pretrained LMs the
  chapters measure (read from the chapters' records, :func:`record`), and training runs read from the results
  store (the real-text CPU profile ``text`` and the miniature) through :func:`store_lookup`.
* Each rule is checked against the paper's own numbers (it must read ``agrees``) and against a result in which
  the claimed effect is absent (it must not): ``rule_check``. A claim whose rule could not tell the two apart is
  marked qualitative, with no rule and no verdict.

Numbers are typed from the paper (arXiv:2410.10781), each with its source there (table, figure or section); nothing
here is a result of ours. It is library code under the book: no plotting or widget package is imported here
(tests/test_layers.py).
"""
from __future__ import annotations

import functools
import json
import math
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from .files import atomic_write_text

# --------------------------------------------------------------------------------------------- vocabulary
AGREES, DISAGREES, NOT_COMPARABLE, NO_RESULT = "agrees", "disagrees", "not comparable", "no result"
INCONCLUSIVE = "inconclusive"   # the seeds do not all read the same way: the difference is inside the seed spread
VERDICTS = (AGREES, DISAGREES, INCONCLUSIVE, NOT_COMPARABLE, NO_RESULT)
STALE = "stale, rerun"          # a stored run made under an older definition: shown, never counted
NOT_RUN = "not run"             # the book does not run this experiment at this scale
SCALES = ("real LMs", "real text (CPU)", "miniature")

# ------------------------------------------------------------------------------------------ the thresholds
SINK = 10.0     # Sink % at or above this: "has a sink" (the paper's smallest softmax sink among the variants it
#                 says keep one is 10.68 %, 4 heads)
NO_SINK = 5.0   # Sink % below this: "has no sink" (the paper's no-sink rows are 0.00-0.80 %; the most a bias
#                 leaves on token 1 while taking the sink is 4.74 %, d_a = 1). In between: not comparable.
FACTOR = 2.0    # "matters little": every variant within a factor 2 of the default (the paper's heads: 10.68-21.76
#                 against 18.18); also "breaks"/"restores" for perplexities (a factor 2 or more)
CHANGE = 0.25   # a change counts when it moves the value by at least 25 % of the control's (softmax rows summing
#                 to 0.2: 9.41 against 18.18)
MASSIVE = 10.0  # a token-1 hidden-state norm at least 10 times the others' mean is "massive"

# ---------------------------------------------------------------------------- what a stored run contributes
# Fixed before the stored runs were re-scored under them. Inside one text run Sink_1 moves by ~5 points between
# evaluations late in training (90th percentile 12), so a run is read on its plateau, never its last evaluation.
PLATEAU = 0.2        # a run's value: the mean of its evaluations over the last 20 % of its training steps
PLATEAU_EVALS = 3    # ... which needs at least 3 evaluations there (else "not enough evaluations", the run named)
TRAINED = 0.1        # a run learned when its held-out or its training loss over that window is at least 0.1 nats
#                      (4x the held-out loss's sampling error on 100 x 64 tokens) below the unigram loss of its data,
#                      the loss of predicting each token by its frequency. Else it is listed and no verdict counts it.
#                      (Not "below its first evaluation": by step 100 the text runs already sit at the unigram level
#                      and the miniature's at its task's floor, so a first evaluation says nothing about learning.)
SEEDS_MIN = 3        # a verdict on stored runs needs at least 3 seeds, paired across the claim's points
EXTRA_SEEDS = (3, 4)  # read too where every point of a claim has them stored (seeds added to settle a claim)


def verdict_of(flag: bool | None) -> str:
    """True -> agrees, False -> disagrees, None -> not comparable (a value in the band between thresholds)."""
    return NOT_COMPARABLE if flag is None else AGREES if flag else DISAGREES


def all_of(verdicts: Sequence[str]) -> str:
    """The one combinator. disagrees if any part disagrees; else no result if any part is missing (or there
    is no part); else not comparable if any part is; else agrees."""
    for v in verdicts:
        if v not in VERDICTS:
            raise ValueError(f"unknown verdict {v!r}; valid: {', '.join(VERDICTS)}")
    if DISAGREES in verdicts:
        return DISAGREES
    if not verdicts or NO_RESULT in verdicts:
        return NO_RESULT
    return NOT_COMPARABLE if NOT_COMPARABLE in verdicts else AGREES


class Undecided(Exception):
    """A comparison the seeds do not decide (raised when a rule asks for its truth)."""

    def __init__(self, key: str, why: str, settled: bool = False):
        super().__init__(why)
        # settled: the rule itself calls the reading inconclusive (reading the comparison both ways cannot help)
        self.key, self.why, self.settled = key, why, settled


class Seeds:
    """One label's values on several seeds, paired by position with every other label's (seed i of one point ran
    on the same batches as seed i of another). Arithmetic is seed by seed; a comparison gives a :class:`Decision`,
    so the agreement rules, written for plain numbers, run on seeds unchanged."""

    def __init__(self, name: str, values: Sequence[float]):
        self.name, self.values = name, tuple(float(v) for v in values)

    def _map(self, other, f, name):
        if isinstance(other, Seeds):
            return Seeds(name, [f(a, b) for a, b in zip(self.values, other.values)])
        return Seeds(name, [f(a, other) for a in self.values])

    def __mul__(self, k):
        return self._map(k, lambda a, b: a * b, f"{_label(k)} x {self.name}")

    __rmul__ = __mul__

    def __truediv__(self, k):
        return self._map(k, lambda a, b: a / b, f"{self.name} / {_label(k)}")

    def __add__(self, k):
        return self._map(k, lambda a, b: a + b, f"{self.name} + {_label(k)}")

    __radd__ = __add__

    def __sub__(self, k):
        return self._map(k, lambda a, b: a - b, f"{self.name} - {_label(k)}")

    def __rsub__(self, k):
        return Seeds(f"{_label(k)} - {self.name}", [k - a for a in self.values])

    def __abs__(self):
        return Seeds(f"|{self.name}|", [abs(a) for a in self.values])

    def __neg__(self):
        return Seeds(f"-{self.name}", [-a for a in self.values])

    def _cmp(self, other, op, sym):
        return Decision(self, other, op, sym)

    def __ge__(self, o):
        return self._cmp(o, lambda a, b: a >= b, ">=")

    def __gt__(self, o):
        return self._cmp(o, lambda a, b: a > b, ">")

    def __le__(self, o):
        return self._cmp(o, lambda a, b: a <= b, "<=")

    def __lt__(self, o):
        return self._cmp(o, lambda a, b: a < b, "<")

    def __eq__(self, o):    # equal on every seed (Change's "treated is the control itself"); never undecided
        vals = o.values if isinstance(o, Seeds) else [o] * len(self.values)
        return all(a == b for a, b in zip(self.values, vals))

    __hash__ = None

    def __repr__(self):
        return f"{self.name} {_range(self.values)}"


def _label(x) -> str:
    return x.name if isinstance(x, Seeds) else f"{x:g}"


# the comparisons the current judgement has forced one way, to see whether the verdict depends on them
_FORCED: list[dict[str, bool]] = [{}]


class Decision:
    """``x op y`` over the seeds. Decided when op gives the same answer for every pairing of a seed of x with a seed
    of y: seed by seed (the paired differences all have one sign) and across seeds (the ranges do not overlap).
    Against a number (a threshold), every seed on the same side. Otherwise asking for its truth raises
    :class:`Undecided` (:func:`judge` then reads the rule both ways)."""

    def __init__(self, x: Seeds, y, op, sym: str):
        ys = y.values if isinstance(y, Seeds) else (float(y),) * len(x.values)
        self.paired = [op(a, b) for a, b in zip(x.values, ys)]
        self.cross = {op(a, b) for a in x.values for b in (ys if isinstance(y, Seeds) else ys[:1])}
        self.key = f"{x.name} {sym} {_label(y)}"
        self.x, self.y, self.sym = x, y, sym

    def __bool__(self) -> bool:
        if len(self.cross) == 1:
            return next(iter(self.cross))
        forced = _FORCED[-1]
        if self.key in forced:
            return forced[self.key]
        raise Undecided(self.key, self.why())

    def why(self) -> str:
        x, y, n = self.x, self.y, len(self.paired)
        if not isinstance(y, Seeds):
            k = sum(self.paired)
            if y == SINK and self.sym in (">=", ">"):
                return f"{x.name}: a sink (>= {SINK:g} %) in {k} of {n} seeds {_range(x.values)}"
            return f"{x.name} {self.sym} {y:g} in {k} of {n} seeds {_range(x.values)}"
        if len(set(self.paired)) > 1:
            return f"{x.name} vs {y.name}: seeds disagree in sign ({_range(x.values)} vs {_range(y.values)})"
        return f"{x.name} {_range(x.values)} and {y.name} {_range(y.values)} overlap"


def judge(rule: "Rule", seeds: Mapping[str, Sequence[float]], max_branches: int = 256) -> tuple[str, str]:
    """The verdict of a rule on several seeds, and why when it is inconclusive: (verdict, reason).

    ``seeds`` maps each label to its values, one per seed, in the same seed order for every label. The rule runs
    on :class:`Seeds`: every threshold it reads must hold with every seed on the same side, and every comparison
    between points must hold seed by seed with separated ranges (:class:`Decision`). Where a comparison is not
    decided, the rule is read both ways; a verdict that depends on it is INCONCLUSIVE, with the comparison as
    the reason (and the per-seed verdicts when the seeds themselves split)."""
    lens = {len(v) for v in seeds.values()}
    if len(lens) != 1:
        raise ValueError(f"every label needs one value per seed; got { {k: len(v) for k, v in seeds.items()} }")
    n = lens.pop()
    per_seed = [rule.apply({k: v[i] for k, v in seeds.items()}) for i in range(n)]
    if not per_seed or NO_RESULT in per_seed:
        return NO_RESULT, ""
    values = {k: Seeds(k, v) for k, v in seeds.items()}
    verdicts, reasons, stack = set(), [], [{}]
    while stack:
        forced = stack.pop()
        if len(verdicts) + len(stack) > max_branches:
            raise ValueError(f"judge: more than {max_branches} ways to read the rule; too many undecided comparisons")
        _FORCED.append(forced)
        try:
            verdicts.add(rule.apply(values))
        except Undecided as u:
            if u.why not in reasons:
                reasons.append(u.why)
            if u.settled:
                verdicts.add(INCONCLUSIVE)
            else:
                stack += [{**forced, u.key: True}, {**forced, u.key: False}]
        finally:
            _FORCED.pop()
    if len(verdicts) == 1 and len(set(per_seed)) == 1 and INCONCLUSIVE not in verdicts:
        return verdicts.pop(), ""
    head = []
    if len(set(per_seed)) > 1:
        tally = {v: per_seed.count(v) for v in dict.fromkeys(per_seed)}
        head = ["seeds split (" + ", ".join(f"{c} {v}" for v, c in tally.items()) + ")"]
    return INCONCLUSIVE, "; ".join(head + reasons[:2])


def _range(values: Sequence[float]) -> str:
    """A label's values over the seeds, in seed order."""
    return "(" + " / ".join(f"{x:.3g}" for x in values) + ")"


def _get(values: Mapping[str, float | None], label: str) -> float | None:
    v = values.get(label)
    if isinstance(v, Seeds):
        return v
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def sink_verdict(value: float | None) -> str:
    """A sink: agrees at >= SINK, disagrees below NO_SINK, not comparable between, no result when missing."""
    if value is None:
        return NO_RESULT
    return AGREES if value >= SINK else DISAGREES if value < NO_SINK else NOT_COMPARABLE


def no_sink_verdict(value: float | None) -> str:
    """No sink: agrees below NO_SINK, disagrees at >= SINK, not comparable between, no result when missing."""
    if value is None:
        return NO_RESULT
    return AGREES if value < NO_SINK else DISAGREES if value >= SINK else NOT_COMPARABLE


# ----------------------------------------------------------------------------------------------- the rules
class Rule:
    """An agreement rule: ``sentence`` (one sentence), ``apply(values) -> verdict`` and ``null(values)``, the
    values of a result in which the claimed effect is absent (``null_sentence`` says which)."""

    sentence: str = ""
    null_sentence: str = ""

    def apply(self, values: Mapping[str, float | None]) -> str:
        raise NotImplementedError

    def null(self, values: Mapping[str, float | None]) -> dict[str, float | None]:
        raise NotImplementedError


@dataclass
class Sinks(Rule):
    """Every label has a sink (>= SINK). Null: the sink is absent (0 %) everywhere."""
    labels: Sequence[str]
    what: str = "Sink_1"

    def __post_init__(self):
        self.sentence = f"{self.what} >= {SINK:g} % for every one of {', '.join(self.labels)}."
        self.null_sentence = "the sink is absent: 0 % everywhere"

    def apply(self, values):
        return all_of([sink_verdict(_get(values, x)) for x in self.labels])

    def null(self, values):
        return {**values, **{x: 0.0 for x in self.labels}}


@dataclass
class Contrast(Rule):
    """Labels in ``sink`` have a sink (>= SINK), labels in ``no_sink`` have none (< NO_SINK). Null: ``null_map``
    gives each changed label the value of the label it would equal if the intervention did nothing (a label
    mapped to a float takes that value)."""
    sink: Sequence[str] = ()
    no_sink: Sequence[str] = ()
    null_map: Mapping[str, str | float] = field(default_factory=dict)
    null_text: str = ""

    def __post_init__(self):
        parts = []
        if self.sink:
            parts.append(f"{', '.join(self.sink)} >= {SINK:g} %")
        if self.no_sink:
            parts.append(f"{', '.join(self.no_sink)} < {NO_SINK:g} %")
        self.sentence = " and ".join(parts) + "."
        self.null_sentence = self.null_text

    def apply(self, values):
        return all_of([sink_verdict(_get(values, x)) for x in self.sink]
                      + [no_sink_verdict(_get(values, x)) for x in self.no_sink])

    def null(self, values):
        return {**values, **{x: (src if isinstance(src, float) else values.get(src)) for x, src in self.null_map.items()}}


@dataclass
class Monotone(Rule):
    """The values, in the order of ``labels``, never decrease and end above the first (``up``), or the mirror
    image. A position of ``labels`` may be a tuple of names (the paper's point, then a scale's own point at that
    rank, e.g. ("lr_x0.25", "lr_x0.3")); a scale uses the positions it measures. Null: every value equals the
    first."""
    labels: Sequence[str | tuple[str, ...]]
    up: bool = True
    what: str = "Sink_1"

    def __post_init__(self):
        names = [x if isinstance(x, str) else " / ".join(x) for x in self.labels]
        self.sentence = (f"{self.what} never {'falls' if self.up else 'rises'} along {' -> '.join(names)} "
                         f"(the points a scale runs) and ends {'above' if self.up else 'below'} where it starts.")
        self.null_sentence = f"{self.what} the same at every point"

    def _present(self, values):
        out = []
        for x in self.labels:
            hit = next((n for n in ((x,) if isinstance(x, str) else x) if n in values), None)
            if hit is not None:
                out.append(hit)
        return out

    def apply(self, values):
        vs = [_get(values, x) for x in self._present(values)]
        if any(v is None for v in vs) or len(vs) < 2:
            return NO_RESULT
        ok = (all((b >= a) if self.up else (b <= a) for a, b in zip(vs, vs[1:]))
              and ((vs[-1] > vs[0]) if self.up else (vs[-1] < vs[0])))
        return verdict_of(ok)

    def null(self, values):
        present = self._present(values)
        first = values.get(present[0]) if present else None
        return {**values, **{x: first for x in present}}


@dataclass
class MattersLittle(Rule):
    """The base has a sink and every label is within a factor FACTOR of it; not comparable when the base has no
    sink. Null: no sink anywhere (0 %)."""
    labels: Sequence[str]
    base: str

    def __post_init__(self):
        self.sentence = (f"{self.base} has a sink (>= {SINK:g} %) and {', '.join(self.labels)} are each within a "
                         f"factor {FACTOR:g} of it.")
        self.null_sentence = "no sink at any point (0 %)"

    def apply(self, values):
        b = _get(values, self.base)
        vs = [_get(values, x) for x in self.labels]
        if b is None or any(v is None for v in vs):
            return NO_RESULT
        if b < SINK:
            return NOT_COMPARABLE
        return verdict_of(all(b / FACTOR <= v <= b * FACTOR for v in vs))

    def null(self, values):
        return {**values, **{x: 0.0 for x in [self.base, *self.labels]}}


@dataclass
class Change(Rule):
    """``treated`` moves ``up`` (or down) from ``control`` by at least CHANGE x the control's value; with
    ``treated_no_sink`` the treated value must also have no sink. Null: treated equals control."""
    treated: str
    control: str
    up: bool = True
    treated_no_sink: bool = False
    what: str = "Sink_1"

    def __post_init__(self):
        d = "above" if self.up else "below"
        self.sentence = (f"{self.what} of {self.treated} at least {100 * CHANGE:.0f} % of the control's value "
                         f"{d} {self.control}" + (f", and below {NO_SINK:g} %" if self.treated_no_sink else "") + ".")
        self.null_sentence = f"{self.treated} equals {self.control}"

    def apply(self, values):
        t, c = _get(values, self.treated), _get(values, self.control)
        if t is None or c is None:
            return NO_RESULT
        if not self.up and self.what.startswith("Sink") and c < SINK:
            return NOT_COMPARABLE          # the control has no sink to weaken
        if isinstance(t, Seeds) and isinstance(c, Seeds):
            # a difference between two points is read only when their seeds separate them: the magnitude test
            # below could otherwise call two overlapping points "not different enough" (disagrees)
            moved = Decision(t, c, (lambda a, b: a > b) if self.up else (lambda a, b: a < b), ">" if self.up else "<")
            if len(moved.cross) > 1:
                raise Undecided(moved.key, moved.why(), settled=True)
        ok = t >= c * (1 + CHANGE) if self.up else t <= c * (1 - CHANGE)
        if t == c:
            ok = False
        out = [verdict_of(ok)]
        if self.treated_no_sink:
            out.append(no_sink_verdict(t))
        return all_of(out)

    def null(self, values):
        return {**values, self.treated: values.get(self.control)}


@dataclass
class Ratio(Rule):
    """``num`` / ``den`` >= FACTOR for every subject (labels "<subject>: <num>" and "<subject>: <den>").
    Null: num equals den."""
    num: str
    den: str
    null_text: str = ""

    def __post_init__(self):
        self.sentence = f"{self.num} at least {FACTOR:g} x {self.den}, for every model."
        self.null_sentence = self.null_text or f"{self.num} equals {self.den}"

    def _subjects(self, values):
        return sorted({k.rsplit(": ", 1)[0] for k in values if k.endswith(f": {self.num}")})

    def apply(self, values):
        out = []
        for s in self._subjects(values):
            n, d = _get(values, f"{s}: {self.num}"), _get(values, f"{s}: {self.den}")
            out.append(NO_RESULT if n is None or d is None or d <= 0 else verdict_of(n >= FACTOR * d))
        return all_of(out)

    def null(self, values):
        return {**values, **{f"{s}: {self.num}": values.get(f"{s}: {self.den}") for s in self._subjects(values)}}


@dataclass
class Recovers(Rule):
    """Per subject: the sinks recover at least 1 - CHANGE of the window-only cache's excess log-perplexity over
    the full cache, (log w - log s) / (log w - log f); not comparable where the window does not hurt (w <= f).
    Null: sink+window equals window-only."""

    def __post_init__(self):
        self.sentence = (f"sink+window recovers at least {100 * (1 - CHANGE):.0f} % of the window-only cache's "
                         "excess log-perplexity over the full cache, for every model.")
        self.null_sentence = "the sinks change nothing: sink+window reads as window-only"

    def _subjects(self, values):
        return sorted({k.rsplit(": ", 1)[0] for k in values if k.endswith(": sink+window ppl")})

    def apply(self, values):
        out = []
        for s in self._subjects(values):
            f, w, k = (_get(values, f"{s}: {m}") for m in ("full ppl", "window ppl", "sink+window ppl"))
            if None in (f, w, k) or min(f, w, k) <= 0:
                out.append(NO_RESULT)
            elif w <= f:
                out.append(NOT_COMPARABLE)
            else:
                out.append(verdict_of((math.log(w) - math.log(k)) / (math.log(w) - math.log(f)) >= 1 - CHANGE))
        return all_of(out)

    def null(self, values):
        return {**values, **{f"{s}: sink+window ppl": values.get(f"{s}: window ppl") for s in self._subjects(values)}}


@dataclass
class Falls(Rule):
    """Per subject ("<subject>: smallest T", "<subject>: largest T"): Sink_1 at the largest T is at least CHANGE
    below Sink_1 at the smallest T; a subject without a sink at the smallest T is not comparable (nothing to
    fall); labels holding "not judged" are shown, not judged. Null: the same Sink_1 at every T."""

    def __post_init__(self):
        self.sentence = (f"Sink_1 at the largest T at least {100 * CHANGE:.0f} % below Sink_1 at the smallest T, for "
                         f"every judged series (one with a sink, >= {SINK:g} %, at the smallest T).")
        self.null_sentence = "Sink_1 the same at every T"

    def _subjects(self, values):
        return [k.rsplit(": ", 1)[0] for k in values if k.endswith(": smallest T") and "not judged" not in k]

    def apply(self, values):
        out = []
        for s in self._subjects(values):
            lo, hi = _get(values, f"{s}: smallest T"), _get(values, f"{s}: largest T")
            if lo is None or hi is None:
                out.append(NO_RESULT)
            elif lo < SINK:
                out.append(NOT_COMPARABLE)
            else:
                out.append(verdict_of(hi <= lo * (1 - CHANGE)))
        return all_of(out)

    def null(self, values):
        return {**values, **{f"{s}: largest T": values.get(f"{s}: smallest T") for s in self._subjects(values)}}


@dataclass
class DependsOn(Rule):
    """Per subject ("<subject>: with BOS", "<subject>: without BOS"): the subject has a sink with the BOS it
    was trained with (>= SINK; else not comparable, nothing to depend on) and removing the BOS moves Sink_1 by at
    least CHANGE of its value. Null: the same Sink_1 without the BOS."""

    def __post_init__(self):
        self.sentence = (f"with its BOS the model has a sink (>= {SINK:g} %), and without it Sink_1 moves by at least "
                         f"{100 * CHANGE:.0f} % of that value, for every model trained with a BOS.")
        self.null_sentence = "removing the BOS changes nothing"

    def _subjects(self, values):
        return [k.rsplit(": ", 1)[0] for k in values if k.endswith(": with BOS")]

    def apply(self, values):
        out = []
        for s in self._subjects(values):
            on, off = _get(values, f"{s}: with BOS"), _get(values, f"{s}: without BOS")
            if on is None or off is None:
                out.append(NO_RESULT)
            elif on < SINK:
                out.append(NOT_COMPARABLE)
            else:
                out.append(verdict_of(abs(on - off) >= CHANGE * on))
        return all_of(out)

    def null(self, values):
        return {**values, **{f"{s}: without BOS": values.get(f"{s}: with BOS") for s in self._subjects(values)}}


@dataclass
class Bound(Rule):
    """Every label ending in ``metric`` is above (``above``) or below ``bound``; labels holding "not judged" are
    shown, not judged. Null: every judged value equals ``null_value``."""
    metric: str
    bound: float
    above: bool
    null_value: float
    strict: bool = True
    null_text: str = ""
    skip: Sequence[str] = ()
    what: str = ""

    def __post_init__(self):
        op = (">" if self.strict else ">=") if self.above else ("<" if self.strict else "<=")
        self.sentence = (f"{self.what or self.metric.lstrip(': ')} {op} {self.bound:g} for every judged setting"
                         + (f" ({', '.join(self.skip)} shown, not judged)" if self.skip else "") + ".")
        self.null_sentence = self.null_text or f"{self.metric} = {self.null_value:g}"

    def _labels(self, values):
        return [k for k in values if k.endswith(self.metric) and "not judged" not in k
                and k not in self.skip]

    def apply(self, values):
        out = []
        for k in self._labels(values):
            v = _get(values, k)
            if v is None:
                out.append(NO_RESULT)
            elif self.above:
                out.append(verdict_of(v > self.bound if self.strict else v >= self.bound))
            else:
                out.append(verdict_of(v < self.bound if self.strict else v <= self.bound))
        return all_of(out)

    def null(self, values):
        return {**values, **{k: self.null_value for k in self._labels(values)}}


@dataclass
class Both(Rule):
    """Two rules on the same values; both must agree (combined with all_of). Null: both nulls applied."""
    first: Rule
    second: Rule

    def __post_init__(self):
        self.sentence = f"{self.first.sentence[:-1]}; and {self.second.sentence}"
        self.null_sentence = f"{self.first.null_sentence}; {self.second.null_sentence}"

    def apply(self, values):
        return all_of([self.first.apply(values), self.second.apply(values)])

    def null(self, values):
        return self.second.null(self.first.null(values))


@dataclass
class WeightDecay(Rule):
    """Sink_1 rises with weight decay, then the largest weight decay removes it: the largest Sink_1 of ``labels``
    sits at a WD in ``peak`` and is at least CHANGE above ``zero``, and ``largest`` has no sink. Null: every
    point equals ``zero``."""
    labels: Sequence[str]
    zero: str
    peak: Sequence[str]
    largest: str

    def __post_init__(self):
        self.sentence = (f"Sink_1 peaks at {' or '.join(self.peak)}, at least {100 * CHANGE:.0f} % above {self.zero}; "
                         f"{' and '.join(self.peak)} each have a sink (>= {SINK:g} %); {self.largest} has none "
                         f"(< {NO_SINK:g} %).")
        self.null_sentence = f"weight decay changes nothing: every point equals {self.zero}"

    def apply(self, values):
        vs = {x: _get(values, x) for x in self.labels if x in values}   # the WDs a scale runs
        if any(v is None for v in vs.values()) or self.zero not in vs or self.largest not in vs:
            return NO_RESULT
        top = max(vs, key=lambda x: vs[x])
        rises = top in self.peak and vs[top] >= vs[self.zero] * (1 + CHANGE) and vs[top] > vs[self.zero]
        return all_of([verdict_of(rises), no_sink_verdict(vs[self.largest])]
                      + [sink_verdict(vs[x]) for x in self.peak if x in vs])

    def null(self, values):
        return {**values, **{x: values.get(self.zero) for x in self.labels if x in values}}


@dataclass
class MovesTo(Rule):
    """For each run "fixed_pos<k>": Sink_k >= SINK and, where measured, above that run's Sink_j for every other
    j. Null: the sink stays on token 1, Sink_k = 0 at k (the paper: ~0 elsewhere)."""
    ks: Sequence[int]

    def __post_init__(self):
        self.sentence = (f"for k = {', '.join(map(str, self.ks))}: the run with a fixed token at k has Sink_k >= "
                         f"{SINK:g} %, the largest of its measured Sink_j.")
        self.null_sentence = "the sink stays where it was: Sink_k = 0 % at each k"

    def apply(self, values):
        out = []
        for k in self.ks:
            own = _get(values, f"fixed_pos{k}: Sink_{k}")
            others = [_get(values, x) for x in values if x.startswith(f"fixed_pos{k}: Sink_")
                      and x != f"fixed_pos{k}: Sink_{k}"]
            v = sink_verdict(own)
            if v == AGREES and any(o is not None and o >= own for o in others):
                v = DISAGREES
            out.append(v)
        return all_of(out)

    def null(self, values):
        return {**values, **{f"fixed_pos{k}: Sink_{k}": 0.0 for k in self.ks}}


@dataclass
class Keeps(Rule):
    """An intervention leaves the sink where it is: where ``control`` has a sink (>= SINK), ``treated`` has one too;
    not comparable when the control has none (nothing to keep). Null: the intervention removes it (0 %)."""
    treated: str
    control: str

    def __post_init__(self):
        self.sentence = (f"where {self.control} has a sink (>= {SINK:g} %), {self.treated} has one on token 1 too "
                         f"(>= {SINK:g} %); not comparable when {self.control} has none.")
        self.null_sentence = f"the intervention removes the sink: {self.treated} 0 %"

    def apply(self, values):
        t, c = _get(values, self.treated), _get(values, self.control)
        if t is None or c is None:
            return NO_RESULT
        if not c >= SINK:
            return NOT_COMPARABLE
        return sink_verdict(t)

    def null(self, values):
        return {**values, self.treated: 0.0}


@dataclass
class Prefix(Rule):
    """Prefix LM with a prefix of p tokens (the value "<run>: p", the run's own prefix length): the largest
    Sink_k (k = 1..K) sits on a prefix position other than the first (2 <= k <= p) and is >= SINK. A largest
    Sink_k on token 1 is not comparable: an ordinary first-token sink cannot be told from one the prefix moved
    there. Null: an ordinary first-token sink."""
    run: str = "prefix"
    k_max: int = 10

    def __post_init__(self):
        self.sentence = (f"the largest Sink_k of the prefix-LM run is on a prefix position 2..p (p its prefix length) "
                         f"and >= {SINK:g} % (on token 1: not comparable, since an ordinary first-token sink looks "
                         "the same).")
        self.null_sentence = "an ordinary first-token sink (Sink_1 as the default run's, 0 % elsewhere)"

    def apply(self, values):
        p = _get(values, f"{self.run}: p")
        ks = {k: _get(values, f"{self.run}: Sink_{k}") for k in range(1, self.k_max + 1)}
        ks = {k: v for k, v in ks.items() if v is not None}
        if not ks or p is None:
            return NO_RESULT
        top = max(ks, key=lambda k: (ks[k], -k))
        if ks[top] < SINK:
            return DISAGREES
        if top == 1:
            return NOT_COMPARABLE
        return verdict_of(top <= p)

    def null(self, values):
        out = {k: v for k, v in values.items() if not k.startswith(f"{self.run}: Sink_")}
        out.update({f"{self.run}: Sink_{k}": 0.0 for k in range(2, self.k_max + 1)})
        out[f"{self.run}: Sink_1"] = NUMBERS["default"].value
        return out


# ------------------------------------------------------------------------------------------ paper numbers
@dataclass(frozen=True)
class Number:
    value: float
    source: str


def _n(source: str, **values: float) -> dict[str, Number]:
    return {k: Number(v, source) for k, v in values.items()}


NUMBERS: dict[str, Number] = {
    # the default 60M run (Sink_1^0.3 %)
    "default": Number(18.18, "Section 4"),
    # Table 1: open LMs, natural / random / repeat
    **{f"{m}: {i}": Number(v, "Table 1") for m, vals in (
        ("GPT2-XL", (77.00, 70.29, 62.28)), ("Mistral-7B", (97.49, 75.21, 0.00)),
        ("LLaMA2-7B Base", (92.47, 90.13, 0.00)), ("LLaMA3-8B Base", (99.02, 91.23, 0.00)))
       for i, v in zip(("natural", "random", "repeat"), vals)},
    # Base vs chat (natural text)
    **_n("Section 3.2 (base vs chat)", **{"Mistral-7B Chat": 88.34, "LLaMA2-7B Chat": 92.88, "LLaMA2-13B Base": 91.69,
                       "LLaMA2-13B Chat": 90.94, "LLaMA3-8B Chat": 98.85}),
    # Section 4 (configs/optimization.yaml)
    **_n("Section 4", **{"lr_x2_steps_x0.5": 23.44, "lr_x2": 32.23, "lr_x0.5": 11.21, "lr_x0.5_steps_x2": 16.81,
                       "lr_x0.25": 2.90, "lr_x0.25_steps_x4": 6.29}),
    **_n("Section 4", **{"batch_x0.25": 16.45, "batch_x0.5": 17.19, "batch_x2": 16.19}),
    # Section 5 (configs/data.yaml)
    **_n("Section 5", **{"random_x1": 27.03, "random_first": 1.98, "random_first: Sink_2": 14.08,
                       "random_x2": 20.99}),
    **_n("Section 5", **{"fixed_pos1": 74.11, "fixed_pos2: Sink_2": 69.03, "fixed_pos3: Sink_3": 69.64}),
    # Section 6 (configs/loss.yaml)
    **_n("Section 6", **{"wd_0": 15.20, "wd_0.001": 15.39, "wd_0.01": 15.23, "wd_0.5": 41.08, "wd_1": 37.71,
                        "wd_2": 6.13, "wd_5": 0.01}),
    # Section 7.1 (configs/architecture.yaml)
    **_n("Section 7.1", **{"pos_nope": 20.35, "pos_absolute": 32.73, "pos_learnable": 33.13, "pos_relative": 35.53,
                       "pos_alibi": 20.78, "post_norm": 13.54}),
    **_n("Section 7.1", **{"ffn_relu": 16.90, "ffn_gelu": 14.76, "ffn_swish": 17.89, "ffn_reglu": 13.88,
                       "ffn_geglu": 17.86, "heads_4": 10.68, "heads_2": 12.95, "heads_1": 19.50,
                       "heads_add": 21.76}),
    # Section 7.2 (configs/biases.yaml): Sink* on the bias position, Sink_1 on the first token
    **_n("Table 5", **{"sink_token: Sink*": 74.12, "sink_token: Sink_1": 0.00, "kv_bias: Sink*": 72.76,
                       "kv_bias: Sink_1": 0.04, "k_bias: Sink*": 73.34, "k_bias: Sink_1": 0.00,
                       "v_bias: Sink_1": 17.53, }),
    **_n("Section 7.2", **{"kv_bias_shared: Sink*": 56.61, "kv_bias_shared: Sink_1": 12.44,
                           "k_bias_shared: Sink*": 68.31, "k_bias_shared: Sink_1": 0.23}),
    **_n("Section 7.2", **{"k_bias_fixed_v: Sink*": 70.03, "k_bias_fixed_v: Sink_1": 0.06,
                       "k_bias_fixed_5v1: Sink*": 44.43, "k_bias_fixed_5v1: Sink_1": 3.71,
                       "k_bias_fixed_20v1: Sink*": 1.51, "k_bias_fixed_20v1: Sink_1": 25.88,
                       "k_bias_fixed_v2: Sink*": 69.74, "k_bias_fixed_v2: Sink_1": 2.15,
                       "k_bias_fixed_5v2: Sink*": 27.99, "k_bias_fixed_5v2: Sink_1": 5.93,
                       "k_bias_fixed_20v2: Sink*": 0.00, "k_bias_fixed_20v2: Sink_1": 11.21}),
    **{f"k_bias_dims_{d}: {m}": Number(v, "Section 7.2") for d, star, s1 in (
        (1, 32.18, 4.74), (2, 30.88, 4.96), (4, 30.94, 4.39), (8, 31.39, 4.54), (16, 23.30, 2.19),
        (32, 51.23, 1.94), (64, 69.19, 0.04)) for m, v in (("Sink*", star), ("Sink_1", s1))},
    # Section 7.3 (configs/attention.yaml); * = the |sim| / sum |sim| proxy
    **_n("Section 7.3", **{"softmax_sum_2": 29.10, "softmax_sum_0.2": 9.41, "softmax_sum_0.1": 3.59,
                        "softmax_sum_0.05": 4.53}),
    **_n("Table 15", **{"sigmoid": 0.44, "sigmoid_norm": 30.24, "elu": 0.80, "kernel_elu": 53.65,
                        "kernel_identity_z1": 0.00, "kernel_mlp_maxabs": 0.19, "kernel_mlp_z1": 0.74}),
    **_n("Table 15", **{"kernel_elu: loss": 4.19, "kernel_identity_z1: loss": 3.99, "kernel_mlp_maxabs: loss": 3.85,
                        "kernel_mlp_z1: loss": 3.91}),
    **_n("Section 7.3 (1B)", **{"softmax_1b": 45.11, "softmax_1b: loss": 3.07, "sigmoid_1b": 2.46,
                                "sigmoid_1b: loss": 3.10}),
}
# The default run under the names of the families whose default point has another name (the paper's default
# packing has no fixed first token: the data family's `no_fixed_token` control is that run).
DEFAULT_ALIASES = ("pos_rope", "none", "softmax", "wd_0.1", "batch_x1", "ffn_swiglu", "heads_8", "no_fixed_token")


def paper_value(label: str) -> float:
    """The paper's number for a label (a family's default point reads the default run)."""
    if label in DEFAULT_ALIASES:
        return NUMBERS["default"].value
    return NUMBERS[label].value


def paper_text(name: str) -> str:
    """The paper's number(s) for a point as printed ("Sink* 74.12, Sink_1 0.00"), or "—" when it has none."""
    if name in DEFAULT_ALIASES or name == "default":
        return f"{paper_value(name):.2f}"
    own = [(k, n) for k, n in NUMBERS.items() if k == name or k.startswith(f"{name}: ")]
    if not own:
        return "—"
    return ", ".join((f"{k.split(': ', 1)[1]} " if ": " in k else "") + f"{n.value:.2f}" for k, n in own)


def _source(label: str) -> str:
    return NUMBERS["default" if label in DEFAULT_ALIASES else label].source


# ------------------------------------------------------------------------------------------ measurements
@dataclass(frozen=True)
class Runs:
    """Results-store runs: ``points`` maps a value label to (point, metric[, config]) of ``config`` (metric: "Sink_1",
    "Sink_2", ..., "Sink*", "alpha_1", "first Sink_1", "excess alpha_1"); mean over ``seeds``."""
    config: str
    points: Mapping[str, tuple[str, str]]
    seeds: tuple[int, ...] = (0, 1, 2)


@dataclass(frozen=True)
class Chapter:
    """Measured by a chapter (on pretrained LMs, now) and read from its record (see :func:`record`)."""
    chapter: str


@dataclass(frozen=True)
class NotRun:
    reason: str


def _pts(config: str, mapping: Mapping[str, str | tuple[str, str]] | Sequence[str], seeds=(0, 1, 2)) -> Runs:
    if not isinstance(mapping, Mapping):
        mapping = {p: p for p in mapping}
    return Runs(config, {k: (v if isinstance(v, tuple) else (v, "Sink_1")) for k, v in mapping.items()}, seeds)


MINI = "configs/miniature.yaml"
PAPER_SCALE = NotRun("the paper's 60M model on ~21B tokens of the Pile: not in the results store")


@dataclass
class Claim:
    id: str
    section: str
    chapter: str
    claim: str                                  # in the paper's words (or the related paper's)
    source: str                                 # "Table 5", "Section 5 (figure)", "Barbero et al. 2025", ...
    labels: Sequence[str] = ()                  # the paper's numbers this claim uses (keys of NUMBERS)
    rule: Rule | None = None                    # None: qualitative, no verdict
    bos: bool | None = None                     # the BOS choice of the verdict, for pretrained-LM claims
    bos_why: str = ""
    measure: Mapping[str, Runs | Chapter | NotRun] = field(default_factory=dict)
    figure: Mapping[str, float] = field(default_factory=dict)   # see below
    kind: str = "reproduction"                  # or "check" (of the propositions: no reproduction)
    note: str = ""

    # ``figure``: for a claim the paper shows only in a figure or text, the shape it describes, written as
    # values ONLY to check that the rule reads that shape as "agrees". Not numbers the paper reports; never
    # shown as the paper's values.

    def paper_values(self) -> dict[str, float]:
        return {x: paper_value(x) for x in self.labels}

    def paper_source(self) -> str:
        own = [x for x in self.labels if x not in DEFAULT_ALIASES and x != "default"] or list(self.labels)
        srcs = list(dict.fromkeys(_source(x) for x in own))
        return ", ".join(srcs) if srcs else self.source


def _scales(real_lms=PAPER_SCALE, text=None, mini=None) -> dict:
    return {"real LMs": real_lms,
            "real text (CPU)": text if text is not None else NotRun("no real-text point of this experiment"),
            "miniature": mini if mini is not None else NotRun("no miniature point of this experiment")}


def _fam(stem: str, points: Sequence[str] | Mapping[str, Any], seeds=(0, 1, 2)) -> Runs:
    m = points if isinstance(points, Mapping) else {p: p for p in points}
    return _pts(f"configs/{stem}.yaml", m, seeds)


_BOS_TABLE1 = ("the paper's Table 1 used each tokenizer's default: LLaMA and Mistral got a BOS at position 1, "
               "GPT-2 (no BOS token) did not; natural and random text are judged that way, with BOS on for every model "
               "that has a BOS token (SmolLM2's is the chat marker <|im_start|>, which its tokenizer does not add by "
               "itself) and off for one without")
_BOS_REPEAT = ("the repeat claim is about T copies of one token (the propositions' premise: every position, the "
               "first included, holds the same token), so it is judged with BOS off; BOS + repeats is shown beside")
NOT_JUDGED = " (absolute PE, not judged)"


def _no_bos(point: str, metrics: Sequence[str]) -> dict:
    """A bias point's labels read from its run without a fixed first token (the paper's default packing)."""
    return {f"{point}: {m}": (f"{point}_no_bos", m) for m in metrics}


def _with_bos(point: str, metrics: Sequence[str]) -> dict:
    """The same point with the text profile's fixed BOS at position 1: a second reading, shown, not judged."""
    return {f"{point} (with BOS): {m}": (point, m) for m in metrics}


_BIAS_NOTE = ("real text: judged on the runs without a fixed first token, as the paper ran them (its default packing "
              "has none); the runs with the text profile's fixed BOS at position 1, where the BOS competes with the "
              "bias for the sink, are the second reading, shown and not judged; miniature: the recipe's runs, BOS "
              "included")

CLAIMS: tuple[Claim, ...] = (
    # ---------------------------------------------------------------------------------- Section 3
    Claim("s3_massive_activation", "3", "02_section3_properties",
          "The sink token carries a massive activation: its hidden-state norm is far above the other tokens'",
          "Section 3 (figure)", rule=Bound("token-1 norm ratio", MASSIVE, True, 1.0, strict=False,
                                 null_text="token 1's norm equals the others' (ratio 1)"),
          bos=True, bos_why="judged on the settings with a sink on natural text, with BOS on for every model that "
                            "has a BOS token (as the paper's Table 1 ran LLaMA and Mistral); BOS off shown beside",
          measure=_scales(Chapter("02_section3_properties")), figure={"LLaMA2-7B: token-1 norm ratio": 100.0}),
    Claim("s3_small_value_norm", "3", "02_section3_properties", "The sink token's value norm is small",
          "Section 3 (figure)", rule=Bound("value-norm ratio", 1.0, False, 1.0,
                                 null_text="the sink's value norm equals the others' (ratio 1)"),
          bos=True, bos_why="as s3_massive_activation", measure=_scales(Chapter("02_section3_properties")),
          figure={"LLaMA2-7B: value-norm ratio": 0.2}),
    Claim("s3_qk_angle", "3", "02_section3_properties",
          "The sink comes from the angle between the queries and the sink's key, not from their norms",
          "Section 3 (QK-angle figure)", rule=Both(Bound("cos gap", 0.0, True, 0.0, null_text="no cosine gap"),
                                Bound("norm-product ratio", 1.0, False, 1.0, strict=False)),
          bos=True, bos_why="as s3_massive_activation", measure=_scales(Chapter("02_section3_properties")),
          figure={"LLaMA2-7B: cos gap": 0.5, "LLaMA2-7B: norm-product ratio": 0.5}),
    Claim("t1_natural", "3.2", "03_section3_measuring", "Open LMs put a sink on the first token of natural text",
          "Table 1", labels=[f"{m}: natural" for m in ("GPT2-XL", "Mistral-7B", "LLaMA2-7B Base", "LLaMA3-8B Base")],
          rule=Bound(": natural", SINK, True, 0.0, strict=False, null_text="no sink (0 %)",
                     what="Sink_1 (%) on natural text"),
          bos=True, bos_why=_BOS_TABLE1, measure=_scales(Chapter("03_section3_measuring"))),
    Claim("t1_random", "3.2", "03_section3_measuring", "The sink also appears on random tokens", "Table 1",
          labels=[f"{m}: random" for m in ("GPT2-XL", "Mistral-7B", "LLaMA2-7B Base", "LLaMA3-8B Base")],
          rule=Bound(": random", SINK, True, 0.0, strict=False, null_text="no sink (0 %)",
                     what="Sink_1 (%) on random tokens"),
          bos=True, bos_why=_BOS_TABLE1, measure=_scales(Chapter("03_section3_measuring"))),
    Claim("t1_repeat", "3.2", "03_section3_measuring",
          "On one repeated token RoPE models have no sink (absolute-PE GPT-2 keeps one)", "Table 1",
          labels=[f"{m}: repeat" for m in ("GPT2-XL", "Mistral-7B", "LLaMA2-7B Base", "LLaMA3-8B Base")],
          rule=Bound(": repeat", NO_SINK, False, NUMBERS["default"].value,
                     null_text="repeating a token changes nothing: the default run's Sink_1 on every RoPE model",
                     skip=["GPT2-XL: repeat"], what="Sink_1 (%) on one repeated token (RoPE models)"),
          bos=False, bos_why=_BOS_REPEAT, measure=_scales(Chapter("03_section3_measuring"))),
    Claim("prop_repeat", "3.1", "03_section3_measuring",
          "Repeated tokens: NoPE attention is exactly uniform; RoPE's alpha_1 is bounded and vanishes as t grows",
          "Propositions 1-2", kind="check", bos=False,
          bos_why="the propositions are about T copies of one token at every position, the first included, so no "
                  "BOS is added",
          note="a check of the propositions on randomly initialised models, not a reproduction: no verdict",
          measure=_scales(Chapter("03_section3_measuring"))),
    Claim("metric_T", "3.2", "03_section3_measuring",
          "Sink_1 falls as the sequence length T grows (hence T = 64 for every comparison)", "Section 3.2 (text)",
          rule=Falls(), bos=True,
          bos_why="the series with a sink at the smallest T, with BOS on for every model that has a BOS token, as "
                  "for t1_natural; BOS off shown beside",
          measure=_scales(Chapter("03_section3_measuring")),
          figure={"LLaMA2-7B: smallest T": 80.0, "LLaMA2-7B: largest T": 40.0}),
    Claim("base_vs_chat", "3.2", "not run",
          "Chat models keep the sink of their base models", "Section 3.2 (base vs chat)",
          labels=["Mistral-7B: natural", "Mistral-7B Chat", "LLaMA2-7B Base: natural", "LLaMA2-7B Chat",
                  "LLaMA2-13B Base", "LLaMA2-13B Chat", "LLaMA3-8B Base: natural", "LLaMA3-8B Chat"],
          rule=Sinks(["Mistral-7B Chat", "LLaMA2-7B Chat", "LLaMA2-13B Chat", "LLaMA3-8B Chat"]), bos=True,
          bos_why="the paper's tokenizer defaults (a BOS for LLaMA and Mistral)",
          measure=_scales(NotRun("the offline models have no base/chat pair"))),
    # ---------------------------------------------------------------------------------- Section 4
    Claim("opt_emergence", "4", "04_optimization",
          "The sink emerges after enough optimization; in the default run it appears between 1k and 2k steps",
          "Section 4 (figure)", labels=["default"],
          rule=Both(Sinks(["default"]), Change("default", "default: first Sink_1", up=True)),
          measure=_scales(text=_fam("optimization", {"default": "default",
                                                     "default: first Sink_1": ("default", "first Sink_1")}),
                          mini=_pts(MINI, {"default": "recipe", "default: first Sink_1": ("recipe", "first Sink_1")})),
          figure={"default: first Sink_1": 0.0}),
    Claim("opt_lr", "4", "04_optimization", "A larger learning rate gives more sink (at a fixed number of steps)",
          "Section 4", labels=["lr_x0.25", "lr_x0.5", "default", "lr_x2"],
          rule=Monotone([("lr_x0.25", "lr_x0.3"), "lr_x0.5", ("default", "recipe"), ("lr_x2", "lr_x3")]),
          measure=_scales(text=_fam("optimization", ["lr_x0.25", "lr_x0.5", "default", "lr_x2"]),
                          mini=_pts(MINI, ["lr_x0.3", "recipe", "lr_x3"])),
          note="miniature: LR x 0.3, x 1 (the recipe) and x 3, in the places of the paper's x 0.25, x 1 and x 2"),
    Claim("opt_lr_steps", "4", "04_optimization",
          "At a fixed LR x steps, a smaller LR trained longer gives less sink", "Section 4",
          labels=["lr_x2_steps_x0.5", "default", "lr_x0.5_steps_x2", "lr_x0.25_steps_x4"],
          rule=Monotone(["lr_x2_steps_x0.5", "default", "lr_x0.5_steps_x2", "lr_x0.25_steps_x4"], up=False),
          measure=_scales(text=_fam("optimization", ["lr_x2_steps_x0.5", "default", "lr_x0.5_steps_x2",
                                                     "lr_x0.25_steps_x4"]),
                          mini=_pts(MINI, {"default": "recipe", "lr_x0.5_steps_x2": "lr_x0.5_steps_x2"})),
          note="miniature: the recipe (its default) against LR x 0.5 with steps x 2"),
    Claim("opt_batch", "4", "04_optimization", "Batch size matters little", "Section 4",
          labels=["batch_x0.25", "batch_x0.5", "default", "batch_x2"],
          rule=MattersLittle(["batch_x0.25", "batch_x0.5", "batch_x2"], "default"),
          measure=_scales(text=_fam("optimization", ["batch_x0.25", "batch_x0.5", "default", "batch_x2"]))),
    # ---------------------------------------------------------------------------------- Section 5
    Claim("data_unique", "5", "05_data", "More unique training data, more sink (50M and 100M tokens: below 1 %)",
          "Section 5 (figure)", rule=Monotone(["unique_0.005", "unique_0.02", "unique_0.1", "unique_0.25"]),
          measure=_scales(text=NotRun(
              "the text profile cannot test it: the paper's claim is about its default packing (no fixed first token), "
              "where no text-profile run grows a sink on any amount of data; the stored unique_* runs keep the base's "
              "fixed first token, which grows a sink by itself, so they are shown in chapter 05, not scored")),
          figure={"unique_0.005": 0.5, "unique_0.02": 0.9, "unique_0.1": 8.0, "unique_0.25": 18.0}),
    Claim("data_random_first", "5", "05_data",
          "With the first two tokens random (x1, x2 ~ U(V)) the sink on token 1 nearly vanishes", "Section 5",
          labels=["default", "random_first", "random_first: Sink_2"],
          rule=Change("random_first", "default", up=False, treated_no_sink=True),
          measure=_scales(text=_fam("data", {"default": "no_fixed_token", "random_first": "random_first_two",
                                            "random_first: Sink_2": ("random_first_two", "Sink_2")}),
                          mini=_pts(MINI, {"default": "no_fixed_token", "random_first": "random_first_two",
                                           "random_first: Sink_2": ("random_first_two", "Sink_2")})),
          note="compared with the no-intervention control (miniature: no_fixed_token, no BOS), not a fixed-token run"),
    Claim("data_random_x1", "5", "05_data", "Only the first token random: the sink stays on token 1", "Section 5",
          labels=["random_x1", "default"], rule=Keeps("random_x1", "default"),
          measure=_scales(text=_fam("data", {"random_x1": "random_first", "default": "no_fixed_token"}),
                          mini=_pts(MINI, {"random_x1": "random_first", "default": "no_fixed_token"}))),
    Claim("data_random_x2", "5", "05_data", "Only the second token random: the sink stays on token 1", "Section 5",
          labels=["random_x2", "default"], rule=Keeps("random_x2", "default"),
          measure=_scales(text=_fam("data", {"random_x2": "random_second", "default": "no_fixed_token"}),
                          mini=_pts(MINI, {"random_x2": "random_second", "default": "no_fixed_token"}))),
    Claim("data_fixed_pos", "5", "05_data", "A fixed token at position k (k = 2, 3) moves the sink to k", "Section 5",
          labels=["fixed_pos2: Sink_2", "fixed_pos3: Sink_3"], rule=MovesTo([2, 3]),
          measure=_scales(
              text=_fam("data", {f"fixed_pos{k}: Sink_{j}": (f"fixed_pos{k}", f"Sink_{j}") for k in (2, 3)
                                 for j in (1, 2, 3)}),
              mini=_pts(MINI, {f"fixed_pos{k}: Sink_{j}": (f"fixed_pos{k}", f"Sink_{j}") for k in (2, 3)
                               for j in (1, 2, 3)}))),
    Claim("data_no_fixed_token", "5", "05_data",
          "A fixed token at position 1 takes a much larger sink than windows cut at arbitrary offsets", "Section 5",
          labels=["fixed_pos1", "default"], rule=Change("fixed_pos1", "default", up=True),
          measure=_scales(text=_fam("data", {"fixed_pos1": "fixed_pos1", "default": "no_fixed_token"}),
                          mini=_pts(MINI, {"fixed_pos1": "recipe", "default": "no_fixed_token"})),
          note="compared with the no-fixed-token control at every scale (real text: data/no_fixed_token, since the "
               "text profile's base run itself fixes the first token; miniature: the recipe, fixed BOS at 1, against "
               "no_fixed_token)"),
    # ---------------------------------------------------------------------------------- Section 6
    Claim("loss_wd", "6", "06_loss", "Weight decay up to ~0.5-1 increases the sink; large values remove it",
          "Section 6", labels=["wd_0", "wd_0.01", "wd_0.1", "wd_0.5", "wd_1", "wd_2", "wd_5"],
          rule=WeightDecay(["wd_0", "wd_0.01", "wd_0.1", "wd_0.5", "wd_1", "wd_2", "wd_5"], "wd_0",
                           ["wd_0.5", "wd_1"], "wd_5"),
          measure=_scales(text=_fam("loss", ["wd_0", "wd_0.01", "wd_0.1", "wd_0.5", "wd_1", "wd_2", "wd_5"]),
                          mini=_pts(MINI, {"wd_0": "wd_0", "wd_0.1": "wd_0.1", "wd_0.5": "recipe", "wd_1": "wd_1",
                                           "wd_2": "wd_2", "wd_5": "wd_5"})),
          note="judged on Sink_1, as the paper reports it (miniature: the recipe is WD 0.5; it has no WD 0.01)"),
    Claim("loss_prefix", "6", "06_loss",
          "Prefix LM: the sink lands on one prefix position, not necessarily the first", "Section 6 (prefix-LM figure)",
          rule=Prefix(),
          measure=_scales(text=_fam("loss", {"prefix: p": ("prefix_5", "prefix length"),
                                             **{f"prefix: Sink_{k}": ("prefix_5", f"Sink_{k}") for k in range(1, 11)}}),
                          mini=_pts(MINI, {"prefix: p": ("prefix_4", "prefix length"),
                                           **{f"prefix: Sink_{k}": ("prefix_4", f"Sink_{k}") for k in range(1, 11)}})),
          figure={"prefix: p": 5.0, "prefix: Sink_1": 0.0, "prefix: Sink_3": 40.0},
          note="real text: prefix_5 (the paper's p = 5); miniature: prefix_4 (p = 4). Both keep a fixed first token "
               "(text: the base's; miniature: the recipe's BOS) inside the prefix, which the paper did not have: a sink "
               "on it reads 'not comparable', never 'agrees'"),
    Claim("loss_window", "6", "06_loss",
          "Sliding window attention: small windows prevent the sink", "Section 6 (sliding-window figure)",
          rule=Change("window_4: excess alpha_1", "full: excess alpha_1", up=False, what="excess alpha_1"),
          # the control is the run window_4 changes: the profile's base (full attention), which is wd_0.5 at the
          # text profile (its base WD is 0.5; wd_0.1 is the paper's default, not the text base) and the recipe in
          # miniature
          measure=_scales(text=_fam("loss", {"window_4: excess alpha_1": ("window_4", "excess alpha_1"),
                                             "full: excess alpha_1": ("wd_0.5", "excess alpha_1")}),
                          mini=_pts(MINI, {"window_4: excess alpha_1": ("window_4", "excess alpha_1"),
                                           "full: excess alpha_1": ("recipe", "excess alpha_1")})),
          figure={"window_4: excess alpha_1": 0.0, "full: excess alpha_1": 0.1},
          note="judged on alpha_1's excess over the uniform floor under each mask: with a 4-key window a uniform "
               "head already has alpha_1 = 0.52 > epsilon, so Sink_1 cannot say whether a sink formed"),
    # ---------------------------------------------------------------------------------- Section 7.1
    Claim("arch_pe", "7.1", "07_architecture", "The sink emerges with every positional embedding", "Section 7.1",
          labels=["pos_rope", "pos_nope", "pos_absolute", "pos_learnable", "pos_relative", "pos_alibi"],
          rule=Sinks(["pos_rope", "pos_nope", "pos_absolute", "pos_learnable", "pos_relative", "pos_alibi"]),
          measure=_scales(text=_fam("architecture", ["pos_rope", "pos_nope", "pos_absolute", "pos_learnable",
                                                     "pos_relative", "pos_alibi"])),
          note="relative: the paper names no form; pos_relative is the authors' released one (the T5 bucket index "
               "of the distance added to the logits, no parameters). T5's learned bias, pos_relative_learned, is "
               "ours and not scored"),
    Claim("arch_norm", "7.1", "07_architecture", "Post-norm still has a sink", "Section 7.1",
          labels=["post_norm"], rule=Sinks(["post_norm"]), measure=_scales(text=_fam("architecture", ["post_norm"]))),
    Claim("arch_ffn", "7.1", "07_architecture", "The FFN type matters little", "Section 7.1",
          labels=["ffn_relu", "ffn_gelu", "ffn_geglu", "ffn_swiglu"],
          rule=MattersLittle(["ffn_relu", "ffn_gelu", "ffn_geglu"], "ffn_swiglu"),
          measure=_scales(text=_fam("architecture", {"ffn_relu": "ffn_relu", "ffn_gelu": "ffn_gelu",
                                                     "ffn_geglu": "ffn_geglu", "ffn_swiglu": "pos_rope"}))),
    Claim("arch_ffn_swish_reglu", "7.1", "07_architecture", "Swish and ReGLU FFNs: the FFN type matters little",
          "Section 7.1", labels=["ffn_swish", "ffn_reglu", "ffn_swiglu"],
          rule=MattersLittle(["ffn_swish", "ffn_reglu"], "ffn_swiglu"),
          measure=_scales(text=_fam("architecture", {"ffn_swish": "ffn_swish", "ffn_reglu": "ffn_reglu",
                                                     "ffn_swiglu": "pos_rope"}))),
    Claim("arch_heads", "7.1", "07_architecture", "The number of heads matters little (1 head; heads added)",
          "Section 7.1", labels=["heads_1", "heads_add", "heads_8"],
          rule=MattersLittle(["heads_1", "heads_add"], "heads_8"),
          measure=_scales(text=_fam("architecture", {"heads_1": "heads_1", "heads_add": "heads_add",
                                                     "heads_8": "heads_8"})),
          note="real text: 8 concatenated heads at d 128 (point heads_8) stand for the paper's default; heads_1 and "
               "heads_add (the text base's 4 heads, added) are compared with it"),
    Claim("arch_heads_2_4_8", "7.1", "07_architecture", "8, 4 and 2 heads: the number of heads matters little",
          "Section 7.1", labels=["heads_4", "heads_2", "heads_8"], rule=MattersLittle(["heads_4", "heads_2"], "heads_8"),
          measure=_scales(text=_fam("architecture", {"heads_4": "heads_4", "heads_2": "heads_2",
                                                     "heads_8": "heads_8"})),
          note="real text: the points with 2, 4 and 8 heads at d 128 (the text profile's base has 4)"),
    # ---------------------------------------------------------------------------------- Section 7.2
    *(Claim(f"bias_{short}", "7.2", "08_biases", text, "Table 5",
            labels=[f"{pt}: Sink*", f"{pt}: Sink_1"],
            rule=Contrast([f"{pt}: Sink*"], [f"{pt}: Sink_1"],
                          {f"{pt}: Sink*": 0.0, f"{pt}: Sink_1": NUMBERS["default"].value},
                          "no bias position takes anything (Sink* 0 %) and token 1 keeps the default's sink"),
            measure=_scales(text=_fam("biases", {**_no_bos(pt, ("Sink*", "Sink_1")), **_with_bos(pt, ("Sink*", "Sink_1"))}),
                            mini=_pts(MINI, {f"{pt}: Sink*": (pt, "Sink*"), f"{pt}: Sink_1": (pt, "Sink_1")})),
            note=_BIAS_NOTE)
      for short, pt, text in (("sink_token", "sink_token", "A learnable sink token takes the sink"),
                              ("kv", "kv_bias", "KV biases take the sink"),
                              ("k", "k_bias", "K biases with v* = 0 take the sink"))),
    Claim("bias_v", "7.2", "08_biases", "V biases alone (added after the softmax) leave the sink on token 1",
          "Table 5", labels=["v_bias: Sink_1"], rule=Sinks(["v_bias: Sink_1"]),
          measure=_scales(text=_fam("biases", {"v_bias: Sink_1": ("v_bias", "Sink_1")}),
                          mini=_pts(MINI, {"v_bias: Sink_1": ("v_bias", "Sink_1")})),
          note="a control: the claimed effect is the sink staying, so 'no effect' means the sink gone"),
    Claim("bias_fixed_v", "7.2", "08_biases", "A K bias with a fixed v* = v' = [1, 0, ..., 0] takes the sink",
          "Section 7.2", labels=["k_bias_fixed_v: Sink*", "k_bias_fixed_v: Sink_1"],
          rule=Contrast(["k_bias_fixed_v: Sink*"], ["k_bias_fixed_v: Sink_1"],
                        {"k_bias_fixed_v: Sink*": 0.0, "k_bias_fixed_v: Sink_1": NUMBERS["default"].value},
                        "no bias position takes anything and token 1 keeps the default's sink"),
          measure=_scales(text=_fam("biases", {**_no_bos("k_bias_fixed_v", ("Sink*", "Sink_1")),
                                               **_with_bos("k_bias_fixed_v", ("Sink*", "Sink_1"))})),
          note="this claim reads v' (not 20v'): the paper's 20v' row, where the sink returns to token 1, is the "
               "claim bias_fixed_v_large (configs/biases.yaml runs both); " + _BIAS_NOTE),
    Claim("bias_fixed_v_large", "7.2", "08_biases",
          "K bias with a large fixed v* (20v'): the sink returns to token 1", "Section 7.2",
          labels=["k_bias_fixed_20v1: Sink*", "k_bias_fixed_20v1: Sink_1", "k_bias_fixed_5v1: Sink*",
                  "k_bias_fixed_5v1: Sink_1", "k_bias_fixed_v2: Sink*", "k_bias_fixed_v2: Sink_1",
                  "k_bias_fixed_5v2: Sink*", "k_bias_fixed_5v2: Sink_1", "k_bias_fixed_20v2: Sink*",
                  "k_bias_fixed_20v2: Sink_1"],
          rule=Contrast(["k_bias_fixed_20v1: Sink_1"], ["k_bias_fixed_20v1: Sink*"],
                        {"k_bias_fixed_20v1: Sink_1": NUMBERS["k_bias_fixed_v: Sink_1"].value,
                         "k_bias_fixed_20v1: Sink*": NUMBERS["k_bias_fixed_v: Sink*"].value},
                        "scaling v* changes nothing: 20v' reads as v'"),
          measure=_scales(text=_fam("biases", {
              **_no_bos("k_bias_fixed_20v1", ("Sink*", "Sink_1")),
              **{f"{pt} (with BOS): {m}": (pt, m) for pt in ("k_bias_fixed_20v1", "k_bias_fixed_5v1", "k_bias_fixed_v2",
                                                            "k_bias_fixed_5v2", "k_bias_fixed_20v2")
                 for m in ("Sink*", "Sink_1")}}),
              mini=_pts(MINI, {f"k_bias_fixed_20v1: {m}": ("k_bias_fixed_20v1", m) for m in ("Sink*", "Sink_1")})),
          note="real text: judged on 20v' without a fixed first token; the fixed-BOS runs of 20v', 5v', v'', 5v'' and "
               "20v'' are shown beside (" + _BIAS_NOTE + ")"),
    Claim("bias_shared", "7.2", "08_biases", "KV and K biases shared across heads still take a sink", "Section 7.2",
          labels=["kv_bias_shared: Sink*", "kv_bias_shared: Sink_1", "k_bias_shared: Sink*", "k_bias_shared: Sink_1"],
          rule=Sinks(["kv_bias_shared: Sink*", "k_bias_shared: Sink*"], what="Sink*"),
          measure=_scales(text=_fam("biases", {f"{pt}: {m}": (pt, m) for pt in ("kv_bias_shared", "k_bias_shared")
                                               for m in ("Sink*", "Sink_1")}))),
    Claim("bias_low_dim", "7.2", "08_biases", "A K bias learned in one dimension (d_a = 1) still takes the sink",
          "Section 7.2", labels=["k_bias_dims_1: Sink*", "k_bias_dims_1: Sink_1"],
          rule=Contrast(["k_bias_dims_1: Sink*"], ["k_bias_dims_1: Sink_1"],
                        {"k_bias_dims_1: Sink*": 0.0, "k_bias_dims_1: Sink_1": NUMBERS["default"].value},
                        "no bias position takes anything and token 1 keeps the default's sink"),
          measure=_scales(text=_fam("biases", {"k_bias_dims_1: Sink*": ("k_bias_dims_1", "Sink*"),
                                               "k_bias_dims_1: Sink_1": ("k_bias_dims_1", "Sink_1")}))),
    Claim("bias_low_dim_more", "7.2", "08_biases", "K biases in d_a = 2..64 dimensions take the sink", "Section 7.2",
          labels=[f"k_bias_dims_{d}: {m}" for d in (2, 4, 8, 16) for m in ("Sink*", "Sink_1")],
          rule=Sinks([f"k_bias_dims_{d}: Sink*" for d in (2, 4, 8, 16)], what="Sink*"),
          measure=_scales(text=_fam("biases", {f"k_bias_dims_{d}: {m}": (f"k_bias_dims_{d}", m) for d in (2, 4, 8, 16)
                                               for m in ("Sink*", "Sink_1")})),
          note="d_a = 2, 4, 8, 16 (the text profile's heads have 32 dimensions, the cpu profile's 16); the paper's "
               "d_a = 32 and 64 are not run"),
    # ---------------------------------------------------------------------------------- Section 7.3
    Claim("ops_scaled", "7.3", "09_attention_ops", "Softmax rows that sum to less than one (0.2) give less sink",
          "Section 7.3", labels=["softmax_sum_0.2", "softmax"], rule=Change("softmax_sum_0.2", "softmax", up=False),
          measure=_scales(text=_fam("attention", ["softmax_sum_0.2", "softmax"]))),
    Claim("ops_scaled_more", "7.3", "09_attention_ops",
          "Softmax rows summing to 2 give more sink, to 0.1 and 0.05 less", "Section 7.3",
          labels=["softmax_sum_2", "softmax", "softmax_sum_0.1", "softmax_sum_0.05"],
          rule=Both(Change("softmax_sum_2", "softmax", up=True), Change("softmax_sum_0.1", "softmax", up=False)),
          measure=_scales(text=_fam("attention", {"softmax_sum_2": "softmax_sum_2", "softmax": "softmax",
                                                  "softmax_sum_0.1": "softmax_sum_0.1",
                                                  "softmax_sum_0.05": "softmax_sum_0.05"}))),
    Claim("ops_sigmoid", "7.3", "09_attention_ops", "Sigmoid attention without normalization has no sink",
          "Table 15", labels=["sigmoid", "softmax"],
          rule=Contrast(["softmax"], ["sigmoid"], {"sigmoid": "softmax"}, "sigmoid reads as softmax"),
          measure=_scales(text=_fam("attention", ["sigmoid", "softmax"]),
                          mini=_pts(MINI, {"sigmoid": "sigmoid", "softmax": "recipe"}))),
    Claim("ops_sigmoid_norm", "7.3", "09_attention_ops", "Normalized sigmoid attention brings the sink back",
          "Table 15", labels=["sigmoid_norm", "sigmoid"],
          rule=Contrast(["sigmoid_norm"], ["sigmoid"], {"sigmoid_norm": "sigmoid"},
                        "normalization changes nothing: sigmoid_norm reads as sigmoid"),
          measure=_scales(text=_fam("attention", ["sigmoid_norm", "sigmoid"]),
                          mini=_pts(MINI, {"sigmoid_norm": "sigmoid_norm", "sigmoid": "sigmoid"}))),
    Claim("ops_elu", "7.3", "09_attention_ops",
          "elu+1 without normalization has no sink; the normalized elu+1 kernel has one", "Table 15",
          labels=["elu", "kernel_elu"],
          rule=Contrast(["kernel_elu"], ["elu"], {"kernel_elu": "elu"}, "the kernel reads as elu+1 without normalization"),
          measure=_scales(text=_fam("attention", ["elu", "kernel_elu"]),
                          mini=_pts(MINI, {"elu": "elu", "kernel_elu": "kernel_elu"})),
          note="judged on elu against the elu+1 KERNEL (kernel_elu) at every scale; elu_norm (elu(qk)+1 over its "
               "row sum) is ours, the variant the paper could not train, and scores no claim"),
    Claim("ops_kernels", "7.3", "09_attention_ops",
          "Identity and MLP kernels (Z = 1 or max(|row sum|, 1)) have no sink", "Table 15",
          labels=["kernel_identity_z1", "kernel_mlp_maxabs", "kernel_mlp_z1", "softmax"],
          rule=Contrast(["softmax"], ["kernel_identity_z1", "kernel_mlp_maxabs", "kernel_mlp_z1"],
                        {"kernel_identity_z1": "softmax", "kernel_mlp_maxabs": "softmax", "kernel_mlp_z1": "softmax"},
                        "every kernel reads as softmax"),
          measure=_scales(text=_fam("attention", {"kernel_identity_z1": "kernel_identity_z1",
                                                  "kernel_mlp_maxabs": "kernel_mlp_maxabs", "kernel_mlp_z1": "kernel_mlp_z1",
                                                  "softmax": "softmax"}))),
    Claim("ops_p_norm", "7.3", "09_attention_ops",
          "p-normalized softmax reduces, but does not remove, massive activations", "Section 7.3 (text)",
          measure=_scales(), note="qualitative: the paper gives no Sink_1 for it; softmax_p_2 runs as a variant"),
    Claim("ops_1b", "7.3", "not run", "At 1B, sigmoid attention without normalization still has no sink",
          "Section 7.3 (1B)", labels=["softmax_1b", "sigmoid_1b"],
          rule=Contrast(["softmax_1b"], ["sigmoid_1b"], {"sigmoid_1b": "softmax_1b"}, "sigmoid reads as softmax"),
          measure=_scales(NotRun("the paper's 1B models"))),
    Claim("ops_softpick", "related", "09_attention_ops",
          "Softpick (rectified softmax) removes the sink (Zuhri et al. 2025, not this paper)", "Zuhri et al. 2025",
          rule=Contrast(["softmax"], ["softpick"], {"softpick": "softmax"}, "softpick reads as softmax"),
          measure=_scales(text=_fam("attention", ["softpick", "softmax"]),
                          mini=_pts(MINI, {"softpick": "softpick", "softmax": "recipe"})),
          figure={"softpick": 0.0, "softmax": 18.0}),
    # ---------------------------------------------------------------------------------- packing and BOS
    Claim("pack_fixed_bos", "related", "10_packing_bos",
          "A fixed BOS at position 1 receives the sink (Barbero et al. 2025)", "Barbero et al. 2025",
          rule=Change("bos", "causal", up=True),
          measure=_scales(text=_fam("packing", ["bos", "causal"]),
                          mini=NotRun("the miniature's fixed-BOS runs (recipe vs no_fixed_token) score "
                                      "data_no_fixed_token")),
          figure={"bos": 60.0, "causal": 18.0}),
    Claim("pack_doc_mask", "related", "10_packing_bos",
          "Intra-document masking keeps a sink on each document's first token (Barbero et al. 2025)",
          "Barbero et al. 2025", rule=Sinks(["doc_mask", "bos_doc_mask"]),
          measure=_scales(text=NotRun(
              "no stored run tests it: the claim needs a BOS at the start of every document inside the window and the "
              "sink read at document starts; the stored doc_mask runs have one BOS per window at most and read Sink_1 "
              "at window position 1, a mid-document token (chapter 10 shows them)")),
          figure={"doc_mask": 20.0, "bos_doc_mask": 60.0}),
    Claim("pack_bos_inference", "related", "10_packing_bos",
          "A model trained with a BOS depends on it: without it the sink changes (Barbero et al. 2025)",
          "Barbero et al. 2025", rule=DependsOn(),
          bos=True, bos_why="judged on the models whose tokenizer puts a BOS first (the input they were trained on), "
                            "with BOS against without; a model trained without a BOS is shown as the control",
          measure=_scales(Chapter("10_packing_bos"), mini=Chapter("10_packing_bos")),
          figure={"Gemma 7B: with BOS": 60.0, "Gemma 7B: without BOS": 10.0}),
    # ---------------------------------------------------------------------------------- why it matters
    Claim("stream_window", "related", "11_why_sink_matters",
          "A window KV cache that evicts the first tokens breaks the model once the text exceeds the window "
          "(Xiao et al. 2024)", "Xiao et al. 2024", rule=Ratio("window ppl", "full ppl"), bos=False,
          bos_why="the book adds no BOS to the stream: each model reads the text exactly as its tokenizer encodes it "
                  "by default (SmolLM2's adds nothing; Gemma 3's puts its own <bos> first, which is then the stream's "
                  "first token), and each value's label says which; StreamingLLM's claim is about the first tokens "
                  "of the stream, whatever they are",
          measure=_scales(Chapter("11_why_sink_matters")),
          figure={"Llama-2-7B: window ppl": 1000.0, "Llama-2-7B: full ppl": 5.0}),
    Claim("stream_sink_window", "related", "11_why_sink_matters",
          "Keeping a few sink tokens plus the window restores it (Xiao et al. 2024)", "Xiao et al. 2024",
          rule=Recovers(), bos=False, bos_why="as stream_window", measure=_scales(Chapter("11_why_sink_matters")),
          figure={"Llama-2-7B: full ppl": 5.0, "Llama-2-7B: window ppl": 1000.0, "Llama-2-7B: sink+window ppl": 5.5}),
)
_BY_ID = {c.id: c for c in CLAIMS}


def claim(claim_id: str) -> Claim:
    try:
        return _BY_ID[claim_id]
    except KeyError:
        raise ValueError(f"unknown claim {claim_id!r}; valid: {', '.join(_BY_ID)}") from None


def rule_check(c: Claim) -> dict | None:
    """The rule on the paper's own numbers (with the figure's shape where the paper gives no number) and on a
    result with the claimed effect absent; None for a qualitative claim."""
    if c.rule is None:
        return None
    paper = {**c.figure, **c.paper_values()}
    return {"paper": c.rule.apply(paper), "no_effect": c.rule.apply(c.rule.null(paper))}


# ------------------------------------------------------------------------------- chapter records (real LMs)
RESULTS_ENV = "SINKPAPER_BOOK_RESULTS"


def results_dir() -> Path:
    """Where chapter records go: $SINKPAPER_BOOK_RESULTS (the book runner sets it), else book/_results in a
    checkout, else ./sinkpaper_results (e.g. on Colab)."""
    env = os.environ.get(RESULTS_ENV)
    if env:
        return Path(env)
    return Path("book/_results") if Path("book").is_dir() else Path("sinkpaper_results")


def _clean(values: Mapping[str, Any]) -> dict[str, float | None]:
    out = {}
    for k, v in values.items():
        if v is not None and not isinstance(v, (int, float)):
            raise ValueError(f"value {k!r} must be a number or None, not {v!r}")
        out[str(k)] = None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)
    return out


def record(claim_id: str, *, values: Mapping[str, float | None], measurement: str, provenance: Mapping[str, Any],
           setting: str = "", note: str = "", scale: str = "real LMs",
           directory: str | os.PathLike | None = None) -> dict:
    """Record a chapter's measurement for one claim (its numbers, not a verdict) and return the claim's table row,
    with the verdict the claim's rule gives. ``values``: {label: number}, labels as the claim's rule reads them;
    ``measurement``: what was measured (models, inputs, samples); ``note``: what a reader should see beside the
    verdict (the other BOS setting, a model without a sink, ...)."""
    c = claim(claim_id)
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; valid: {', '.join(SCALES)}")
    if not isinstance(c.measure.get(scale), Chapter):
        raise ValueError(f"{claim_id} at {scale!r} is not measured by a chapter; chapters record: "
                         + ", ".join(f"{x.id} ({s})" for x in CLAIMS for s, m in x.measure.items()
                                     if isinstance(m, Chapter)))
    path = Path(directory or results_dir()) / f"{c.chapter}.json"
    data = json.loads(path.read_text()) if path.exists() else {"chapter": c.chapter, "records": {}}
    rec = {"measurement": str(measurement), "values": _clean(values), "setting": setting, "note": note,
           "provenance": json.loads(json.dumps(dict(provenance), default=str))}
    data["records"].setdefault(claim_id, {})[scale] = rec
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
    return row(claim_id, directory=directory)


def load_records(directory: str | os.PathLike | None = None) -> dict[str, dict[str, dict]]:
    """{claim id: {scale: record}} from every chapter file in the results directory (records in an older
    format, without "values", are skipped: their verdicts were decided elsewhere)."""
    out: dict[str, dict[str, dict]] = {}
    d = Path(directory or results_dir())
    for p in sorted(d.glob("*.json")) if d.is_dir() else []:
        for cid, scales in json.loads(p.read_text()).get("records", {}).items():
            for scale, rec in scales.items():
                if scale in SCALES and isinstance(rec, dict) and "values" in rec:
                    out.setdefault(cid, {})[scale] = rec
    return out


# ------------------------------------------------------------------------------------- the results store
STORE = "results/store"


def store_lookup(config: str, profile: str, point: str, seed: int, store: str = STORE) -> tuple[dict | None, str]:
    """THE one lookup of a stored run for the listing: (payload, status) with status "found", "missing" or
    STALE. A run is stale when the store holds the same point, profile and seed under a different result-changing
    config (an older definition); it is never read as a current result. (The store's own staleness check, when it
    lands, belongs here and nowhere else.)"""
    from .train.store import read_result
    from .train.sweep import sweep_configs

    try:
        [(_, _, cfg)] = sweep_configs(config, profile, [point], [seed])
    except (ValueError, KeyError, FileNotFoundError):
        return None, "missing"          # e.g. a profile ("text") the config does not define yet
    payload = read_result(store, cfg)
    if payload is not None:
        return payload, "found"
    want = cfg.identity()
    if any(ident != want for ident in _stored_identities(store).get((cfg.name, profile, seed), ())):
        return None, STALE
    return None, "missing"


def _stored_identities(store: str) -> dict[tuple, list]:
    """(name, profile, seed) -> the result-changing identity of every run stored under it; read once per version
    of the store folder (its modification time changes when a run is added or removed; the store writes a run
    by renaming a finished file into place, never in place)."""
    d = Path(store)
    if not d.is_dir():
        return {}
    return _identities_of(str(d.resolve()), d.stat().st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _identities_of(store: str, mtime_ns: int) -> dict[tuple, list]:
    from .train.config import identity
    from .train.store import entries
    out: dict[tuple, list] = {}
    for _, old in entries(store):
        key = (old.get("name"), old.get("profile"), old.get("config", {}).get("run", {}).get("seed"))
        out.setdefault(key, []).append(identity(old.get("config", {})))
    return out


PROFILE_OF = {"real text (CPU)": "text", "miniature": "cpu"}


def _store_result(m: Runs, profile: str, store: str) -> dict:
    """A claim's runs at one profile, each read on its plateau: {"values" (mean over the paired seeds),
    "seed_values" (one value per seed, the seeds in "seeds"), "plateaus" (each run's window), "status",
    "excluded" (runs that did not train or cannot give a plateau, each with why), ...}."""
    from .results.sweeps import NotEnoughEvaluations, plateau_of, training_failure

    got: dict[str, dict[int, float]] = {}
    plateaus: dict[str, dict[int, dict]] = {}
    excluded: list[str] = []
    stale, prov = [], []
    missing_required = False
    for label, spec in m.points.items():
        point, metric = spec[0], spec[1]
        config = spec[2] if len(spec) > 2 else m.config
        got[label], plateaus[label] = {}, {}
        for seed in (*m.seeds, *EXTRA_SEEDS):
            payload, st = store_lookup(config, profile, point, seed, store)
            if st == STALE:
                if seed in m.seeds:
                    stale.append(f"{point} seed {seed}")
                continue
            if payload is None:
                missing_required |= seed in m.seeds
                continue
            prov.append(payload["hash"])
            why = training_failure(payload, TRAINED, PLATEAU)
            if why:
                excluded.append(f"{point} seed {seed}: {why}")
                continue
            try:
                p = plateau_of(payload, metric, PLATEAU, PLATEAU_EVALS)
            except NotEnoughEvaluations as e:
                excluded.append(str(e))
                continue
            if p is not None:
                got[label][seed] = p["mean"]
                plateaus[label][seed] = p
    # seeds paired across the claim's labels: those every label has (a seed a label lacks drops out for all)
    paired = sorted(set.intersection(*(set(v) for v in got.values()))) if got else []
    enough = len(paired) >= SEEDS_MIN
    seed_values = {k: [got[k][s] for s in paired] for k in got} if enough else {}
    values = {k: (statistics.fmean(v) if v else None) for k, v in seed_values.items()} if enough else \
        {k: None for k in m.points}
    status = "found"
    if stale:
        status = STALE
    elif all(not v for v in got.values()) and not excluded:
        status = "missing"
    elif missing_required:
        status = "incomplete"
    elif not enough:
        status = "too few seeds"
    from .train.config import PROFILES

    notes = [] if profile in PROFILES else [f"the configs define no `{profile}` profile yet: nothing stored"]
    if excluded:
        notes.append(f"{len(excluded)} run(s) not counted: " + "; ".join(excluded))
    if enough and len(paired) != len(m.seeds):
        notes.append(f"seeds {', '.join(map(str, paired))}")
    pts = ", ".join(f"{k}={sp[0]}" + ("" if sp[1] == "Sink_1" else f" {sp[1]}")
                    + (f" ({sp[2]})" if len(sp) > 2 else "") for k, sp in m.points.items())
    return {"measurement": f"store {m.config} @{profile}, seeds {','.join(map(str, paired or m.seeds))}, each run "
                           f"on its plateau (last {100 * PLATEAU:g} % of its steps): {pts}",
            "values": values if status != STALE else {}, "seed_values": seed_values if status != STALE else {},
            "seeds": paired, "plateaus": {k: {str(s): p for s, p in v.items()} for k, v in plateaus.items()},
            "status": status, "stale": stale, "excluded": excluded, "runs": sorted(set(prov)),
            "note": "; ".join(notes)}


def result(c: Claim, scale: str, records: Mapping | None = None, store: str = STORE) -> dict:
    """One claim at one scale: {"measurement", "values", "verdict", "status", "note", ...}."""
    m = c.measure.get(scale, NotRun("not listed"))
    if isinstance(m, NotRun):
        return {"measurement": NOT_RUN, "values": {}, "verdict": NO_RESULT, "status": NOT_RUN, "note": m.reason}
    if isinstance(m, Chapter):
        rec = (records if records is not None else load_records()).get(c.id, {}).get(scale)
        if rec is None:
            return {"measurement": f"chapter {m.chapter}", "values": {}, "verdict": NO_RESULT, "status": "missing",
                    "note": f"no record: run the chapter (python -m sinkpaper.book run --only {m.chapter})"}
        out = {"measurement": f"chapter {m.chapter}: {rec['measurement']}", "values": rec["values"],
               "status": "found", "note": rec.get("note", ""), "setting": rec.get("setting", ""),
               "provenance": rec.get("provenance", {})}
    else:
        out = _store_result(m, PROFILE_OF[scale], store)
    if out["status"] == STALE:
        out["verdict"] = NO_RESULT
        out["note"] = f"{STALE}: {', '.join(out['stale'])} were stored under an older definition"
    elif out["status"] in ("missing", "incomplete", "too few seeds"):
        # a rule judges the whole set of runs it was fixed for, never the part stored so far: one failing point
        # would otherwise read "disagrees" before the points that could change the picture are in
        out["verdict"] = NO_RESULT
    elif c.rule is None:
        out["verdict"] = NO_RESULT
    elif out.get("seed_values"):
        out["verdict"], out["why"] = judge(c.rule, out["seed_values"])
    else:
        out["verdict"] = c.rule.apply(out["values"])
    return out


def entry(c: Claim, records: Mapping | None = None, store: str = STORE) -> dict:
    """The claim as the listing gives it (every field a chapter, the scorecard and `claims --json` read)."""
    records = load_records() if records is None else records
    return {"id": c.id, "section": c.section, "chapter": c.chapter, "claim": c.claim, "kind": c.kind,
            "paper": {"source": c.paper_source(), "values": c.paper_values()},
            "rule": c.rule.sentence if c.rule else None,
            "no_effect_means": c.rule.null_sentence if c.rule else None,
            "bos": c.bos, "bos_why": c.bos_why or None,
            "results": {s: result(c, s, records, store) for s in SCALES},
            "rule_check": rule_check(c), "note": c.note}


def listing(directory: str | os.PathLike | None = None, store: str = STORE) -> list[dict]:
    """Every claim, in the paper's order, with its results at every scale."""
    records = load_records(directory)
    return [entry(c, records, store) for c in CLAIMS]


# ----------------------------------------------------------------------------------------- for people
def fmt_values(values: Mapping[str, float | None], digits: int = 2) -> str:
    from .results.numbers import MISSING, fmt

    return ", ".join(f"{k} {fmt(v, digits, '')}" for k, v in values.items()) or MISSING


def verdict_text(res: Mapping) -> str:
    """The verdict as a table cell: the verdict word, and why there is none where there is none."""
    if res.get("status") == STALE:
        return f"{NO_RESULT} ({STALE})"
    if res.get("status") == NOT_RUN:
        return f"{NO_RESULT} ({NOT_RUN})"
    if res.get("status") == "too few seeds":
        return f"{NO_RESULT} (fewer than {SEEDS_MIN} seeds that trained)"
    if res["verdict"] == INCONCLUSIVE and res.get("why"):
        return f"{INCONCLUSIVE}: {res['why']}"
    return res["verdict"]


def row(claim_id: str, directory: str | os.PathLike | None = None, store: str = STORE) -> dict:
    """A claim's table row, as the chapters show it and the scorecard lists it."""
    return row_of(entry(claim(claim_id), load_records(directory), store))


def _no_rule(e: Mapping) -> str:
    return ("a check of the propositions, not a reproduction: no verdict" if e["kind"] == "check"
            else "qualitative: no verdict")


def row_of(e: Mapping) -> dict:
    """The table row of a listing entry: the claim, the paper's values, the rule, ours and the verdict at each
    scale, and a note (the BOS choice and why, the chapter's note, what is stale)."""
    out = {"claim": e["claim"], "paper": fmt_values(e["paper"]["values"]) if e["paper"]["values"]
           else f"{e['paper']['source']} (no number)", "rule": e["rule"] or _no_rule(e)}
    for s in SCALES:
        r = e["results"][s]
        out[f"ours ({s})"] = (fmt_values(r["values"]) if r["values"] else
                              f"{NOT_RUN}: {r['note']}" if r.get("status") == NOT_RUN else r["measurement"])
        out[f"verdict ({s})"] = verdict_text(r)
    notes = [e["note"]] + [f"{s}: {r['note']}" for s, r in e["results"].items() if r.get("note")
                           and r.get("status") not in (NOT_RUN,)]
    if e["bos"] is not None:
        notes.insert(0, f"BOS {'on' if e['bos'] else 'off'}: {e['bos_why']}")
    out["note"] = "; ".join(n for n in notes if n)
    return out


def bos_statement(claim_ids: Sequence[str]) -> str:
    """Markdown, one bullet per claim: the BOS choice its verdict uses and why (for a chapter to show before its
    results)."""
    lines = []
    for cid in claim_ids:
        c = claim(cid)
        if c.bos is None:
            continue
        lines.append(f"- `{cid}` ({c.claim}): verdict with **BOS {'on' if c.bos else 'off'}**; {c.bos_why}.")
    return "\n".join(lines)


def rows(claim_ids: Sequence[str], directory: str | os.PathLike | None = None, store: str = STORE) -> list[dict]:
    """The chapter's table rows. A scale at which none of these claims was run (the paper's own 60M runs in
    Sections 4-7) loses its two columns, so the table fits the page; the scorecard still lists it per claim."""
    out = [row(c, directory, store) for c in claim_ids]
    for s in SCALES:
        if out and all(r[f"ours ({s})"].startswith(NOT_RUN) for r in out):
            for r in out:
                del r[f"ours ({s})"], r[f"verdict ({s})"]
    return out


def counts(entries: Sequence[Mapping], scale: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for e in entries:
        v = e["results"][scale]["verdict"]
        out[v] = out.get(v, 0) + 1
    return out


def markdown_table(entries: Sequence[Mapping], scale: str) -> str:
    """One scale of the listing as a Markdown table: each claim the scale tests (listed, not "not run"), the
    paper's numbers, ours as mean [min, max] over the seeds (where the scale stores seeds), the verdict, and
    what is not stored yet. The closing notes quote it."""
    from .results.numbers import fmt

    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; valid: {', '.join(SCALES)}")
    lines = [f"| claim | section | paper | ours ({scale}): mean [min, max] over seeds | verdict |",
             "|---|---|---|---|---|"]
    tested = [e for e in entries if e["results"][scale].get("status") != NOT_RUN]
    for e in tested:
        r = e["results"][scale]
        seeds = r.get("seed_values") or {}

        def cell(k, v):
            d = 3 if "alpha" in k else 1       # alpha_1 and its excess are fractions; the rest are percentages
            spread = f" [{min(seeds[k]):.{d}f}, {max(seeds[k]):.{d}f}]" if len(seeds.get(k, ())) > 1 else ""
            return f"{k} {fmt(v, d, '')}{spread}"
        ours = "; ".join(cell(k, v) for k, v in r["values"].items()) or r["measurement"]
        left = {"missing": " (not stored yet)", "incomplete": " (some runs not stored yet)"}.get(r.get("status"), "")
        cells = (f"`{e['id']}`: {e['claim']}", e["section"], fmt_values(e["paper"]["values"], 1), ours + left,
                 verdict_text(r))
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")   # "max(|row sum|, 1)"
    n = counts(tested, scale)
    lines += ["", f"{len(tested)} claims tested at {scale}: " + ", ".join(f"{k} {v}" for k, v in sorted(n.items()))]
    return "\n".join(lines)


def text_table(entries: Sequence[Mapping]) -> str:
    """The listing as plain text, one line per claim and scale."""
    lines = []
    for e in entries:
        chk = e["rule_check"]
        lines.append(f"{e['id']}  [{e['section']}, {e['paper']['source']}]  {e['claim']}")
        if e["paper"]["values"]:
            lines.append(f"    paper: {fmt_values(e['paper']['values'])}")
        lines.append(f"    rule: {e['rule'] or _no_rule(e)}"
                     + (f"  (check: paper {chk['paper']}, no effect {chk['no_effect']})" if chk else ""))
        if e["bos"] is not None:
            lines.append(f"    BOS {'on' if e['bos'] else 'off'}: {e['bos_why']}")
        for s, r in e["results"].items():
            vals = fmt_values(r["values"]) if r["values"] else ""
            lines.append(f"    {s:16s} {verdict_text(r):28s} {vals or r['measurement']}"
                         + (f"  [{r['note']}]" if r.get("note") and r.get("status") != NOT_RUN else ""))
    total = {s: counts(entries, s) for s in SCALES}
    lines.append("")
    lines.append(f"{len(entries)} claims. " + "; ".join(
        f"{s}: " + ", ".join(f"{n} {v}" for v, n in sorted(total[s].items())) for s in SCALES))
    return "\n".join(lines)
