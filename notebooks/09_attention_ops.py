# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Section 7.3: attention operations — the sink needs softmax's normalization
#
# Softmax makes each query's attention weights sum to one. A head that has nothing useful to read at some
# position must still put that unit of attention somewhere; the paper's explanation of the sink is that heads
# learn to put it on a key whose value changes little (the first token). Gu et al. (2025), Section 7.3, test
# this by changing the operation and re-training their 60M model:
#
# 1. **Scores summing to less than one give less sink**: softmax rows scaled to sum to α = 2 / 1 / 0.2 / 0.1 /
#    0.05 give Sink_1 29.10 / 18.18 / 9.41 / 3.59 / 4.53 %.
# 2. **Sigmoid attention without normalization has no sink**: Sink* 0.44 %; **normalized** (divided by the row
#    sum) the sink returns: 30.24 %.
# 3. **elu + 1 without normalization: no sink** (Sink* 0.80 %); as a normalized kernel attention,
#    (elu(q) + 1)·(elu(k) + 1) divided by the row sum, 53.65 %*.
# 4. At **1B** parameters, sigmoid without normalization still has no sink (their numbers are below).
#
# Without normalization the weights are not a distribution, so the paper scores the **proxy** |w| / Σ|w| per
# row and marks such numbers with * (Sink*). We add **softpick** (Zuhri et al. 2025, not this paper), a
# rectified softmax that can give every key exactly zero, reported to remove the sink.
#
# This page shows the real-LM runs of `configs/attention.yaml` (trained on a GPU and read from the results
# store), the paper's numbers (1B included, as the paper reports them), a CPU check that every operation
# trains, and the operations **in miniature**. There, sigmoid's proxy shows an early burst of sink that then
# vanishes; the raw weights, recorded next to the proxy at every evaluation, say what that transient is.

# %% tags=["parameters"]
profile = "cpu"  # cpu | gpu | paper: cpu reads the real-LM runs from the results store; gpu and paper train them
gpu_seeds = [0]  # seeds of the real-LM sweep (configs/attention.yaml) that are read or trained
miniature_seeds = [0, 1, 2]  # seeds of the stored miniature sweep shown next to the live run
live_point = "sigmoid"  # miniature point trained live: sigmoid | sigmoid_norm | elu | elu_norm | softpick | recipe
live_seed = 0  # seed of the live miniature run
live_steps = None  # None: the point's own steps (1500, ~60 s on 2 cores); tests pass fewer

# %%
import torch
from IPython.display import Markdown, display

from sinkpaper import provenance
from sinkpaper.book import claims, experiments, figures, section7, sections

FAMILY = "configs/attention.yaml"
MINIATURE = "configs/miniature.yaml"
PROFILES = ("cpu", "gpu", "paper")
MINI_ORDER = ["recipe", "sigmoid", "sigmoid_norm", "elu", "elu_norm", "softpick"]  # the miniature's operation points
PROXY_POINTS = ("sigmoid", "elu")  # miniature points scored on the proxy; their runs carry raw weights
if profile not in PROFILES:
    raise ValueError(f"unknown profile {profile!r}; valid: {', '.join(PROFILES)}")
if profile != "cpu" and not torch.cuda.is_available():
    raise ValueError(f"profile {profile!r} trains the real-LM sweep on a CUDA GPU; none here: use profile='cpu'")
if live_point not in MINI_ORDER:
    raise ValueError(f"unknown live_point {live_point!r}; valid: {', '.join(MINI_ORDER)}")
for name, value in (("gpu_seeds", gpu_seeds), ("miniature_seeds", miniature_seeds)):
    if not isinstance(value, list) or not value or not all(isinstance(s, int) and s >= 0 for s in value):
        raise ValueError(f"{name} must be a non-empty list of seeds (ints >= 0), got {value!r}")
for name, value, low in (("live_seed", live_seed, 0)):
    if not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
if live_steps is not None and (not isinstance(live_steps, int) or live_steps < 1):
    raise ValueError(f"live_steps must be None (the point's steps) or an int >= 1, got {live_steps!r}")

