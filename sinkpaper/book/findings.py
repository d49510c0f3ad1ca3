"""What a reader sees first: the finding card at the top of a chapter that holds claims, and the scorecard grid.

Both read one shape only, a listing entry (:func:`sinkpaper.paper.entry`: ``{"id", "claim", "kind", "rule",
"paper": {"source", "values"}, "results": {scale: {"values", "seed_values", "seeds", "verdict", "why",
"status", "note"}}}``), so the page shows exactly what the registry says and invents no number: a claim whose
paper values are empty is drawn without a paper mark and says "the paper gives no number".

* :func:`claim_chart`: one compact dot plot per claim, the paper's value as a hollow black marker, our seeds as
  dots and their mean as a tick, one colour per scale, at every scale that has values (the scales come from
  :data:`sinkpaper.paper.SCALES`, whatever they are);
* :func:`chip` / :func:`reason`: the verdict as a coloured chip with one line saying why, for every verdict word;
* :func:`headline`: the one number to compare in a cell, "paper X / ours Y" (the claim's own point, named);
* :class:`FindingCard`: a chapter's claims, one row each (claim, chips, chart) under a one-sentence summary; a
  family of claims read on one chart (:mod:`.families`) shares one row.

The scorecard (:mod:`.scorecard`) draws every claim with the same chips.
"""
from __future__ import annotations

import functools

import html
from collections import Counter
from typing import Any, Mapping, Sequence

import altair as alt

from .. import paper as registry
from ..paper.onsets import onset_text
from ..paper.report import removal_base_rate
from ..paper.rules import Contrast
from ..results.numbers import sig, values_said_once
from ..train.store import DEFAULT_STORE
from . import sources
from .families import families, joined
from .figures import chart_html, start_chapter
from .labels import _is_percent, _metric, _point, _value, human_label, key_label, paper_counterpart

VERDICT_COLORS = {registry.AGREES: "#1a7f37", registry.DISAGREES: "#cf222e", registry.INCONCLUSIVE: "#8250df",
                  registry.NOT_YET: "#0969da", registry.NOT_COMPARABLE: "#9a6700", registry.NO_RESULT: "#6e7781"}
CHECK_COLOR = "#bf3989"  # a check of the propositions is not a reproduction: its own colour, no verdict word
# One colour per scale across the book; a scale added to the registry later takes the next free colour.
SCALE_COLORS = {"real LMs": "#0969da", "real text (CPU)": "#d1242f", registry.LAYERS_4_SCALE: "#bc4c00",
                registry.DEFAULT_CPU_SCALE: "#1b7c83", registry.GPU_SCALE: "#1a7f37", "miniature": "#8250df"}
SPARE_COLORS = ("#bf3989", "#57606a")
PAPER_COLOR = "black"
REASON_CHARS = 150   # a chip's reason in the card; the whole reason is in its tooltip
WAITING_CHARS = 70   # a waiting row's claim: one line at 1280 px, so the first figure stays on screen
WAITING_REASON_CHARS = 50   # ... and each chip's reason, beside its verdict word and scale name
GRID_REASON_CHARS = 70  # ... and in a scorecard cell
CLAIM_CHARS = 90
CARD_ROW_PX = 9   # a card chart's sub-row: one scale's seeds of one label
# the book's glossary page, next to every chapter page (book/glossary.md): the terms a card uses, defined once
GLOSSARY_LINK = '<a class="spx-terms" href="glossary.html">Terms: glossary</a>'
NO_PAPER_NUMBER = "the paper gives no number"


def no_number_note(e: Mapping) -> str:
    """" · the paper gives no number" for a claim of the paper's own sections that has none; nothing for one with
    numbers, or for another paper's claim, which this paper could not number. The scorecard's rows alone use it."""
    own = str(e.get("section", "")).replace(".", "").isdigit()
    return f" \u00b7 {NO_PAPER_NUMBER}" if own and not e["paper"]["values"] else ""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def scale_color(scale: str) -> str:
    if scale in SCALE_COLORS:
        return SCALE_COLORS[scale]
    spare = [s for s in registry.SCALES if s not in SCALE_COLORS]
    return SPARE_COLORS[spare.index(scale) % len(SPARE_COLORS)] if scale in spare else SPARE_COLORS[-1]


def chapter_entries(chapter: str, store: str = DEFAULT_STORE) -> list[dict]:
    """The listing entries of the claims a chapter holds, in the registry's order."""
    records = registry.load_records()
    return [registry.entry(c, records, store) for c in registry.CLAIMS if c.chapter == chapter]


