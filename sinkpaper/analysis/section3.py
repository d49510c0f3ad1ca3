"""What the Section-3 chapters (01 introduction, 02 properties, 03 measuring, 11) measure on pretrained LMs, as
plain functions tested without a chart: the models (:func:`load_models`, every model loaded before any
measurement, with the clear :class:`sinkpaper.lms.ModelUnavailableError` of :func:`sinkpaper.lms.load_lm` for a
name that cannot load; :func:`model_card`, :func:`tokenizer_adds_bos`); the metric at other thresholds and lengths
(:func:`sink_vs_epsilon`, :func:`sink_vs_seq_len`, :func:`seq_len_trend`); and the measurements behind the
paper's Section-3 claims (:func:`proposition_checks`, :func:`sink_token_profile`, :func:`profile_summary`). The
chapters record the numbers with :func:`sinkpaper.paper.record`, whose rules decide the verdicts; nothing here
holds a number of the paper or a threshold of a rule.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from ..metrics import uniform_alpha_1


def load_models(names: Sequence[str], device: str = "cpu") -> dict:
    """{name: LM}, loaded in order; a name that cannot load raises sinkpaper.lms.ModelUnavailableError, whose
    message lists the models available offline."""
    from sinkpaper.lms import load_lm

    return {name: load_lm(name, device=device) for name in names}


def tokenizer_adds_bos(tokenizer) -> bool:
    """Whether the tokenizer puts its BOS first by default (what the paper's script got for open models)."""
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None:
        return False
    ids = tokenizer("The", add_special_tokens=True)["input_ids"]
    return bool(ids) and int(ids[0]) == int(bos)


def positional_encoding(config) -> str:
    """'RoPE (theta ...)', 'learned absolute', 'ALiBi' or 'unknown' from a transformers config."""
    cfg = config.get_text_config() if hasattr(config, "get_text_config") else config
    thetas = set()
    for attr in ("rope_parameters", "rope_scaling"):
        rope = getattr(cfg, attr, None)
        if isinstance(rope, Mapping):
            for v in [rope] + [x for x in rope.values() if isinstance(x, Mapping)]:
                if v.get("rope_theta"):
                    thetas.add(float(v["rope_theta"]))
    if getattr(cfg, "rope_theta", None):
        thetas.add(float(cfg.rope_theta))
    if thetas:
        return "RoPE (theta " + ", ".join(f"{t:g}" for t in sorted(thetas)) + ")"
    model_type = str(getattr(cfg, "model_type", ""))
    if getattr(cfg, "alibi", False) or model_type in ("bloom", "mpt"):
        return "ALiBi"
    if getattr(cfg, "n_positions", None) or model_type in ("opt", "gpt2", "gpt_bigcode"):
        return "learned absolute"
    return "unknown"


def is_rope(lm) -> bool:
    return positional_encoding(lm.model.config).startswith("RoPE")


def model_card(lm) -> dict:
    """One row describing a loaded model: family, size, heads, positional encoding, BOS."""
    cfg = lm.model.config.get_text_config()
    heads = int(cfg.num_attention_heads)
    kv = int(getattr(cfg, "num_key_value_heads", None) or heads)
    d = int(getattr(cfg, "hidden_size", 0) or getattr(cfg, "n_embd", 0) or 0)
    head_dim = int(getattr(cfg, "head_dim", None) or (d // heads if d else 0))
    bos = getattr(lm.tokenizer, "bos_token", None)
    return {
        "model": lm.name,
        "family": str(getattr(cfg, "model_type", "?")),
        "parameters (M)": round(sum(p.numel() for p in lm.model.parameters()) / 1e6, 1),
        "layers": int(lm.n_layers),
        "heads (KV heads)": f"{heads} ({kv})",
        "head dim": head_dim,
        "positional encoding": positional_encoding(lm.model.config),
        "sliding window": str(getattr(cfg, "sliding_window", None) or "none"),
        "BOS token": "none" if bos is None else str(bos),
        "tokenizer adds BOS": "yes" if tokenizer_adds_bos(lm.tokenizer) else "no",
    }


# ------------------------------------------------------------------------------------------------ metric


def sink_vs_epsilon(alpha_1: np.ndarray, epsilons: Sequence[float]) -> list[float]:
    """Sink_1^eps in percent for each eps, from alpha_1 of every (sample, layer, head): the share of entries
    with alpha_1 > eps (strict, float32 against a Python float, exactly as :mod:`sinkpaper.metrics`)."""
    from sinkpaper import metrics

    a = torch.as_tensor(np.asarray(alpha_1, dtype=np.float32))
    out = []
    for eps in epsilons:
        metrics.check_epsilon(eps)
        out.append(float(metrics.percent_above(a, float(eps))))
    return out


def sink_vs_seq_len(lm, seq_lens: Sequence[int], *, bos: bool, inputs: str = "natural", n_samples: int = 8,
                    epsilon: float = 0.3, seed: int = 0, batch_size: int = 8) -> list[dict]:
    """Sink_1 and mean alpha_1 of one model at each T (BOS included in T), next to the uniform baseline H_T / T.
    A T the model cannot take (context length, sliding window) gives a row with ``skipped`` set."""
    from sinkpaper.lms import measure_sink
    from sinkpaper.probes import make_inputs

    rows = []
    for T in seq_lens:
        base = {"model": lm.name, "BOS": "on" if bos else "off", "inputs": inputs, "T": int(T),
                "uniform alpha_1": round(uniform_alpha_1(int(T)), 4)}
        try:
            lm.check_seq_len(int(T), "maps")
        except ValueError as e:
            rows.append({**base, "Sink_1 (%)": None, "mean alpha_1": None, "seconds": 0.0, "skipped": str(e)})
            continue
        probe = make_inputs(lm.tokenizer, inputs, n_samples=n_samples, seq_len=int(T), bos=bos, seed=seed)
        r = measure_sink(lm, probe, epsilon=epsilon, batch_size=batch_size, progress=False)
        rows.append({**base, "Sink_1 (%)": round(r["sink_k"]["1"], 2), "mean alpha_1": round(r["alpha_1_mean"], 4),
                     "seconds": r["provenance"]["measure_seconds"], "skipped": None})
    return rows


def seq_len_trend(rows: Sequence[Mapping]) -> str:
    """One sentence per (model, BOS) series of :func:`sink_vs_seq_len` rows: Sink_1 and mean alpha_1 (as a multiple
    of the uniform share) at the smallest and the largest T measured."""
    out = []
    done = [r for r in rows if not r.get("skipped")]
    for key in dict.fromkeys((r["model"], r["BOS"]) for r in done):
        pts = sorted((r for r in done if (r["model"], r["BOS"]) == key), key=lambda r: r["T"])
        lo, hi = pts[0], pts[-1]
        ratio = lambda r: r["mean alpha_1"] / r["uniform alpha_1"]  # noqa: E731
        out.append(f"`{key[0]}, BOS {key[1]}`: Sink_1 {lo['Sink_1 (%)']:.2f} % at T = {lo['T']}, "
                   f"{hi['Sink_1 (%)']:.2f} % at T = {hi['T']}; mean α_1 {lo['mean alpha_1']:.3f} "
                   f"({ratio(lo):.1f}x uniform), {hi['mean alpha_1']:.3f} ({ratio(hi):.1f}x uniform)")
    return "; ".join(out)


def proposition_checks(seq_len: int = 64, seed: int = 0, tol: float = 1e-5) -> dict:
    """The repeated-token propositions on small randomly initialised sinkpaper models (sinkpaper.propositions):
    NoPE exactly uniform (max |A - 1/t| <= tol); relative PE and ALiBi layer-1 scores depend on t - j only
    (spread <= tol); RoPE's attention to token 1 within e^{2 xi}/(e^{2 xi}+t-1) at every t <= 4 seq_len.
    Learned absolute positions are the contrast (no proposition). ``all_hold``: all three hold (a check of the propositions, not a verdict)."""
    from sinkpaper import propositions

    nope = propositions.nope_uniform(seq_len=seq_len, seed=seed)
    dist = {pe: propositions.distance_only(pe, seq_len=seq_len, seed=seed) for pe in ("relative", "alibi", "learnable")}
    rb = propositions.rope_bound(seq_len=4 * seq_len, seed=seed)
    rows = [{"positional encoding": "NoPE", "proposition": "attention exactly uniform, A[t, j] = 1/t",
             "measured": f"max |A[t, j] - 1/t| = {nope['max_deviation_from_uniform']:.1e}",
             "holds": "yes" if nope["max_deviation_from_uniform"] <= tol else "NO",
             "max alpha_1": round(nope["max_alpha_1"], 4)}]
    for pe, label in (("relative", "relative (T5 buckets)"), ("alibi", "ALiBi"), ("learnable", "learned absolute")):
        d = dist[pe]
        ok = d["max_diagonal_spread"] <= tol
        rows.append({"positional encoding": label,
                     "proposition": "layer-1 scores depend on t - j only" if pe != "learnable"
                     else "none (the contrast: positions can single out token 1)",
                     "measured": f"max spread along a diagonal t - j = {d['max_diagonal_spread']:.1e}",
                     "holds": ("yes" if ok else "NO") if pe != "learnable" else "n/a",
                     "max alpha_1": round(d["max_alpha_1"], 4)})
    excess = float((rb["attention_to_1"] - rb["bound"]).max())  # > 0 only by float32 rounding when it holds
    rows.append({"positional encoding": "RoPE", "proposition": "A[t, 1] <= e^{2 xi} / (e^{2 xi} + t - 1)",
                 "measured": f"max A[t, 1] - bound = {excess:.1e} over t <= {4 * seq_len}, 4 heads "
                             "(the check allows 1e-6 of float32 rounding)",
                 "holds": "yes" if rb["bound_holds"] else "NO", "max alpha_1": None})
    all_hold = all(r["holds"] == "yes" for r in rows if r["holds"] != "n/a")
    return {"rows": rows, "rope": rb, "all_hold": all_hold, "uniform_alpha_1": nope["uniform_alpha_1"],
            "summary": (f"NoPE max |A - 1/t| {nope['max_deviation_from_uniform']:.1e}; relative/ALiBi diagonal "
                        f"spread {dist['relative']['max_diagonal_spread']:.1e}/"
                        f"{dist['alibi']['max_diagonal_spread']:.1e}; RoPE bound holds at every t <= "
                        f"{4 * seq_len}: {'yes' if rb['bound_holds'] else 'no'}")}


@torch.no_grad()
def sink_token_profile(lm, input_ids: torch.Tensor, epsilon: float = 0.3) -> dict:
    """Section 3's properties of the sink token from one traced batch (queries, keys, values, hidden states).

    Per (layer, head), averaged over samples (numpy [L, H] unless noted):

    * ``alpha_1``: the metric's alpha_1; ``sink_heads``: alpha_1 > epsilon (bool);
    * ``hidden_ratio`` [L+1]: |h_1| / mean_{t>1} |h_t| per layer, embeddings first (massive activations);
      ``hidden_first`` / ``hidden_others`` [L+1]: |h_1| and mean_{t>1} |h_t|; ``value_first`` /
      ``value_others`` [L]: |v_1| and mean_{t>1} |v_t|, averaged over heads;
    * ``value_ratio``, ``key_ratio``: |v_1| / mean_{t>1} |v_t|, and the same for the post-RoPE keys;
    * ``cos_first``, ``cos_others``: mean over queries t > 1 of cos(q_t, k_1), and of cos(q_t, k_j) over the
      visible keys 1 < j <= t; ``normprod_ratio``: mean |q_t||k_1| over mean |q_t||k_j| (same pairs);
    * ``attention_share``: mean over t > 1 of A[t, 1]; ``value_share``: mean over t > 1 of
      A[t, 1] |v_1| / sum_j A[t, j] |v_j|, the part of the head's weighted value mass that token 1 brings.
      A key that draws attention but brings little value acts as a key bias (the paper's Section 7.2).
    """
    from sinkpaper import metrics

    tr = lm.trace(input_ids)
    hn = metrics.hidden_norms(tr.hidden_states)  # [B, L+1, T]
    vn_all = metrics.head_norms(tr.values)  # [B, L, H, T]
    out: dict[str, Any] = {"hidden_ratio": metrics.massive_activation_ratio(hn).cpu().numpy(),
                           "hidden_first": hn[..., 0].mean(0).cpu().numpy(),
                           "hidden_others": hn[..., 1:].mean((0, 2)).cpu().numpy(),
                           "value_first": vn_all[..., 0].mean((0, 2)).cpu().numpy(),
                           "value_others": vn_all[..., 1:].mean((0, 2, 3)).cpu().numpy()}
    names = ("alpha_1", "value_ratio", "key_ratio", "cos_first", "cos_others", "normprod_ratio",
             "attention_share", "value_share")
    acc: dict[str, list] = {f: [] for f in names}
    for a, q, k, v in zip(tr.attentions, tr.queries, tr.keys, tr.values):  # per layer: [B, H, T, T], [B, H, T, D]
        T = a.shape[-1]
        vis = torch.ones(T, T, dtype=torch.bool, device=a.device).tril()
        others = vis.clone()
        others[:, 0] = False
        others[0] = False  # queries t > 1, keys 1 < j <= t
        n_others = others.sum()
        vn, kn = v.norm(dim=-1), k.norm(dim=-1)  # [B, H, T]
        qk = metrics.qk_decomposition(q, k)  # [B, H, T, T] each
        mass = a * vn[..., None, :]  # A[t, j] |v_j|
        acc["alpha_1"].append(metrics.alpha(a, vis)[..., 0].mean(0))
        acc["value_ratio"].append((vn[..., 0] / vn[..., 1:].mean(-1)).mean(0))
        acc["key_ratio"].append((kn[..., 0] / kn[..., 1:].mean(-1)).mean(0))
        acc["cos_first"].append(qk["cosine"][..., 1:, 0].mean((0, -1)))
        acc["cos_others"].append((torch.where(others, qk["cosine"], 0.0).sum((-1, -2)) / n_others).mean(0))
        np_first = qk["norm_product"][..., 1:, 0].mean(-1)
        np_others = torch.where(others, qk["norm_product"], 0.0).sum((-1, -2)) / n_others
        acc["normprod_ratio"].append((np_first / np_others).mean(0))
        acc["attention_share"].append(a[..., 1:, 0].mean((0, -1)))
        acc["value_share"].append((mass[..., 1:, 0] / mass[..., 1:, :].sum(-1).clamp_min(1e-30)).mean((0, -1)))
    for f in names:
        out[f] = torch.stack(acc[f]).cpu().numpy()  # [L, H]
    out["sink_heads"] = out["alpha_1"] > epsilon
    out["n_samples"] = int(input_ids.shape[0])
    return out


def _median(x: np.ndarray) -> float:
    return float(np.median(x)) if x.size else math.nan


def profile_summary(profile: Mapping) -> dict:
    """Medians over the sink heads of one :func:`sink_token_profile` (NaN when it has none)."""
    m = profile["sink_heads"]
    med = lambda key: round(_median(profile[key][m]), 3)  # noqa: E731
    return {"sink heads": f"{int(m.sum())} of {m.size}",
            "token-1 norm ratio (max over layers)": round(float(np.max(profile["hidden_ratio"])), 1),
            "value-norm ratio |v_1|/|v_t|": med("value_ratio"),
            "key-norm ratio |k_1|/|k_t|": med("key_ratio"),
            "cos(q, k_1) - cos(q, k_j)": round(_median(profile["cos_first"][m] - profile["cos_others"][m]), 3),
            "norm-product ratio": med("normprod_ratio"),
            "attention share of token 1": med("attention_share"),
            "value share of token 1": med("value_share")}




BOS_WORD = {True: "on", False: "off"}   # the BOS column's words (explorer payloads, sink_vs_seq_len rows)


def table1_values(sink: Mapping[tuple, float], by_T: Sequence[Mapping], models: Sequence[str],
                  has_bos: Mapping[str, bool], rope: Mapping[str, bool]) -> tuple[dict, dict]:
    """The values chapter 3 records for the claims t1_natural, t1_random, t1_repeat and metric_T, and for each the
    other BOS setting's numbers (shown beside, not judged). ``sink``: {(model, inputs, bos): Sink_1 %}; ``by_T``:
    :func:`sink_vs_seq_len` rows. Natural and random text are judged with a BOS where the model's tokenizer has
    one (the paper's Table 1); repeats without one (the propositions' premise), and only on RoPE models (a model
    with absolute positions is shown, its label marked not judged)."""
    from ..paper import NO_SINK, NOT_JUDGED

    values: dict[str, dict] = {"t1_natural": {}, "t1_random": {}, "t1_repeat": {}, "metric_T": {}}
    other: dict[str, list] = {cid: [] for cid in values}
    for n in models:
        judged = has_bos[n]
        for i, cid in (("natural", "t1_natural"), ("random", "t1_random")):
            if (n, i, judged) in sink:
                values[cid][f"{n}: {i}"] = sink[(n, i, judged)]
            if (n, i, not judged) in sink:
                other[cid].append(f"{n} BOS {BOS_WORD[not judged]}: {sink[(n, i, not judged)]:.2f} %")
        label = f"{n}: repeat" if rope[n] else f"{n}{NOT_JUDGED}: repeat"
        if (n, "repeat", False) in sink:
            values["t1_repeat"][label] = sink[(n, "repeat", False)]
        if (n, "repeat", True) in sink:
            other["t1_repeat"].append(f"{n} BOS on (BOS + repeats): {sink[(n, 'repeat', True)]:.2f} %")
        series = sorted((r for r in by_T if r["model"] == n and not r["skipped"]), key=lambda r: r["T"])
        for b in (judged, not judged):
            pts = [r for r in series if r["BOS"] == BOS_WORD[b]]
            if len(pts) < 2:
                continue
            if b == judged:
                values["metric_T"][f"{n}: smallest T"] = pts[0]["Sink_1 (%)"]
                values["metric_T"][f"{n}: largest T"] = pts[-1]["Sink_1 (%)"]
            else:
                other["metric_T"].append(f"{n} BOS {BOS_WORD[b]}: {pts[0]['Sink_1 (%)']:.2f} % at T = {pts[0]['T']}, "
                                         f"{pts[-1]['Sink_1 (%)']:.2f} % at T = {pts[-1]['T']}")
    without = [n for n in models if (n, "natural", False) in sink and sink[(n, "natural", False)] < NO_SINK]
    if without:
        other["t1_natural"].append("without BOS " + ", ".join(
            f"{n} has no sink on natural text ({sink[(n, 'natural', False)]:.2f} %)" for n in without)
            + ": its sink exists only on the BOS token")
    return values, other


def property_values(summaries: Mapping[str, Mapping], keys: Mapping[str, str], judged: Sequence[str],
                    sink_natural: Mapping[str, float]) -> tuple[dict, list[str]]:
    """One Section-3 property claim's values from the sink-head summaries of each setting ("model, BOS on/off"):
    ({"setting: label": value} for the settings judged (the models' own BOS setting, with a sink on natural
    text), [the other settings, as shown-not-judged text]). ``keys`` maps a label to its summary key; a NaN
    (no sink heads in that setting) reads None."""
    from ..paper import SINK

    values, others = {}, []
    for tag, summ in summaries.items():
        is_judged = tag in judged and sink_natural.get(tag, 0.0) >= SINK
        for label, key in keys.items():
            v = summ[key]
            v = None if v is None or v != v else float(v)
            if is_judged:
                values[f"{tag}: {label}"] = v
            else:
                others.append(f"{tag} (Sink_1 {sink_natural.get(tag, float('nan')):.2f} %): {label} "
                              + ("—" if v is None else f"{v:.3g}"))
    return values, others
