"""The agreement rules: each reads a claim's values (one per seed where runs are stored) and gives a verdict."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from .numbers import NUMBERS
from .verdicts import AGREES, CHANGE, DISAGREES, Decision, FACTOR, NOT_COMPARABLE, NO_RESULT, NO_SINK, SEEDS_MIN, SINK, Seeds, Undecided, _get, all_of, no_sink_verdict, sink_verdict, verdict_of


def _fmt(v) -> str:
    """A value as a reason quotes it: one number, or each seed's."""
    if isinstance(v, Seeds):
        return " / ".join(f"{x:.3g}" for x in v.values)
    return "?" if v is None else f"{v:.3g}"

# ----------------------------------------------------------------------------------------------- the rules
class Rule:
    """An agreement rule: ``sentence`` (one sentence), ``apply(values) -> verdict`` and ``null(values)``, the
    values of a result in which the claimed effect is absent (``null_sentence`` says which)."""

    sentence: str = ""
    null_sentence: str = ""
    # A rule read per run holds each run's values against thresholds and compares values of one run only (Sink_2
    # with Sink_1 of the same fixed_pos2 run): each run is read on its own trained seeds, and no seed of one run is
    # paired with a seed of another by its number (sinkpaper.paper.verdicts.judge). A rule that compares points
    # (a change, a ratio, an order) pairs them seed by seed, and leaves this False.
    per_run = False

    def apply(self, values: Mapping[str, float | None]) -> str:
        raise NotImplementedError

    def null(self, values: Mapping[str, float | None]) -> dict[str, float | None]:
        raise NotImplementedError

    def pairs(self) -> list[tuple[str, str]]:
        """The (point, control) labels the rule compares: the registry reads each pair at one budget, and a pair
        stored at unequal numbers of steps is not compared. A rule whose points differ in steps by design (the
        paper's LR x steps table) leaves this empty."""
        return []

    def reason(self, values: Mapping[str, float | None]) -> str:
        """One line on what decided the verdict where the verdict alone does not say it (a reading that cannot
        fail, a size every seed excludes); "" otherwise."""
        return ""

    def premises(self) -> list[str]:
        """Labels read only to know whether a reading can fail (Bound's ``sinks``): a card does not lead with them."""
        return list(getattr(self, "sinks", {}).values())


@dataclass
class Sinks(Rule):
    """Every label has a sink (>= SINK). ``decided_by``: {label: a reading shown beside that decides in its place
    once it has SEEDS_MIN seeds that trained} (the registry gives a reading shown beside per-seed values only
    then). Null: the sink is absent (0 %) everywhere."""
    per_run = True    # thresholds only, each on one run
    labels: Sequence[str]
    what: str = "Sink_1"
    decided_by: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        self.sentence = f"{self.what} >= {SINK:g} % for every one of {', '.join(self.labels)}." + "".join(
            f" {x} is read as {y} once that has {SEEDS_MIN} seeds that trained." for x, y in self.decided_by.items())
        self.null_sentence = "the sink is absent: 0 % everywhere"

    def _read(self, values, x):
        """The label that decides for ``x``: its ``decided_by`` reading where that is measured, else ``x``."""
        y = self.decided_by.get(x)
        return y if y is not None and _get(values, y) is not None else x

    def apply(self, values):
        return all_of([sink_verdict(_get(values, self._read(values, x))) for x in self.labels])

    def reason(self, values):
        return "; ".join(f"decided by {y}" if self._read(values, x) == y else
                         f"{x} decides until {y} has {SEEDS_MIN} seeds that trained"
                         for x, y in self.decided_by.items())

    def null(self, values):
        return {**values, **{x: 0.0 for x in [*self.labels, *self.decided_by.values()]}}