POINTS = section7.ATTENTION
ORDER = [p.name for p in POINTS]
P = section7.by_name(POINTS)
MINI_NAMES = {"softmax": "recipe"}  # the miniature's default point is its recipe
VERDICT = {True: "agrees", False: "**disagrees**", None: "no verdict"}
run_stamp = provenance.stamp("cuda" if profile != "cpu" else "cpu", profile=profile)
display(Markdown(figures.provenance_line(run_stamp)))

# %% [markdown]
# ## Real language models: the attention-operation sweep
#
# Each point of `configs/attention.yaml` changes the operation of the base run. At the `cpu` profile this page
# does not train them (a sink from real text needs a GPU); it reads the runs stored at the `gpu` profile. At
# `gpu` or `paper` it trains whatever the store lacks. Numbers marked * are the proxy (Sink*_1).

# %% tags=["hide-input"]
lm = sections.lm_sweep(FAMILY, profile, gpu_seeds)
if lm.payloads:
    display(section7.point_table(lm.payloads, POINTS))
    display(sections.sweep_chart(lm.payloads, ORDER, title=f"Real LM ({lm.profile} profile): Sink_1 "
                                 "(Sink*_1 for sigmoid, elu, kernel)"))
    lm_raw = [r for p in lm.payloads for r in section7.raw_curve_rows(p)]
    if lm_raw:  # operators without normalization: the raw weights behind the proxy, over training
        display(figures.alt.hconcat(
            section7.steps_chart(lm_raw, "proxy Sink*_1 %", "Real LM: proxy Sink*_1"),
            section7.steps_chart(lm_raw, "raw weight on token 1", "raw weight on token 1", log_y=True),
            section7.steps_chart(lm_raw, "raw weight on other keys", "raw weight on other keys", log_y=True)))
    display(Markdown(figures.provenance_line(lm.provenance())))
if lm.missing.missing:
    display(Markdown(lm.missing_text() + " Until then this section has no real-LM number of ours; the paper's "
                     "numbers are below and in the table at the end of the page."))

# %% [markdown]
# ### The paper's numbers
#
# Sink_1 in % (* = Sink*_1, the proxy) of the paper's 60M models (Section 7.3, Tables 7-8), typed in from the
# paper. Rows marked *no* are not in our sweep.

# %% tags=["hide-input"]
display(section7.paper_table(POINTS, section7.ATTENTION_NOT_RUN))

# %% [markdown]
# ### At 1B parameters, as the paper reports it
#
# **These are the paper's numbers, not ours**: this book trains no 1B model. The paper pre-trains two 1B
# models (d = 2048, 22 layers, 16 heads, FFN 5632, 40k steps) with softmax and with sigmoid attention without
# normalization.

# %% tags=["hide-input"]
display(figures.Table([
    {"model (the paper's, 1B)": "softmax attention", "the paper's number": section7.PAPER_1B["softmax"]["text"]},
    {"model (the paper's, 1B)": "sigmoid attention, no normalization",
     "the paper's number": section7.PAPER_1B["sigmoid"]["text"]},
]))
display(Markdown("*Source:* Gu et al. (2025), Section 7.3 — typed in from the paper, not computed here. In the "
                 "paper's numbers the softmax model's sink is larger at 1B than at 60M (45.11 % against 18.18 %), "
                 "while sigmoid without normalization stays at ~2.46 %* with a valid loss close to softmax's "
                 "(3.10 against 3.07)."))

# %% [markdown]
# ## Live, in miniature: change the operation, lose the sink
#
# The miniature is the synthetic analogue of the real runs, not a replacement: the **Bigram-Backcopy** task
# of Guo et al. (2024), `configs/miniature.yaml` — a fixed BOS then 64 tokens that follow a fixed bigram
# table, except that after one of 3 *trigger* tokens the next token copies the token before the trigger. A
# 1-layer, 4-head, d = 64 model trains for 1500 steps (about a minute on 2 cores); with softmax (the `recipe`
# point) all 4 heads park their attention on the BOS. One point is trained now, from scratch; the table and
# chart after it are the stored runs of every operation point over three seeds (mean [min, max] over seeds;
# the `the paper (%)` column is the paper's real-LM number for the same operation, for orientation).

# %% tags=["hide-input"]
overrides = None
if live_steps is not None:
    overrides = {"optim.steps": live_steps, "eval.every": min(100, live_steps), "run.checkpoint_every": live_steps}
