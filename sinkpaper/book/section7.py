"""What the Section 7 chapters (architecture, attention biases, attention operations) need beyond
:mod:`.experiments` and :mod:`.sections`: the points of each family (what each changes), tables that put Sink*
(the metric on an extra bias position) next to Sink_1, the raw weights of operators without normalization next
to the paper's |w| / sum |w| proxy over training.

The paper's numbers and the agreement rules live in :mod:`sinkpaper.paper` (typed once there); this module only
arranges and draws them. Like :mod:`.figures`, it is book-only and may import altair.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Mapping, Sequence

import altair as alt

from .. import paper as registry
from ..paper import SINK
from .experiments import point_of
from .figures import Table, _num


@dataclass(frozen=True)
class Point:
    """One sweep point of a Section-7 family (its name in configs/) and what it changes; :attr:`paper` reads the
    paper's number(s) for it from :mod:`sinkpaper.paper`."""

    name: str
    what: str

    @property
    def paper(self) -> str:
        return paper_text(self.name)


paper_text = registry.paper_text


ARCHITECTURE: tuple[Point, ...] = (
    Point("pos_rope", "RoPE, pre-norm, SwiGLU, concatenated heads (the default; 8 heads in the paper, 4 at text)"),
    Point("pos_nope", "no positional encoding (NoPE)"),
    Point("pos_absolute", "absolute (sinusoidal) positions"),
    Point("pos_learnable", "learnable absolute positions"),
    Point("pos_relative", "relative positions as the authors' released code: the T5 bucket index added to the logits"),
    Point("pos_relative_learned", "ours: T5's learned relative bias per bucket and head"),
    Point("pos_alibi", "ALiBi"),
    Point("post_norm", "post-norm instead of pre-norm"),
    Point("ffn_relu", "FFN ReLU"),
    Point("ffn_gelu", "FFN GeLU"),
    Point("ffn_geglu", "FFN GeGLU"),
    Point("heads_1", "1 head"),
    Point("heads_add", "heads added instead of concatenated"),
    Point("ffn_swish", "FFN Swish"), Point("ffn_reglu", "FFN ReGLU"),
    Point("heads_2", "2 heads"), Point("heads_4", "4 heads"), Point("heads_8", "8 heads"),
)
ARCHITECTURE_NOT_RUN: tuple[Point, ...] = ()


def _config_order(points: tuple[Point, ...], family: str) -> tuple[Point, ...]:
    """The points in their config's sweep order (the order the book shows them in)."""
    from ..train.config import sweep_points
    from ..resources import find_config
    order = {name: i for i, name in enumerate(sweep_points(find_config(family)))}
    return tuple(sorted(points, key=lambda p: order.get(p.name, len(order))))


ARCHITECTURE = _config_order(ARCHITECTURE, "architecture")

BIASES: tuple[Point, ...] = (
    Point("none", "no bias (the default)"),
    Point("sink_token", "learnable sink token at position 0"),
    Point("kv_bias", "learnable k*, v* in every head"),
    Point("k_bias", "learnable k*, v* = 0"),
    Point("v_bias", "learnable v* added after the softmax (the paper's control)"),
    Point("k_bias_fixed_v", "learnable k*, fixed v* = v' = [1, 0, ..., 0]"),
    Point("k_bias_dims_1", "k* learned in 1 of the head's dimensions (d_a = 1), v* = 0"),
)
# The paper's other fixed-v*, shared and d_a rows (claims bias_fixed_v_large, bias_shared, bias_low_dim_more).
BIASES_MORE: tuple[Point, ...] = (
    Point("k_bias_fixed_5v1", "fixed v* = 5 v'"), Point("k_bias_fixed_20v1", "fixed v* = 20 v'"),
    Point("k_bias_fixed_v2", "fixed v* = v'' = ones / sqrt(d_h)"), Point("k_bias_fixed_5v2", "fixed v* = 5 v''"),
    Point("k_bias_fixed_20v2", "fixed v* = 20 v''"), Point("kv_bias_shared", "KV biases shared across heads"),
    Point("k_bias_shared", "K biases shared across heads"),
    *(Point(f"k_bias_dims_{d}", f"k* in d_a = {d} dimensions") for d in (2, 4, 8, 16)),
    Point("sink_token_no_bos", "sink token, no fixed first token (the paper's setting for the sink token)"),
    Point("kv_bias_no_bos", "KV biases, no fixed first token"),
    Point("k_bias_no_bos", "K biases, no fixed first token"),
)
BIASES = _config_order(BIASES + BIASES_MORE, "biases")
BIASES_NOT_RUN: tuple[Point, ...] = tuple(Point(f"k_bias_dims_{d}", f"k* in d_a = {d} dimensions") for d in (32, 64))

