"""The scorecard's table, compact enough to read at a glance: one row per claim, fitting a 1280-pixel window.

Input: the claims listing, as ``python -m sinkpaper claims --json`` prints it (``sinkpaper.paper.listing()``):
a list of entries ``{"id", "section", "chapter", "claim", "kind", "paper": {"source", "values"}, "rule",
"bos", "bos_why", "results": {scale: {"measurement", "values", "verdict", "status", "note", ...}}, "note"}``.
This module reads only that JSON shape (it imports nothing that decides a verdict), so the page shows exactly
what the listing says.

Each row: a short claim (the full text, the rule and every note in a collapsed detail under it), the paper's
number, and per scale (real pretrained LMs, real text at CPU scale, miniature) our value with its verdict as a
coloured word; the measurement, its provenance and notes sit in the cell's tooltip. The last column links to
the chapter. Above the table, the counts of each verdict per scale. The table has a fixed layout at 100 % of
the page's width and wraps every cell, so it never scrolls sideways.
"""
from __future__ import annotations

import html
import re
from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

SCALES = ("real LMs", "real text (CPU)", "miniature")
SCALE_TITLES = {"real LMs": "real pretrained LMs", "real text (CPU)": "real text (CPU scale)",
                "miniature": "miniature"}
VERDICTS = ("agrees", "disagrees", "inconclusive", "not comparable", "no result")
MARKS = {"agrees": "\u2713 agrees", "disagrees": "\u2717 disagrees", "inconclusive": "? inconclusive",
         "not comparable": "\u2248 not comparable", "no result": "\u2013 no result"}