live = experiments.live_run(MINIATURE, "cpu", point=live_point, seed=live_seed, overrides=overrides)
lr_ = live.payload["result"]
live_label = f"live {live_point}, seed {live_seed}"
star = "*" if lr_.get("proxy") else ""
display(Markdown(f"**{live_label}**, trained now for {lr_['step']} steps ({lr_['tokens_seen']:,} tokens, "
                 f"{lr_['provenance']['wall_seconds']:.0f} s): Sink{star}_1 {lr_['sink_k']['1']:.1f} % on the BOS "
                 f"(α_1 = {lr_['alpha_1_mean']:.3f}{' on the proxy' if star else ''}), final loss "
                 f"{lr_['final_loss']:.3f}."))
display(Markdown(figures.provenance_line(experiments.payloads_provenance([live.payload], loaded=False))))

mini = experiments.stored_sweep(MINIATURE, "cpu", points=MINI_ORDER, seeds=tuple(miniature_seeds))
same_run = section7.live_vs_stored(live.payload, mini.payloads)
if same_run:
    display(Markdown(same_run))
if mini.payloads:
    display(section7.point_table(mini.payloads, [p for p in POINTS if MINI_NAMES.get(p.name, p.name) in MINI_ORDER],
                                 names=MINI_NAMES))
    display(sections.sweep_chart(mini.payloads, MINI_ORDER, title="Miniature: Sink_1 (Sink*_1 for sigmoid, elu)"))
    display(Markdown(figures.provenance_line(experiments.payloads_provenance(mini.payloads, loaded=True))))
if mini.missing:
    display(Markdown(mini.missing_text()))

# %% [markdown]
# ## What sigmoid's early "sink" is: the raw weights next to the proxy
#
# For sigmoid (and elu + 1) without normalization the trainer records, at every evaluation, the proxy the
# paper scores and what the proxy is made of: the mean **raw** weight σ(q·k) on token 1 (from the queries after
# it), the mean raw weight on the other visible keys, and the mean row sum. The proxy α_1 is the share of a
# row's |w| that goes to token 1, so it can be high when every weight is tiny; the raw weights say whether the
# heads really attend to token 1. Below: the live run and the stored runs of the proxy points, over training.

# %% tags=["hide-input"]
proxy_runs = [(live_label, live.payload)] if lr_.get("proxy") else []
proxy_runs += [(f"stored {experiments.point_of(p)}, seed {p['config']['run']['seed']}", p)
               for p in mini.payloads if experiments.point_of(p) in PROXY_POINTS]
raw = [r for label, p in proxy_runs for r in section7.raw_curve_rows(p, label)]
if raw:
    display(figures.alt.vconcat(
        figures.alt.hconcat(
            section7.steps_chart(raw, "proxy Sink*_1 %", "proxy: Sink*_1 (% of heads)", width=280,
                                 y_domain=(0, 100)),
            section7.steps_chart(raw, "proxy alpha_1", "proxy: α_1 = share of |w| on token 1", width=280,
                                 rule_y=0.3)),
        figures.alt.hconcat(
            section7.steps_chart(raw, "raw weight on token 1", "raw weight on token 1", log_y=True, width=280),
            section7.steps_chart(raw, "raw weight on other keys", "raw weight on the other keys", log_y=True,
                                 width=280)),
        section7.steps_chart(raw, "raw row sum", "raw row sum (sum of a query's weights)", log_y=True, width=280)))
    if lr_.get("proxy"):
        display(Markdown(f"The live run's evaluations ({live_label}):"))
        display(figures.Table([{k: (f"{v:,}" if k == "tokens" else round(v, 4) if k.startswith("proxy") else
                                    float(f"{v:.3g}") if isinstance(v, float) else v)
                                for k, v in r.items() if k != "run"}
                               for r in section7.raw_curve_rows(live.payload, live_label)]))
        display(Markdown(figures.provenance_line(experiments.payloads_provenance([live.payload], loaded=False))))
    display(Markdown("Every run with raw weights, at three moments (raw weights are means over heads and queries; "
                     "*others* = the other visible keys):"))
    display(section7.transient_table(proxy_runs))
    label, longest = max(proxy_runs, key=lambda lp: len(section7.raw_curve_rows(lp[1])))  # the live run if full
    display(Markdown("Read in words, for one run: " + (section7.transient_text(longest, label) or "")))
    stored_proxy = [p for label, p in proxy_runs if p is not live.payload]
    if stored_proxy:
        display(Markdown(figures.provenance_line(experiments.payloads_provenance(stored_proxy, loaded=True))))