ATTENTION: tuple[Point, ...] = (
    Point("softmax", "softmax (the default)"),
    Point("softmax_sum_0.2", "softmax scaled so each row sums to 0.2"),
    Point("softmax_p_2", "p-normalized softmax, p = 2 (the paper: fewer massive activations, no Sink_1 given)"),
    Point("sigmoid", "sigmoid, no normalization (* = the |w| / sum |w| proxy)"),
    Point("sigmoid_norm", "sigmoid, divided by the row sum"),
    Point("elu", "elu + 1, no normalization (*)"),
    Point("elu_norm", "ours: elu(qk) + 1 divided by its row sum, the variant the paper could not train"),
    Point("kernel_elu", "the paper's elu+1 kernel: (elu(q)+1)(elu(k)+1) over the row sum (*)"),
    Point("softpick", "softpick (rectified softmax; Zuhri et al. 2025, not this paper)"),
)
# The paper's other scaled-softmax and kernel rows (claims ops_scaled_more, ops_kernels), and the 1B rows (ops_1b).
ATTENTION = ATTENTION + (
    Point("softmax_sum_2", "softmax rows summing to 2"), Point("softmax_sum_0.1", "softmax rows summing to 0.1"),
    Point("softmax_sum_0.05", "softmax rows summing to 0.05"), Point("kernel_identity_z1", "kernel phi = identity, Z = 1 (*)"),
    Point("kernel_mlp_maxabs", "kernel phi = MLP, Z = max(|row sum|, 1) (*)"),
    Point("kernel_mlp_z1", "kernel phi = MLP, Z = 1 (*)"),
    Point("kernel_elu_z1", "the elu+1 kernel with Z = 1 (the paper could not train it)"),
)
ATTENTION = _config_order(ATTENTION, "attention")
ATTENTION_NOT_RUN: tuple[Point, ...] = (
    Point("softmax_1b", "1B model, softmax"), Point("sigmoid_1b", "1B model, sigmoid without normalization (*)"),
)

# The miniature's point for the paper's default: the Bigram-Backcopy recipe.
MINIATURE_DEFAULT = "recipe"


def by_name(points: Sequence[Point]) -> dict[str, Point]:
    return {p.name: p for p in points}


def paper_table(points: Sequence[Point], not_run: Sequence[Point] = ()) -> Table:
    """The paper's numbers for a family, the points this book runs first, then the paper's other rows."""
    rows = [{"point": p.name, "what changes": p.what, "the paper (%)": p.paper, "in our sweep": "yes"} for p in points]
    rows += [{"point": p.name, "what changes": p.what, "the paper (%)": p.paper, "in our sweep": "no"} for p in not_run]
    return Table(rows)


# ------------------------------------------------------------------------------------------------- numbers
def _values(payloads: Sequence[dict], point: str, key: str) -> list[float]:
    out = []
    for p in payloads:
        if point_of(p) != point:
            continue
        r = p["result"]
        v = {"sink_1": r["sink_k"]["1"], "sink_star": r.get("sink_star"), "alpha_1": r["alpha_1_mean"],
             "loss": r.get("final_loss"), "val_loss": r.get("val_loss")}[key]
        if v is not None:
            out.append(float(v))
    return out


def mean_of(payloads: Sequence[dict], point: str, key: str = "sink_1") -> float | None:
    """Mean over the seeds of one point of ``key``: sink_1 (Sink_1 %, the proxy Sink*_1 for operators without
    normalization), sink_star (Sink % on the bias position), alpha_1 or loss; None when there is no run."""
    vals = _values(payloads, point, key)
    return statistics.fmean(vals) if vals else None


