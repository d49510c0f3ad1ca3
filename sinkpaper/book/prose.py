"""Sentences the chapters write from stored and live runs, each chosen by the numbers: how our runs differ from
the paper's setting, whether a live run reproduces the stored one, when a sink first formed, what the raw
weights of an operator without normalization say about the proxy's early transient, where a bias leaves the
sink, and where a prefix-LM run's sink sits."""
from __future__ import annotations

from typing import Mapping, Sequence

from .. import paper
from ..paper import NO_SINK, SINK
from ..results.curves import reaching_steps, transient
from ..results.numbers import sig, span
from ..results.reading import point_of


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


def first_reached(payloads: Sequence[Mapping], point: str, k: int = 1, threshold: float = 50.0) -> str:
    """When Sink_k of a point's runs first reached ``threshold`` %: "at step a-b" (the range over the seeds that
    reached it), or "in no seed"."""
    steps = reaching_steps(payloads, point, k, threshold)
    return f"at step {span(steps, 0)}" if steps else "in no seed"


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


WHOLE = 95.0  # Sink* at or above this (with Sink_1 at or below NO_SINK): "the bias takes the whole sink"


def bias_share(sink_star: float | None, sink_1: float | None, token_1: str = "the BOS", present: bool = False,
               bias: str = "the bias") -> str:
    """The clause that says where a bias run's sink sits, from its Sink* (the bias position, named ``bias``) and
    Sink_1 (token 1, named ``token_1``; ``present``: it is a fixed token the bias competes with), both in %,
    ending with a full stop:

    * ": the bias takes the whole sink and <token_1> keeps none" only when Sink* >= 95 % and Sink_1 <= 5 %
      ("almost none" when Sink_1 is above 0);
    * ": the bias holds the sink in part of the heads …" when Sink* >= SINK but below 95 % and Sink_1 < 5 %;
    * ": both the bias and <token_1> are sinks" when both are at least SINK;
    * ": the sink stays on <token_1>; the bias takes none of it" when Sink* < 5 % and Sink_1 >= SINK;
    * "." otherwise, or when a value is missing (the numbers beside it say the rest)."""
    if sink_star is None or sink_1 is None:
        return "."
    keeps = f"{token_1}{', though present,' if present else ''} keeps"
    if sink_star >= WHOLE and sink_1 <= NO_SINK:
        return f": {bias} takes the whole sink and {keeps} {'none' if sink_1 == 0 else 'almost none'}."
    if sink_star >= SINK and sink_1 < NO_SINK:
        return f": {bias} holds the sink in part of the heads (Sink* below {WHOLE:g} %) and {keeps} almost none."
    if sink_star >= SINK and sink_1 >= SINK:
        return f": both {bias} and {token_1} are sinks."
    if sink_star < NO_SINK and sink_1 >= SINK:
        return f": the sink stays on {token_1}; {bias} takes none of it."
    return "."


def biases_share(shares: Mapping[str, tuple[float | None, float | None]], token_1: str = "the BOS",
                 present: bool = False) -> str:
    """:func:`bias_share` for several biases named in one sentence (label -> (Sink*, Sink_1)): one clause when
    they all read the same, else one per bias that has one ("; K bias: …; KV biases: ….")."""
    clauses = {label: bias_share(star, s1, token_1, present) for label, (star, s1) in shares.items()}
    if len(set(clauses.values())) <= 1:
        return next(iter(clauses.values()), ".")
    return "".join(f"; {label}{c[:-1]}" for label, c in clauses.items() if c != ".") + "."


def prefix_peak(k: int | None, prefix: int | None) -> str:
    """Where a prefix-LM run's largest Sink_k sits relative to its prefix of ``prefix`` positions (BOS
    included): inside or outside it, and, at position 1, that an ordinary first-token sink sits there too.
    "" when there is no peak or no prefix."""
    if k is None or prefix is None:
        return ""
    if k > prefix:
        return f"outside the prefix of {prefix}"
    if k == 1:
        return (f"inside the prefix of {prefix}, but on its first position, where an ordinary first-token sink "
                "sits too (so it does not show the sink moving onto the prefix)")
    return f"inside the prefix of {prefix}, on a position other than the first"