else:
    display(Markdown("No run of an operation without normalization with recorded raw weights is available "
                     f"(the live point `{live_point}` is normalized, and no stored sigmoid or elu run was found)."))

# %% [markdown]
# How to read it: at initialization σ(q·k) ≈ σ(0) = 0.5 for every key, so the proxy reads uniform attention
# (α_1 ≈ H_64 / 64 ≈ 0.074) and the row sum is about (T + 1) / 4 ≈ 16. Whether the later burst of Sink*_1 is a
# real sink — raw weight near 1 on the BOS, near 0 elsewhere — or only a ratio of tiny weights is decided by the
# numbers above, per run.

# %% [markdown]
# ## Paper vs this run
#
# Rules, applied to the means over seeds (nothing is judged by hand): a point **has a sink** when its Sink_1
# (Sink*_1 for operations without normalization, as the paper scores them) is ≥ 10 % and **none** below 5 %
# (in between: no verdict). *Less sink when scores sum to less than one*: `softmax_sum_0.2` below `softmax`.
# *elu + 1*: no sink without normalization and a sink with it (real LMs: the paper's kernel form `kernel_elu`;
# miniature: `elu_norm`, elu + 1 of the scores divided by the row sum). The verdict is on the final numbers;
# the early transient of the proxy is reported in the note.

# %% tags=["hide-input"]
mp = mini.payloads + ([live.payload] if not any(experiments.point_of(p) == live_point for p in mini.payloads) else [])
ours = {pt: section7.mean_of(lm.payloads, pt) for pt in ORDER}
mini_ = {pt: section7.mean_of(mp, pt) for pt in MINI_ORDER}


def fmt_point(d, pt, star):
    v = d.get(pt)
    return None if v is None else f"{pt} {v:.2f} %{'*' if star else ''}"


table = []
for pt in ORDER:
    m = mini_.get(MINI_NAMES.get(pt, pt))
    table.append({"setting": f"{pt}: {P[pt].what}", "paper": P[pt].sink_1 if P[pt].sink_1 is not None else P[pt].paper,
                  "ours": round(ours[pt], 2) if ours[pt] is not None else "no stored GPU run",
                  "note": ("* proxy; " if P[pt].proxy else "")
                  + f"miniature: {('%.2f %%' % m) if m is not None else 'not run in miniature'}"})
table.append({"setting": "1B softmax (the paper's 1B model)", "paper": 45.11, "ours": "not run (1B)",
              "note": "the paper's number only"})
table.append({"setting": "1B sigmoid, no normalization (the paper's 1B model)", "paper": 2.46, "ours": "not run (1B)",
              "note": "the paper's number only (Sink*_1, ~)"})
display(figures.paper_vs_ours(table))

LM_RULES = {  # claim -> (points, rule over {point: mean Sink_1})
    "ops_scaled": (["softmax_sum_0.2", "softmax"],
                   lambda d: None if None in (d["softmax_sum_0.2"], d["softmax"])
                   else d["softmax_sum_0.2"] < d["softmax"]),
    "ops_sigmoid": (["sigmoid"], lambda d: section7.no_sink(d["sigmoid"])),
    "ops_sigmoid_norm": (["sigmoid_norm"], lambda d: section7.has_sink(d["sigmoid_norm"])),
    "ops_elu": (["elu", "kernel_elu"],
                lambda d: section7.all_true([section7.no_sink(d["elu"]), section7.has_sink(d["kernel_elu"])])),
    "ops_softpick": (["softpick"], lambda d: section7.no_sink(d["softpick"])),
}
MINI_RULES = {
    "ops_sigmoid": (["sigmoid"], lambda d: section7.no_sink(d["sigmoid"])),
    "ops_sigmoid_norm": (["sigmoid_norm"], lambda d: section7.has_sink(d["sigmoid_norm"])),
    "ops_elu": (["elu", "elu_norm"],
                lambda d: section7.all_true([section7.no_sink(d["elu"]), section7.has_sink(d["elu_norm"])])),
    "ops_softpick": (["softpick"], lambda d: section7.no_sink(d["softpick"])),
}
PROXY = {"sigmoid", "elu", "kernel_elu"}
# the proxy's early transient in the stored miniature runs of each proxy point (the verdict is on the end)
transients = {pt: section7.transient_note([p for p in mini.payloads if experiments.point_of(p) == pt])
              for pt in PROXY_POINTS}
