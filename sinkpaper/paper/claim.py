"""What a claim is: its words and source, the paper's numbers it uses, its rule, and the runs that measure it at
each scale (stored runs of a config's points, a chapter's record, or not run, and why)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from ..results import default_cpu
from .budget import PLAN
from .numbers import DEFAULT_ALIASES, _source, paper_value
from .rules import Rule
from .verdicts import DEFAULT_CPU_SCALE, GPU_SCALE, LAYERS_4_SCALE

@dataclass(frozen=True)
class Runs:
    """Results-store runs: ``points`` maps a value label to (point, metric[, config[, steps]]) of ``config`` (steps:
    the run read at that budget, its prefix: sinkpaper.paper.budget.at_budget; metric: "Sink_1",
    "Sink_2", ..., "Sink*", "alpha_1", "first Sink_1", "excess alpha_1"); mean over ``seeds``. A label marked as
    the other setting (:data:`BESIDE_MARKS`) is shown beside the verdict: no rule reads it, and a run of it not
    stored yet holds no verdict back. ``readings``: second readings, {what differs ("4 layers, 5000 steps"): Runs
    with the rule's own labels}, each judged by the claim's rule on its own runs and reported beside the verdict,
    never changing it."""
    config: str
    points: Mapping[str, tuple[str, str]]
    seeds: tuple[int, ...] = (0, 1, 2)
    readings: Mapping[str, "Runs"] = field(default_factory=dict)
    # the claim's rule over the labels run at this scale, where they are fewer than the claim's (the same rule
    # class and thresholds: Sinks over four positional encodings instead of six); None: the claim's own rule
    rule: Rule | None = None
    # the base whose sink's onset loss guards this claim's "no sink" readings (sinkpaper.paper.budget): (config,
    # point); None: the scale's base (the text recipe at its depth). A claim read at another LR names its control.
    base: tuple[str, str] | None = None
    # read at the budget plan's runs (configs/budget.yaml), whose seeds 1-2 run only where seed 0 forms a sink or
    # gets past the base's onset loss: a point the plan stopped at seed 0 is read as not yet (paper.budget)
    budget_plan: bool = False

    @property
    def beside(self) -> set[str]:
        return {label for label in self.points if any(mark in label for mark in BESIDE_MARKS)}


# the marks of a label shown beside a verdict (the other BOS setting, another budget or depth, a confound's check),
# never read by a rule
BESIDE_MARKS = (" (with BOS)", " (no BOS)", " (one BOS per window)", ", beside)")


@dataclass(frozen=True)
class Chapter:
    """Measured by a chapter (on pretrained LMs, now) and read from its record (see :func:`record`)."""
    chapter: str


@dataclass(frozen=True)
class NotRun:
    reason: str


def runs_of(config: str, mapping: Mapping[str, str | tuple[str, str]] | Sequence[str], seeds=(0, 1, 2)) -> Runs:
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
    chart_with: str = ""                        # the claim whose chart this one's points join (one family, one chart)

    # ``figure``: for a claim the paper shows only in a figure or text, the shape it describes, written as
    # values ONLY to check that the rule reads that shape as "agrees". Not numbers the paper reports; never
    # shown as the paper's values.

    def paper_values(self) -> dict[str, float]:
        return {x: paper_value(x) for x in self.labels}

    def paper_source(self) -> str:
        own = [x for x in self.labels if x not in DEFAULT_ALIASES and x != "default"] or list(self.labels)
        srcs = list(dict.fromkeys(_source(x) for x in own))
        return ", ".join(srcs) if srcs else self.source




def at_scales(real_lms=PAPER_SCALE, text=None, mini=None, gpu: Runs | bool | None = None,
              layers_4: Runs | None = None, default_cpu: Runs | None = None) -> dict:
    """A claim's measurement at each scale. ``gpu=True``: the same points as at real text, read at the gpu profile
    (where the families' base is the paper's default packing, so a no-fixed-token control is the base itself).
    ``layers_4``: the claim's points at 4 layers (:func:`at_4_layers`); ``default_cpu``: its points in the paper's
    default packing on a CPU (configs/default_cpu.yaml)."""
    if gpu is True:
        gpu = text
    return {"real LMs": real_lms,
            "real text (CPU)": text if text is not None else NotRun("no real-text point of this experiment"),
            LAYERS_4_SCALE: layers_4 if layers_4 is not None else NotRun(
                "not among the points run at 4 layers (configs/layers_4.yaml)"),
            DEFAULT_CPU_SCALE: default_cpu if default_cpu is not None else NotRun(
                "no point of the paper's default on a CPU (configs/default_cpu.yaml) reads it"),
            GPU_SCALE: gpu if gpu is not None else NotRun("no gpu-profile point of this experiment"),
            "miniature": mini if mini is not None else NotRun("no miniature point of this experiment")}


def family(stem: str, points: Sequence[str] | Mapping[str, Any], seeds=(0, 1, 2),
           readings: Mapping[str, Runs] | None = None) -> Runs:
    m = points if isinstance(points, Mapping) else {p: p for p in points}
    runs = runs_of(f"configs/{stem}.yaml", m, seeds)
    return Runs(runs.config, runs.points, runs.seeds, dict(readings or {}))


# label builders the claims share: a point's labels read from its runs with and without a fixed first token
def no_bos_labels(point: str, metrics: Sequence[str]) -> dict:
    """A bias point's labels read from its run without a fixed first token (the paper's default packing)."""
    return {f"{point}: {m}": (f"{point}_no_bos", m) for m in metrics}


def with_bos_labels(point: str, metrics: Sequence[str]) -> dict:
    """The same point with the text profile's fixed BOS at position 1: a second reading, shown, not judged."""
    return {f"{point} (with BOS): {m}": (point, m) for m in metrics}


