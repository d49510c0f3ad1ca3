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
# # When does the sink form?

# %% tags=["parameters"]
profile = "cpu"  # cpu | gpu | paper: the stored runs of that profile (cpu: the real-text runs); none trained here
gpu_seeds = [0]  # seeds read at gpu/paper (at cpu: the stored text runs, seeds 0, 1, 2)

# %% tags=["remove-input"]
from sinkpaper.book import findings

card = findings.finding_card("14_when_the_sink_forms")

# %% tags=["remove-input"]
from IPython.display import Markdown, display

from sinkpaper import paper
from sinkpaper.book import figures, parameters, sources, tables
from sinkpaper.book.figures import gates, onsets
from sinkpaper.results import sweeps

POINTS = ["onsets_base", "onsets_layers_4", "onsets_sigmoid", "onsets_gate_elementwise", "onsets_sink_logit",
          "onsets_bos_each_doc_mask"]
LABELS = {"onsets_base": "text base", "onsets_layers_4": "4 layers", "onsets_sigmoid": "sigmoid attention",
          "onsets_gate_elementwise": "gated attention", "onsets_sink_logit": "sink logit",
          "onsets_bos_each_doc_mask": "BOS per document, masked"}
# the sink's onset where the stored families vary the learning rate and the weight decay (their runs predate the
# circuits' evaluations, so they record the sink, and the newer ones token 1's norm, every 100 steps)
LR = ["lr_x0.25", "lr_x0.5", "default", "lr_x2"]
WD = ["wd_0", "wd_0.1", "wd_0.5", "wd_1", "wd_2"]
CLAIMS = ["onset_sink_after_induction", "onset_induction_after_previous_token", "onset_massive_with_sink"]
run_stamp = parameters.check(profile, gpu_seeds=gpu_seeds)
sources.record(run_stamp)
lm = sweeps.lm_sweep("configs/onsets.yaml", profile, gpu_seeds)
sources.record(lm.provenance(), what="the onsets family")
sources.missing(lm, what="the onsets family")
rows = onsets.onset_rows(lm.payloads, POINTS, LABELS)
figures.figure(onsets.onset_chart(rows, f"Onsets per run ({lm.profile} profile)", paper=onsets.paper_sink_window()),
               onsets.onset_caption(rows, LABELS))

# %% [markdown]
# The paper's title asks *when* the sink emerges, and its answer is a step count: in its default run the sink
# appears between 1k and 2k steps (Section 4; chapter 4 checks it on real text). What forms before it, and what it
# needs first, the paper does not measure. Public work reports an order:
#
# | what forms | when, in the literature | source |
# |---|---|---|
# | previous-token heads | first: an induction head reads what a previous-token head wrote | Olsson et al. 2022 |
# | induction heads and the in-context gain | a phase change early in training | Olsson et al. 2022 |
# | the first-token sink | 10-20x later in tokens than the induction heads, in public 1B-class runs; BOS heads jump from 7 % to 70 % between adjacent OLMo-1B checkpoints | arXiv 2606.02378 |
# | token 1's massive activation | tied to the sink under pre-norm | arXiv 2603.05498 |
#
# This chapter measures all five on one footing, in the same runs, at every evaluation.
#
# ````{dropdown} What each run measures, and when a quantity has formed
# Each run of the onsets
# family (`configs/onsets.yaml`) evaluates, besides the sink metrics, each head's **induction score** (on random
# tokens repeated once, the attention from each token of the second copy to the token after its first
# occurrence), its **previous-token score**, the **in-context gain** (the loss on the second copy against the
# first) and token 1's **hidden-state norm** over the other tokens' mean. Early evaluations are log-spaced (each
# 10 % after the last), so an onset is resolved to within 10 % of its step. A quantity's **onset** is the first
# evaluation at which it reaches its threshold, fixed before any of these runs (`sinkpaper/paper/onsets.py`): the
# sink at Sink_1 ≥ 10 %; a head with ≥ 0.3 of its attention on its induction (previous-token) target; a gain of
# ≥ 0.5 nats; a token-1 norm ≥ 10 times the others'.
# ````

# %% tags=["remove-input"]
# the uniform baseline computed by the induction score itself (sinkpaper.circuits), never typed: the mean of 1/t
# over the second copy's queries is not 1/T
from sinkpaper.circuits import uniform_induction_score

display(Markdown(f"A uniform causal head scores {uniform_induction_score(64, 32):.3f} on the induction target "
                 f"(the mean of 1/t over the second copy's queries at T = 64, not 1/T), far below the "
                 "threshold of 0.3."))

