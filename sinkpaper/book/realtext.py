"""The section each training chapter (4-9) leads with: its family's real-text runs, beside the paper.

At the ``cpu`` profile a chapter trains none of these; it reads the ``text`` profile's runs from the results store
(2 layers, trained on the offline corpus on one CPU thread each, by ``scripts/sweep_text.sh``). At ``gpu`` or
``paper`` the same section shows what the chapter trained. What one section shows, from the runs alone:

* the recipe, read from the stored configs (nothing typed here);
* one row per point of the paper's table: Sink_1 mean [min, max] over seeds, alpha_1, the held-out loss, Sink*
  where a bias or extra position can hold the sink, and the paper's number;
* Sink_1 over training (the emergence curve) of the points the paper plots: the mean over seeds as a line, the
  min-max as a band, the paper's final number as a dashed level where it gives one;
* the per-(layer, head) alpha_1 map of the final evaluation, like the paper's appendix figures;
* where its runs came from and what the store still lacks, to the chapter's sources (:mod:`.sources`).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import altair as alt

from IPython.display import Markdown, display

from ..paper import DEFAULT_ALIASES, NUMBERS, SINK, paper_text, paper_value
from ..paper.lookup import GUARD_BASE, PROFILE_OF, onset_loss_of
from ..results.curves import curve_rows as run_curve_rows, first_reaching
from ..results.numbers import fmt_spread, seeds_text, sig
from ..results.reading import failure_word, point_of, training_failure
from ..results.sweeps import LMSweep, lm_sweep
from . import sources
from .findings import PAPER_COLOR, SCALE_COLORS
from .figures import (Figure, Fold, band_chart, book_values, figure, heatmap, paper_number, row, seed_rows, sweep_caption,
                      sweep_chart)
from .tables import PLATEAU_NOTE, points_table


OURS_COLOR = SCALE_COLORS["real text (CPU)"]  # the maps' bars: ours in the real-text colour, the paper black


def recipe(payload: Mapping) -> str:
    """One sentence: the stored run's model, data and optimizer, and whether its first token is fixed."""
    c = payload["config"]
    m, d, o, r = c["model"], c["data"], c["optim"], c["run"]
    steps = int(round(o["steps"] * o.get("steps_scale", 1.0)))
    batch = int(round(o["batch_size"] * o.get("batch_scale", 1.0)))
    tokens = payload["result"]["tokens_seen"]
    source = "the offline corpus" if d.get("source") == "corpus" else f"`{d.get('dataset') or d.get('source')}`"
    first = (f"a fixed first token (`{d['fixed_token']}`) at position {d['fixed_pos']}"
             if d.get("fixed_token") else "no fixed first token (the paper's default packing)")
    return (f"{m['n_layers']} layers x {m['n_heads']} heads, d {m['d_model']}, FFN {m['d_ff']}; context "
            f"{d['context']}, batch {batch}, LR {o['lr'] * o.get('lr_scale', 1.0):g}, weight decay "
            f"{o['weight_decay']:g}, {steps} steps ({tokens:,} tokens of {source}), {r['dtype']} on "
            f"{r.get('threads') or 'all'} CPU thread(s); {first}; {c['eval']['n_samples']} held-out "
            f"{c['eval']['seq_len']}-token sequences, epsilon {c['eval']['epsilon']}.")


def curve_rows(payloads: Sequence[Mapping], points: Sequence[str]) -> list[dict]:
    """Sink_1 and alpha_1 at every evaluation of every run of ``points``, each row with its point and seed."""
    return seed_rows(payloads, lambda p, label: run_curve_rows(p, label, ("Sink_1", "alpha_1")), points)


def paper_levels(points: Sequence[str]) -> dict[str, float]:
    """The paper's Sink_1 % at the end of training for each point it gives one for (:mod:`sinkpaper.paper`);
    a point without one is left out, never filled in."""
    return {pt: paper_value(pt) for pt in points if pt in NUMBERS or pt in DEFAULT_ALIASES}


