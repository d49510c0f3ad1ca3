"""The sink against the held-out loss (sinkpaper.paper.budget): each change's runs beside its base's seeds, the
base's onset loss as a band, where each run stopped, the paper's number as a dashed level. A change whose runs end
left of the band has not reached the loss at which the base's sink formed ("not yet"); one that crosses the band
with no sink suppresses it."""
from __future__ import annotations

from typing import Mapping

import altair as alt

from .core import Columns, no_data_chart

ZOOM = 0.15  # nats above the base's onset losses shown: the runs' approach to the loss at which the sink forms


def sink_against_loss_chart(data: Mapping, paper: Mapping[str, float] | None = None, per_row: int = 3,
                            height: int = 130) -> "Columns | alt.Chart":
    """One small panel per change (``data`` from :func:`sinkpaper.paper.budget.sink_against_loss`): Sink_1 against
    the smoothed held-out loss, the axis reversed so that training runs left to right; base seeds grey, the
    change's seeds coloured, a dot where each run stopped, the base's onset losses (one per seed) as a band, the
    paper's Sink_1 for the change dashed. The panels share their axes and sit ``per_row`` to a row, each as wide as
    its share of the page (one to a row on a phone: :class:`.core.Columns`)."""
    rows = list(data["rows"])
    if not rows:
        return no_data_chart("Sink_1 against held-out loss", "no stored run of these changes", 320, height)
    onset = data["onset"]
    losses = [v for v in (onset.per_seed or {}).values() if v is not None]
    changes = list(dict.fromkeys(r["change"] for r in rows))
    # the stretch of training where the sink forms: from ZOOM nats above the base's onset losses (or from the
    # highest loss a run stopped at, so that every run's end stays in view) to the lowest loss any run reached;
    # the early, fast fall from the unigram level says nothing about the sink
    if losses:
        edge = max([max(losses) + ZOOM, *(r["loss"] for r in rows if r["last"])])
        rows = [r for r in rows if r["loss"] <= edge]
    domain = [max(r["loss"] for r in rows), min(r["loss"] for r in rows)] if rows else None
    x = alt.X("loss:Q", title="held-out loss, falling \u2192",
              scale=alt.Scale(domain=domain, zero=False, nice=False))
    y = alt.Y("sink_1:Q", title="Sink_1 %", scale=alt.Scale(domain=[0, 100]))
    color = alt.Color("role:N", scale=alt.Scale(domain=["base", "change", "running"],
                                                range=["#bab0ac", "#e45756", "#f58518"]),
                      legend=None)   # the caption names the colours: a legend per panel would repeat it
    tip = [alt.Tooltip("run:N"), alt.Tooltip("step:Q", format=","), alt.Tooltip("loss:Q", format=".3f"),
           alt.Tooltip("sink_1:Q", format=".1f", title="Sink_1 %")]

    def panel(change: str) -> alt.Chart:
        # each layer its own data (no shared table filtered by kind): a chart reader sees each mark's own rows
        evals = alt.Chart(alt.Data(values=[r for r in rows if r["change"] == change]))
        layers = [evals.mark_line(strokeWidth=1.2).encode(x=x, y=y, color=color, detail="run:N", order="step:Q",
                                                          tooltip=tip),
                  evals.transform_filter(alt.datum.last).mark_point(filled=True, size=30).encode(
                      x=x, y=y, color=color, tooltip=tip)]
        if losses:
            band = alt.Chart(alt.Data(values=[{"lo": min(losses), "hi": max(losses)}]))
            tips = [alt.Tooltip("lo:Q", format=".3f", title="base onset loss, lowest seed"),
                    alt.Tooltip("hi:Q", format=".3f", title="highest seed")]
            # one base seed (or seeds that agree) spans no width: a band of zero width would not show
            layers.insert(0, band.mark_rect(opacity=0.15, color="#0969da").encode(x="lo:Q", x2="hi:Q", tooltip=tips)
                          if max(losses) > min(losses) else
                          band.mark_rule(opacity=0.4, color="#0969da", strokeWidth=4).encode(x="lo:Q", tooltip=tips))
        if paper and change in paper:
            layers.append(alt.Chart(alt.Data(values=[{"who": "paper", "paper": paper[change]}]))
                          .mark_rule(strokeDash=[4, 3], color="#333")
                          .encode(y="paper:Q", tooltip=[alt.Tooltip("paper:Q", format=".2f",
                                                                    title="the paper's Sink_1 %")]))
        return alt.layer(*layers).properties(width="container", height=height,
                                             title=alt.TitleParams(change, fontSize=11))

    return Columns(*(panel(c) for c in changes), per_row=per_row)