def after_labels(point: str, metrics: Sequence[str]) -> dict:
    """An after-the-paper design's labels: judged on its run with the text profile's fixed first token (where the
    2-layer base has a sink to remove or take), and the same design without it shown beside, not judged."""
    one = {f"{point}: {m}" if len(metrics) > 1 or m != "Sink_1" else point: (point, m) for m in metrics}
    return {**one, **{f"{point} (no BOS): {m}": (f"{point}_no_bos", m) for m in metrics}}


LAYERS_4 = "configs/layers_4.yaml"
BASE_LAYERS_4 = "base_layers_4"   # the 4-layer text base: data/fixed_pos1_layers_4's config (one run)


def at_4_layers(points: Mapping[str, str | tuple], rule: Rule | None = None, config: str = LAYERS_4,
                readings: Mapping[str, Runs] | None = None) -> Runs:
    """A claim's points at 4 layers, under the 2-layer labels (so the paper's numbers stay beside them): {label:
    point of ``config``, or (point, metric[, config])}; ``rule``: the claim's rule over these labels, where the
    4-layer points are fewer than the claim's (pre-registered in configs/layers_4.yaml)."""
    runs = runs_of(config, points)
    return Runs(runs.config, runs.points, runs.seeds, dict(readings or {}), rule)


BUDGET = PLAN
BASE_BUDGET = "base_layers_4_steps_x4"   # the 4-layer text base at the budget plan's 10,000 steps


def at_budget_4_layers(points: Mapping[str, str], rule: Rule | None = None) -> Runs:
    """A claim's points at 4 layers read on the budget plan's runs (configs/budget.yaml: 10,000 steps, 40.96M
    tokens, four times the recipe's; what each outcome means was fixed there before the runs), against the 4-layer
    base at the same budget, whose onset loss guards them; the seeds are the plan's (:attr:`Runs.budget_plan`)."""
    return replace(at_4_layers(points, rule, BUDGET), budget_plan=True, base=(BUDGET, BASE_BUDGET))


# measurements several claims share: a bias claim at real text and at the gpu profile, the onsets
def bias_text(point: str) -> Runs:
    """A bias claim at real text, each half read where it can fail: the bias's own Sink* without a fixed first
    token (as the paper ran it), and token 1's Sink_1 with the text profile's BOS at position 1, the only setting of
    the 2-layer recipe whose control (biases/none, "default") has a token-1 sink to lose. The other two readings are
    shown beside: token 1 without the BOS cannot fail there (its control reads 0 %)."""
    return family("biases", {f"{point}: Sink*": (f"{point}_no_bos", "Sink*"), f"{point}: Sink_1": (point, "Sink_1"),
                           "default": ("none", "Sink_1"),
                           f"{point} (no BOS): Sink_1": (f"{point}_no_bos", "Sink_1"),
                           f"{point} (with BOS): Sink*": (point, "Sink*")})


def bias_gpu(point: str) -> Runs:
    """A bias claim at the gpu profile: no fixed first token, and its control (the base) has a token-1 sink."""
    return family("biases", {**no_bos_labels(point, ("Sink*", "Sink_1")), "default": ("none", "Sink_1")})


DEFAULT_CPU = default_cpu.CONFIG
DEFAULT_CPU_BASE = default_cpu.POINTS[0]   # the plan's first configuration (its second only if this one fails)


def as_planned(m, scale: str, store: str) -> tuple[Any, str | None]:
    """A measurement at a scale, as its plan reads it: at the paper's default on a CPU, the configuration whose
    seed 0 cleared the plan's bar in place of the first (configs/default_cpu.yaml), or, until one has, the plan's
    own decision, to say in place of a list of runs to train (its seeds 1-2 are not the plan's next runs then);
    elsewhere ``m`` as it is, and None."""
    if scale != DEFAULT_CPU_SCALE or not isinstance(m, Runs):
        return m, None
    nxt = default_cpu.next_runs(store)
    if nxt.cleared is None:
        return m, (f"read once a configuration's seed 0 clears the {default_cpu.BAR:g} % bar ({DEFAULT_CPU}): "
                   f"{nxt.why} (run: bash scripts/default_cpu_worker.sh)")
    return replace(m, points={k: (nxt.cleared if v[0] == DEFAULT_CPU_BASE else v[0], *v[1:])
                              for k, v in m.points.items()}), None


def onsets_measure(*quantities: str) -> dict:
    """The text base's onsets of ``quantities`` and its number of steps (past which an onset never came), on the
    onsets family's runs at real text (2 and 4 layers) and at the miniature, and on the paper's default on a CPU."""
    def of(point: str) -> dict:
        return {**{f"base: onset: {q}": (point, f"onset: {q}") for q in quantities}, "base: steps": (point, "steps")}
    return at_scales(text=family("onsets", of("onsets_base")), mini=family("onsets", of("onsets_base")),
                     layers_4=family("onsets", of("onsets_layers_4")),
                     default_cpu=runs_of(DEFAULT_CPU, of(DEFAULT_CPU_BASE)))
