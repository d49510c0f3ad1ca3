"""Sink = gate: softmax with a sink logit b_h in its denominator is plain softmax scaled by sigmoid(LSE - b_h), a
gate that depends on the query, as gated attention's sigmoid(x W_g) does. Each evaluation of such a model records
every head's gate as quantiles over the held-out queries (``gate_quantiles``: [layer][head][10th, 50th, 90th
percentile]); this draws them at a run's last evaluation, one row per head, the designs side by side."""
from __future__ import annotations

from typing import Mapping, Sequence

import altair as alt

from ...results.reading import point_of
from .core import no_data_chart


def gate_rows(payloads: Sequence[Mapping], points: Sequence[str],
              labels: Mapping[str, str] | None = None) -> list[dict]:
    """Per run of ``points`` and head, at its last evaluation that records gates: {"design", "seed", "head" ("layer
    l, head h", from 1), "p10", "p50", "p90", "step"}. A run that records none gives no row."""
    labels = labels or {}
    out = []
    for p in payloads:
        pt = point_of(p)
        if pt not in points:
            continue
        last = next((c for c in reversed(p.get("curve", [])) if c.get("gate_quantiles")), None)
        if last is None:
            continue
        for li, layer in enumerate(last["gate_quantiles"]):
            for hi, (p10, p50, p90) in enumerate(layer):
                out.append({"design": labels.get(pt, pt), "seed": p["config"]["run"]["seed"],
                            "head": f"layer {li + 1}, head {hi + 1}", "p10": p10, "p50": p50, "p90": p90,
                            "step": last["step"]})
    return out


def gate_chart(rows: Sequence[Mapping], title: str) -> alt.Chart | alt.FacetChart:
    """Each head's gate over the queries: a bar from its 10th to its 90th percentile and a dot at the median, a
    seed per colour, one panel per design, stacked so a phone's column holds them (1 lets everything through, 0
    nothing)."""
    if not rows:
        return no_data_chart(title, "no stored run records its gates yet", 320, 100)
    heads = list(dict.fromkeys(r["head"] for r in rows))
    x = alt.X("p10:Q", scale=alt.Scale(domain=[0, 1]), title="gate (10th-90th percentile, dot: median)")
    seed = alt.Color("seed:N", title="seed", legend=alt.Legend(orient="bottom"))
    y = alt.Y("head:N", sort=heads, title=None)
    yo = alt.YOffset("seed:N")
    tip = ["design:N", "head:N", "seed:N", alt.Tooltip("p10:Q", format=".3f"), alt.Tooltip("p50:Q", format=".3f"),
           alt.Tooltip("p90:Q", format=".3f"), alt.Tooltip("step:Q", title="at step", format=",")]
    base = alt.Chart().encode(y=y, yOffset=yo, color=seed, tooltip=tip)
    layer = alt.layer(base.mark_rule(strokeWidth=2).encode(x=x, x2="p90:Q"),
                      base.mark_point(filled=True, size=30).encode(x=alt.X("p50:Q", scale=alt.Scale(domain=[0, 1]))))
    return layer.properties(width=260, height=max(80, 18 * len(heads))).facet(
        row=alt.Row("design:N", title=None, header=alt.Header(labelAngle=0, labelAlign="left", labelOrient="top")),
        data=alt.Data(values=list(rows)), title=title)


def gate_caption(rows: Sequence[Mapping]) -> str:
    """What :func:`gate_chart` shows, from its rows: per design, the median gate's range over heads and seeds, and
    how many heads close (a median gate below 0.5) in every seed."""
    if not rows:
        return ("No stored run records its gates yet: the onsets family's gated and sink-logit runs record them at "
                "every evaluation, and the figure fills in as they land.")
    said = []
    for design in dict.fromkeys(r["design"] for r in rows):
        mine = [r for r in rows if r["design"] == design]
        seeds = sorted({r["seed"] for r in mine})
        heads = sorted({r["head"] for r in mine})
        closed = [h for h in heads if all(r["p50"] < 0.5 for r in mine if r["head"] == h)]
        said.append(f"{design}: median gates {min(r['p50'] for r in mine):.2f}-{max(r['p50'] for r in mine):.2f} "
                    f"over {len(heads)} heads and {len(seeds)} seed{'s' if len(seeds) != 1 else ''}, "
                    f"{len(closed)} head{'s' if len(closed) != 1 else ''} mostly closed (median < 0.5) in every seed")
    return "Each head's gate over the held-out queries at the last evaluation. " + ". ".join(
        x[0].upper() + x[1:] for x in said) + "."
