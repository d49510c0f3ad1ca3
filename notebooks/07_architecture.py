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
# pos_alibi, the one change that reached the base's onset loss, drawn with its 10,000-step run too
TWO = {p: ("configs/architecture.yaml", p) for p in CHANGES}
TWO["pos_alibi"] = [TWO["pos_alibi"], ("configs/budget.yaml", "pos_alibi_steps_x4")]
display(sink_against_loss_figure(TWO, ("configs/optimization.yaml", "default"),
                                 "real text, 2 layers, 2,500 steps (pos_alibi also 10,000)",
                                 paper_source="Section 7.1"))
# the runs that decide (configs/budget.yaml): four times the steps, at 4 layers, where the base matches the paper
display(sink_against_loss_figure({p: ("configs/budget.yaml", f"{p}_layers_4_steps_x4") for p in CHANGES},
                                 ("configs/budget.yaml", "base_layers_4_steps_x4"), "4 layers, 10,000 steps",
                                 paper_source="Section 7.1", as_figure="Figure 7.1", running=True))

# %% [markdown]
# Section 7.1 of the paper changes one part of its 60M model at a time (positional embedding, norm placement, FFN,
# heads) and finds a sink with every one: the sink is not a product of RoPE, pre-norm or SwiGLU. Here each change is
# a real-text point of `configs/architecture.yaml` (the miniature has no architecture points).
# <a class="spx-figref" href="#fig-7-1">Figure 7.1</a> shows, for each change that reads "no sink" at 2,500 steps,
# whether its runs reached the loss at which the base's own sink formed: one that stops short reads *not yet*, not a
# refutation; its 10,000-step runs at 4 layers (`configs/budget.yaml`,
# <a class="spx-figref" href="#fig-7-2">Figure 7.2</a>) decide.

# %%
from IPython.display import display

from sinkpaper import paper
from sinkpaper.book import figures, parameters, points, realtext, sources, tables

FAMILY = "configs/architecture.yaml"
run_stamp = parameters.check(profile, gpu_seeds=gpu_seeds)

POINTS = points.ARCHITECTURE
ORDER = [p.name for p in POINTS]
sources.record(run_stamp)

# %% [markdown]
# ## Real text: the architecture sweep
#
# Each point changes one thing of the base run (RoPE, RMSNorm pre-norm, SwiGLU, 4 heads concatenated). `heads_add` is
# our reading of the paper's "heads added instead of concatenated", which it gives no exact form for: each head's
# values are d_model wide and the heads' outputs are summed.

# %% tags=["hide-input", "full-width"]
lm = realtext.family_section(FAMILY, profile, gpu_seeds, ORDER, table={"points": POINTS, "paper": True}, base=ORDER[0], curves=ORDER[:4],
                             maps=ORDER[:2], sweep_title="Sink_1 per variant")

# %% [markdown]
# ### The paper's numbers, and every claim beside ours

# %% tags=["hide-input"]
display(figures.Fold("The paper's numbers for every point of the family, ours and the rest",
                     tables.paper_table(POINTS, points.ARCHITECTURE_NOT_RUN)))
display(tables.claims_fold(["arch_pe", "arch_norm", "arch_ffn", "arch_heads", "arch_ffn_swish_reglu",
                             "arch_heads_2_4_8"]))

# %% [markdown]
# ````{dropdown} Rerun it: the commands
# ```bash
# python -m sinkpaper.site run --only 07_architecture            # reads the stored runs
# python -m sinkpaper train --config configs/architecture.yaml --profile cpu --sweep pos_alibi --out runs/alibi
# ```
# ````
