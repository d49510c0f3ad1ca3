"""When each quantity forms, run by run: the onsets of :mod:`sinkpaper.paper.onsets` on one time axis (a row per
seed, a mark per quantity, a hollow mark at the run's end for one that never formed), each quantity's curve
against its threshold, and the sentence that states what the marks show."""
from __future__ import annotations

import statistics
from typing import Mapping, Sequence

import altair as alt

from ...paper.claims import claim
from ...paper.onsets import ONSETS, Onset, did_not_last, evaluation_value, onset_step
from ...results.numbers import seeds_text
from ...results.reading import failure_word, point_of, training_failure
from .core import _num, no_data_chart

# the order a reader meets them in the literature: previous-token heads, then induction heads (Olsson et al. 2022)
# with the in-context gain they bring, then the massive activation and the sink on token 1
QUANTITIES = ("previous token", "induction", "in-context gain", "massive activation", "sink")
SHAPES = {"previous token": "triangle-up", "induction": "diamond", "in-context gain": "square",
          "massive activation": "cross", "sink": "circle"}
COLORS = {"previous token": "#8c6bb1", "induction": "#1f77b4", "in-context gain": "#2ca02c",
          "massive activation": "#ff7f0e", "sink": "#d62728"}


def paper_sink_window() -> dict:
    """The steps between which the paper's default run grows its sink (Section 4), as the registry's rule for that
    claim states them (opt_emergence's Onset): {"lo", "hi", "who": "paper", "what"}."""
    rule = claim("opt_emergence").rule
    onset = next(r for r in (rule, getattr(rule, "first", None), getattr(rule, "second", None))
                 if isinstance(r, Onset))
    return {"lo": onset.lo, "hi": onset.hi, "who": "paper",
            "what": f"the paper's default run: the sink between {onset.lo:,.0f} and {onset.hi:,.0f} steps (Section 4)"}


def onset_rows(payloads: Sequence[Mapping], points: Sequence[str], labels: Mapping[str, str] | None = None,
               quantities: Sequence[str] = QUANTITIES) -> list[dict]:
    """One row per run and quantity it records: {"run" (its label and seed), "point", "seed", "quantity", "step"
    (the onset; one evaluation past the end when it never formed), "never", "lasted" (False where it formed and
    fell below its threshold again: :func:`~sinkpaper.paper.onsets.did_not_last`), "end" (the run's last step)},
    in the order of ``points`` then seed. A quantity a run does not record gives no row."""
    labels = labels or {}
    order = {pt: i for i, pt in enumerate(points)}
    out = []
    for p in sorted((p for p in payloads if point_of(p) in order),
                    key=lambda p: (order[point_of(p)], p["config"]["run"]["seed"])):
        pt, seed, end = point_of(p), p["config"]["run"]["seed"], p["config"]["optim"]["steps"]
        why = failure_word(training_failure(p))   # drawn, named, and counted by no verdict
        for q in quantities:
            step = onset_step(p, q)
            if step is not None:
                out.append({"run": f"{labels.get(pt, pt)} · seed {seed}" + (f" ({why})" if why else ""),
                            "point": pt, "seed": seed,
                            "quantity": q, "step": step, "never": step > end, "end": end,
                            "lasted": did_not_last(p, q) is None, "learned": why is None, "failure": why})
    return out


