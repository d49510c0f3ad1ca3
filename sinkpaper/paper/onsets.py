"""When each quantity forms in a run: its onset, defined once, before the runs that measure it (configs/onsets.yaml).

The onset of a quantity is the first evaluation step at which it reaches its threshold; a run in which it never
does reads one evaluation past its end. A sink's onset is read only past the run's warm-up (its loss at least 10 %
below the unigram level: :func:`left_unigram`), so a warm-up flicker is not one. The thresholds, and
why:
- sink: Sink_1 >= SINK (10 %), the registry's "has a sink";
- induction: some head puts >= 0.3 of its attention on the induction target (the sink metric's epsilon; a uniform
  causal head puts the mean of 1/t over the second copy's queries there, sinkpaper.circuits.uniform_induction_score:
  0.021 at T = 64, not 1/T);
- previous token: some head puts >= 0.3 of its attention on the token just before (the same epsilon);
- in-context gain: the second copy of a repeated random sequence is predicted >= 0.5 nats better than the first
  (a tenth of the ~5 nats per token of a model that has not learned to copy, on random tokens);
- massive activation: token 1's hidden-state norm >= MASSIVE (10) times the others' mean in some layer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ..results.reading import PLATEAU, evaluations, logged, unigram_floor
from .rules import Rule
from .verdicts import AGREES, DISAGREES, MASSIVE, NOT_COMPARABLE, NO_RESULT, SINK, Seeds, Undecided, _get, verdict_of

# An onset needs a loss at least 10 % below the unigram loss of the run's data. Why 10 %: at the end of warm-up the
# text runs sit 0-9 % below the unigram level (Sink_1 >= 10 % there at losses 6.3-6.9 against 6.95, in heads that
# have learned nothing of the context), every sink that lasted formed 22-27 % below it (text: 5.1-5.45; the
# miniature's synthetic task: 3.11-3.18 against 4.14), and 10 % lies well inside that gap on both. (Set on the
# flickers then listed and the onsets then stored; no verdict was read to choose it.)
LEFT_UNIGRAM = 0.10

# quantity -> (what an evaluation records, threshold)
ONSETS: dict[str, tuple[str, float]] = {
    "sink": ("Sink_1", SINK),
    "induction": ("induction_max", 0.3),
    "previous token": ("previous_token_max", 0.3),
    "in-context gain": ("in_context_gain", 0.5),
    "massive activation": ("massive_activation_max", MASSIVE),
}
# quantity -> what forms, in words (a reading that shows no order says which of its two events did form)
FORMS: dict[str, str] = {"sink": "first-token sink", "induction": "induction head",
                         "previous token": "previous-token head", "in-context gain": "in-context gain",
                         "massive activation": "massive activation on token 1"}


def _forms(label: str) -> str:
    """An onset label ("base: onset: induction") as what forms ("induction head"); another label as itself."""
    return FORMS.get(label.rpartition("onset: ")[2], label)


def evaluation_value(c: Mapping, key: str) -> float | None:
    """What one evaluation of a stored curve recorded for an :data:`ONSETS` key (None where it recorded none)."""
    if key == "Sink_1":
        return c["sink_k"]["1"] if "sink_k" in c else None
    if key == "massive_activation_max":
        by_layer = c.get("massive_activation_ratio_by_layer")
        return max(by_layer) if by_layer else None
    return c.get(key)


def left_unigram(payload: Mapping, record: Mapping, floor: float | None = None) -> bool:
    """Whether an evaluation of a run lies past its warm-up: its held-out loss, or the training loss logged at or
    just before it, at least LEFT_UNIGRAM below the unigram loss of the run's data."""
    floor = unigram_floor(payload["config"]) if floor is None else floor
    bar = (1 - LEFT_UNIGRAM) * floor
    if record.get("val_loss") is not None and record["val_loss"] <= bar:
        return True
    logs = [c for c in logged(payload.get("curve", [])) if c.get("loss") is not None and c["step"] <= record["step"]]
    return bool(logs) and logs[-1]["loss"] <= bar


