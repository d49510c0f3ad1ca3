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
# # Section 7.1: architecture — positional embeddings, norms, FFNs and heads

# %% tags=["parameters"]
profile = "cpu"  # cpu | gpu | paper: the stored runs of that profile (cpu: the real-text runs); none trained here
gpu_seeds = [0]  # seeds trained or read at gpu/paper (at cpu: the stored text runs, seeds 0, 1, 2)

# %% tags=["remove-input"]
from sinkpaper.book import findings

card = findings.finding_card("07_architecture")

# %% tags=["remove-input"]
# Not yet or suppressed: where each change's runs stopped against the loss at which the base's sink formed
from IPython.display import display

from sinkpaper.book.figures.budget import sink_against_loss_figure

CHANGES = ("pos_nope", "pos_absolute", "pos_learnable", "pos_alibi", "ffn_gelu", "ffn_swish", "heads_add")
display(sink_against_loss_figure({p: ("configs/architecture.yaml", p) for p in CHANGES},
                                 ("configs/optimization.yaml", "default"), "real text, 2 layers, 2,500 steps",
                                 paper_source="Section 7.1"))

# %% [markdown]
# Gu et al. (2025), Section 7.1, ask whether the attention sink hinges on a particular design choice of the
# LLaMA-style model. They pre-train their 60M model from scratch with one part of the architecture changed
# at a time and measure Sink_1^0.3 (the share of heads whose first-token importance α_1 exceeds 0.3, on 100
# held-out 64-token sequences). Their answer is no:
#
# 1. **Every positional embedding has a sink**: NoPE 20.35 %, absolute 32.73 %, learnable 33.13 %,
#    relative 35.53 %, ALiBi 20.78 %, RoPE 18.18 %. So the sink is not a product of RoPE; it also appears with
#    no positional information at all (the causal mask alone tells the first token apart).
# 2. **Post-norm still has a sink**: 13.54 % against 18.18 % for pre-norm.
# 3. **The FFN matters little**: ReLU 16.90, GeLU 14.76, Swish 17.89, ReGLU 13.88, GeGLU 17.86,
#    SwiGLU 18.18 %.
# 4. **The number of heads matters little**: 8 / 4 / 2 / 1 heads give 18.18 / 10.68 / 12.95 / 19.50 %, and
#    heads whose outputs are added instead of concatenated 21.76 %.
#
# This page shows the real-text runs of `configs/architecture.yaml` (read from the results store when they are
# there) and the paper's numbers. **The miniature (the synthetic Bigram-Backcopy task of chapters 4-6 and
# 8-9) does not cover this section**: `configs/miniature.yaml` has no architecture points, so nothing here is
# trained live.

# %%
from IPython.display import display

from sinkpaper import paper
from sinkpaper.book import parameters, points, realtext, sources, tables

FAMILY = "configs/architecture.yaml"
run_stamp = parameters.check(profile, gpu_seeds=gpu_seeds)

POINTS = points.ARCHITECTURE
ORDER = [p.name for p in POINTS]
sources.record(run_stamp)

# %% [markdown]
# ## Real text: the architecture sweep
#
# Each point of `configs/architecture.yaml` changes one thing against the base run (RoPE, RMSNorm pre-norm,
# SwiGLU, heads concatenated: 8 in the paper's model, 4 at the `text` profile, whose `heads_4` point is its base
# run). At the `cpu` profile this page trains none of them; it reads the family's real-text runs at CPU scale from
# the results store, and says so when there are none. At `gpu` or `paper` it trains whatever the store lacks.
# `heads_add` is one reading of the paper's "heads added instead of concatenated", for which the paper gives no
# exact form: each head's values are d_model wide and the heads' outputs are summed before the output
# projection (`model.head_combine: add`).

# %% tags=["hide-input", "full-width"]
lm = realtext.family_section(FAMILY, profile, gpu_seeds, ORDER, table={"points": POINTS, "paper": True}, base=ORDER[0], curves=ORDER[:4],
                             maps=ORDER[:2], sweep_title="Sink_1 per variant")

# %% [markdown]
# ### The paper's numbers
#
# Sink_1^0.3 in % of the paper's 60M models (Section 7.1), from `sinkpaper.paper`. Every variant of the
# paper's Section 7.1 is a point of `configs/architecture.yaml` (the `in our sweep` column).

# %% tags=["hide-input"]
display(tables.paper_table(POINTS, points.ARCHITECTURE_NOT_RUN))

# %% [markdown]
# ## In miniature: not covered
#
# The miniature laboratory of this book (`configs/miniature.yaml`, the Bigram-Backcopy task of Guo et al.
# 2024 on a 1-layer model) has no architecture points, so this section has **no miniature result**. Its
# recipe uses RoPE, pre-norm, SwiGLU and 4 concatenated heads; the scorecard's miniature column reads *no
# result (not run)* for the claims of this page.

# %% [markdown]
# ## Paper vs this run
#
# One row per claim, from `sinkpaper.paper`: a variant has a sink at Sink_1 >= 10 % and none below 5 % (in
# between: not comparable); *matters little* means the default has a sink and every variant lies within a
# factor 2 of it (the paper's heads span 10.68-21.76 % around 18.18 %). Our runs differ from the paper's in
# scale, so the comparison is of directions, not of values.

# %% tags=["hide-input"]
display(tables.ClaimsTable(paper.rows(["arch_pe", "arch_norm", "arch_ffn", "arch_heads", "arch_ffn_swish_reglu",
                                  "arch_heads_2_4_8"])))

# %% [markdown]
# ## Rerun it
#
# ```bash
# python -m sinkpaper.site run --only 07_architecture            # reads the stored runs
# python -m sinkpaper claims --id arch_pe
# python -m sinkpaper train --config configs/architecture.yaml --profile cpu --sweep pos_alibi --out runs/alibi
# ```