@dataclass
class Contrast(Rule):
    """Labels in ``sink`` have a sink (>= SINK), labels in ``no_sink`` have none (< NO_SINK). Null: ``null_map``
    gives each changed label the value of the label it would equal if the intervention did nothing (a label
    mapped to a float takes that value)."""
    per_run = True    # thresholds only, each on one run
    sink: Sequence[str] = ()
    no_sink: Sequence[str] = ()
    null_map: Mapping[str, str | float] = field(default_factory=dict)
    null_text: str = ""
    # a reading about a sink that moves (label -> the label of the same setting without the intervention): it can
    # fail only where that control has a sink to lose or to take back; where the control has none (< SINK) the
    # reading cannot fail and is not comparable
    controls: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        parts = []
        if self.sink:
            parts.append(f"{', '.join(self.sink)} >= {SINK:g} %")
        if self.no_sink:
            parts.append(f"{', '.join(self.no_sink)} < {NO_SINK:g} %")
        self.sentence = " and ".join(parts) + "."
        if self.controls:
            self.sentence += (" A reading is decided only where its control (" + ", ".join(
                f"{c} for {x}" for x, c in self.controls.items()) + f") has a sink (>= {SINK:g} %); where it has "
                "none, the reading cannot fail and is not comparable.")
        self.null_sentence = self.null_text

    def _vacuous(self, values, label) -> bool | None:
        """True when ``label``'s control has no sink (the reading cannot fail); None when it is not measured."""
        c = self.controls.get(label)
        if c is None:
            return False
        v = _get(values, c)
        return None if v is None else not (v >= SINK)

    def apply(self, values):
        out = []
        for labels, verdict in ((self.sink, sink_verdict), (self.no_sink, no_sink_verdict)):
            for x in labels:
                vac = self._vacuous(values, x)
                out.append(NO_RESULT if vac is None else NOT_COMPARABLE if vac else verdict(_get(values, x)))
        return all_of(out)

    def reason(self, values):
        vac = [x for x in (*self.sink, *self.no_sink) if self._vacuous(values, x)]
        if not vac:
            return ""
        return "; ".join(f"{x} cannot fail here: its control {self.controls[x]} has no sink "
                         f"({_fmt(_get(values, self.controls[x]))} %)" for x in vac)

    def pairs(self):
        return list(self.controls.items())

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

    def pairs(self):
        return [(x, self.base) for x in self.labels]


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

    def _size(self, t, c):
        """Does every pairing of a treated seed with a control seed fall short of the claimed size? (The claimed
        change excluded by every seed: a finding even where the two points' ranges overlap.)"""
        if not (isinstance(t, Seeds) and isinstance(c, Seeds)):
            return False
        short = Decision(t, c, (lambda a, b: a < b * (1 + CHANGE)) if self.up else (lambda a, b: a > b * (1 - CHANGE)),
                         "short of")
        return short.cross == {True}

    def apply(self, values):
        t, c = _get(values, self.treated), _get(values, self.control)
        if t is None or c is None:
            return NO_RESULT
        sink_metric = self.what.startswith("Sink")
        if not self.up and sink_metric and c < SINK:
            return NOT_COMPARABLE          # the control has no sink to weaken
        if self.up and sink_metric and c < NO_SINK:
            # against a control with no sink, "more sink" means a sink: any positive value is not "more"
            grown = sink_verdict(t)
            return all_of([grown] + ([no_sink_verdict(t)] if self.treated_no_sink else []))
        if self._size(t, c):
            out = [DISAGREES]               # every seed excludes the claimed size, overlapping or not
        else:
            if isinstance(t, Seeds) and isinstance(c, Seeds):
                # a difference between two points is read only when their seeds separate them: the magnitude
                # test below could otherwise call two overlapping points "not different enough" (disagrees)
                moved = Decision(t, c, (lambda a, b: a > b) if self.up else (lambda a, b: a < b),
                                 ">" if self.up else "<")
                if len(moved.cross) > 1:
                    raise Undecided(moved.key, moved.why(), settled=True)
            ok = t >= c * (1 + CHANGE) if self.up else t <= c * (1 - CHANGE)
            if t == c:
                ok = False
            out = [verdict_of(ok)]
        if self.treated_no_sink:
            out.append(no_sink_verdict(t))
        return all_of(out)

    def reason(self, values):
        t, c = _get(values, self.treated), _get(values, self.control)
        if t is None or c is None:
            return ""
        if self.up and self.what.startswith("Sink") and c < NO_SINK:
            return f"{self.control} has no sink, so 'more' asks {self.treated} for a sink (>= {SINK:g} %)"
        if self._size(t, c):
            return (f"every seed of {self.treated} is short of {100 * CHANGE:.0f} % "
                    f"{'above' if self.up else 'below'} every seed of {self.control}")
        return ""

    def null(self, values):
        return {**values, self.treated: values.get(self.control)}

    def pairs(self):
        return [(self.treated, self.control)]


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
    shown, not judged. ``sinks``: {label: its run's Sink label}, for a property of the sink token on stored runs: a
    label is judged only where its run has a sink (>= SINK), else not comparable: no sink token (a chapter records
    only settings with a sink). Null: every judged value equals ``null_value``."""
    per_run = True    # thresholds only, each on one run
    metric: str
    bound: float
    above: bool
    null_value: float
    strict: bool = True
    null_text: str = ""
    skip: Sequence[str] = ()
    what: str = ""
    sinks: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        op = (">" if self.strict else ">=") if self.above else ("<" if self.strict else "<=")
        self.sentence = (f"{self.what or self.metric.lstrip(': ')} {op} {self.bound:g} for every judged setting"
                         + (f" ({', '.join(self.skip)} shown, not judged)" if self.skip else "") + ".")
        self.sentence += "".join(f" A stored run's reading is judged only where the run has a sink ({x} where {s} >= "
                                 f"{SINK:g} %); where it has none there is no sink token, and the reading is not "
                                 "comparable." for x, s in self.sinks.items())
        self.null_sentence = self.null_text or f"{self.metric} = {self.null_value:g}"

    def _labels(self, values):
        return [k for k in values if k.endswith(self.metric) and "not judged" not in k
                and k not in self.skip]

    def _no_sink(self, values, label) -> bool | None:
        """True where ``label``'s run has no sink (the reading cannot fail); None where that is not measured."""
        s = self.sinks.get(label)
        v = None if s is None else _get(values, s)
        return False if s is None else None if v is None else not (v >= SINK)

    def apply(self, values):
        out = []
        for k in self._labels(values):
            v, bare = _get(values, k), self._no_sink(values, k)
            if v is None or bare is None:
                out.append(NO_RESULT)
            elif bare:
                out.append(NOT_COMPARABLE)
            elif self.above:
                out.append(verdict_of(v > self.bound if self.strict else v >= self.bound))
            else:
                out.append(verdict_of(v < self.bound if self.strict else v <= self.bound))
        return all_of(out)

    def reason(self, values):
        return "; ".join(f"{x} cannot fail here: its run has no sink ({s} {_fmt(_get(values, s))} %), so no sink token"
                         for x, s in self.sinks.items() if x in self._labels(values) and self._no_sink(values, x))

    def null(self, values):
        return {**values, **{k: self.null_value for k in self._labels(values)}}


@dataclass
class Both(Rule):
    """Two rules on the same values; both must agree (combined with all_of). Null: both nulls applied."""
    first: Rule
    second: Rule

    @property
    def per_run(self):
        return self.first.per_run and self.second.per_run

    def __post_init__(self):
        self.sentence = f"{self.first.sentence[:-1]}; and {self.second.sentence}"
        self.null_sentence = f"{self.first.null_sentence}; {self.second.null_sentence}"

    def apply(self, values):
        return all_of([self.first.apply(values), self.second.apply(values)])

    def null(self, values):
        return self.second.null(self.first.null(values))

    def pairs(self):
        return [*self.first.pairs(), *self.second.pairs()]

    def reason(self, values):
        return "; ".join(r for r in (self.first.reason(values), self.second.reason(values)) if r)


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
    per_run = True    # a threshold, and comparisons between the Sink_j of one run
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
    per_run = True    # thresholds only, each on one run
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

    def pairs(self):
        return [(self.treated, self.control)]


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
