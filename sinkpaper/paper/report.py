"""Claims and verdicts as people read them: rows, tables and the one-line verdict text."""
from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from ..train.store import DEFAULT_STORE
from .claims import claim, rule_check
from .lookup import STEPS, entry
from .onsets import onset_text
from .records import load_records, write_record
from .verdicts import NOT_RUN, NO_RESULT, SCALES, SEEDS_MIN, STALE

# ----------------------------------------------------------------------------------------- for people
def digits_of(label: str, digits: int) -> int:
    """The decimals a label's values print with: a budget (the metric "steps") and an onset step are whole
    numbers of steps; alpha_1 and its excess are fractions (3); the rest (percentages) ``digits``."""
    if label == STEPS or label.endswith(f": {STEPS}") or label.endswith("onset step"):
        return 0
    return 3 if "alpha" in label else digits


def fmt_values(values: Mapping[str, float | None], digits: int = 2, seed_values: Mapping | None = None) -> str:
    """"label value, ..."; with a result's ``seed_values``, an onset label reads per seed (:func:`onset_text`)."""
    from ..results.numbers import MISSING, fmt

    return ", ".join(f"{k} {onset_text(seed_values or {}, k) or fmt(v, digits_of(k, digits), '')}"
                     for k, v in values.items()) or MISSING


def verdict_text(res: Mapping) -> str:
    """The verdict as a table cell: the verdict word, and why there is none where there is none."""
    if res.get("status") == STALE:
        return f"{NO_RESULT} ({STALE})"
    if res.get("status") == NOT_RUN:
        return f"{NO_RESULT} ({NOT_RUN})"
    if res.get("status") == "too few seeds":
        return f"{NO_RESULT} (fewer than {SEEDS_MIN} seeds that trained)"
    # why: an onset the verdict counts that did not last first (the verdict may hang on it); then inconclusive's
    # reason, or any a rule gives (a reading that cannot fail, ...); then the second readings
    why = "; ".join(x for x in [res.get("did_not_last"), res.get("why"), *res.get("second_readings", [])] if x)
    return f"{res['verdict']}: {why}" if why else res["verdict"]


def removal_base_rate(listing: Sequence[Mapping], scale: str = "real text (CPU)") -> dict:
    """How often a change that keeps a sink in the paper keeps one here: over the points that claims of "a sink
    stays" (Sinks, MattersLittle, as the scale reads them: :func:`scale_rule`) read, those the paper gives a sink
    (>= SINK) and that are read at ``scale``; "kept": every seed has a sink (>= SINK), "none": every seed is below
    NO_SINK. A verdict "X removes the sink" at a scale where many such points have none is weak evidence.
    {"kept_in_paper": [labels], "kept": [labels], "none": [labels]}, each label once."""
    from .lookup import scale_rule
    from .rules import MattersLittle, Sinks
    from .verdicts import NO_SINK, SINK
    read, kept, none = {}, {}, {}
    for e in listing:
        rule = scale_rule(claim(e["id"]), scale)
        if not isinstance(rule, (Sinks, MattersLittle)):
            continue
        labels = list(rule.labels) + ([rule.base] if isinstance(rule, MattersLittle) else [])
        seeds = e["results"].get(scale, {}).get("seed_values", {})
        for x in labels:
            paper = e["paper"]["values"].get(x)
            if paper is None or paper < SINK or not seeds.get(x):
                continue
            read[x] = True
            if all(v >= SINK for v in seeds[x]):
                kept[x] = True
            if all(v < NO_SINK for v in seeds[x]):
                none[x] = True
    return {"kept_in_paper": sorted(read), "kept": sorted(kept), "none": sorted(none)}


def base_rate_sentence(listing: Sequence[Mapping], scale: str) -> str:
    """The base rate at a scale in one sentence ("" where no such point is read there)."""
    base = removal_base_rate(listing, scale)
    n = len(base["kept_in_paper"])
    if not n:
        return ""
    between = n - len(base["kept"]) - len(base["none"])
    return (f"{scale}: of the {n} points that keep a sink in the paper and are read here, {len(base['kept'])} keep "
            f"one in every seed and {len(base['none'])} have none in any seed"
            + (f" ({between} in between)" if between else "")
            + (f"; none: {', '.join(base['none'])}" if base["none"] else "") + ".")


def row(claim_id: str, directory: str | os.PathLike | None = None, store: str = DEFAULT_STORE) -> dict:
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
        out[f"ours ({s})"] = (fmt_values(r["values"], seed_values=r.get("seed_values")) if r["values"] else
                              f"{NOT_RUN}: {r['note']}" if r.get("status") == NOT_RUN else r["measurement"])
        out[f"verdict ({s})"] = verdict_text(r)
    notes = [e["note"]] + [f"{s}: {r['note']}" for s, r in e["results"].items() if r.get("note")
                           and r.get("status") not in (NOT_RUN,)]
    if e["bos"] is not None:
        notes.insert(0, f"BOS {'on' if e['bos'] else 'off'}: {e['bos_why']}")
    out["notes"] = [n for n in notes if n]      # each part alone, so a table can print a shared part once
    out["note"] = "; ".join(out["notes"])
    return out