def emergence_caption(payloads: Sequence[Mapping], points: Sequence[str], levels: Mapping[str, float],
                      profile: str) -> str:
    """The emergence figure's caption, its finding first: each point's Sink_1 on its plateau (mean [min, max]
    over its seeds, the seeds said once where every point has the same) beside the paper's number where it gives
    one; then what limits the comparison and how to read the chart."""
    read = {pt: book_values(payloads, pt, "Sink_1")[0] for pt in points}
    read = {pt: sv for pt, sv in read.items() if sv}
    counts = {len(sv) for sv in read.values()}
    same = lambda vs: len(vs) > 1 and f"{min(vs):.1f}" == f"{max(vs):.1f}"  # noqa: E731
    parts = [(f"{pt} {sv[0][1]:.1f} % in every seed" if same([v for _, v in sv]) else
              f"{pt} {fmt_spread([v for _, v in sv])} %")
             + ("" if len(counts) == 1 else f" ({seeds_text([sd for sd, _ in sv])})")
             + (f" (paper {levels[pt]:.2f} %)" if pt in levels else "") for pt, sv in read.items()]
    n = counts.pop() if len(counts) == 1 else 0
    over = ", one seed" if n == 1 else f", mean [min, max] over {f'{n} ' if n else ''}seeds"
    unlike = fixed_token_caveat(payloads, levels)
    cap = sink_layer_cap([p for p in payloads if point_of(p) in points])
    capped = (f" Only layer{'s' if ',' in cap[1] else ''} {cap[1]} hold{'' if ',' in cap[1] else 's'} sink heads, "
              f"so Sink_1 tops out near {sig(cap[0])} %: compare direction, not size." if cap and cap[0] < 100 else "")
    return (f"Sink_1 on the plateau ({profile} profile{over}): " + "; ".join(parts) + "."
            + unlike + capped + " Line: mean; band: min-max (hover: each seed); dashed: the paper's final Sink_1.")


def fixed_token_caveat(payloads: Sequence[Mapping], levels: Mapping[str, float]) -> str:
    """The sentence that says which of our points fix the first token where the paper's number for them comes
    from runs without one (the paper fixes one only at its Section-5 fixed-token points); "" if none."""
    fixed = [pt for pt in levels if not pt.startswith("fixed_pos")
             and any(p["config"]["data"].get("fixed_token") for p in payloads if point_of(p) == pt)]
    shown = [pt for pt in levels if not pt.startswith("fixed_pos") and any(point_of(p) == pt for p in payloads)]
    which = "" if fixed == shown else f" ({', '.join(fixed)})"
    return (f" Ours fix the first token{which}; the paper's runs did not." if fixed else "")


def sink_layer_cap(payloads: Sequence[Mapping]) -> tuple[float, str] | None:
    """(the largest Sink_1 % the runs' sink layers allow, those layers) from every run's last alpha_1 map: a head
    whose mean alpha_1 passes epsilon holds a sink, and a layer where none ever does caps Sink_1 below 100 %.
    None when no run has a map or none has a sink head."""
    layers, shapes = set(), set()
    for p in payloads:
        m = p["result"].get("alpha_1_matrix")
        if not m:
            continue
        shapes.add((len(m), len(m[0])))
        eps = p["config"]["eval"]["epsilon"]
        layers |= {i for i, layer in enumerate(m) if any(a > eps for a in layer)}
    if not layers or len(shapes) != 1:   # no sink head, or models of different depths: no one cap
        return None
    return 100.0 * len(layers) / shapes.pop()[0], ", ".join(str(i) for i in sorted(layers))


