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
# This chapter measures all five in the same runs, at every evaluation.
#
# ````{dropdown} What each run measures, and when a quantity has formed
# Each run of `configs/onsets.yaml` also evaluates each head's **induction** and **previous-token** scores, the
# **in-context gain** and token 1's **hidden-state norm**. Each quantity's onset and threshold, fixed before any of
# these runs (`sinkpaper/paper/onsets.py`), are defined in the [glossary](glossary.md).
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
# <a class="spx-figref" href="#fig-14-1">Figure 14.1</a>: one row per seed, one mark per quantity at the step it
# formed. A faint mark was below its threshold again at the run's end (a sink that flickered during a loss spike,
# or the early previous-token heads); a hollow mark at the run's end never formed; a run named "did not learn" is
# counted by no verdict; the grey tick is the run's last step; the shaded band is where the paper's default run
# grows its sink (Section 4; a step there is ~250x more tokens than here). Besides the text base and its 4-layer
# version, sigmoid attention asks whether induction forms without a sink.

# %% tags=["remove-input"]
display(Markdown(onsets.budget_caption(lm.payloads, POINTS, LABELS)))

# %% [markdown]
# ## Each quantity against its threshold
#
# Each quantity is divided by its threshold, so it forms where it crosses 1 (the dashed line).

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
# The runs of chapters 4 and 6 predate the circuits' evaluations, but record Sink_1 every 100 steps, and the newer
# ones token 1's norm.

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
# $\mathrm{LSE} = \log \sum_i e^{s_i}$, a gate that depends on the query, as gated attention's $\sigma(x W_g)$ is
# (chapter 13). Below, the gated model's learned gate beside the gate the sink logit acts as.

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
# A run in which the later quantity never formed shows no order, so it cannot count for the claim: at the miniature,
# whose 150 steps grow no sink, the sink's claims read *not comparable*.
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