def bos_statement(claim_ids: Sequence[str]) -> str:
    """Markdown, one bullet per BOS choice and reason: the claims whose verdicts use it, and why (for a chapter to
    show before its results); claims that share a reason share its bullet."""
    groups: dict[tuple[bool, str], list[str]] = {}
    for cid in claim_ids:
        c = claim(cid)
        if c.bos is not None:
            groups.setdefault((c.bos, c.bos_why), []).append(f"`{cid}` ({c.claim})")
    return "\n".join(f"- {' and '.join(names)}: verdict{'s' if len(names) > 1 else ''} with "
                     f"**BOS {'on' if bos else 'off'}**; {why}." for (bos, why), names in groups.items())


def rows(claim_ids: Sequence[str], directory: str | os.PathLike | None = None, store: str = DEFAULT_STORE) -> list[dict]:
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
    from ..results.numbers import fmt

    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; valid: {', '.join(SCALES)}")
    lines = [f"| claim | section | paper | ours ({scale}): mean [min, max] over seeds | verdict |",
             "|---|---|---|---|---|"]
    tested = [e for e in entries if e["results"][scale].get("status") != NOT_RUN]
    for e in tested:
        r = e["results"][scale]
        seeds, seeds_of = r.get("seed_values") or {}, r.get("seeds_of") or {}

        def cell(k, v):
            onset = onset_text(seeds, k)      # per seed, "never" where it never formed (not a step past the end)
            if onset:
                return f"{k} {onset}"
            d = digits_of(k, 1)
            got = seeds.get(k, ())
            lo, hi = (f"{min(got):.{d}f}", f"{max(got):.{d}f}") if got else ("", "")
            # a range that prints as one value (a budget, no sink in any seed) says so once, not "x [x, x]"
            spread = "" if len(got) < 2 else (f" (all {len(got)} seeds)" if lo == hi else f" [{lo}, {hi}]")
            # a mean over fewer seeds than the verdict's (a reading shown beside) names them
            few = seeds_of.get(k) if v is not None and k not in seeds else None
            which = f" (seed{'s' if len(few) > 1 else ''} {', '.join(map(str, few))} only)" if few else ""
            return f"{k} {fmt(v, d, '')}{spread}{which}"
        # a stale reading shows no value: the runs it would read and the sweep that makes them, not the lookup
        ours = "; ".join(cell(k, v) for k, v in r["values"].items()) or (
            r["note"] if r.get("status") == STALE else r["measurement"])
        left = {"missing": " (not stored yet)", "incomplete": " (some runs not stored yet)"}.get(r.get("status"), "")
        if r.get("read_from"):   # no chapter record: the measurement committed to the repository
            left += f" (read from the committed {r['read_from']})"
        cells = (f"`{e['id']}`: {e['claim']}", e["section"], fmt_values(e["paper"]["values"], 1), ours + left,
                 verdict_text(r))
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")   # "max(|row sum|, 1)"
    n = counts(tested, scale)
    lines += ["", f"{len(tested)} claims tested at {scale}: " + ", ".join(f"{k} {v}" for k, v in sorted(n.items()))]
    if (rate := base_rate_sentence(entries, scale)):
        lines += ["", f"Base rate for 'X removes the sink', {rate}"]
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
            vals = fmt_values(r["values"], seed_values=r.get("seed_values")) if r["values"] else ""
            lines.append(f"    {s:16s} {verdict_text(r):28s} {vals or r['measurement']}"
                         + (f"  [{r['note']}]" if r.get("note") and r.get("status") != NOT_RUN else ""))
    total = {s: counts(entries, s) for s in SCALES}
    lines.append("")
    lines.append(f"{len(entries)} claims. " + "; ".join(
        f"{s}: " + ", ".join(f"{n} {v}" for v, n in sorted(total[s].items())) for s in SCALES))
    return "\n".join(lines)


def record(claim_id: str, *, values: Mapping[str, float | None], measurement: str, provenance: Mapping[str, Any],
           setting: str = "", note: str = "", scale: str = "real LMs",
           directory: str | os.PathLike | None = None) -> dict:
    """Record a chapter's measurement for one claim (its numbers, not a verdict) and return the claim's table row,
    with the verdict the claim's rule gives. ``values``: {label: number}, labels as the claim's rule reads them;
    ``measurement``: what was measured (models, inputs, samples); ``note``: what a reader should see beside the
    verdict (the other BOS setting, a model without a sink, ...)."""
    write_record(claim_id, values=values, measurement=measurement, provenance=provenance, setting=setting,
                 note=note, scale=scale, directory=directory)
    return row(claim_id, directory=directory)
