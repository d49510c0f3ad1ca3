"""Where a chapter's numbers came from, said once per page.

Each section of a chapter records its provenance (:func:`record`: the stored runs it read, or what it computed
now) and the runs the store still lacks (:func:`missing`) instead of printing them where a reader meets the
finding. The page shows one line under its finding card, kept up to date as the sections record: how many runs,
code versions and machines, what was computed now, how many runs are missing, and a link to the appendix
(notebooks/16_sources.py), which lists every entry of every chapter from the JSON this module writes beside the
chapters' records (``<results>/sources/<stem>.json``).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from IPython.display import Markdown, display

from ..files import atomic_write_text
from ..paper.records import results_dir
from .figures import provenance_line
from .figures.html_tables import PROVENANCE_PREFIX as PREFIX, PROVENANCE_SEP as SEP

APPENDIX = "16_sources"     # the appendix page's stem (the link of each chapter's line)
SUBDIR = "sources"

_LEDGER: dict[str, Any] = {"stem": None, "entries": [], "missing": [], "handle": None}


def begin(stem: str) -> None:
    """Start the ledger of the chapter ``stem`` (e.g. "05_data") and show its one line, empty until sections
    record."""
    _LEDGER.update(stem=stem, entries=[], missing=[], handle=None)
    _LEDGER["handle"] = display(Markdown(line_text()), display_id=True)
    _save()


def _check_begun() -> None:
    if _LEDGER["stem"] is None:
        raise RuntimeError("sources.begin(stem) first: a chapter starts its ledger (findings.finding_card does) "
                           "before its sections record where their numbers came from")


def record(prov: Mapping[str, Any], what: str = "") -> None:
    """One section's provenance (:func:`sinkpaper.provenance.stamp` output, or
    :func:`sinkpaper.results.sweeps.payloads_provenance`'s; ``what``: what the section shows)."""
    _check_begun()
    entry = json.loads(json.dumps(dict(prov), default=str))
    _LEDGER["entries"].append({"what": what, "provenance": entry, "line": provenance_line(entry)})
    _refresh()


def missing(sweep, what: str = "") -> None:
    """The runs a sweep lacks, with the command that trains them, and those that diverged: a StoredSweep or an
    LMSweep (its ``missing`` is a StoredSweep)."""
    _check_begun()
    held = sweep if isinstance(sweep.missing, list) else sweep.missing   # the StoredSweep
    runs = held.missing
    if not runs and not held.diverged:
        return
    _LEDGER["missing"].append({"what": what or f"{sweep.config} ({sweep.profile} profile)",
                               "runs": [list(map(str, m)) for m in runs], "text": sweep.missing_text()})
    _refresh()


def _parts(line: str) -> list[str]:
    return line.removeprefix(PREFIX).split(SEP)


BUILD = "this build"


def build_parts(ledgers: Sequence[Mapping[str, Any]]) -> list[str]:
    """The parts of a provenance line (profile, device, code version, libraries, ...) that at least half of all
    sections share, in the order a line gives them: on a built book, the build's own machine and code. The
    appendix says them once, above the chapters, and a row holding every one of them says "this build"."""
    lines = [_parts(e["line"]) for led in ledgers for e in led["entries"]]
    if len(lines) < 2:
        return []
    counts: dict[str, int] = {}
    for parts in lines:
        for x in set(parts):
            counts[x] = counts.get(x, 0) + 1
    return [x for x in dict.fromkeys(x for parts in lines for x in parts) if 2 * counts[x] >= len(lines)]


def table_rows(ledger: Mapping[str, Any], build: Sequence[str] = ()) -> list[dict[str, Any]]:
    """A chapter's sections as the appendix lists them: one row per distinct provenance, numbering the sections
    that share it ("1, 3") and naming what each shows, so a chapter's own run, recorded by several sections,
    is printed once. A line that holds every part of ``build`` (:func:`build_parts`) says "this build" in their
    place; a line that holds only some keeps them."""
    by_line: dict[str, dict[str, Any]] = {}
    for i, e in enumerate(ledger["entries"], 1):
        row = by_line.setdefault(e["line"], {"#": [], "what": []})
        row["#"].append(str(i))
        if e["what"] and e["what"] not in row["what"]:
            row["what"].append(e["what"])
    rows = []
    for line, r in by_line.items():
        parts = _parts(line)
        if build and set(build) <= set(parts):
            parts = [BUILD] + [x for x in parts if x not in build]
        rows.append({"#": ", ".join(r["#"]), "what": "; ".join(r["what"]) or "\u2014", "provenance": SEP.join(parts)})
    return rows


def _counts() -> dict[str, Any]:
    runs = computed = 0
    versions, machines = set(), set()
    for e in _LEDGER["entries"]:
        p = e["provenance"]
        n = int(p.get("runs", 0) or 0)
        if p.get("computed_now") is True:
            computed += max(n, 1)
        else:
            runs += n
        versions |= {v for v in str(p.get("code_version") or "").split(", ") if v}
        hw = p.get("hardware", p.get("device"))
        if hw:
            # "X (4 runs); Y (8 runs)" from payloads_provenance: the machines, without run or thread counts
            machines |= {re.sub(r",? \d+ threads?$", "", h.split(" (")[0].strip()) for h in str(hw).split("; ")}
    n_missing = sum(len(m["runs"]) for m in _LEDGER["missing"])
    return {"stored": runs, "computed": computed, "versions": len(versions), "machines": sorted(machines),
            "missing": n_missing}


def line_text() -> str:
    """The page's one line of provenance."""
    c = _counts()
    parts = []
    if c["stored"]:
        parts.append(f"{c['stored']} stored run{'s' if c['stored'] != 1 else ''} read")
    if c["computed"]:
        parts.append(f"{c['computed']} computation{'s' if c['computed'] != 1 else ''} run now")
    if c["versions"]:
        parts.append(f"{c['versions']} code version{'s' if c['versions'] != 1 else ''}")
    if c["machines"]:
        parts.append("on " + ", ".join(c["machines"]))
    if c["missing"]:
        parts.append(f"{c['missing']} run{'s' if c['missing'] != 1 else ''} not stored yet")
    body = " · ".join(parts) if parts else "nothing recorded yet"
    return f"*Sources:* {body} · [every source, and the runs still missing]({APPENDIX}.ipynb)"


def _refresh() -> None:
    if _LEDGER["handle"] is not None:
        _LEDGER["handle"].update(Markdown(line_text()))
    _save()


def _save() -> None:
    path = results_dir() / SUBDIR / f"{_LEDGER['stem']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps({"stem": _LEDGER["stem"], "entries": _LEDGER["entries"],
                                        "missing": _LEDGER["missing"], "counts": _counts()}, indent=1) + "\n")


def load_all(directory: str | Path | None = None) -> list[dict]:
    """Every chapter's ledger, in chapter order (for the appendix)."""
    root = Path(directory or results_dir()) / SUBDIR
    return [json.loads(p.read_text()) for p in sorted(root.glob("*.json"))] if root.is_dir() else []