def alpha_maps(payloads: Sequence[Mapping], points: Sequence[str], size: int = 46) -> list:
    """The final evaluation's alpha_1 per (layer, head) of the first stored seed of each point, a dot on each head
    whose mean alpha_1 passes epsilon, then one bar chart: each map's Sink_1 beside the paper's number for the
    point (:func:`paper_levels`; a point the paper gives no number for has no paper bar)."""
    charts, bars = [], []
    levels = paper_levels(points)
    for pt in points:
        ps = sorted((p for p in payloads if point_of(p) == pt), key=lambda p: p["config"]["run"]["seed"])
        if not ps or not ps[0]["result"].get("alpha_1_matrix"):
            continue
        m, r = ps[0]["result"]["alpha_1_matrix"], ps[0]["result"]
        seed, eps = ps[0]["config"]["run"]["seed"], ps[0]["config"]["eval"]["epsilon"]
        heat = heatmap(m, "head", "layer (0 = first)", f"{pt}, seed {seed}: alpha_1", value_title="alpha_1",
                       domain=(0, 1), width=size * len(m[0]), height=max(size * len(m), 40))
        sinks = [{"x": j, "y": i} for i, layer in enumerate(m) for j, a in enumerate(layer) if a > eps]
        if sinks:
            heat = alt.layer(heat, alt.Chart(alt.Data(values=sinks)).mark_point(
                shape="circle", filled=True, size=30, color="white").encode(x="x:O", y="y:O"))
        charts.append(heat)
        bars.append({"point": pt, "who": "ours (the map)", "v": r["sink_k"]["1"]})
        if pt in levels:
            bars.append({"point": pt, "who": "paper", "v": levels[pt]})
    if bars:
        who = ["ours (the map)"] + (["paper"] if any(b["who"] == "paper" for b in bars) else [])
        charts.append(alt.Chart(alt.Data(values=bars), title="Sink_1 (%): each map and the paper").mark_bar().encode(
            x=alt.X("v:Q", title="Sink_1 %", scale=alt.Scale(domain=[0, 100])),
            y=alt.Y("point:N", sort=list(dict.fromkeys(b["point"] for b in bars)), title=None),
            yOffset=alt.YOffset("who:N", sort=who),
            color=alt.Color("who:N", scale=alt.Scale(domain=who, range=[OURS_COLOR, PAPER_COLOR][:len(who)]),
                            title=None, legend=alt.Legend(orient="bottom", columns=1)),
            tooltip=["point:N", alt.Tooltip("who:N", title="source"),
                     alt.Tooltip("v:Q", title="Sink_1 %", format=".4g")],
        ).properties(width=200, height=max(22 * len(bars), 60)))
    return charts


def maps_caption(payloads: Sequence[Mapping], points: Sequence[str]) -> str:
    """Which layer holds the sink heads in each map (the heads above epsilon per layer of the first seed), and
    that map's Sink_1 beside the paper's number for the point, or that the paper gives none."""
    parts, levels = [], paper_levels(points)
    for pt in points:
        ps = sorted((p for p in payloads if point_of(p) == pt), key=lambda p: p["config"]["run"]["seed"])
        if not ps or not ps[0]["result"].get("alpha_1_matrix"):
            continue
        m, eps = ps[0]["result"]["alpha_1_matrix"], ps[0]["config"]["eval"]["epsilon"]
        per_layer = [sum(1 for a in layer if a > eps) for layer in m]
        where = ", ".join(f"{n}/{len(layer)}" for n, layer in zip(per_layer, m))
        paper = f"paper {levels[pt]:.2f} %" if pt in levels else "the paper gives no number"
        parts.append(f"{pt} (seed {ps[0]['config']['run']['seed']}): sink heads {where} by layer, "
                     f"Sink_1 {sig(ps[0]['result']['sink_k']['1'])} % ({paper})")
    return ("alpha_1 of every layer and head at the last evaluation, one seed per point; a dot: a head whose mean "
            "alpha_1 passes epsilon (a sink head); bars: the run's Sink_1 (read per held-out sequence, so not quite "
            "the share of dots) beside the paper's. " + "; ".join(parts) + ".")


