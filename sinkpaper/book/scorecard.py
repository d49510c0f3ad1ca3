"""The scorecard as a figure: every claim x every scale as a verdict chip with the one number to compare ("paper X /
ours Y") and a one-line reason, the scale with the most results first, at the page's full width.

Input: the claims listing, as ``python -m sinkpaper claims --json`` prints it (``sinkpaper.paper.listing()``).
This module reads only that JSON shape, through the chips of :mod:`.findings` (the chapters' finding cards show the
same chips), so the page shows exactly what the listing says. Everything behind a cell (the rule, the note, the
measurement) is in its tooltip; the claim links to the chapter that measures it. Below 700 px each claim becomes a
stacked card (the scale named above each chip; the scales the book does not run it at left out).
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping, Sequence

from .. import paper as registry
from .findings import (CLAIM_CHARS, CSS, GLOSSARY_LINK, GRID_REASON_CHARS, _cut, _e, chip, no_number_note,
                       result_at, scale_order, shown_scales, summary, verdict_word)

GRID_CSS = """
.spx-grid{width:100%;font-size:.8em}
.spx-grid table{width:100%;table-layout:fixed;border-collapse:collapse}
.spx-grid th,.spx-grid td{padding:.3em .4em;vertical-align:top;border-bottom:1px solid #d0d7de;overflow-wrap:anywhere}
.spx-grid th{text-align:left}
.spx-grid .spx-claim{font-weight:600}
.spx-grid .spx-verdict{font-size:1em;margin:0}
.spx-grid .spx-none{color:#8c959f}
@media (max-width:700px){
  .spx-grid table,.spx-grid tbody{display:block;width:100%}
  .spx-grid thead,.spx-grid colgroup{display:none}
  .spx-grid tr{display:block;border-bottom:2px solid #d0d7de;padding:.3em 0}
  .spx-grid td{display:block;width:auto;border:none;padding:.15em 0}
  .spx-grid td[data-scale]:before{content:attr(data-scale);display:block;font-size:.85em;color:#57606a}
  .spx-grid td:has(> .spx-none){display:none}
}
"""


def counts(entries: Iterable[Mapping]) -> dict[str, Counter]:
    """Per scale, how many claims read each verdict."""
    entries = list(entries)
    return {s: Counter(result_at(e, s).get("verdict") or registry.NO_RESULT for e in entries)
            for s in registry.SCALES}


def reads(e: Mapping, scale: str) -> bool:
    """Whether a claim reads more than *no result* at a scale the book runs it at."""
    return scale in shown_scales(e) and verdict_word(e, result_at(e, scale)) != registry.NO_RESULT


def read_at(entries: Sequence[Mapping], scale: str) -> bool:
    """Whether some claim reads more than *no result* at a scale: a scale still waiting for its runs takes no
    column of the grid (a line under it names it)."""
    return any(reads(e, scale) for e in entries)


class Scorecard:
    """The scorecard grid as notebook output (HTML): a summary sentence, then one row per claim with a verdict at
    some scale (those with a number of the paper's first), one column per scale that reads any; a cell the book
    does not run is a dash. The claims without a verdict anywhere yet fold under one line below the grid, and the
    scales without one are named there: the grid is as long as what is measured."""

    def __init__(self, entries: Sequence[Mapping], href: str = "{chapter}.html",
                 late_rules: Mapping[tuple[str, str], str] | None = None):
        self.entries = list(entries)
        self.href = href
        order = scale_order(self.entries)
        self.scales = [s for s in order if read_at(self.entries, s)] or order
        self.waiting_scales = [s for s in order if s not in self.scales and any(
            s in shown_scales(e) for e in self.entries)]
        self.late_rules = dict(late_rules or {})   # (claim, scale) -> "n of m" (findings.rules_set_after_runs)

    def counts(self) -> dict[str, Counter]:
        return counts(self.entries)

    def _link(self, e: Mapping) -> str:
        ch = str(e.get("chapter", ""))
        if ch[:2].isdigit():
            return f' \u00b7 <a href="{_e(self.href.format(chapter=ch))}">ch. {_e(ch[:2])}</a>'
        # a claim no chapter runs links nowhere: a dash that says so, not a page that is absent
        return f' \u00b7 <span title="{_e(ch or "no chapter")}: no chapter runs it">\u2014</span>'

    def _row(self, e: Mapping) -> str:
        cells = [f'<td><div class="spx-claim" title="{_e(e["claim"])}">{_e(_cut(e["claim"], CLAIM_CHARS))}</div>'
                 f'<div class="spx-src">{_e(e["paper"]["source"])}{self._link(e)}'
                 + no_number_note(e) + "</div></td>"]
        for s in self.scales:
            res = result_at(e, s)
            cells.append(f'<td data-scale="{_e(s)}">' + (
                chip(e, res, limit=GRID_REASON_CHARS, late_rule=self.late_rules.get((e["id"], s)), terse=True)
                if s in shown_scales(e) else
                '<span class="spx-none" title="not run at this scale">\u2013</span>') + "</td>")
        return f'<tr id="claim-{_e(e["id"])}">' + "".join(cells) + "</tr>"

    def _repr_html_(self) -> str:
        w = max(14, 68 // max(1, len(self.scales)))
        cols = f'<colgroup><col style="width:{100 - w * len(self.scales)}%">' + (
            f'<col style="width:{w}%">' * len(self.scales)) + "</colgroup>"
        head = "<thead><tr><th>claim</th>" + "".join(f"<th>{_e(s)}</th>" for s in self.scales) + "</tr></thead>"
        # claims with a number of the paper's first (each group in the registry's order): the comparison first
        ordered = sorted(self.entries, key=lambda e: not e["paper"]["values"])
        read = [e for e in ordered if any(reads(e, s) for s in self.scales)]
        waiting = [e for e in ordered if not any(reads(e, s) for s in self.scales)]
        table = f"<table>{cols}{head}<tbody>{''.join(self._row(e) for e in read)}</tbody></table>"
        after = ""
        if waiting:
            after += (f'<details class="spx-fold"><summary>{len(waiting)} claim{"s" if len(waiting) != 1 else ""} '
                      f'without a verdict at any scale yet (not run, or waiting for runs)</summary>'
                      f'<div class="spx-fold-body"><table>{cols}{head}<tbody>'
                      f"{''.join(self._row(e) for e in waiting)}</tbody></table></div></details>")
        if self.waiting_scales:
            after += ('<div class="spx-sum">No verdict yet at ' + ", ".join(map(_e, self.waiting_scales))
                      + ": their runs are training or not stored (each claim's chapter says how far).</div>")
        late = (' <span class="spx-late">\u2020</span>: the rule in force was set after some of the runs it judges '
                '(hover for how many).' if self.late_rules else "")
        return (f'<div class="spx-grid"><style>{CSS}{GRID_CSS}</style><div class="spx-sum">{_e(summary(self.entries))}'
                f"{late} {GLOSSARY_LINK}</div>{table}{after}</div>")