def _spread(vals: list[float], digits: int = 1) -> str:
    if not vals:
        return "—"
    if len(vals) == 1:
        return f"{vals[0]:.{digits}f}"
    return f"{statistics.fmean(vals):.{digits}f} [{min(vals):.{digits}f}, {max(vals):.{digits}f}]"


def point_table(payloads: Sequence[dict], points: Sequence[Point], *, names: Mapping[str, str] | None = None,
                paper: bool = True) -> Table:
    """One row per point that has runs, in the order of ``points``: what changes, seeds, Sink_1 % mean
    [min, max] over seeds (marked * where it is the proxy), Sink* % on the bias position when any run has one,
    alpha_1, the held-out loss (mean [min, max]; the final training loss for runs stored without one), tokens
    seen and the paper's number. ``names`` maps a point name of ``points`` to the
    name its runs have in ``payloads`` (e.g. the miniature's "recipe" for the default)."""
    names = dict(names or {})
    has_star = any(p["result"].get("sink_star") is not None for p in payloads)
    rows = []
    for pt in points:
        run_name = names.get(pt.name, pt.name)
        ps = [p for p in payloads if point_of(p) == run_name]
        if not ps:
            continue
        proxy = any(p["result"].get("proxy") for p in ps)
        row = {"point": run_name, "what changes": pt.what,
               "seeds": ",".join(str(s) for s in sorted(p["config"]["run"]["seed"] for p in ps)),
               "Sink_1 %": _spread(_values(ps, run_name, "sink_1")) + ("*" if proxy else "")}
        if has_star:
            row["Sink* % (bias position)"] = _spread(_values(ps, run_name, "sink_star"))
        row["alpha_1"] = round(statistics.fmean(_values(ps, run_name, "alpha_1")), 3)
        loss = _values(ps, run_name, "val_loss") or _values(ps, run_name, "loss")
        row["held-out loss" if _values(ps, run_name, "val_loss") else "loss"] = \
            f"{statistics.fmean(loss):.3f} [{min(loss):.3f}, {max(loss):.3f}]" if loss else None
        row["tokens"] = f"{ps[0]['result']['tokens_seen']:,}"
        if paper:
            row["the paper (%)"] = pt.paper
        rows.append(row)
    return Table(rows)


def setting_text(payloads: Sequence[dict]) -> str:
    """How our runs differ from the paper's 60M model, from a payload's config (model size, data, tokens)."""
    if not payloads:
        return "no run"
    c, r = payloads[0]["config"], payloads[0]["result"]
    m, d = c["model"], c["data"]
    data = d["source"] if d["source"] != "corpus" else "offline text corpus"
    return (f"{payloads[0]['profile']} profile: {m.get('n_layers')} layers, d={m.get('d_model')}, "
            f"{m.get('n_heads')} heads, context {d.get('context')}, {r['tokens_seen']:,} tokens of {data}, "
            f"{len(payloads)} run(s) (the paper: 60M, 10 layers, d=768, ~21B tokens of the Pile)")


def fmt(value: float | None, digits: int = 1, unit: str = " %") -> str:
    return "—" if value is None else f"{value:.{digits}f}{unit}"


# ---------------------------------------------------------------------------------- curves over training
def bias_curve_rows(payload: Mapping, label: str | None = None) -> list[dict]:
    """Per evaluation of a run: step, tokens, Sink_1 %, Sink* % (the bias position) and alpha_1."""
    label = label or point_of(payload)
    return [{"run": label, "step": c["step"], "tokens": c["tokens"], "Sink_1 %": c["sink_k"]["1"],
             "Sink* %": c.get("sink_star"), "alpha_1": c.get("alpha_1_mean")}
            for c in payload["curve"] if "sink_k" in c]


RAW_KEYS = ("raw_weight_token_1", "raw_weight_others", "raw_row_sum")