def onset_chart(rows: Sequence[Mapping], title: str, width: int | str = "container",
                paper: Mapping | None = None) -> alt.LayerChart | alt.Chart:
    """Every run's onsets on one log-step axis: a row per run (seed), a filled mark per quantity where it formed,
    a hollow one at the run's end where it never did, and a grey tick at each run's last step. ``paper``
    (:func:`paper_sink_window`): the steps at which the paper's default run grows its sink, a shaded band."""
    if not rows:
        return no_data_chart(title, "no stored run records these onsets yet", 320 if width == "container" else width,
                             120)
    runs = list(dict.fromkeys(r["run"] for r in rows))
    qs = [q for q in QUANTITIES if any(r["quantity"] == q for r in rows)]
    values = [{**r, "shown": "never (by its last step)" if r["never"] else f"step {r['step']:,.0f}" + (
        "" if r.get("lasted", True) else ", did not last (below its threshold again at the end)")} for r in rows]
    steps = [r["step"] for r in rows] + ([paper["lo"], paper["hi"]] if paper else [])
    xs = alt.Scale(type="log", domain=[_num(max(1.0, min(steps) / 1.5)), _num(max(steps) * 1.15)])
    x = alt.X("step:Q", scale=xs, title="training step (log)")
    y = alt.Y("run:N", sort=runs, title=None, axis=alt.Axis(labelLimit=180))
    legend = alt.Legend(orient="bottom", columns=3, title=None)
    enc = dict(x=x, y=y, shape=alt.Shape("quantity:N", sort=qs, legend=legend,
                                         scale=alt.Scale(domain=qs, range=[SHAPES[q] for q in qs])),
               color=alt.Color("quantity:N", sort=qs, scale=alt.Scale(domain=qs, range=[COLORS[q] for q in qs]),
                               legend=legend),
               tooltip=["run:N", "quantity:N", alt.Tooltip("shown:N", title="onset")])
    base = alt.Chart(alt.Data(values=values))
    ends = [{"run": r, "end": next(x["end"] for x in rows if x["run"] == r)} for r in runs]
    layers = []
    if paper:
        band = alt.Chart(alt.Data(values=[dict(paper)]))
        layers += [band.mark_rect(color=COLORS["sink"], opacity=0.08).encode(
                       x=alt.X("lo:Q", scale=xs), x2="hi:Q",
                       tooltip=[alt.Tooltip("who:N", title="source"), alt.Tooltip("what:N", title="")]),
                   band.mark_text(align="left", baseline="top", dx=3, dy=2, fontSize=10, color="#555").encode(
                       x=alt.X("lo:Q", scale=xs), y=alt.value(0), text=alt.value("paper: sink"))]
    layers += [
        alt.Chart(alt.Data(values=ends)).mark_tick(color="#999", thickness=1.5, size=14).encode(
            x=alt.X("end:Q", scale=xs), y=y, tooltip=[alt.Tooltip("end:Q", title="last step", format=",")]),
        # an onset that did not last is drawn faint: it formed, and was gone again by the run's end
        base.transform_filter("!datum.never").mark_point(filled=True, size=70).encode(
            **enc, opacity=alt.condition("datum.lasted === false", alt.value(0.3), alt.value(0.85))),
        base.transform_filter("datum.never").mark_point(filled=False, size=70, strokeWidth=1.5).encode(**enc)]
    return alt.layer(*layers, title=title).properties(width=width, height=max(60, 22 * len(runs)))


def threshold_rows(payloads: Sequence[Mapping], point: str, quantities: Sequence[str] = QUANTITIES) -> list[dict]:
    """Per evaluation of ``point``'s runs and quantity: its value over its onset threshold ("ratio"; 1 is the
    onset), with "step", "seed" and "quantity" (for :func:`.bands.band_chart` with group="quantity", x="step")."""
    out = []
    for p in payloads:
        if point_of(p) != point:
            continue
        for c in p.get("curve", []):
            if "sink_k" not in c or c.get("step", 0) <= 0:
                continue
            for q in quantities:
                key, threshold = ONSETS[q]
                v = evaluation_value(c, key)
                if v is not None:
                    out.append({"step": c["step"], "seed": p["config"]["run"]["seed"], "quantity": q,
                                "ratio": v / threshold})
    return out


def onset_caption(rows: Sequence[Mapping], labels: Mapping[str, str] | None = None) -> str:
    """What :func:`onset_chart` shows, as sentences computed from its rows, one per point drawn: the order in which
    the quantities formed (median onset over the seeds in which each formed), those that never formed, those that
    formed and did not last, and the seeds in which the sink came after the induction heads."""
    labels = labels or {}
    if not rows:
        return "No stored run records these onsets yet; the figure fills in as the onsets family's runs land."
    said = []
    points = list(dict.fromkeys(r["point"] for r in rows))
    # a quantity no run of any point formed is said once, before the points
    everywhere = [q for q in QUANTITIES if len(points) > 1 and all(
        any(r["quantity"] == q for r in rows if r["point"] == pt) and all(
            r["never"] for r in rows if r["point"] == pt and r["quantity"] == q and r.get("learned", True))
        for pt in points)]
    for point in points:
        failed = sorted({r["seed"] for r in rows if r["point"] == point and not r.get("learned", True)})
        mine = [r for r in rows if r["point"] == point and r.get("learned", True)]
        seeds = sorted({r["seed"] for r in mine})
        by_q = {q: [r for r in mine if r["quantity"] == q] for q in QUANTITIES}
        formed = {q: statistics.median(r["step"] for r in rs if not r["never"])
                  for q, rs in by_q.items() if rs and any(not r["never"] for r in rs)}
        never = [q for q, rs in by_q.items() if rs and all(r["never"] for r in rs) and q not in everywhere]
        order = ", then ".join(f"{q} at {formed[q]:,.0f}" for q in sorted(formed, key=formed.get))
        label = labels.get(point, point)
        text = f"{label[0].upper() + label[1:]}, {len(seeds)} seed{'s' if len(seeds) != 1 else ''}" + (
            f" (seed{'s' if len(failed) > 1 else ''} {', '.join(map(str, failed))} "
            f"{' or '.join(sorted({r['failure'] for r in rows if r['point'] == point and r.get('failure')}))}, left out)"
            if failed else "") + ": " + (f"{order}." if order else "none of the quantities formed.")
        if never:
            text += f" Never formed: {', '.join(never)}."
        gone: dict[str, list[Mapping]] = {}
        for r in mine:
            if not r["never"] and not r.get("lasted", True):
                gone.setdefault(r["quantity"], []).append(r)
        if gone:
            text += " Faded: " + "; ".join(f"{q} ({seeds_text([r['seed'] for r in rs])})"
                                           for q, rs in gone.items()) + "."
        # the order of sink and induction is said only where both formed: a never-formed induction head is named
        # once among those that never formed, not counted again as "the sink came first"
        pairs = [(s, {r["quantity"]: r for r in mine if r["seed"] == s}) for s in seeds]
        pairs = [(s, d) for s, d in pairs if "sink" in d and "induction" in d and not d["sink"]["never"]
                 and not d["induction"]["never"]]
        if pairs:
            later = [s for s, d in pairs if d["sink"]["step"] > d["induction"]["step"]]
            text += f" The sink came after the induction heads in {len(later)} of the {len(pairs)} seeds with both."
        said.append(text)
    return ("Onsets in the order they came, at the median step over the seeds in which each formed; faded: below "
            "its threshold at the end. " + (f"Formed in no run: {', '.join(everywhere)}. " if everywhere else "")
            + " ".join(said))


