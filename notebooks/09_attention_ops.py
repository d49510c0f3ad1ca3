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

# %% tags=["parameters"]
profile = "cpu"  # cpu | gpu | paper: the stored runs of that profile (cpu: the real-text runs); none trained here
gpu_seeds = [0]  # seeds trained or read at gpu/paper (at cpu: the stored text runs, seeds 0, 1, 2)
miniature_seeds = [0, 1, 2]  # seeds of the stored miniature sweep shown next to the live run
live_point = "sigmoid"  # miniature point trained live: sigmoid | sigmoid_norm | elu | elu_norm | softpick | recipe
live_seed = 0  # seed of the live miniature run
live_steps = None  # None: the point's own steps (1500); tests pass fewer

# %% tags=["remove-input"]
from sinkpaper.book import findings

card = findings.finding_card("09_attention_ops")

# %% [markdown]
# Softmax's weights sum to one, so a head with nothing to read must put its attention somewhere: on a key whose value
# changes little, the first token, in the paper's explanation. Gu et al. (2025), Section 7.3, test this by changing
# the operation and re-training their 60M model. Each operation chooses the similarity and normalizer in
#
# $$o_t = \frac{1}{Z_t} \sum_{j=1}^{t} \mathrm{sim}(q_t, k_j)\, v_j ,$$
#
# where softmax is $\mathrm{sim}(q, k) = \exp(q \cdot k / \sqrt{d_h})$ with $Z_t = \sum_{j \le t} \mathrm{sim}(q_t, k_j)$,
# and sigmoid attention is $\mathrm{sim}(q, k) = \sigma(q \cdot k / \sqrt{d_h})$ with $Z_t = 1$ (without
# normalization) or the same row sum (normalized).
#
# ````{dropdown} What the paper found, in its numbers
# 1. **Scores summing to less than one give less sink**: softmax rows scaled to sum to α = 2 / 1 / 0.2 / 0.1 /
#    0.05 give Sink_1 29.10 / 18.18 / 9.41 / 3.59 / 4.53 %.
# 2. **Sigmoid attention without normalization has no sink**: Sink* 0.44 %; **normalized** (divided by the row
#    sum) the sink returns: 30.24 %.
# 3. **elu + 1 without normalization: no sink** (Sink* 0.80 %); as a normalized kernel attention,
#    (elu(q) + 1)·(elu(k) + 1) divided by the row sum, 53.65 %*.
# 4. At **1B** parameters, sigmoid without normalization still has no sink (fold below).
# ````
#
# Without normalization the weights are not a distribution, so the paper scores a proxy, marked * (Sink*). We add
# **softpick** (Zuhri et al. 2025, not this paper), a rectified softmax that can give every key exactly zero, reported
# to remove the sink.

# %%
from IPython.display import Markdown, display

from sinkpaper import paper
from sinkpaper.book import experiments, figures, parameters, points, prose, realtext, sources, tables
from sinkpaper.results import curves, reading, sweeps

FAMILY = "configs/attention.yaml"
MINIATURE = "configs/miniature.yaml"
MINI_ORDER = ["recipe", "sigmoid", "sigmoid_norm", "elu", "elu_norm", "softpick"]  # the miniature's operation points
PROXY_POINTS = ("sigmoid", "elu")  # miniature points scored on the proxy; their runs carry raw weights
run_stamp = parameters.check(profile, gpu_seeds=gpu_seeds, miniature_seeds=miniature_seeds, live_seed=live_seed,
                             live_steps=live_steps, choices={"live_point": (live_point, MINI_ORDER)})

POINTS = points.ATTENTION
ORDER = [p.name for p in POINTS]
P = points.by_name(POINTS)
MINI_NAMES = {"softmax": "recipe"}  # the miniature's default point is its recipe
sources.record(run_stamp)

# %% [markdown]
# ## Real text: the attention-operation sweep
#
# Each point of `configs/attention.yaml` changes the operation of the base run; * marks the proxy (Sink*_1).

# %% tags=["hide-input", "full-width"]
lm = realtext.family_section(FAMILY, profile, gpu_seeds, ORDER, table={"points": POINTS, "paper": True}, base="softmax",
                             curves=["softmax", "sigmoid", "sigmoid_norm", "elu"], maps=["softmax", "sigmoid_norm"],
                             sweep_title="Sink_1 (Sink*_1 for sigmoid, elu, kernel)")