def raw_curve_rows(payload: Mapping, label: str | None = None) -> list[dict]:
    """Per evaluation of a run of an operator without normalization: the proxy the paper scores (Sink*_1 %,
    alpha_1 of |w| / sum |w|) next to what it is made of, the raw weights: mean weight on token 1 (from the
    queries after it), mean weight on the other visible keys, and the mean row sum (sum of a query's weights).
    Evaluations without raw weights (runs stored before they were recorded) are left out."""
    label = label or point_of(payload)
    return [{"run": label, "step": c["step"], "tokens": c["tokens"], "proxy Sink*_1 %": c["sink_k"]["1"],
             "proxy alpha_1": c.get("alpha_1_mean"), "raw weight on token 1": c["raw_weight_token_1"],
             "raw weight on other keys": c["raw_weight_others"], "raw row sum": c["raw_row_sum"]}
            for c in payload["curve"] if "sink_k" in c and all(k in c for k in RAW_KEYS)]


def transient(payload: Mapping) -> dict | None:
    """The proxy's largest reading over training and the raw weights at that moment, at the first evaluation
    and at the end: {"first", "peak", "final"} rows of raw_curve_rows, or None without raw weights."""
    rows = raw_curve_rows(payload)
    if not rows:
        return None
    peak = max(rows, key=lambda r: (r["proxy Sink*_1 %"], r["proxy alpha_1"] or 0.0))
    return {"first": rows[0], "peak": peak, "final": rows[-1]}


def steps_chart(rows: Sequence[Mapping], y: str, title: str, *, y_title: str | None = None, log_y: bool = False,
                color: str = "run", x: str = "step", width: int = 300, height: int = 200,
                rule_y: float | None = None, y_domain: Sequence[float] | None = None) -> alt.Chart:
    """One line per value of ``color`` of ``y`` over ``x`` (training steps by default); with ``log_y``
    non-positive values are dropped; ``rule_y`` draws a dashed horizontal line (e.g. the threshold);
    ``y_domain`` fixes the y axis (e.g. (0, 100) for a percentage, so an all-zero line still reads as 0 %)."""
    values = [{"x": r[x], "y": _num(r[y]), "c": str(r[color])} for r in rows
              if r.get(y) is not None and (not log_y or r[y] > 0)]
    if log_y:
        ys = alt.Scale(type="log")
    else:
        ys = alt.Scale(domain=list(y_domain)) if y_domain is not None else alt.Scale(zero=True)
    chart = (alt.Chart(alt.Data(values=values), title=title, width=width, height=height)
             .mark_line(point=True)
             .encode(x=alt.X("x:Q", title=x), y=alt.Y("y:Q", title=y_title or y, scale=ys),
                     color=alt.Color("c:N", title=None, sort=list(dict.fromkeys(v["c"] for v in values))),
                     tooltip=[alt.Tooltip("c:N", title=color), alt.Tooltip("x:Q", title=x),
                              alt.Tooltip("y:Q", title=y_title or y, format=".4g")]))
    if rule_y is not None:
        chart = chart + (alt.Chart(alt.Data(values=[{"y": rule_y}])).mark_rule(strokeDash=[4, 3], color="gray")
                         .encode(y="y:Q"))
    return chart


def long_rows(rows: Sequence[Mapping], keys: Sequence[str], key_name: str = "series") -> list[dict]:
    """Wide rows (one per evaluation, several measured columns) to long rows (one per column) for a chart
    with one line per column: {"run", "step", "tokens", key_name: "<run>: <column>", "value"}."""
    out = []
    for r in rows:
        for k in keys:
            if r.get(k) is not None:
                out.append({"run": r["run"], "step": r["step"], "tokens": r["tokens"],
                            key_name: f"{r['run']}: {k}", "value": r[k]})
    return out