def result_at(e: Mapping, scale: str) -> Mapping:
    """An entry's result at a scale; a scale the entry does not list (a listing written before the registry
    added it) reads as not run."""
    return e["results"].get(scale) or {"values": {}, "verdict": registry.NO_RESULT, "status": registry.NOT_RUN}


def shown_scales(e: Mapping) -> list[str]:
    """The scales of an entry that a reader should see: every scale the book runs the claim at (not "not run")."""
    return [s for s in registry.SCALES if result_at(e, s).get("status") != registry.NOT_RUN]


def has_values(res: Mapping) -> bool:
    return any(v is not None for v in (res.get("values") or {}).values())


def scale_order(entries: Sequence[Mapping]) -> list[str]:
    """The registry's scales, those with the most results first (ties in the registry's order)."""
    n = Counter(s for e in entries for s in registry.SCALES if has_values(result_at(e, s)))
    return sorted(registry.SCALES, key=lambda s: -n[s])


# ------------------------------------------------------------------------------------------------ verdicts
def verdict_word(e: Mapping, res: Mapping) -> str:
    """The chip's word: the registry's verdict, or "check" for a check of the propositions (not a reproduction)."""
    if e.get("kind") == "check":
        return "check"
    v = res.get("verdict") or registry.NO_RESULT
    return v if v in registry.VERDICTS else registry.NO_RESULT


def _cut(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0].rstrip(",;:") + " \u2026"


@functools.lru_cache(maxsize=4)
def _removal_base_rate(scale: str, store: str) -> tuple[int, int]:
    """(points that keep a sink in the paper and are read at ``scale``, those of them with none in any seed here)."""
    base = removal_base_rate(registry.listing(store=store), scale)
    return len(base["kept_in_paper"]), len(base["none"])


def removes_the_sink(e: Mapping) -> bool:
    """Whether a claim says a change removes the sink: its rule wants some label without one."""
    rule = registry.claim(e["id"]).rule
    return isinstance(rule, Contrast) and bool(rule.no_sink)


def reason_parts(e: Mapping, res: Mapping, scale: str | None = None, store: str = DEFAULT_STORE) -> list[str]:
    """The clauses of :func:`reason`, each whole (a rule's sentence may hold a ";" of its own)."""
    parts = [x for x in [res.get("did_not_last"), _reason(e, res), *res.get("second_readings", [])] if x]
    if scale is not None and res.get("verdict") == registry.AGREES and removes_the_sink(e):
        kept, none = _removal_base_rate(scale, store)
        if kept and none:   # said first, so the chip's cut line keeps it
            parts.insert(0, f"weak evidence (here {none} of the {kept} changes with a sink in the paper have none)")
    return parts


def reason(e: Mapping, res: Mapping, scale: str | None = None, store: str = DEFAULT_STORE) -> str:
    """One line that says why a cell reads what it reads, for every verdict word (from the entry only). A claim
    that a change removes the sink, agreeing at a scale where many changes that keep a sink in the paper have
    none, says how many (the base rate of 'removes' at that scale)."""
    return "; ".join(reason_parts(e, res, scale, store))


def _reason(e: Mapping, res: Mapping) -> str:
    status = res.get("status")
    if status == registry.STALE:
        return "the stored runs predate the point's definition or settings now: rerun them"
    if status == "missing":   # the note says how to make it (in the tooltip)
        return ("not measured yet: its chapter has not run" if str(res.get("measurement", "")).startswith("chapter")
                else "not stored yet")
    if status == "incomplete":
        return "some runs it reads are not stored yet"
    if status == "too few seeds":
        return f"fewer than {registry.SEEDS_MIN} seeds that trained"
    if e.get("kind") == "check":
        return "a check of the propositions, not a reproduction: " + _values_text(res.get("values") or {})
    if not e.get("rule"):
        return "qualitative claim: the paper gives no number and no rule judges it"
    if res.get("why"):
        return values_said_once(res["why"])
    v = res.get("verdict")
    rule = str(res.get("rule") or e["rule"]).rstrip(".")   # a scale that reads fewer points states its own
    if v == registry.AGREES:
        return f"meets the rule: {rule}"
    if v == registry.DISAGREES:
        return f"fails the rule: {rule}"
    if v == registry.NOT_COMPARABLE:
        return f"the rule cannot judge these runs: {rule}"
    return rule