# when the literature's 1B-class runs form their induction heads, in tokens (arXiv 2606.02378, finding F3): the scale
# against which a run here that never forms one is read
LITERATURE_INDUCTION_TOKENS = {"OLMo 1B": 23e9, "OLMoE 1B-7B": 20e9}


def budget_caption(payloads: Sequence[Mapping], points: Sequence[str],
                   labels: Mapping[str, str] | None = None) -> str:
    """How far the stored runs of ``points`` train, in tokens and steps (each point's range over its seeds), beside
    the tokens at which the literature's 1B-class runs form their induction heads: the scale at which a quantity
    that never formed here is read."""
    labels = labels or {}
    seen = {}
    for p in payloads:
        pt = point_of(p)
        if pt in points:
            seen.setdefault(pt, []).append((p["result"]["tokens_seen"], p["result"]["step"]))
    if not seen:
        return "No stored run of these points yet."
    budgets = {}   # (tokens, steps) -> the points trained that far, so one shared budget reads as one sentence
    for pt in (pt for pt in points if pt in seen):
        for b in sorted(set(seen[pt])):
            budgets.setdefault(b, []).append(labels.get(pt, pt))
    if len(budgets) == 1:
        (tokens, steps), = budgets
        runs = f"Every run here trains for {_tokens(tokens)} tokens ({steps:,} steps)"
    else:
        runs = "The runs here train for " + "; ".join(f"{_tokens(t)} tokens ({st:,} steps): {', '.join(pts)}"
                                                      for (t, st), pts in budgets.items())
    most = max(t for t, _ in budgets)
    lit = " and ".join(f"{_tokens(t)} ({name})" for name, t in LITERATURE_INDUCTION_TOKENS.items())
    fewest = min(LITERATURE_INDUCTION_TOKENS.values())
    return (f"{runs}. The 1B-class runs of arXiv 2606.02378 form their induction heads at {lit} tokens, "
            f"about {_about(fewest / most)} times more than the longest run here: a quantity that never formed here "
            "did not form within this budget, which says nothing of whether it would later.")


def _about(x: float) -> str:
    """x to two significant figures (1,953 -> 2,000): a ratio of budgets is a scale, not a measurement."""
    return f"{float(f'{x:.2g}'):,.0f}" if x >= 10 else f"{x:.2g}"


def _tokens(n: float) -> str:
    return f"{n / 1e9:.0f}B" if n >= 1e9 else f"{n / 1e6:.2f}M"


def onset_moves_caption(rows: Sequence[Mapping], points: Sequence[str], what: str, quantity: str = "sink") -> str:
    """Whether ``quantity``'s onset moves along ``points`` (one setting each, in order): each point's onsets over
    its seeds, and which neighbours' seed ranges are apart (every seed of one before every seed of the other)."""
    spans, seeds = {}, {}
    for pt in points:
        mine = [r for r in rows if r["point"] == pt and r["quantity"] == quantity]
        if mine:
            steps = [r["step"] for r in mine]
            spans[pt], seeds[pt] = (min(steps), max(steps), sum(r["never"] for r in mine)), len(mine)
    if not spans:
        return f"No stored run of the {what} points records the {quantity}'s onset."
    said = "; ".join(f"{pt} never" if n == seeds[pt] else f"{pt} {lo:,.0f}" + (f"-{hi:,.0f}" if hi > lo else "")
                     + (f" ({n} never)" if n else "") for pt, (lo, hi, n) in spans.items())
    names = list(spans)
    apart = [f"{a} / {b}" for a, b in zip(names, names[1:])
             if spans[a][1] < spans[b][0] or spans[b][1] < spans[a][0]]
    return (f"The {quantity}'s onset by {what} (steps, lowest to highest seed; a never-formed onset sits one "
            f"evaluation past the end): {said}. " + (f"Seed ranges apart between {', '.join(apart)}; the others "
                                                      "overlap." if apart else "Every pair of neighbours' seed ranges "
                                                      "overlap: no move the seeds decide."))