def sink_against_loss_figure(changes: Mapping[str, tuple[str, str] | list[tuple[str, str]]], base: tuple[str, str],
                             scale: str, store=None, paper_source: str = "", as_figure: str = "",
                             running: bool = False):
    """The numbered figure of :func:`sink_against_loss_chart` for ``changes`` ({label: (config, point)}, or a list
    of them: :func:`sinkpaper.paper.budget.sink_against_loss`) against ``base`` at the text profile, with a caption
    read from the runs it draws (``scale``: "2 layers, 2,500 steps"), and the paper's Sink_1 for each label that has
    one. ``as_figure`` names an earlier figure of this chart whose caption says how to read it; the caption then
    says only what differs. With ``running``, runs still in training are drawn (orange) from their partial curves
    up to their last checkpoint."""
    from ...paper import budget, numbers
    from .core import Figure
    data = budget.sink_against_loss(changes, base, store=store, running=running)
    paper = {k: numbers.paper_value(k) for k in changes if k in numbers.NUMBERS}
    onset = data["onset"]
    finding = budget.budget_finding(data["readings"])
    finding = f"{finding} " if finding else ""
    per_seed = [v for v in (onset.per_seed or {}).values() if v is not None]
    # the onset loss is the lowest over the base's seeds: one seed's is an upper bound its other seeds may lower
    span = (f"{per_seed[0]:.3f}, one seed so far: its others may lower it" if len(per_seed) == 1
            else f"{min(per_seed):.3f}-{max(per_seed):.3f}") if per_seed else ""
    shown = [k for k in changes if k not in data["missing"]]
    missing = f" Not stored yet: {', '.join(data['missing'])}." if data["missing"] else ""
    if data.get("left_out"):   # runs every reading leaves out (they spiked or did not learn), named
        missing += f" Left out: {'; '.join(data['left_out'])}."
    if data["running"]:
        at = (f"{k} at step {'/'.join(f'{v:,}' for v in steps)}" for k, steps in data["running"].items())
        missing = f" In training (orange, to its last checkpoint): {', '.join(at)}.{missing}"
    if as_figure:
        band = (f"blue: the base's onset loss, {span}" if onset.loss is not None else f"no band: {onset.why}")
        caption = (f"{finding}As {as_figure}, at {scale}: {', '.join(shown) or 'no change stored yet'} beside the base "
                   f"{base[1]} ({band}).{missing}")
        return Figure(sink_against_loss_chart(data, paper), caption)
    band = (f"the blue band spans the held-out losses at which the base's seeds formed their sink "
            f"({span}; the guard reads 'no sink' only past {onset.loss:.3f})"
            if onset.loss is not None else f"no band: {onset.why}")
    caption = (f"{finding}Sink_1 against held-out loss (each evaluation's, averaged with its neighbours) at {scale}: "
               f"{', '.join(shown)} (red, one line per seed) beside the base {base[1]} (grey); {band}; a dot marks "
               f"where each run stopped; dashed: the paper's Sink_1 for the change"
               f"{f' ({paper_source})' if paper_source else ''}. "
               "A run that stops left of the band reads not yet; one past it with no sink, a suppression at this scale."
               + missing)
    return Figure(sink_against_loss_chart(data, paper), caption)