def after_paper_reading(results: Mapping[str, Mapping]) -> str:
    """What the after-the-paper verdicts mean for the paper's explanation, a few sentences chosen by the verdicts.
    ``results``: :func:`sinkpaper.paper.result` of each claim id this reads (after_gate, after_gate_headwise,
    after_gate_paper_reading, after_denominator_paper_reading, ops_softpick) at one scale."""
    from ..paper import AGREES, DISAGREES, verdict_text

    def v(cid: str) -> str:
        return results[cid]["verdict"] if cid in results else ""

    def why(*cids: str) -> str:
        def one(c):
            left = results[c].get("status") in ("missing", "incomplete")
            return f"`{c}` " + ("no result (its runs are not all stored yet)" if left else verdict_text(results[c]))
        return "; ".join(one(c) for c in cids if c in results)

    gates = ("after_gate", "after_gate_headwise", "after_gate_paper_reading")
    if v("after_gate") == AGREES and v("after_gate_headwise") == AGREES and v("after_gate_paper_reading") == DISAGREES:
        gate = ("**Gating.** Both gated models grew no sink on token 1 in any seed where the ungated base has one: the "
                "source's claim holds here, and the paper's normalization account alone does not predict it (each "
                "row still sums to one). The source's explanation is that a head can now close its gate instead of "
                "parking its attention.")
    elif v("after_gate_paper_reading") == AGREES and DISAGREES in (v("after_gate"), v("after_gate_headwise")):
        gate = ("**Gating.** The gated models kept a sink on token 1 in every seed: on this setup the gate did not "
                "remove it, as the paper's account (rows that sum to one, nothing else to take the excess) predicts.")
    else:
        gate = "**Gating.** No verdict that settles it: " + why(*gates) + "."
    den = v("after_denominator_paper_reading")
    if den == AGREES:
        logit = ("**A logit in the denominator.** The learned logit and the fixed +1 took the sink from token 1 in "
                 "every seed, as the paper's K bias does: what Section 7.2's account predicts for a place that can "
                 "hold the excess attention.")
    elif den == DISAGREES:
        logit = ("**A logit in the denominator.** Decided against the paper's reading: " +
                 why("after_denominator_paper_reading", "after_sink_logit", "after_softmax_plus_one") + ".")
    else:
        logit = "**A logit in the denominator.** No verdict yet: " + why("after_denominator_paper_reading") + "."
    soft = ("**Softpick.** Its rows need not sum to one, and it grew no sink: the paper's finding for sigmoid "
            "without normalization, with an operator the paper did not train."
            if v("ops_softpick") == AGREES else "**Softpick.** " + why("ops_softpick") + ".")
    return "\n\n".join((gate, logit, soft))


def miniature_bias_lines(M: Mapping[str, Mapping], NB: Mapping[str, Mapping], n_no_fixed: int) -> list[str]:
    """Chapter 8's bullet list on the miniature's bias runs, each sentence chosen by the numbers. ``M``: {point:
    {"Sink*", "Sink_1", "alpha_1"}} means over seeds of the runs with the fixed BOS (sink_token, k_bias, kv_bias,
    v_bias, recipe); ``NB``: the same for the runs without it (no_fixed_token, sink_token_no_bos, k_bias_no_bos);
    ``n_no_fixed``: the no_fixed_token runs' seed count. The verdicts are the claims table's, not these lines'."""
    from ..results.numbers import fmt

    lines = []
    if NB["no_fixed_token"]["Sink_1"] is not None:
        nb = NB["no_fixed_token"]["Sink_1"]
        lines.append(f"- **No fixed BOS, no bias** (`no_fixed_token`, {n_no_fixed} seed(s)): Sink_1 {nb:.1f} %, "
                     f"α_1 {NB['no_fixed_token']['alpha_1']:.3f}"
                     + (" — without a fixed first token the miniature grows no sink." if nb < NO_SINK else "."))
    for pt, label, bias in (("sink_token_no_bos", "Sink token, no fixed BOS", "the sink token"),
                            ("k_bias_no_bos", "K bias, no fixed BOS", "the K bias")):
        if NB[pt]["Sink*"] is not None:
            lines.append(f"- **{label}** (`{pt}`): Sink* {NB[pt]['Sink*']:.1f} % on {bias}, "
                         f"Sink_1 {NB[pt]['Sink_1']:.1f} % (α_1 {NB[pt]['alpha_1']:.3f}), with no BOS to compete"
                         + bias_share(NB[pt]["Sink*"], NB[pt]["Sink_1"], token_1="token 1", bias=bias))
    st, kb, kv, vb, rc = (M[p] for p in ("sink_token", "k_bias", "kv_bias", "v_bias", "recipe"))
    if st["Sink_1"] is not None and st["Sink*"] is not None:
        both = st["Sink_1"] >= SINK and st["Sink*"] >= SINK
        lines.append(
            f"- **Sink token**: Sink* {st['Sink*']:.1f} % and Sink_1 {st['Sink_1']:.1f} %"
            + (" — both positions are sinks. " if both else ". ")
            + f"α_1 on the BOS averages {st['alpha_1']:.3f} (without the sink token, `recipe`: "
            + (f"{rc['alpha_1']:.3f}). " if rc["alpha_1"] is not None else "—). ")
            + ("Each query's attention sums to 1 over the sink token, the BOS and the rest, so with α_1 at "
               f"{st['alpha_1']:.2f} the sink token holds at most {1 - st['alpha_1']:.2f} on average, and in "
               f"{st['Sink*']:.0f} % of the heads more than 0.3: the heads **split** their idle attention between "
               "the two fixed positions instead of moving it." if both else ""))
    if kb["Sink_1"] is not None and kv["Sink_1"] is not None:
        lines.append(f"- **K bias / KV biases**: Sink* {fmt(kb['Sink*'])} / {fmt(kv['Sink*'])}, "
                     f"Sink_1 {fmt(kb['Sink_1'])} / {fmt(kv['Sink_1'])}, α_1 {kb['alpha_1']:.3f} / {kv['alpha_1']:.3f}"
                     + biases_share({"K bias": (kb["Sink*"], kb["Sink_1"]), "KV biases": (kv["Sink*"], kv["Sink_1"])},
                                    present=True))
    if vb["Sink_1"] is not None:
        lines.append(f"- **V bias** (v* added after the softmax): Sink_1 {vb['Sink_1']:.1f} % (α_1 {vb['alpha_1']:.3f})"
                     + (" — the sink stays on the BOS." if vb["Sink_1"] >= SINK else ".")
                     + ("" if vb["Sink*"] is None else
                        f" These stored runs also read Sink* {fmt(vb['Sink*'])} on an extra position: they were "
                        "made under the older definition of `v_bias` (an extra key with logit 0), which is not the "
                        "paper's control; rerun them."))
    return lines


