"""The verdict vocabulary, the thresholds, and how the seeds decide: `Seeds`, `Decision`, `judge`."""
from __future__ import annotations

import math
from typing import Mapping, Sequence

from ..results.reading import PLATEAU, PLATEAU_EVALS, RISING, TRAINED  # noqa: F401 (the registry's names too)


# --------------------------------------------------------------------------------------------- vocabulary
AGREES, DISAGREES, NOT_COMPARABLE, NO_RESULT = "agrees", "disagrees", "not comparable", "no result"
INCONCLUSIVE = "inconclusive"   # the seeds do not all read the same way: the difference is inside the seed spread
# a disagreement that rests on "no sink" readings of runs that never learned as far as the base had when its sink
# formed (sinkpaper.paper.budget): not a disagreement, not an agreement; counted apart
NOT_YET = "not yet"
VERDICTS = (AGREES, DISAGREES, INCONCLUSIVE, NOT_YET, NOT_COMPARABLE, NO_RESULT)
STALE = "stale, rerun"          # a stored run made under an older definition or settings: shown, never counted
NOT_RUN = "not run"             # the book does not run this experiment at this scale
GPU_SCALE = "GPU (paper's default)"   # the gpu profile: no fixed first token, no BOS, the calibrated 4-layer model
# the text recipe at 4 layers, everything else as at 2 (configs/layers_4.yaml, the data and onsets families'
# 4-layer points): is a sink the 2-layer recipe lacks a depth effect?
LAYERS_4_SCALE = "real text, 4 layers (CPU)"
# the paper's default packing on a CPU (configs/default_cpu.yaml): no fixed first token, no BOS, 4 layers, context 256
DEFAULT_CPU_SCALE = "real text, paper's default (CPU)"
SCALES = ("real LMs", "real text (CPU)", LAYERS_4_SCALE, DEFAULT_CPU_SCALE, GPU_SCALE, "miniature")

# ------------------------------------------------------------------------------------------ the thresholds
SINK = 10.0     # Sink % at or above this: "has a sink" (the paper's smallest softmax sink among the variants it
#                 says keep one is 10.68 %, 4 heads)
NO_SINK = 5.0   # Sink % below this: "has no sink" (the paper's no-sink rows are 0.00-0.80 %; the most a bias
#                 leaves on token 1 while taking the sink is 4.74 %, d_a = 1). In between, the grey band:
#                 inconclusive (neither a sink nor none; "not comparable" is kept for a reading that cannot fail)
FACTOR = 2.0    # "matters little": every variant within a factor 2 of the default (the paper's heads: 10.68-21.76
#                 against 18.18); also "breaks"/"restores" for perplexities (a factor 2 or more)
CHANGE = 0.25   # a change counts when it moves the value by at least 25 % of the control's (softmax rows summing
#                 to 0.2: 9.41 against 18.18)
MASSIVE = 10.0  # a token-1 hidden-state norm at least 10 times the others' mean is "massive"

# ---------------------------------------------------------------------------- what a stored run contributes
# How a stored run is read (its plateau, whether it trained, whether it still rises: PLATEAU, PLATEAU_EVALS,
# TRAINED, RISING) is the results layer's (sinkpaper.results.reading), imported above because every rule is judged
# on those readings.

SEEDS_MIN = 3        # a verdict on stored runs needs at least 3 seeds, paired across the claim's points
EXTRA_SEEDS = (3, 4)  # read too where every point of a claim has them stored (seeds added to settle a claim)


def verdict_of(flag: bool | None) -> str:
    """True -> agrees, False -> disagrees, None -> not comparable (the reading cannot decide)."""
    return NOT_COMPARABLE if flag is None else AGREES if flag else DISAGREES


def all_of(verdicts: Sequence[str]) -> str:
    """The one combinator. disagrees if any part disagrees; else no result if any part is missing (or there
    is no part); else inconclusive if any part is (it could still read disagrees); else not yet if any part is;
    else not comparable if any part is; else agrees."""
    for v in verdicts:
        if v not in VERDICTS:
            raise ValueError(f"unknown verdict {v!r}; valid: {', '.join(VERDICTS)}")
    if DISAGREES in verdicts:
        return DISAGREES
    if not verdicts or NO_RESULT in verdicts:
        return NO_RESULT
    if INCONCLUSIVE in verdicts:
        return INCONCLUSIVE
    if NOT_YET in verdicts:
        return NOT_YET
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
# what the current judgement read in the grey band (every seed of a label between NO_SINK and SINK), said as its
# reason: an inconclusive verdict that no comparison split has no other
_GREY: list[list[str]] = [[]]


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
    the reason (and the per-seed verdicts when the seeds themselves split).

    A rule read per run (``rule.per_run``: it holds each run's values against thresholds and compares values of
    one run only) pairs no seeds across runs: its labels may have different seeds (each run its own trained ones),
    and there is no per-seed verdict, which would join seed i of one model with seed i of another."""
    per_run = getattr(rule, "per_run", False)
    lens = {len(v) for v in seeds.values()}
    if len(lens) != 1 and not per_run:
        raise ValueError(f"every label needs one value per seed; got { {k: len(v) for k, v in seeds.items()} }")
    if per_run:
        if not seeds or any(not v or any(x is None for x in v) for v in seeds.values()):
            return NO_RESULT, ""
        per_seed = []
    else:
        n = lens.pop()
        per_seed = [rule.apply({k: v[i] for k, v in seeds.items()}) for i in range(n)]
        if not per_seed or NO_RESULT in per_seed:
            return NO_RESULT, ""
    values = {k: Seeds(k, v) for k, v in seeds.items()}
    verdicts, reasons, stack = set(), [], [{}]
    _GREY.append([])
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
    for g in dict.fromkeys(_GREY.pop()):
        if g not in reasons:
            reasons.append(g)
    if len(verdicts) == 1 and len(set(per_seed)) <= 1 and INCONCLUSIVE not in verdicts:
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


def _grey(value) -> str:
    """A value in the grey band between NO_SINK and SINK: neither a sink nor none, so inconclusive (more seeds or
    steps may decide it), never "not comparable", which says a reading cannot fail. Where every seed of a label
    lies in the band, :func:`judge` gives that as the reason."""
    if isinstance(value, Seeds) and all(NO_SINK <= x < SINK for x in value.values):
        _GREY[-1].append(f"{value.name} in the grey band ({NO_SINK:g}-{SINK:g} %) in every seed {_range(value.values)}")
    return INCONCLUSIVE


def sink_verdict(value: float | None) -> str:
    """A sink: agrees at >= SINK, disagrees below NO_SINK, inconclusive between, no result when missing."""
    if value is None:
        return NO_RESULT
    return AGREES if value >= SINK else DISAGREES if value < NO_SINK else _grey(value)


def no_sink_verdict(value: float | None) -> str:
    """No sink: agrees below NO_SINK, disagrees at >= SINK, inconclusive between, no result when missing."""
    if value is None:
        return NO_RESULT
    return AGREES if value < NO_SINK else DISAGREES if value >= SINK else _grey(value)
