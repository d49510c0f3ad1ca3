"""What the Section-3 chapters (01 introduction, 02 properties, 03 measuring) compute, as plain functions.

* parameters: :func:`check_profile`, :func:`parse_models`, :func:`parse_bos`, :func:`parse_inputs`,
  :func:`by_profile`, :func:`positive_int`, and :func:`load_models` (every model loaded before any measurement,
  with the clear :class:`sinkpaper.lms.ModelUnavailableError` of :func:`sinkpaper.lms.load_lm` for a name that
  cannot load);
* the models: :func:`model_card` (architecture, positional encoding, BOS), :func:`tokenizer_adds_bos`;
* the metric: :func:`sink_vs_epsilon` (Sink_1 from stored alpha_1 at any threshold), :func:`sink_vs_seq_len`,
  :func:`seq_len_trend`, :func:`uniform_alpha_1`, :func:`inputs_table` (the Table-1 settings from explorer
  payloads);
* the measurements behind the paper's claims: :func:`proposition_checks`, :func:`sink_token_profile` and
  :func:`profile_summary` (Section 3's properties). The chapters record the numbers with
  :func:`sinkpaper.paper.record`, whose rules decide the verdicts;
* :func:`xy_chart`, a line chart over a numeric x (epsilon, T) for rows of dicts.

Nothing here holds a number of the paper or a threshold of a rule (both live in :mod:`sinkpaper.paper`).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from sinkpaper.book.parameters import PROFILES, device_of  # noqa: F401 (chapters read ms.PROFILES)
from sinkpaper.metrics import uniform_alpha_1  # noqa: F401 (the floor lives with the metric; chapters call ms.)



# ------------------------------------------------------------------------------------------------ parameters
check_profile = device_of   # the one profile check (sinkpaper.book.parameters)


def parse_models(model: str) -> list[str]:
    """'a, b' -> ['a', 'b'] (offline names or Hugging Face ids); at least one, no repeats."""
    if not isinstance(model, str):
        raise ValueError(f"model must be a string of comma-separated names, got {model!r}")
    names = [m.strip() for m in model.split(",") if m.strip()]
    if not names:
        from sinkpaper.lms import available_models

        raise ValueError("model must name at least one model; available offline: " + ", ".join(available_models())
                         + "; or any Hugging Face causal LM id")
    if len(set(names)) != len(names):
        raise ValueError(f"model names a model twice: {names}")
    return names


def parse_bos(bos: Any) -> list[bool]:
    """True -> [True], False -> [False], "both" -> [False, True]."""
    if isinstance(bos, str) and bos.lower() in ("true", "false", "both"):
        bos = {"true": True, "false": False, "both": "both"}[bos.lower()]
    if bos is True:
        return [True]
    if bos is False:
        return [False]
    if bos == "both":
        return [False, True]
    raise ValueError(f"bos must be True, False or 'both', got {bos!r}")


def parse_inputs(inputs: Any) -> list[str]:
    """'natural,repeat' (or a list) -> ['natural', 'repeat'], in the paper's order natural, random, repeat."""
    from sinkpaper.probes import INPUTS

    items = [s.strip() for s in inputs.split(",")] if isinstance(inputs, str) else list(inputs or [])
    items = [s for s in items if s]
    bad = [s for s in items if s not in INPUTS]
    if bad or not items:
        raise ValueError(f"inputs must name one or more of {', '.join(INPUTS)} (comma-separated), got {inputs!r}")
    return [i for i in INPUTS if i in items]


def positive_int(value: Any, name: str = "value") -> int:
    """`value` as an int, which must be >= 1 (a clear error otherwise)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def by_profile(value: Any, profile: str, defaults: Mapping[str, int], name: str = "value") -> int:
    """`value` unless it is None, else the profile's default; it must be an int >= 1."""
    if value is None:
        return defaults[profile]
    return positive_int(value, f"{name} (None = the profile's default)")