def onset_record(payload: Mapping, quantity: str) -> dict | None:
    """The evaluation of a stored run at which ``quantity`` (a key of :data:`ONSETS`) first reaches its threshold;
    for the sink, only past the run's warm-up (:func:`left_unigram`) where the run records its loss. None where it
    never does."""
    if quantity not in ONSETS:
        raise ValueError(f"unknown onset {quantity!r}; valid: {', '.join(ONSETS)}")
    key, threshold = ONSETS[quantity]
    evals = evaluations(payload)
    past_warmup = (lambda c: True)
    records_loss = any(c.get("val_loss") is not None or c.get("loss") is not None for c in payload.get("curve", []))
    if quantity == "sink" and "data" in payload["config"] and records_loss:
        floor = unigram_floor(payload["config"])
        past_warmup = (lambda c: left_unigram(payload, c, floor))
    return next((c for c in evals if (v := evaluation_value(c, key)) is not None and v >= threshold
                 and past_warmup(c)), None)


def onset_step(payload: Mapping, quantity: str) -> float | None:
    """A stored run's onset of ``quantity`` (a key of :data:`ONSETS`): the step of its :func:`onset_record`; one
    evaluation past the end when it never forms; None when the run does not record it."""
    hit = onset_record(payload, quantity)
    if hit is not None:
        return float(hit["step"])
    key, _ = ONSETS[quantity]
    if not any(evaluation_value(c, key) is not None for c in evaluations(payload)):
        return None
    return never_step(payload)


def never_step(payload: Mapping) -> float:
    """The step :func:`onset_step` gives a quantity that never formed: one evaluation past the run's end."""
    return float(payload["config"]["optim"]["steps"] + payload["config"]["eval"]["every"])


def did_not_last(payload: Mapping, quantity: str) -> dict | None:
    """Where ``quantity`` reached its threshold (its :func:`onset_step`) but is below it again both at the run's
    last evaluation and on its plateau (the mean over the evaluations of the last PLATEAU of its steps): a crossing
    that did not last, as a sink that flickers during a loss spike. {"step" (the onset), "last", "plateau",
    "threshold"}; None where it never formed, lasted, or is not recorded. The onset itself stays as defined: this
    is said beside it, never in its place."""
    step = onset_step(payload, quantity)
    end = payload["config"]["optim"]["steps"]
    if step is None or step > end:
        return None
    key, threshold = ONSETS[quantity]
    values = [(c["step"], evaluation_value(c, key)) for c in payload.get("curve", []) if "sink_k" in c]
    values = [(st, v) for st, v in values if v is not None]
    window = [v for st, v in values if st >= (1 - PLATEAU) * end]
    if not window:
        return None
    last, plateau = values[-1][1], sum(window) / len(window)
    if last >= threshold or plateau >= threshold:
        return None
    return {"step": step, "last": last, "plateau": plateau, "threshold": threshold}


def onset_text(seed_values: Mapping, label: str) -> str | None:
    """An onset label ("base: onset: sink") per seed, "never" where the seed's onset lies past its run's steps
    (:func:`onset_step` reads a quantity that never formed as one evaluation past the end, which is not a step to
    show): "step 1,800 / never / never", or "never" alone. None for another label, or without the runs' steps
    ("base: steps") among ``seed_values`` (a result's per-seed values by label)."""
    point, sep, _ = label.partition(": onset: ")
    vals, ends = seed_values.get(label), seed_values.get(f"{point}: steps")
    if not sep or not vals or not ends or len(vals) != len(ends):
        return None
    text = " / ".join("never" if v > end else f"{v:,.0f}" for v, end in zip(vals, ends))
    return text if all(v > end for v, end in zip(vals, ends)) else f"step {text}"