# %% [markdown]
# ## Reading the onsets
#
# <a class="spx-figref" href="#fig-14-1">Figure 14.1</a>: one row per seed, one mark per quantity at the step it formed; a faint mark is one that formed and was below
# its threshold again at the run's end (it did not last: a sink that flickered during a loss spike, or the early
# previous-token heads), a hollow mark at the run's end is a quantity that never formed there, a run named "did
# not learn" is drawn but counted by no verdict, the grey tick is the run's last step, and the shaded band the steps at which the paper's
# default run grows its sink (Section 4; a step there is ~250x more tokens than here). The points: the text base
# (2 layers, d 128, the BOS fixed at position 1), its 4-layer version, sigmoid attention (no sink: does induction
# still form?), elementwise gated attention, a learned sink logit per head, and one BOS before every document with
# attention masked between documents.

# %% tags=["remove-input"]
display(Markdown(onsets.budget_caption(lm.payloads, POINTS, LABELS)))

# %% [markdown]
# ## Each quantity against its threshold
#
# The text base's five quantities over training, each divided by its threshold, so that every one forms where it
# crosses 1 (the dashed line): the mean over seeds as a line, the seeds' range as a band, each seed in the tooltip.

# %% tags=["hide-input"]
ratios = onsets.threshold_rows(lm.payloads, "onsets_base")
title = f"The text base: each quantity over its threshold ({lm.profile} profile)"
if ratios:
    figures.figure(figures.band_chart(ratios, "ratio", title, "value / threshold", x="step", group="quantity",
                                      rule_y=1.0, paper={}),
                   "Each quantity of the text base over its onset threshold (1 = formed).")
else:
    display(Markdown("*No run of the text base that records these quantities is stored yet; its seeds are "
                     "queued (`configs/onsets.yaml`).*"))

# %% [markdown]
# ## Does the sink's onset move with the learning rate and the weight decay?
#
# The optimization and loss families' runs (chapters 4 and 6) predate the circuits' evaluations, but every one
# records Sink_1 every 100 steps, and the newer ones token 1's norm: their sink onsets, seed by seed.

# %% tags=["hide-input"]
lr = sweeps.lm_sweep("configs/optimization.yaml", profile, gpu_seeds, LR)
wd = sweeps.lm_sweep("configs/loss.yaml", profile, gpu_seeds, WD)
for s, what in ((lr, "the learning-rate points"), (wd, "the weight-decay points")):
    sources.record(s.provenance(), what=what)
lr_rows = onsets.onset_rows(lr.payloads, LR, quantities=("massive activation", "sink"))
wd_rows = onsets.onset_rows(wd.payloads, WD, quantities=("massive activation", "sink"))
window = onsets.paper_sink_window()
figures.figure(onsets.onset_chart(lr_rows, "Learning rate (x the text base's 2e-2)", paper=window),
               onsets.onset_moves_caption(lr_rows, LR, "learning rate"))
figures.figure(onsets.onset_chart(wd_rows, "Weight decay (the text base: 0.5)", paper=window),
               onsets.onset_moves_caption(wd_rows, WD, "weight decay"))

# %% [markdown]
# ## A sink logit is a gate
#
# Softmax with a learned logit $b_h$ in its denominator (gpt-oss) gives each weight
# $e^{s_j} / (e^{b_h} + \sum_i e^{s_i})$: plain softmax scaled by $\sigma(\mathrm{LSE} - b_h)$, with
# $\mathrm{LSE} = \log \sum_i e^{s_i}$. That factor is a gate that depends on the query, as gated attention's
# $\sigma(x W_g)$ is (chapter 13); the tests check the identity in fp64 (`tests/test_attention.py`,
# `tests/test_after_the_paper.py`). Below, each head's gate over the held-out queries at the runs' last evaluation:
# the gated model's learned gate beside the gate the sink logit acts as.

# %% tags=["hide-input"]
GATED = {"onsets_gate_elementwise": "gated attention (elementwise, mean over a head's dims)",
         "onsets_sink_logit": "sink logit: sigmoid(LSE - b_h)"}
g = gates.gate_rows(lm.payloads, list(GATED), GATED)
if g:
    figures.figure(gates.gate_chart(g, f"Each head's gate over the queries ({lm.profile} profile)"),
                   gates.gate_caption(g))
else:
    display(Markdown(f"*{gates.gate_caption(g)}*"))

# %% [markdown]
# ## The verdicts
#
# ````{dropdown} How these claims are read
#
# Each order the literature reports, judged as every claim of the book is: onsets per seed, the seeds deciding
# (a split reads *inconclusive*). A run in which the later quantity never formed shows no order, so it cannot
# count for the claim: at the miniature, whose 150 steps grow no sink, the sink's claims read *not comparable*.
# ````

# %% tags=["hide-input"]
display(tables.claims_fold(CLAIMS))

# %% [markdown]
# ````{dropdown} Rerun it: the commands
# ```bash
# python -m sinkpaper sweep --config configs/onsets.yaml --profile text --seeds 0 1 2 --out runs/text
# python -m sinkpaper claims --id onset_sink_after_induction
# python -m sinkpaper.site run --only 14_when_the_sink_forms
# ```
# ````
