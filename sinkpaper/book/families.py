"""Claims read on one chart: a family of the registry's claims that share their reference point (the FFN types
against SwiGLU, the head counts against 8 heads, the softmax row sums against 1) is one row of a finding card, each
claim with its own verdict beside one chart of all their points.

A claim joins a family by naming its lead (``Claim.chart_with``); the chart draws the union of the family's points,
each label once (a label two claims share, such as the base, is the same runs in both)."""
from __future__ import annotations

from typing import Mapping, Sequence


def families(entries: Sequence[Mapping]) -> list[list[Mapping]]:
    """The entries grouped, in order: a claim whose ``chart_with`` names a claim among ``entries`` joins it (the
    lead first, the family where its first member stands); every other claim alone."""
    ids = {e["id"] for e in entries}
    groups: dict[str, list[Mapping]] = {}
    for e in entries:
        lead = e.get("chart_with")
        groups.setdefault(lead if lead in ids else e["id"], []).append(e)
    return [sorted(g, key=lambda e, k=k: e["id"] != k) for k, g in groups.items()]


def joined(group: Sequence[Mapping]) -> Mapping:
    """One listing entry whose paper values and results are the union of the family's (the lead's fields
    otherwise), for :func:`sinkpaper.book.findings.claim_chart`; a family of one is its claim."""
    if len(group) == 1:
        return group[0]
    lead = group[0]
    paper: dict = {}
    for e in group:
        for k, v in (e["paper"]["values"] or {}).items():
            paper.setdefault(k, v)
    results = {}
    for s in dict.fromkeys(s for e in group for s in (e.get("results") or {})):
        parts = [(e.get("results") or {}).get(s) or {} for e in group]
        r: dict = {"values": {}, "seed_values": {}, "seeds_of": {},
                   "seeds": next((p["seeds"] for p in parts if p.get("seeds")), [])}
        for p in parts:
            for k, v in (p.get("values") or {}).items():
                r["values"].setdefault(k, v)
            for k, v in (p.get("seed_values") or {}).items():
                r["seed_values"].setdefault(k, v)
                r["seeds_of"].setdefault(k, (p.get("seeds_of") or {}).get(k) or p.get("seeds") or [])
        results[s] = r
    return {**lead, "paper": {**lead["paper"], "values": paper}, "results": results}