def load_models(names: Sequence[str], device: str = "cpu") -> dict:
    """{name: LM}, loaded in order; a name that cannot load raises sinkpaper.lms.ModelUnavailableError, whose
    message lists the models available offline."""
    from sinkpaper.lms import load_lm

    return {name: load_lm(name, device=device) for name in names}


# ------------------------------------------------------------------------------------------------ models
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


def inputs_table(payloads: Sequence[Mapping], epsilon: float) -> list[dict]:
    """One row per (model, BOS, inputs) of explorer payloads: Sink_1 at epsilon, mean alpha_1, and the heads whose
    mean alpha_1 exceeds epsilon. Sink_1 equals :func:`sinkpaper.lms.measure_sink`'s on the same probe."""
    from . import explorer

    rows = []
    for p in payloads:
        for s in p["settings"]:
            a = explorer.decode(p, s["inputs"], s["bos"])["alpha_1"]  # [S, L, H]
            mean = a.mean(0)
            rows.append({"model": p["model"], "BOS": "on" if s["bos"] else "off", "inputs": s["inputs"],
                         "Sink_1 (%)": round(sink_vs_epsilon(a, [epsilon])[0], 2),
                         "mean alpha_1": round(float(a.mean()), 3),
                         "heads with mean alpha_1 > eps": f"{int((mean > epsilon).sum())} of {mean.size}"})
    return rows


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


# ------------------------------------------------------------------------------------- the propositions
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


# ------------------------------------------------------------------------------------------------ properties
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


KEY_MASSIVE = "token-1 norm ratio (max over layers)"
KEY_VALUE = "value-norm ratio |v_1|/|v_t|"
KEY_COS = "cos(q, k_1) - cos(q, k_j)"
KEY_NORM = "norm-product ratio"


# ------------------------------------------------------------------------------------------------ charts
def xy_chart(rows: Sequence[Mapping], x: str, y: str, color: str, title: str, *, x_title: str | None = None,
             y_title: str | None = None, log_x: bool = False, width: int = 260, height: int = 200,
             rule_y: float | None = None, rule_x: float | None = None, legend: str = "bottom"):
    """A line chart of rows of dicts over a numeric x, one line per value of `color`; rows whose x or y is None
    are dropped. `rule_y` / `rule_x` draw a dashed horizontal / vertical line (e.g. a uniform baseline); `legend`
    is the legend's place (altair's orient: "bottom" keeps side-by-side charts inside a book page)."""
    import altair as alt

    from .figures import _num

    values = [{"x": _num(r[x]), "y": _num(r[y]), "c": str(r[color])} for r in rows
              if r.get(y) is not None and r.get(x) is not None]
    xs = alt.Scale(type="log", base=2) if log_x else alt.Scale(zero=False)
    chart = alt.Chart(alt.Data(values=values), title=title, width=width, height=height).mark_line(point=True).encode(
        x=alt.X("x:Q", title=x_title or x, scale=xs),
        y=alt.Y("y:Q", title=y_title or y),
        color=alt.Color("c:N", title=None, sort=list(dict.fromkeys(v["c"] for v in values)),
                        legend=alt.Legend(orient=legend, columns=2 if legend in ("bottom", "top") else 1)),
        tooltip=[alt.Tooltip("c:N", title=color), alt.Tooltip("x:Q", title=x_title or x),
                 alt.Tooltip("y:Q", title=y_title or y, format=".4g")])
    if rule_y is not None:
        chart = chart + alt.Chart(alt.Data(values=[{"y": rule_y}])).mark_rule(strokeDash=[4, 3], color="gray") \
            .encode(y="y:Q")
    if rule_x is not None:
        chart = chart + alt.Chart(alt.Data(values=[{"x": rule_x}])).mark_rule(strokeDash=[4, 3], color="gray") \
            .encode(x="x:Q")
    return chart