def bias_chart(payloads: Sequence[dict], order: Sequence[str], title: str = "", width: int = 320,
               height: int = 200) -> alt.LayerChart:
    """Per point (x, in ``order``): Sink* (on the bias position) and Sink_1, side by side; each seed a dot, the
    mean over seeds a tick. Points without runs are left out; Sink* is drawn only where a point has it."""
    present = [pt for pt in order if any(point_of(p) == pt for p in payloads)]
    dots, means = [], []
    for pt in present:
        ps = [p for p in payloads if point_of(p) == pt]
        for metric, key in (("Sink* (bias position)", "sink_star"), ("Sink_1", "sink_1")):
            vals = [(p["config"]["run"]["seed"], v) for p in ps
                    if (v := (p["result"].get("sink_star") if key == "sink_star" else p["result"]["sink_k"]["1"]))
                    is not None]
            dots += [{"point": pt, "metric": metric, "seed": s, "v": _num(v)} for s, v in vals]
            if vals:
                means.append({"point": pt, "metric": metric, "v": _num(statistics.fmean(v for _, v in vals))})
    x = alt.X("point:N", sort=present, title=None, axis=alt.Axis(labelAngle=-30))
    y = alt.Y("v:Q", title="% of heads", scale=alt.Scale(domain=[0, 100]))
    metrics = ["Sink* (bias position)", "Sink_1"]
    color = alt.Color("metric:N", title=None, sort=metrics)
    offset = alt.XOffset("metric:N", sort=metrics)
    return alt.layer(
        alt.Chart(alt.Data(values=dots), width=width, height=height).mark_circle(size=45, opacity=0.6).encode(
            x=x, xOffset=offset, y=y, color=color,
            tooltip=["point:N", "metric:N", "seed:N", alt.Tooltip("v:Q", format=".3g")]),
        alt.Chart(alt.Data(values=means)).mark_tick(thickness=2, size=14).encode(
            x=x, xOffset=offset, y=y, color=color,
            tooltip=["point:N", "metric:N", alt.Tooltip("v:Q", title="mean", format=".3g")]),
        title=title)


def transient_text(payload: Mapping, label: str | None = None) -> str | None:
    """One Markdown paragraph that reads a proxy run's raw weights at three moments (first evaluation, the
    proxy's peak, the end), each sentence chosen by the numbers; None when the run has no raw weights."""
    t = transient(payload)
    if t is None:
        return None
    label = label or point_of(payload)
    f, p, e = t["first"], t["peak"], t["final"]
    k1, ko, rs = "raw weight on token 1", "raw weight on other keys", "raw row sum"
    out = [f"**{label}.** First evaluation (step {f['step']}): raw weight {f[k1]:.3g} on token 1 and {f[ko]:.3g} on "
           f"the other keys (row sum {f[rs]:.3g}); the proxy reads Sink*_1 {f['proxy Sink*_1 %']:.1f} %, "
           f"α_1 {f['proxy alpha_1']:.3f}."]
    if p["proxy Sink*_1 %"] >= SINK and p["step"] != f["step"]:
        genuine = p[k1] >= 0.5 and p[ko] <= 0.1 * p[k1]
        out.append(f"The proxy peaks at step {p['step']} with Sink*_1 {p['proxy Sink*_1 %']:.1f} % (α_1 "
                   f"{p['proxy alpha_1']:.3f}); the raw weights then are {p[k1]:.3g} on token 1 and {p[ko]:.3g} "
                   f"on the other keys (row sum {p[rs]:.3g})"
                   + (": a **real** sink in the raw weights — the heads put a weight near 1 on token 1 and almost "
                      "nothing elsewhere — not an artifact of the proxy." if genuine else
                      ": token 1 stands out only relative to the other keys, not as a weight near 1."))
    else:
        out.append(f"The proxy never reaches {SINK:g} % after the first evaluation (largest: "
                   f"{p['proxy Sink*_1 %']:.1f} % at step {p['step']}).")
    if e["step"] != p["step"]:
        idle = e[rs] < 0.1 * max(f[rs], 1e-12)
        out.append(f"At the end (step {e['step']}): {e[k1]:.2g} on token 1 and {e[ko]:.2g} on the other keys, row "
                   f"sum {e[rs]:.3g}; proxy Sink*_1 {e['proxy Sink*_1 %']:.1f} %"
                   + (f" — the heads now attend to almost nothing (row sum {e[rs] / f[rs]:.1%} of the first "
                      "evaluation's): without normalization a head can be idle by giving every key a weight near "
                      "0, so it needs no sink." if idle else "."))
    return " ".join(out)