if lm.payloads:
    # operators without normalization: the raw weights behind the proxy, over training (seeds as bands). The elu+1
    # kernel divided by its row sum (kernel_elu, Z = rowsum) is a distribution, its proxy its plain alpha: left out
    unnormalized = [p for p in lm.payloads if p["config"]["model"].get("attention") != "kernel"
                    or (p["config"]["model"].get("kernel_z") or "rowsum") != "rowsum"]
    lm_raw = figures.seed_rows(unnormalized, curves.raw_curve_rows)
    if lm_raw:
        display(figures.Fold(
            "What the proxy is made of: the raw weights of the operations without normalization",
            figures.Figure(figures.raw_weight_bands(lm_raw),
                           "Real text, the operations without normalization: the raw attention weights recorded "
                           "beside the Sink* proxy at every evaluation of the stored runs, the mean over seeds as a "
                           "line, their range as a band.")))

# %% tags=["hide-input"]
display(figures.Fold("The paper's numbers for every point of the family, ours and the rest",
                     tables.paper_table(POINTS, points.ATTENTION_NOT_RUN)))

# %% tags=["hide-input"]
display(figures.Fold("At 1B parameters, as the paper reports it (the paper's numbers, not ours)", Markdown(
    "This book trains no 1B model. The paper pre-trains two (d = 2048, 22 layers, 16 heads, FFN 5632, 40k steps), "
    "with softmax and with sigmoid attention without normalization."), figures.Table([
    {"model (the paper's, 1B)": "softmax attention",
     "the paper's number": f"Sink_1 {paper.paper_value('softmax_1b'):.2f} % (valid loss "
                           f"{paper.paper_value('softmax_1b: loss'):.2f})"},
    {"model (the paper's, 1B)": "sigmoid attention, no normalization",
     "the paper's number": f"Sink*_1 ~{paper.paper_value('sigmoid_1b'):.2f} % (valid loss "
                           f"{paper.paper_value('sigmoid_1b: loss'):.2f})"},
]), Markdown("*Source:* Gu et al. (2025), Section 7.3, read from `sinkpaper.paper`, not computed here. In the "
                 f"paper's numbers the softmax model's sink is larger at 1B than at 60M "
                 f"({paper.paper_value('softmax_1b'):.2f} % against {paper.paper_value('softmax'):.2f} %), while "
                 f"sigmoid without normalization stays at ~{paper.paper_value('sigmoid_1b'):.2f} %* with a valid loss "
                 f"close to softmax's ({paper.paper_value('sigmoid_1b: loss'):.2f} against "
                 f"{paper.paper_value('softmax_1b: loss'):.2f}).")))

# %% [markdown]
# ## Live, in miniature: change the operation
#
# The miniature ([Bigram-Backcopy](04_optimization.ipynb)): one operation trained now, beside the stored runs.

# %% tags=["hide-input", "full-width"]
live = experiments.live_run(MINIATURE, "cpu", point=live_point, seed=live_seed, steps=live_steps)
lr_ = live.payload["result"]
live_label = f"live {live_point}, seed {live_seed}"
star = "*" if lr_.get("proxy") else ""
display(Markdown(f"**{live_label}**, trained now for {lr_['step']} steps ({lr_['tokens_seen']:,} tokens, "
                 f"{lr_['provenance']['wall_seconds']:.0f} s): Sink{star}_1 {lr_['sink_k']['1']:.1f} % on the BOS "
                 f"(α_1 = {lr_['alpha_1_mean']:.3f}{' on the proxy' if star else ''}), final loss "
                 f"{lr_['final_loss']:.3f}."))
sources.record(sweeps.payloads_provenance([live.payload], loaded=False))

mini = sweeps.stored_sweep(MINIATURE, "cpu", points=MINI_ORDER, seeds=tuple(miniature_seeds))
same_run = prose.live_vs_stored(live.payload, mini.payloads)
if same_run:
    display(Markdown(same_run))
if mini.payloads:
    display(figures.Fold("Every point over its seeds",
                         tables.points_table(mini.payloads, POINTS, names=MINI_NAMES, paper=True, held_out=True)))
    figures.figure(figures.sweep_chart(mini.payloads, MINI_ORDER, title="Miniature: Sink_1 (Sink*_1 for sigmoid, elu)"),
                   figures.sweep_caption(mini.payloads, MINI_ORDER))
    sources.record(sweeps.payloads_provenance(mini.payloads, loaded=True))