def _first_clause(text: Any) -> str:
    return str(text or "").split(";")[0].strip()


def _values_text(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {sig(v)}" for k, v in values.items())


# "default" means the paper's default run (the glossary). Our point of that name at a scale whose base run is
# not the paper's default is named for what it is.
OUR_DEFAULT = {"real text (CPU)": "text base run, fixed first token",
               registry.LAYERS_4_SCALE: "4-layer text base run, fixed first token",
               registry.DEFAULT_CPU_SCALE: "the paper's packing on a CPU, 4 layers", "miniature": "miniature recipe"}


def headline(e: Mapping, res: Mapping, scale: str | None = None) -> str:
    """The one number to compare in a cell: "paper X / ours Y (label)" at the claim's key label; "the paper
    gives no number" where the registry has none for it. At a scale whose "default" point is not the paper's
    default (:data:`OUR_DEFAULT`), each side is named: "paper X (its default) / ours Y (text base run, ...)"."""
    label = key_label(e, res)
    ours_name = OUR_DEFAULT.get(scale) if label is not None and _point(label) == "default" else None
    if ours_name is not None:
        p = (e["paper"]["values"] or {}).get(label)
        o = (res.get("values") or {}).get(label)
        pct = _is_percent(label, e)
        metric = f": {_metric(label)}" if ": " in label else ""
        paper_txt = f"paper {_value(p, pct)} (its default{metric})" if p is not None else NO_PAPER_NUMBER
        return paper_txt if o is None else f"{paper_txt} / ours {_value(o, pct, ours=True)} ({ours_name}{metric})"
    if label is None:
        return NO_PAPER_NUMBER
    pct = _is_percent(label, e)
    twin = paper_counterpart(e, label)
    p = (e["paper"]["values"] or {}).get(twin) if twin else None
    o = (res.get("values") or {}).get(label)
    paper_txt = f"paper {_value(p, pct)}" if p is not None else NO_PAPER_NUMBER
    if o is None:     # the chip already says "no result"
        return paper_txt + (f" ({human_label(label)})" if p is not None else "")
    if twin is not None and twin != label:    # another model on the same input: each number named
        return f"paper {_value(p, pct)} ({human_label(twin)}) / ours {_value(o, pct, ours=True)} ({human_label(label)})"
    ours = onset_text(res.get("seed_values") or {}, label) or _value(o, pct, ours=True)
    return f"{paper_txt} / ours {ours} ({human_label(label)})"


def shown_reason(word: str, parts: Sequence[str], terse: bool = False) -> str:
    """The part of a reason (:func:`reason_parts`) a chip shows under its headline (the whole reason stays in the
    tooltip): an *agrees* says no more than its chip unless it carries a caveat ("meets the rule: ..." is the rule,
    in the tooltip, dropped whole); ``terse`` (the scorecard's cells): a *no result* or a *check* says nothing
    either, so a row is as tall as its findings, not its waiting cells."""
    if terse and word in (registry.NO_RESULT, "check"):
        return ""
    if word == registry.AGREES:
        parts = [c for c in parts if not c.startswith("meets the rule")]
    return "; ".join(parts)


def chip(e: Mapping, res: Mapping, scale: str | None = None, *, limit: int = REASON_CHARS,
         late_rule: str | None = None, compact: bool = False, terse: bool = False,
         seen: set | None = None) -> str:
    """The verdict as HTML: a coloured word (with the scale's name), the headline, and the one-line reason
    (:func:`shown_reason`; ``terse`` for the scorecard's cells); the whole reason and the rule in the tooltip.
    ``late_rule`` ("2 of 3"): the rule in force was set after that many of the runs it judges, marked with a
    dagger (:func:`rules_set_after_runs`). ``compact``: the headline only in the tooltip where the paper gives no
    number (the claim's source line says so; the reason says what ours is). ``seen``: the reasons the chips above
    in the same row printed; a reason printed there is not printed again (it stays in the tooltip)."""
    word = verdict_word(e, res)
    color = CHECK_COLOR if word == "check" else VERDICT_COLORS[word]
    parts = reason_parts(e, res, scale)
    why = "; ".join(parts)
    rule = res.get("rule") or e.get("rule")
    tip = (f"{scale + ': ' if scale else ''}{word}. {why}" + (f"\nRule: {rule}" if rule else "")
           + (f"\nNote: {res['note']}" if res.get("note") else ""))
    head = f'<span class="spx-chip" style="background:{color}">{_e(word)}</span>'
    if late_rule:
        head += (f'<span class="spx-late" title="the rule in force was set after {_e(late_rule)} of the runs it '
                 f'judges (appendix: when each verdict rule was fixed)">\u2020</span>')
    where = f'<span class="spx-scale" style="color:{scale_color(scale)}">{_e(scale)}</span>' if scale else ""
    line = headline(e, res, scale)
    if terse:   # the grid's claim cell says the paper gives none; the cell keeps ours
        line = line.removeprefix(NO_PAPER_NUMBER + " / ")
    tip += f"\n{line}" if compact and not e["paper"]["values"] else ""
    body = "" if compact and not e["paper"]["values"] else f'<span class="spx-headline">{_e(line)}</span>'
    said = shown_reason(word, parts, terse)
    if seen is not None and said in seen:
        said = ""
    elif seen is not None:
        seen.add(said)
    return (f'<div class="spx-verdict" title="{_e(tip)}">{head}{where}{body}'
            + (f'<span class="spx-why">{_e(_cut(said, limit))}</span>' if said else "") + "</div>")


# ---------------------------------------------------------------------------------------------- the chart
def chart_rows(e: Mapping, scales: Sequence[str]) -> list[dict]:
    """The rows :func:`claim_chart` draws: per label, the paper's value ("paper") and, per scale with values,
    each seed's value ("seed") and the mean over seeds ("mean"); a label's unit ("%" or its metric). Onsets
    ("base: onset: sink") share one panel of steps: a seed in which the quantity never formed is drawn at its
    run's last step as "never" (the registry's stand-in lies one evaluation past it), with no mean where a seed
    has none; the runs' steps they are read against ("base: steps") are no row of their own."""
    rows = []
    labels: list[str] = list(e["paper"]["values"] or {})
    for s in scales:
        labels += [k for k in (result_at(e, s).get("values") or {}) if k not in labels]
    onset_points = {k.partition(": onset: ")[0] for k in labels if ": onset: " in k}
    for label in labels:
        point, is_onset, _ = label.partition(": onset: ")
        if label.removesuffix(": steps") in onset_points:
            continue
        unit = "onset step" if is_onset else "%" if _is_percent(label, e) else label.split(": ")[-1]
        p = (e["paper"]["values"] or {}).get(label)
        if p is not None:
            rows.append({"label": human_label(label), "key": label, "unit": unit, "who": "paper", "kind": "paper",
                         "value": p, "seed": ""})
        for s in scales:
            res = result_at(e, s)
            # a rule read per run reads each label on its run's own seeds ("seeds_of")
            seeds = (res.get("seeds_of") or {}).get(label) or res.get("seeds") or []
            by_seed = res.get("seed_values") or {}
            ends = by_seed.get(f"{point}: steps") if is_onset else None
            never = False
            for i, v in enumerate(by_seed.get(label) or []):
                end = ends[i] if ends and i < len(ends) else None
                gone = end is not None and v > end
                never |= gone
                rows.append({"label": human_label(label), "key": label, "unit": unit, "who": s,
                             "kind": "never" if gone else "seed", "value": end if gone else v,
                             "seed": str(seeds[i]) if i < len(seeds) else str(i)})
            m = (res.get("values") or {}).get(label)
            if m is not None and not never:
                rows.append({"label": human_label(label), "key": label, "unit": unit, "who": s, "kind": "mean",
                             "value": m, "seed": ""})
    return rows


def claim_chart(e: Mapping, scales: Sequence[str] | None = None, width: int | str = "container",
                row_px: int = 11, legend: bool = True) -> alt.TopLevelMixin | None:
    """One claim's dot plot: a row per label (the paper's and ours), the value across; the paper's value a hollow
    black circle, each of our seeds a dot and the mean a tick, in the scale's colour, one sub-row per scale.
    Labels of another unit than % (excess alpha_1, a prefix length) get their own panel. None when there is
    nothing to draw (no paper value and no result). ``legend=False``: the finding card draws one key for all its
    charts (:func:`card_key`)."""
    scales = [s for s in (scales or registry.SCALES) if has_values(result_at(e, s))]
    rows = chart_rows(e, scales)
    if not rows or e.get("kind") == "check":
        return None
    drawn_paper = any(r["kind"] == "paper" for r in rows)   # no "paper" in the legend of a chart without it
    who = ["paper", *scales] if drawn_paper else list(scales)
    colors = [PAPER_COLOR, *map(scale_color, scales)] if drawn_paper else [scale_color(s) for s in scales]
    units = list(dict.fromkeys(r["unit"] for r in rows))
    panels = []
    for unit in units:
        part = [r for r in rows if r["unit"] == unit]
        labels = list(dict.fromkeys(r["label"] for r in part))
        pct = unit == "%"
        x = alt.X("value:Q", title="% of heads" if pct else unit,
                  scale=alt.Scale(domain=[0, 100]) if pct else alt.Scale(zero=True))
        y = alt.Y("label:N", sort=labels, title=None, axis=alt.Axis(labelLimit=170))
        offset = alt.YOffset("who:N", scale=alt.Scale(domain=who))
        color = alt.Color("who:N", scale=alt.Scale(domain=who, range=colors), title=None,
                          legend=alt.Legend(orient="bottom", direction="horizontal") if legend else None)
        tip = [alt.Tooltip("label:N", title="point"), alt.Tooltip("key:N", title="config key"),
               alt.Tooltip("who:N", title="source"),
               alt.Tooltip("kind:N", title="value"), alt.Tooltip("seed:N"),
               alt.Tooltip("value:Q", format=".3g")]
        height = max(36, row_px * len(who) * len(labels))
        w = width if len(units) == 1 else 190   # stacked panels cannot take the container width: fit the column
        marks = {"seed": alt.MarkDef(type="circle", size=30, opacity=0.55),
                 # never formed: drawn at the run's end, hollow, pointing past it
                 "never": alt.MarkDef(type="point", shape="triangle-right", filled=False, size=45, strokeWidth=1.5),
                 "mean": alt.MarkDef(type="tick", thickness=2.5, size=row_px + 2),
                 "paper": alt.MarkDef(type="point", filled=False, size=70, strokeWidth=2)}
        kinds = [k for k in marks if any(r["kind"] == k for r in part)]   # a layer with no rows: no empty extent
        panels.append(alt.layer(*(
            alt.Chart(alt.Data(values=[r for r in part if r["kind"] == k]), mark=marks[k]).encode(
                x=x, y=y, yOffset=offset, color=color, tooltip=tip)
            for k in kinds)).properties(width=w, height=height))
    if len(panels) == 1:
        return panels[0].configure_view(stroke=None)
    return alt.vconcat(*panels).resolve_scale(x="independent", color="shared").configure_view(stroke=None)


def rules_set_after_runs(entries: Sequence[Mapping]) -> dict[tuple[str, str], str]:
    """{(claim id, scale): "n of m"} where the rule in force was set after n of the m stored runs it judges, from
    the registry's git history (:func:`sinkpaper.paper.history.by_claim`); {} in a shallow clone, whose history
    would date every rule at its one commit."""
    import re

    from ..paper import history

    if history.is_shallow():
        return {}
    rows = history.by_claim(history.rule_history(), list(entries), scales=tuple(registry.SCALES))
    out = {}
    for row in rows:
        for s in registry.SCALES:
            m = re.fullmatch(r"(\d+) of (\d+)", str(row.get(f"{s}: runs older than the rule", "")))
            if m and int(m.group(1)) > 0:
                out[(row["claim"], s)] = m.group(0)
    return out


# ----------------------------------------------------------------------------------------------- the card
def summary(entries: Sequence[Mapping]) -> str:
    """One sentence: per scale with results, how many claims read each verdict, and how many the book does not
    run at that scale (so each scale's counts add up to the page's claims)."""
    parts = []
    for s in scale_order(entries):
        c = Counter(verdict_word(e, result_at(e, s)) for e in entries if s in shown_scales(e))
        if not c or set(c) <= {registry.NO_RESULT}:
            continue
        words = [f"{c[v]} {v}" for v in (*registry.VERDICTS, "check") if c.get(v)]
        if (unrun := len(entries) - sum(c.values())) > 0:
            words.append(f"{unrun} not run here")
        parts.append(f"{s}: " + ", ".join(words))
    n = len(entries)
    head = f"{n} claim{'s' if n != 1 else ''}"
    return head + (" \u2014 " + "; ".join(parts) + "." if parts else ": no result yet.")


CSS = """
.spx-findings{margin:.2em 0 1em 0}
.spx-findings .spx-sum{font-weight:600;margin:.2em 0 .5em 0}
.spx-sum .spx-terms{font-weight:400;font-size:.9em;margin-left:.4em}
.spx-finding{display:grid;grid-template-columns:minmax(0,5fr) minmax(0,7fr);gap:.3em 1em;padding:.45em 0;
  border-top:1px solid #d0d7de;align-items:start}
.spx-finding .spx-claim{font-weight:600;margin-bottom:.15em}
.spx-finding .spx-src{font-size:.8em;color:#57606a}
.spx-finding .spx-plot{min-width:0;width:100%}
.spx-finding .spx-plot .vega-embed{width:100%}
.spx-nochart{font-size:.85em;color:#57606a;font-style:italic}
.spx-family .spx-member+.spx-member{margin-top:.45em;padding-top:.35em;border-top:1px dashed #d0d7de}
.spx-finding.spx-waiting{grid-template-columns:minmax(0,1fr);padding:.3em 0}
.spx-waiting .spx-claim{margin-bottom:0}
.spx-waiting .spx-verdict{margin:0}
.spx-waiting .spx-headline,.spx-waiting .spx-why{display:inline;margin-right:.4em}
.spx-verdict{margin:.2em 0;font-size:.86em;line-height:1.35}
.spx-chip{display:inline-block;color:#fff;border-radius:.8em;padding:0 .55em;font-weight:600;margin-right:.35em;
  white-space:nowrap}
.spx-scale{font-weight:600;margin-right:.35em;white-space:nowrap}
.spx-late{font-weight:700;margin-right:.35em;color:#9a6700;cursor:help}
.spx-headline{display:block;font-variant-numeric:tabular-nums}
.spx-why{display:block;color:#57606a;font-size:.95em}
.spx-why-inline{color:#57606a;margin-right:.5em}
.spx-key{font-size:.8em;color:#57606a;margin:.2em 0 .3em 0}
.spx-key-item{margin-right:1em;white-space:nowrap}
.spx-dot{display:inline-block;width:.7em;height:.7em;border-radius:50%;margin-right:.3em;vertical-align:middle}
.spx-dot.spx-paper{border:2px solid black;background:none;width:.6em;height:.6em}
@media (max-width:700px){.spx-finding{grid-template-columns:minmax(0,1fr)}}
"""


DECIDED = (registry.AGREES, registry.DISAGREES, registry.INCONCLUSIVE, registry.NOT_YET)   # verdicts a reader can read a finding in
TWO_LAYERS = "real text (CPU)"


def depth_note(e: Mapping) -> str:
    """One sentence where the 4-layer verdict differs from the 2-layer one, both decided ("" otherwise)."""
    two, four = (result_at(e, s).get("verdict") for s in (TWO_LAYERS, registry.LAYERS_4_SCALE))
    if two in DECIDED and four in DECIDED and two != four:
        return f"At 4 layers this reads {four}, where the 2-layer recipe reads {two}."
    return ""


def pending_line(e: Mapping, scales: Sequence[str]) -> str:
    """One line for the scales at which a claim has no result yet: a grey chip, each scale named with its reason's
    first clause, every reason and note in the tooltip; "" for none."""
    if not scales:
        return ""
    parts, tips = [], []
    for s in scales:
        res = result_at(e, s)
        why = _first_clause(reason(e, res, s))
        parts.append(f'<span class="spx-scale" style="color:{scale_color(s)}">{_e(s)}</span>'
                     + (f'<span class="spx-why-inline">({_e(_cut(why, 60))})</span>' if why else ""))
        tips.append(f"{s}: {why}" + (f" ({res['note']})" if res.get("note") else ""))
    chip_html = f'<span class="spx-chip" style="background:{VERDICT_COLORS[registry.NO_RESULT]}">no result</span>'
    return (f'<div class="spx-verdict spx-pending" title="{_e(chr(10).join(tips))}">{chip_html}'
            f'{" ".join(parts)}</div>')


def _row(e: Mapping, scales: Sequence[str] | None, chart=True) -> tuple[str, str, object, bool]:
    """A claim's row, in parts: its claim and source, its chips (one per scale it is run at), its chart (None
    when ``chart`` is False or there is nothing to draw) and whether it is still waiting for its runs."""
    shown = [s for s in (scales or registry.SCALES) if s in shown_scales(e)]
    plot = claim_chart(e, shown, row_px=CARD_ROW_PX, legend=False) if chart else None
    decided = any(result_at(e, s).get("verdict") in DECIDED for s in shown)
    # a claim still waiting for its runs, or with nothing to set beside ours (no paper number) and no verdict yet:
    # one compact row, so the first screen keeps room for what is measured
    waiting = e.get("kind") != "check" and (
        (plot is None and not any(has_values(result_at(e, s)) for s in shown))
        or (not e["paper"]["values"] and not decided))
    # a scale with no result yet (not stored, too few seeds, its chapter not run) takes no chip of its own: one line
    # names them all, so a claim run at many scales keeps its row short; each one's reason is in the tooltip
    pending = [s for s in shown if verdict_word(e, result_at(e, s)) == registry.NO_RESULT]
    limit = WAITING_REASON_CHARS if waiting else REASON_CHARS
    seen: set = set()    # a reason two scales share (the same rule met or failed) is printed once
    chips = "".join(chip(e, result_at(e, s), s, compact=waiting, limit=limit, seen=seen)
                    for s in shown if s not in pending)
    chips += pending_line(e, pending)
    chips = chips or '<div class="spx-verdict"><span class="spx-why">the book does not run this claim</span></div>'
    no_number = "" if e["paper"]["values"] else f" \u00b7 {NO_PAPER_NUMBER}"   # a card's first screen says it
    if (depth := depth_note(e)):
        chips += f'<div class="spx-verdict spx-depth">{_e(depth)}</div>'
    claim = (f'<div class="spx-claim" title="{_e(e["claim"])}">'
             f'{_e(_cut(e["claim"], WAITING_CHARS if waiting else CLAIM_CHARS))}</div>'
             f'<div class="spx-src">{_e(e["paper"]["source"])}{no_number}</div>')
    return claim, chips, plot, waiting


def card_row(e: Mapping, scales: Sequence[str] | None = None) -> str:
    """One claim of a finding card: the claim and its source, one chip per scale it is run at, and its chart."""
    claim, chips, chart, waiting = _row(e, scales)
    if waiting:
        return (f'<div class="spx-finding spx-waiting" id="finding-{_e(e["id"])}"><div>{claim}'
                f'<div class="spx-chips">{chips}</div></div></div>')
    why_none = "a check, not a measurement" if e.get("kind") == "check" else "no number yet"
    plot = chart_html(chart) if chart is not None else f'<div class="spx-nochart">nothing to draw: {why_none}</div>'
    return (f'<div class="spx-finding" id="finding-{_e(e["id"])}"><div>{claim}{chips}</div>'
            f'<div class="spx-plot">{plot}</div></div>')


def card_family(group: Sequence[Mapping], scales: Sequence[str] | None = None) -> str:
    """A family of claims (:mod:`.families`) as one row: each claim with its own chips, one chart of all their
    points; a family with nothing to draw, or a claim alone, is its claims' own rows."""
    shown = [s for s in (scales or registry.SCALES) if any(s in shown_scales(e) for e in group)]
    chart = claim_chart(joined(group), shown, row_px=CARD_ROW_PX, legend=False) if len(group) > 1 else None
    if chart is None:
        return "".join(card_row(e, scales) for e in group)
    members = "".join(f'<div class="spx-member" id="finding-{_e(e["id"])}">{claim}{chips}</div>'
                      for e in group for claim, chips, _, _ in [_row(e, scales, chart=False)])
    return (f'<div class="spx-finding spx-family">'
            f'<div>{members}</div><div class="spx-plot">{chart_html(chart)}</div></div>')


def card_key(entries: Sequence[Mapping]) -> str:
    """The one key of a card's charts (they draw none of their own): the paper's hollow circle, then a dot per
    scale that has values on the card, in its colour; the mean is the tick."""
    scales = [s for s in scale_order(entries) if any(has_values(result_at(e, s)) for e in entries)]
    if not scales:
        return ""
    dots = "".join(f'<span class="spx-key-item"><span class="spx-dot" style="background:{scale_color(s)}"></span>'
                   f"{_e(s)}</span>" for s in scales)
    return (f'<div class="spx-key"><span class="spx-key-item"><span class="spx-dot spx-paper"></span>paper</span>'
            f'{dots}<span class="spx-key-item">dots: seeds, tick: their mean</span></div>')


def has_verdict(e: Mapping) -> bool:
    """Whether a claim reads a verdict a reader can read a finding in (DECIDED) at some scale its card shows."""
    return any(result_at(e, s).get("verdict") in DECIDED for s in shown_scales(e))


class FindingCard:
    """A chapter's finding card: a summary sentence, then one row per claim the chapter holds (the claim, a chip
    per scale with its headline and reason, the chart). ``show()`` displays it with a display id, so a chapter
    that writes its records further down can ``refresh()`` it once they are written."""

    def __init__(self, chapter: str, entries: Sequence[Mapping] | None = None):
        self.chapter = chapter
        self.entries = list(entries) if entries is not None else chapter_entries(chapter)
        self._handle = None

    def _repr_html_(self) -> str:
        order = scale_order(self.entries)
        # the claims with a number at some scale first (the registry's order otherwise): the first screen shows a
        # finding, not a claim still waiting for its runs
        shown = sorted(self.entries, key=lambda e: not any(has_values(result_at(e, s)) for s in shown_scales(e)))
        # the claims with a verdict a reader can read a finding in lead; the rest (not run here, waiting for their
        # runs, not comparable) fold under one line, unless no claim has a verdict yet
        lead, rest = [e for e in shown if has_verdict(e)], [e for e in shown if not has_verdict(e)]
        if not lead:
            lead, rest = shown, []
        # a family of claims read on one chart (:mod:`.families`) is one row on each side of the fold: a member
        # without a verdict stays folded, its points off the lead's chart
        rows = "".join(card_family(g, order) for g in families(lead))
        if rest:
            rows += (f'<details class="spx-fold spx-undecided"><summary>{len(rest)} more claim'
                     f'{"s" if len(rest) > 1 else ""} without a verdict here yet (not run, waiting for runs, or '
                     f'not comparable)</summary><div class="spx-fold-body">'
                     + "".join(card_family(g, order) for g in families(rest)) + "</div></details>")
        # the key of the rows' charts under them, where a row drew one: the first screen keeps its room for a finding
        key = card_key(self.entries) if 'class="spx-plot"' in rows else ""
        return (f'<div class="spx-findings"><style>{CSS}</style><div class="spx-sum">{_e(summary(self.entries))}'
                f' {GLOSSARY_LINK}</div>{rows}{key}</div>')

    def show(self) -> "FindingCard":
        from IPython.display import display

        self._handle = display(self, display_id=True)
        return self

    def refresh(self) -> None:
        """Re-read the registry (records written since) and redraw the card where it was first shown."""
        self.entries = chapter_entries(self.chapter)
        if self._handle is not None:
            self._handle.update(self)


def finding_card(chapter: str, before=None) -> FindingCard:
    """Show the finding card of ``chapter`` (its stem, e.g. "04_optimization") and return it; the chapter's
    figures are numbered from here on (:func:`.figures.start_chapter`) and its sources line shown under the card
    (:func:`.sources.begin`). ``before``: a callable that displays what a chapter leads with above its card (chapter
    4: the paper's own setting), with the chapter's figures already numbered."""
    start_chapter(chapter)
    if before is not None:
        before()
    card = FindingCard(chapter).show()
    sources.begin(chapter)   # the page's one line of provenance, under its card
    return card


def verdict_chart(entries: Sequence[Mapping], width: int | str = "container", height: int = 64) -> alt.Chart:
    """The scorecard at a glance: per scale (the one with the most results on top), how many claims read each
    verdict, as one stacked bar in the chips' colours."""
    scales = scale_order(entries)
    rows = [{"scale": s, "verdict": verdict_word(e, result_at(e, s)), "claim": e["id"]}
            for e in entries for s in scales if s in shown_scales(e)]
    words = [*registry.VERDICTS, "check"]
    colors = [*(VERDICT_COLORS[v] for v in registry.VERDICTS), CHECK_COLOR]
    return (alt.Chart(alt.Data(values=rows), width=width, height=height)
            .mark_bar()
            .encode(y=alt.Y("scale:N", sort=scales, title=None),
                    x=alt.X("count():Q", title="claims"),
                    color=alt.Color("verdict:N", scale=alt.Scale(domain=words, range=colors), title=None,
                                    legend=alt.Legend(orient="bottom", direction="horizontal")),
                    order=alt.Order("verdict_order:Q"),
                    tooltip=["scale:N", "verdict:N", alt.Tooltip("count():Q", title="claims")])
            .transform_calculate(verdict_order=f"indexof({words!r}, datum.verdict)")
            .configure_view(stroke=None))