# ------------------------------------------------------------------------------- the rules that judge onsets
@dataclass
class Onset(Rule):
    """The sink's onset (``label``: the first evaluation step at which Sink_1 reaches SINK) lies in the window the
    paper states, ``lo`` .. ``hi`` steps. A scale that does not measure it (no such label) reads not comparable.
    Null: the sink is there from the start (onset at step 0)."""
    label: str
    lo: float
    hi: float

    def __post_init__(self):
        self.sentence = f"{self.label} between {self.lo:g} and {self.hi:g} steps."
        self.null_sentence = "the sink is there from the start (onset at step 0)"

    def apply(self, values):
        if self.label not in values:
            return NOT_COMPARABLE
        v = _get(values, self.label)
        return NO_RESULT if v is None else verdict_of(self.lo <= v <= self.hi)

    def reason(self, values):
        return "" if self.label in values else "this scale's steps are not the paper's: its onset is not compared"

    def null(self, values):
        return {**values, self.label: 0.0}


@dataclass
class After(Rule):
    """In every seed, ``later`` (an onset step) comes after ``earlier`` (``strict``; otherwise no earlier than it):
    agrees when every paired seed has it so, disagrees when none does, inconclusive when the seeds split. ``end``
    names a label holding each run's last step. An order between two events needs both to occur within the
    budget: where either never formed (its onset past the end) in any seed the claim reads not comparable, with
    what did form said beside it (:meth:`reason`), and inconclusive where one never formed in some seeds (a
    quantity that never forms would otherwise come "after" anything, or "before" nothing). Null: both form at the
    same step (strict), ``later`` at half of ``earlier``'s step (not strict)."""
    later: str
    earlier: str
    end: str | None = None
    strict: bool = True

    def __post_init__(self):
        word = "after" if self.strict else "no earlier than"
        self.sentence = f"{self.later} {word} {self.earlier}, in every seed" + (
            f" (a run in which it never formed, past {self.end}, shows no order)." if self.end else ".")
        self.null_sentence = (f"{self.later} at the same step as {self.earlier}" if self.strict
                              else f"{self.later} at half the step of {self.earlier}")

    def _seeds(self, values):
        a, b = _get(values, self.later), _get(values, self.earlier)
        end = _get(values, self.end) if self.end else None
        if a is None or b is None or (self.end and end is None):
            return None
        col = lambda x: x.values if isinstance(x, Seeds) else (x,)  # noqa: E731
        ends = col(end) if end is not None else (float("inf"),) * len(col(a))
        return list(zip(col(a), col(b), ends)), isinstance(a, Seeds)

    def apply(self, values):
        got = self._seeds(values)
        if got is None:
            return NO_RESULT
        rows, several = got
        for i, label in ((0, self.later), (1, self.earlier)):
            if not any(row[i] <= row[2] for row in rows):
                return NOT_COMPARABLE
        for i, label in ((0, self.later), (1, self.earlier)):
            formed = [row[i] <= row[2] for row in rows]
            if not all(formed):
                raise Undecided(f"{label} formed", f"{label} never formed in {formed.count(False)} of "
                                f"{len(formed)} seeds", settled=True)
        order = [x > y if self.strict else x >= y for x, y, _ in rows]
        if not several:
            return verdict_of(order[0])
        if all(order):
            return AGREES
        if not any(order):
            return DISAGREES
        word = "after" if self.strict else "no earlier than"
        raise Undecided(f"{self.later} > {self.earlier}", f"{self.later} {word} {self.earlier} in "
                        f"{sum(order)} of {len(order)} seeds", settled=True)

    def reason(self, values):
        """Where either event never formed in any seed: what did form, and what did not ("a first-token sink forms
        in every seed; no induction head forms in any seed: no order to read"); "" otherwise."""
        got = self._seeds(values)
        if got is None:
            return ""
        rows, n = got[0], len(got[0])
        formed = {self.later: sum(r[0] <= r[2] for r in rows), self.earlier: sum(r[1] <= r[2] for r in rows)}
        if all(formed.values()):
            return ""
        said = [f"{'an' if _forms(k)[0] in 'aeiou' else 'a'} {_forms(k)} forms in {'every seed' if c == n else f'{c} of {n} seeds'}"
                for k, c in formed.items() if c]
        said += [f"no {_forms(k)} forms in any seed" for k, c in formed.items() if not c]
        return "; ".join(said) + ": no order to read"

    def null(self, values):
        b = values.get(self.earlier)
        return {**values, self.later: b if self.strict or b is None else b / 2}