if mini.missing:
    sources.missing(mini)

# %% [markdown]
# ## The proxy over training, next to the raw weights
#
# The proxy α_1 is token 1's share of a row's |w|, so it can be high when every weight is tiny; the raw weights
# σ(q·k) on token 1 and on the other keys say whether the heads really attend to it.

# %% tags=["hide-input"]
proxy_runs = [(live_label, live.payload)] if lr_.get("proxy") else []
proxy_runs += [(f"stored {reading.point_of(p)}, seed {p['config']['run']['seed']}", p)
               for p in mini.payloads if reading.point_of(p) in PROXY_POINTS]
# the stored seeds of each proxy point as one band, the live run as its own line (the dashed level: the paper's Sink*)
raw = figures.seed_rows([p for p in mini.payloads if reading.point_of(p) in PROXY_POINTS], curves.raw_curve_rows)
if lr_.get("proxy"):
    raw += [{**r, "point": live_label, "seed": live_seed} for r in curves.raw_curve_rows(live.payload, live_label)]
if raw:
    raw_fig = figures.Figure(figures.raw_weight_bands(raw, "Miniature"),
                             "Miniature, the proxy points: the raw attention weights over training, the stored seeds "
                             "as a band and the live run as its own line; dashed: the paper's Sink*.")
    display(raw_fig)
    label, longest = max(proxy_runs, key=lambda lp: len(curves.raw_curve_rows(lp[1])))  # the live run if full
    display(Markdown(f"{raw_fig.ref}, read in words for one run: " + (prose.transient_text(longest, label) or "")))
    live_evals = None
    if lr_.get("proxy"):
        live_evals = tables.raw_evals_table(live.payload, live_label)
        sources.record(sweeps.payloads_provenance([live.payload], loaded=False))
    display(figures.Fold(
        "Every run with raw weights, at three moments, and the live run's evaluations",
        Markdown("Raw weights are means over heads and queries; *others* = the other visible keys. At "
                 "initialization σ(q·k) ≈ σ(0) = 0.5 for every key, so the proxy reads uniform attention (α_1 ≈ "
                 "H_64 / 64 ≈ 0.074) and the row sum is about (T + 1) / 4 ≈ 16."),
        tables.transient_table(proxy_runs),
        Markdown(f"The live run's evaluations ({live_label}):") if live_evals is not None else None, live_evals))
    stored_proxy = [p for label, p in proxy_runs if p is not live.payload]
    if stored_proxy:
        sources.record(sweeps.payloads_provenance(stored_proxy, loaded=True))
else:
    display(Markdown("No run of an operation without normalization with recorded raw weights is available "
                     f"(the live point `{live_point}` is normalized, and no stored sigmoid or elu run was found)."))

# %% [markdown]
# ````{dropdown} Paper vs this run: how these claims are read
#
# A point has a sink when its Sink_1 (Sink*_1 without normalization) is >= 10 % and none below 5 % (in between: not
# comparable). The elu claim is judged on `elu` against the paper's elu+1 **kernel** (`kernel_elu`), not on
# `elu_norm`, elu(q·k) + 1 over its row sum, which the paper could not train (its Table 15, "-"). The miniature's
# `kernel_elu` runs are read by that row but not shown in the miniature table
# (`python -m sinkpaper claims --id ops_elu` prints them).
# ````

# %% tags=["hide-input"]
display(tables.claims_fold(["ops_scaled", "ops_sigmoid", "ops_sigmoid_norm", "ops_elu", "ops_softpick",
                             "ops_p_norm", "ops_scaled_more", "ops_kernels", "ops_1b"]))
transients = {pt: prose.transient_note(mini.by_point().get(pt, [])) for pt in PROXY_POINTS}
display(Markdown("The proxy over training, in the stored miniature runs: " + "; ".join(
    f"{pt}: {t}" for pt, t in transients.items() if t) + "." if any(transients.values()) else
    "No stored miniature run of a proxy point has raw weights recorded."))

# %% [markdown]
# ````{dropdown} Rerun it: the commands
# ```bash
# python -m sinkpaper.site run --only 09_attention_ops -p live_point sigmoid_norm
# python -m sinkpaper sweep --config configs/miniature.yaml --seeds 0 1 2 \
#     --points sigmoid sigmoid_norm elu elu_norm softpick --out runs/miniature
# ```
# ````