def own_position(payloads: Sequence[Mapping], positions: Mapping[str, int], title: str,
                 diverged: Sequence[tuple[str, int, str]] = ()) -> tuple[Figure, list[dict]]:
    """Points each read at their own position k (``positions``: {point: k}, e.g. a fixed token at 2 read at k = 2):
    a figure of Sink_k and the mean alpha_k over training (seeds as bands, the paper's Sink_k of the point's
    family member without the suffix after its first "_layers" as a dashed level), and one table row per point
    (Sink_k on the plateau over seeds, the paper's number, the onset per seed: the first evaluation at which Sink_k
    reaches the registry's "has a sink" level). Runs that did not learn (:func:`training_failure`) and runs that
    diverged (``diverged``: a StoredSweep's (point, seed, error)) are named in the row, never read as values."""
    failed = {(point_of(p), p["config"]["run"]["seed"]): failure_word(why)
              for p in payloads if (why := training_failure(p))}
    failed |= {(pt, sd): f"diverged ({err})" for pt, sd, err in diverged}
    payloads = [p for p in payloads if (point_of(p), p["config"]["run"]["seed"]) not in failed]
    def at_own(p, label):
        k = positions[point_of(p)]
        return [{**r, "Sink at its position %": r[f"Sink_{k} %"], "alpha at its position": r[f"alpha_{k}"]}
                for r in run_curve_rows(p, label, (f"Sink_{k}", f"alpha_{k}"))]

    def base_of(pt: str) -> str:   # fixed_pos2_layers_4 -> fixed_pos2: the paper's point of the same position
        return pt.split("_layers")[0]

    named = {pt: f"{pt} (k = {k})" for pt, k in positions.items()}
    rows = [{**r, "point": named[r["point"]]} for r in seed_rows(payloads, at_own, list(positions))]
    paper = {named[pt]: v for pt, k in positions.items() if (v := paper_number(base_of(pt), f"Sink_{k}")) is not None}
    table, said = [], []
    for pt, k in positions.items():
        ps = [p for p in payloads if point_of(p) == pt]
        out = sorted((sd, why) for (fp, sd), why in failed.items() if fp == pt)
        if not ps and not out:
            continue
        vals = [v for _, v in book_values(ps, pt, f"Sink_{k}")[0]]
        onsets = sorted((p["config"]["run"]["seed"], first_reaching(p["curve"], k, SINK)) for p in ps)
        onset = ", ".join([f"seed {sd}: " + (f"step {e['step']}" if e else "never") for sd, e in onsets]
                          + [f"seed {sd}: {why}, not counted" for sd, why in out])
        pv = paper_number(base_of(pt), f"Sink_{k}")
        shown = fmt_spread(vals) if vals else "\u2014"
        table.append({"point": pt, "k": k, "Sink_k % (plateau)": shown,
                      "paper": f"{pv:.2f}" if pv is not None else "\u2014", f"onset (Sink_k >= {SINK:g} %)": onset})
        said.append(f"{pt}: Sink_{k} {shown} % ({onset})")
    fig = Figure(band_chart(rows, "Sink at its position %", f"{title}: Sink_k at its position (%)",
                            y_domain=(0, 100), paper=paper,
                            also=[("alpha at its position", f"{title}: mean alpha_k at its position")]),
                 f"{title}, each point at its own position k (mean over seeds, min-max band; dashed: the paper's "
                 "number at that position). On the plateau: " + "; ".join(said) + ".")
    return fig, table