def transient_note(payloads: Sequence[Mapping]) -> str:
    """One sentence on the proxy's early transient over several runs of one point: in how many runs the proxy
    reached SINK % after the first evaluation, its peak range and steps, and the raw weight on token 1 then;
    "" when no run has raw weights."""
    ts = [t for p in payloads if (t := transient(p)) is not None]
    if not ts:
        return ""
    hits = [t["peak"] for t in ts if t["peak"]["proxy Sink*_1 %"] >= SINK and t["peak"]["step"] != t["first"]["step"]]
    if not hits:
        return f"the proxy stayed below {SINK:g} % at every evaluation of {len(ts)} run(s)"
    sink = [h["proxy Sink*_1 %"] for h in hits]
    w1 = [h["raw weight on token 1"] for h in hits]
    steps = sorted({h["step"] for h in hits})
    rng = lambda v, f: f"{min(v):{f}}" if min(v) == max(v) else f"{min(v):{f}}-{max(v):{f}}"  # noqa: E731
    finals = [t["final"]["proxy Sink*_1 %"] for t in ts]
    return (f"in {len(hits)} of {len(ts)} run(s) the proxy peaked early at Sink*_1 {rng(sink, '.0f')} % (step "
            f"{', '.join(map(str, steps))}; raw weight on token 1 then {rng(w1, '.2f')}); at the end it reads "
            f"{rng(finals, '.0f')} %")


def live_vs_stored(live: Mapping, stored: Sequence[Mapping]) -> str | None:
    """A sentence comparing a live run with the stored run of the same config (same hash: same point, seed and
    steps), or None when the store has no such run. CPU training is deterministic per (config, seed), so the
    numbers should match; a mismatch is reported as such."""
    same = next((p for p in stored if p["hash"] == live["hash"]), None)
    if same is None:
        return None
    a, b = live["result"], same["result"]
    s1 = "Sink*_1 %" if a.get("proxy") else "Sink_1 %"
    keys = [(s1, a["sink_k"]["1"], b["sink_k"]["1"]), ("Sink* %", a.get("sink_star"), b.get("sink_star")),
            ("α_1", a["alpha_1_mean"], b["alpha_1_mean"]), ("final loss", a["final_loss"], b["final_loss"])]
    keys = [(k, x, y) for k, x, y in keys if x is not None and y is not None]
    match = all(abs(x - y) <= 1e-6 * max(1.0, abs(y)) for _, x, y in keys)
    vals = ", ".join(f"{k} {y:.4g}" for k, _, y in keys)
    when = b.get("provenance", {}).get("computed_at", "earlier")
    return (f"The results store holds this exact run (config hash `{live['hash']}`, computed {when}): {vals} — "
            + ("the live run reproduces it." if match else
               "the live run **differs** (" + ", ".join(f"{k} {x:.4g} now" for k, x, _ in keys) + ")."))


def transient_table(runs: Sequence[tuple[str, Mapping]]) -> Table:
    """One row per (label, payload) with raw weights: the raw weights on token 1 and on the other keys at the
    first evaluation, at the proxy's peak (its step and Sink*_1) and at the end, with the final row sum."""
    rows = []
    for label, p in runs:
        t = transient(p)
        if t is None:
            continue
        f, k, e = t["first"], t["peak"], t["final"]
        g = lambda v: float(f"{v:.3g}")  # noqa: E731
        rows.append({"run": label, "first: token 1 / others": f"{g(f['raw weight on token 1'])} / "
                                                              f"{g(f['raw weight on other keys'])}",
                     "proxy peak: step": k["step"], "peak Sink*_1 %": round(k["proxy Sink*_1 %"], 1),
                     "at peak: token 1 / others": f"{g(k['raw weight on token 1'])} / "
                                                  f"{g(k['raw weight on other keys'])}",
                     "end: token 1 / others": f"{g(e['raw weight on token 1'])} / {g(e['raw weight on other keys'])}",
                     "end: row sum": g(e["raw row sum"]), "end: Sink*_1 %": round(e["proxy Sink*_1 %"], 1)})
    return Table(rows)