mini_prov = (experiments.payloads_provenance(mp, loaded=not any(r is live.payload for r in mp))
             if mp else run_stamp)
lines = []
for c in [c for c in claims.CLAIMS if c.chapter == "09_attention_ops"]:
    if c.id == "ops_1b":
        claims.record(c.id, ours="not run: the paper's 1B models only (softmax 45.11 %, sigmoid ~2.46 %*)",
                      agrees=None, provenance=run_stamp, kind="lm",
                      setting="this book trains no 1B model; the numbers shown are the paper's")
        claims.record(c.id, ours="not run in miniature", agrees=None, provenance=run_stamp, kind="miniature",
                      setting="no 1B analogue in the miniature")
        lines.append(f"- “{c.text}” (paper: {c.paper}): the paper's numbers only — no verdict of ours.")
        continue
    points, rule = LM_RULES[c.id]
    runs = [p for p in lm.payloads if experiments.point_of(p) in points]
    if runs and all(ours[pt] is not None for pt in points):
        agrees = rule(ours)
        text = "Sink_1 " + ", ".join(fmt_point(ours, pt, pt in PROXY) for pt in points)
        claims.record(c.id, ours=text, agrees=agrees, setting=section7.setting_text(runs), kind="lm",
                      provenance=experiments.payloads_provenance(runs, loaded=profile == "cpu"))
        lm_text = f"{text} — {VERDICT[agrees]}"
    else:
        claims.record(c.id, ours="no stored GPU run", agrees=None, provenance=run_stamp, kind="lm",
                      setting=f"the {lm.profile}-profile runs of {FAMILY} are not in the results store yet")
        lm_text = "no stored GPU run"
    if c.id in MINI_RULES:
        points, rule = MINI_RULES[c.id]
        have = {pt: mini_.get(pt) for pt in points}
        m_runs = [p for p in mp if experiments.point_of(p) in points]
        agrees = rule(have) if all(v is not None for v in have.values()) else None
        text = ", ".join(fmt_point(have, pt, pt in PROXY) or f"{pt}: no stored run" for pt in points)
        note = "; ".join(f"{pt}: {transients[pt]}" for pt in points if transients.get(pt))
        claims.record(c.id, ours=text, agrees=agrees, kind="miniature", note=note,
                      setting=f"Bigram-Backcopy miniature, 1 layer x 4 heads, fixed BOS, seeds "
                              f"{sorted({p['config']['run']['seed'] for p in m_runs})}",
                      provenance=experiments.payloads_provenance(
                          m_runs, loaded=not any(r is live.payload for r in m_runs)) if m_runs else run_stamp)
        m_text = f"{text} — {VERDICT[agrees]}" + (f" ({note})" if note else "")
    else:
        claims.record(c.id, ours="not run in miniature", agrees=None, provenance=run_stamp, kind="miniature",
                      setting="configs/miniature.yaml has no such point")
        m_text = "not run in miniature"
    lines.append(f"- “{c.text}” (paper: {c.paper}). Real LM: {lm_text}. Miniature: {m_text}.")
display(Markdown("\n".join(lines)))
display(Markdown(figures.provenance_line(mini_prov)))

# %% [markdown]
# ## Rerun it
#
# ```bash
# python -m sinkpaper sweep --config configs/attention.yaml --profile gpu --seeds 0 --out runs/attention
# python -m sinkpaper.book run --only 09_attention_ops -p live_point sigmoid_norm
# python -m sinkpaper sweep --config configs/miniature.yaml --seeds 0 1 2 \
#     --points sigmoid sigmoid_norm elu elu_norm softpick --out runs/miniature
# ```