WHY = 110  # characters of an inconclusive verdict's reason shown in its cell; the whole reason is in the tooltip
SHORT_CLAIM = 72  # characters of the claim shown in the row; the full text is in the detail
CSS = """
.spx-card{width:100%;max-width:100%;overflow-wrap:break-word;font-size:.86em}
.spx-card table{width:100%;max-width:100%;table-layout:fixed;border-collapse:collapse;margin:.4em 0}
.spx-card th,.spx-card td{padding:.25em .35em;vertical-align:top;border-bottom:1px solid #ddd;
  overflow-wrap:break-word;white-space:normal}
.spx-card th{text-align:left;font-weight:600}
.spx-card col.c-claim{width:30%} .spx-card col.c-paper{width:13%} .spx-card col.c-scale{width:17%}
.spx-card col.c-ch{width:6%}
.spx-card details summary{cursor:pointer}
.spx-card details div{font-size:.92em;color:#444;margin:.2em 0 .3em 0}
.spx-card .v{display:block;font-weight:600;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.spx-card .n{display:block;color:#444}
.spx-card .agrees{color:#1a7f37} .spx-card .disagrees{color:#cf222e}
.spx-card .inconclusive{color:#8250df} .spx-card .why{font-size:.9em;color:#6e7781}
.spx-card .not-comparable{color:#9a6700} .spx-card .no-result{color:#6e7781;font-weight:400}
.spx-card .sum td,.spx-card .sum th{text-align:right} .spx-card .sum td:first-child,.spx-card .sum th:first-child{text-align:left}
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _num(v: Any) -> str:
    if v is None:
        return "\u2014"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    return f"{v:.3g}" if abs(v) < 1 else f"{v:.4g}" if abs(v) < 1000 else f"{v:.3e}"


def compact_values(values: Mapping[str, Any] | None) -> str:
    """A cell's worth of numbers: one value as is, several as ``min–max (n values)``; '' for none."""
    nums = [v for v in (values or {}).values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if not values:
        return ""
    if len(values) == 1:
        return _num(next(iter(values.values())))
    if not nums:
        return f"{len(values)} values"
    lo, hi = min(nums), max(nums)
    missing = len(values) - len(nums)
    return (f"{_num(lo)}\u2013{_num(hi)}" if lo != hi else _num(lo)) + f" ({len(values)} values" + (
        f", {missing} missing)" if missing else ")")


def all_values(values: Mapping[str, Any] | None) -> str:
    return "; ".join(f"{k}: {_num(v)}" for k, v in (values or {}).items())


def short_claim(text: str, limit: int = SHORT_CLAIM) -> str:
    """The claim up to its first colon or semicolon, cut at a word boundary near ``limit`` characters."""
    head = text
    for sep in (": ", "; ", " (", ", hence"):
        if sep in head and head.index(sep) >= 20:
            head = head[: head.index(sep)]
    if len(head) > limit:
        head = head[:limit].rsplit(" ", 1)[0].rstrip(",;:") + " \u2026"
    return head


def verdict_of(result: Mapping) -> str:
    v = result.get("verdict") or "no result"
    return v if v in VERDICTS else "no result"


def counts(entries: Iterable[Mapping]) -> dict[str, Counter]:
    """Per scale, how many claims read each verdict."""
    out = {s: Counter() for s in SCALES}
    for e in entries:
        for s in SCALES:
            out[s][verdict_of(e.get("results", {}).get(s, {}))] += 1
    return out


def _provenance_text(prov: Any) -> str:
    if not prov:
        return ""
    if isinstance(prov, Mapping):
        keep = ("profile", "device", "hardware", "code_version", "commit", "computed_now", "timestamp",
                "computed_at", "n_samples", "seq_len", "model")
        items = [(k, prov[k]) for k in keep if prov.get(k) not in (None, "")]
        items += [(k, v) for k, v in prov.items() if k not in keep and isinstance(v, (str, int, float, bool))]
        return ", ".join(f"{k}={v}" for k, v in items[:12])
    return str(prov)


def cell_tooltip(scale: str, result: Mapping) -> str:
    """Everything behind one scale's cell: the measurement, all values, status, note, provenance, stored runs."""
    parts = [f"{SCALE_TITLES.get(scale, scale)}: {result.get('measurement', '')}"]
    if result.get("values"):
        parts.append("values: " + all_values(result["values"]))
    if result.get("why"):
        parts.append(f"why {result.get('verdict')}: {result['why']}")
    if result.get("status") not in (None, "found"):
        parts.append(f"status: {result['status']}")
    if result.get("setting"):
        parts.append(f"setting: {result['setting']}")
    if result.get("note"):
        parts.append(f"note: {result['note']}")
    prov = _provenance_text(result.get("provenance"))
    if prov:
        parts.append(f"provenance: {prov}")
    if result.get("runs"):
        parts.append(f"stored runs: {', '.join(result['runs'][:8])}" + (" \u2026" if len(result["runs"]) > 8 else ""))
    return "\n".join(p for p in parts if p)


def _scale_cell(scale: str, result: Mapping) -> str:
    v = verdict_of(result)
    shown = compact_values(result.get("values"))
    if not shown:
        status = result.get("status")
        shown = {"found": "(in the detail)", "not run": "not run", "missing": "not stored yet" if "store" in str(result.get("measurement", ""))
                 else "no record"}.get(status, status or "")
    why = str(result.get("why") or "")
    why = why if len(why) <= WHY else why[:WHY].rsplit(" ", 1)[0] + " \u2026"
    return (f'<td title="{_e(cell_tooltip(scale, result))}"><span class="v {v.replace(" ", "-")}">'
            f'{_e(MARKS[v])}</span><span class="n">{_e(shown)}</span>'
            + (f'<span class="n why">{_e(why)}</span>' if why else "") + "</td>")


def _detail(e: Mapping) -> str:
    bits = [f"<b>{_e(e.get('claim', ''))}</b>"]
    if e.get("rule"):
        bits.append(f"Rule: {_e(e['rule'])}")
    if e.get("bos") is not None:
        bits.append(f"BOS {'on' if e['bos'] else 'off'}: {_e(e.get('bos_why') or '')}")
    if e.get("paper", {}).get("values"):
        bits.append(f"Paper ({_e(e['paper'].get('source', ''))}): {_e(all_values(e['paper']['values']))}")
    if e.get("note"):
        bits.append(_e(e["note"]))
    for s in SCALES:
        r = e.get("results", {}).get(s, {})
        if r.get("status") != "not run":
            bits.append(_e(cell_tooltip(s, r)).replace("\n", "; "))
    return "<br>".join(bits)


def _paper_cell(e: Mapping) -> str:
    paper = e.get("paper", {})
    shown = compact_values(paper.get("values")) or ("check" if e.get("kind") == "check" else "qualitative")
    title = f"{paper.get('source', '')}" + (f": {all_values(paper['values'])}" if paper.get("values") else "")
    return f'<td title="{_e(title)}">{_e(shown)}</td>'


def summary_html(entries: Sequence[Mapping]) -> str:
    c = counts(entries)
    head = "".join(f'<th><span class="{v.replace(" ", "-")}">{_e(MARKS[v])}</span></th>' for v in VERDICTS)
    rows = "".join(f"<tr><td>{_e(SCALE_TITLES[s])}</td>" + "".join(f"<td>{c[s].get(v, 0)}</td>" for v in VERDICTS)
                   + "</tr>" for s in SCALES)
    return (f'<table class="sum"><thead><tr><th>{len(entries)} claims</th>{head}</tr></thead>'
            f"<tbody>{rows}</tbody></table>")


def table_html(entries: Sequence[Mapping], href: str = "{chapter}.html") -> str:
    cols = ('<colgroup><col class="c-claim"><col class="c-paper">' + '<col class="c-scale">' * len(SCALES)
            + '<col class="c-ch"></colgroup>')
    head = ("<thead><tr><th>claim (\u25b8 details)</th><th>paper</th>"
            + "".join(f"<th>{_e(SCALE_TITLES[s])}</th>" for s in SCALES) + "<th>ch.</th></tr></thead>")
    body = []
    for e in entries:
        chapter = str(e.get("chapter", ""))
        # a claim no chapter runs (chapter "not run") links nowhere: a dash that says so, not a page that is absent
        link = (f'<a href="{_e(href.format(chapter=chapter))}" title="{_e(chapter)}">{_e(chapter[:2])}</a>'
                if re.fullmatch(r"\d\d_\w+", chapter) else
                f'<span title="{_e(chapter or "no chapter")}: no chapter runs it">\u2014</span>')
        body.append(
            f'<tr id="claim-{_e(e.get("id", ""))}"><td><details><summary>{_e(short_claim(str(e.get("claim", ""))))}'
            f"</summary><div>{_detail(e)}</div></details></td>{_paper_cell(e)}"
            + "".join(_scale_cell(s, e.get("results", {}).get(s, {})) for s in SCALES)
            + f"<td>{link}</td></tr>")
    return f"<table>{cols}{head}<tbody>{''.join(body)}</tbody></table>"


class Scorecard:
    """The scorecard (summary counts, then one row per claim) as notebook output: HTML, or Markdown elsewhere."""

    def __init__(self, entries: Sequence[Mapping], href: str = "{chapter}.html"):
        self.entries = list(entries)
        self.href = href

    def counts(self) -> dict[str, Counter]:
        return counts(self.entries)

    def _repr_html_(self) -> str:
        return (f'<div class="spx-card"><style>{CSS}</style>{summary_html(self.entries)}'
                f"{table_html(self.entries, self.href)}</div>")

    def to_markdown(self) -> str:
        lines = ["| claim | paper | " + " | ".join(SCALE_TITLES[s] for s in SCALES) + " | chapter |",
                 "|---|---|" + "---|" * len(SCALES) + "---|"]
        for e in self.entries:
            cells = [short_claim(str(e.get("claim", ""))),
                     compact_values(e.get("paper", {}).get("values")) or "qualitative"]
            for s in SCALES:
                r = e.get("results", {}).get(s, {})
                cells.append(f"{verdict_of(r)} {compact_values(r.get('values'))}".strip()
                             + (f" ({r['why']})" if r.get("why") else ""))
            cells.append(str(e.get("chapter", "")))
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        return "\n".join(lines)