def sink_token_reading(M: Mapping[str, Mapping], NB: Mapping[str, Mapping]) -> str | None:
    """One reading of the miniature's sink-token / K-bias contrast, written only when the numbers show it (the
    sink token and the BOS both sinks, the K bias taking the sink outright); None otherwise."""
    st, kb = M["sink_token"], M["k_bias"]
    if not (st["Sink_1"] is not None and st["Sink_1"] >= SINK and st["Sink*"] >= SINK
            and kb["Sink*"] is not None and kb["Sink*"] >= SINK and kb["Sink_1"] < NO_SINK):
        return None
    nb = NB["sink_token_no_bos"]
    return ("One reading of this contrast (not tested on this page): the learnable sink token enters the model the "
            "way the BOS does, as an embedding at a fixed position that goes through the same key projection and "
            "rotary position, so for a head that wants to do nothing the two are interchangeable and nothing in "
            "training breaks the tie. A K bias is a different object: a free key per head, outside the positional "
            "rotation, with a value of exactly 0 — and it takes the sink from the BOS outright. The direct test is "
            "the sink token with **no** fixed BOS (`sink_token_no_bos`): "
            + (f"stored, it reads Sink* {nb['Sink*']:.1f} % and Sink_1 {nb['Sink_1']:.1f} % (the list above)."
               if nb["Sink*"] is not None else
               "not stored yet (`python -m sinkpaper sweep --config configs/miniature.yaml --profile cpu --points "
               "sink_token_no_bos --seeds 0 1 2 --out runs/miniature`)."))


def packing_reading(means: Mapping[str, float]) -> str:
    """Chapter 10's reading of the four packings (mean Sink_1 over seeds of causal, doc_mask, bos, bos_doc_mask),
    in the words of the rules' one sink classification; the causal control says whether "no sink with the mask"
    is the mask's doing or this scale's."""
    word = {paper.AGREES: "a sink", paper.DISAGREES: "no sink",
            paper.INCONCLUSIVE: f"a Sink_1 between the thresholds of {NO_SINK:g} and {SINK:g} %"}
    said = {p: word[paper.sink_verdict(v)] for p, v in means.items()}
    control = (" The same packing without the mask has none either (`causal`), so at this scale the runs cannot "
               "tell whether the mask takes a sink away: without a fixed first token none forms here at all."
               if paper.no_sink_verdict(means["causal"]) == paper.no_sink_verdict(means["doc_mask"]) == paper.AGREES
               else "")
    return ("Measured (mean Sink_1 over seeds): " + "; ".join(f"`{p}` {sig(v)} %" for p, v in means.items()) + ". "
            + f"With a fixed BOS and the intra-document mask the BOS has {said['bos_doc_mask']} (`bos_doc_mask`); "
              f"without a BOS, the window's first token has {said['doc_mask']} (`doc_mask`)." + control)


def bos_contrast_lines(contrasts: Sequence[Mapping], loss_samples: int) -> str:
    """Chapter 10's pretrained-model contrast in words: per model, Sink_1 with and without BOS, where the sink
    goes without one, and the loss on the shared targets."""
    from ..analysis import packing_bos as pb

    lines = []
    for c in contrasts:
        on, off = pb.condition(c, True), pb.condition(c, False)
        loss = (f"; loss on the shared targets {on['loss']:.3f} with BOS vs {off['loss']:.3f} without "
                f"(perplexity {on['perplexity']:.1f} vs {off['perplexity']:.1f}, {loss_samples} windows)"
                if on["loss"] is not None else "")
        tokens = ", ".join(f"{t!r}" for t, _ in off["sink_tokens"][:3]) or "none"
        lines.append(f"- `{c['model']}` (BOS `{c['bos_token']}`, {'put first' if c['prepends_bos'] else 'not added'} "
                     f"by its tokenizer): Sink_1 {on['sink_k']['1']:.2f} % with BOS, {off['sink_k']['1']:.2f} % "
                     f"without; without BOS a sink at positions 2..{off['k_max']} in {off['sink_elsewhere']:.2f} % of "
                     f"the (sample, layer, head) triples, most often on {tokens}{loss}.")
    return "Measured now:\n" + "\n".join(lines)