def section(lm: LMSweep, order: Sequence[str], paper: Mapping[str, str] | None = None,
            curves: Sequence[str] = ("default",), maps: Sequence[str] = ("default",), sink_star: bool = False,
            ks: Sequence[int] = (1,), changes: Mapping[str, str] | None = None, base: str = "default",
            table: Any = None) -> list[Any]:
    """What a chapter displays, in order, for its family's real-text (or trained) runs. Points of ``order``
    without a stored run are left out of the table and listed, with the command, at the end. ``table``: a
    chapter's own per-point table to show instead of :func:`.tables.points_table`'s."""
    out: list[Any] = []
    ps = lm.payloads
    if ps:
        ref = next((p for p in ps if point_of(p) == base), ps[0])
        if paper is not None and (base == "default" or base in DEFAULT_ALIASES) and base in paper \
                and ref["config"]["data"].get("fixed_token") and ref["config"]["data"].get("fixed_pos") == 1:
            # the paper's base run packs without a fixed token; ours fixes one, as its fixed_pos1 point does
            paper = {**paper, base: f"{paper[base]} (no fixed token); {paper_text('fixed_pos1')} with one at 1"}
        # the recipe and the per-seed table, folded: the finding card above and the figures below read them
        out.append(Fold(f"The runs ({lm.profile} profile): the recipe, and every point over its seeds",
                        Markdown(f"`{point_of(ref)}`: {recipe(ref)} Every other point changes one thing "
                                 "(`configs/` has each exact form). " + PLATEAU_NOTE),
                        table if table is not None else
                        points_table(ps, order, ks=ks, changes=changes, paper=paper, sink_star=sink_star,
                                     held_out=True)))
        shown = [pt for pt in curves if any(point_of(p) == pt for p in ps)]
        if shown:
            rows = curve_rows(ps, shown)
            levels = paper_levels(shown)
            out.append(Figure(band_chart(rows, "Sink_1 %", "Sink_1 (%) over training", y_title="Sink_1 %",
                                         y_domain=(0, 100), paper=levels,
                                         also=[("alpha_1", "mean alpha_1 over training")]),
                              emergence_caption(ps, shown, levels, lm.profile)))
        heat = alpha_maps(ps, maps)
        if heat:   # where the sink sits, head by head: detail behind the curves, one click away
            out.append(Fold("Where the sink sits: alpha_1 per layer and head at the end of training",
                            Figure(row(*heat, title="alpha_1 per layer and head at the end of training"),
                                   maps_caption(ps, maps))))
    else:
        out.append(Markdown(f"No stored run of `{lm.config}` at the `{lm.profile}` profile yet: the runs it needs, "
                            f"with the command that trains them, are in the [sources appendix]"
                            f"({sources.APPENDIX}.ipynb)."))
    return out


def show(lm: LMSweep, *args, **kwargs) -> None:
    """Display :func:`section` in a notebook; where its runs came from, and which are missing, go to the chapter's
    sources (:mod:`.sources`: one line per page, every entry in the appendix)."""
    for item in section(lm, *args, **kwargs):
        display(item)
    what = f"{lm.config} ({lm.profile} profile)"
    if lm.payloads:
        sources.record(lm.provenance(), what=what)
    sources.missing(lm, what=what)


def family_section(family: str, profile: str, gpu_seeds: Sequence[int], order: Sequence[str], *,
                   table: Mapping[str, Any] | None = None, sweep_title: str | None = None,
                   value: str | Sequence[str] = "sink", width: int | str = "container", **show_kwargs: Any) -> LMSweep:
    """The real-text section every training chapter (4-9) leads with, written once: its ``family``'s stored runs
    (:func:`sinkpaper.results.sweeps.lm_sweep`, never trained at ``cpu``) shown by :func:`show` (``show_kwargs``:
    its curves, maps, base, paper), with ``table`` the arguments of :func:`.tables.points_table` for its table of
    the runs (``points`` and the rest; held-out loss always shown), then, with ``sweep_title``, the sweep's
    dot-and-tick figure over ``order`` with the caption that states which points keep a sink. Returns the sweep
    for what the chapter adds after it."""
    lm = lm_sweep(family, profile, gpu_seeds)
    if table is not None:
        show_kwargs["table"] = points_table(lm.payloads, **{**table, "held_out": True})
    show(lm, order, **show_kwargs)
    if lm.payloads and sweep_title is not None:
        figure(sweep_chart(lm.payloads, order, title=f"Real text ({lm.profile} profile): {sweep_title}", value=value,
                           width=width),
               sweep_caption(lm.payloads, order, value=value, onset_loss=_guard_loss(lm.profile, lm.payloads)))
    return lm


def _guard_loss(profile: str, payloads: Sequence[Mapping]) -> float | None:
    """The onset loss of the base that guards a profile's "no sink" readings (the registry's GUARD_BASE, its first
    scale at ``profile``), where every run of ``payloads`` has that base's depth; else None."""
    scale = next((s for s, p in PROFILE_OF.items() if p == profile and s in GUARD_BASE), None)
    found = onset_loss_of(GUARD_BASE[scale], scale) if scale else None
    if found is None or found.loss is None or any(p["config"]["model"]["n_layers"] != found.layers for p in payloads):
        return None
    return found.loss
