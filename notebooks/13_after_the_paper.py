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
# # After the paper: gated attention, sink logits, softmax plus one and softpick

# %% tags=["parameters"]
profile = "cpu"  # cpu | gpu | paper: the stored runs of that profile (cpu: the real-text runs); none trained here
gpu_seeds = [0]  # seeds trained or read at gpu/paper (at cpu: the stored text runs, seeds 0, 1, 2)
maps = "softmax, gate_elementwise, sink_logit, softmax_plus_one"  # points whose alpha_1 map per layer/head is drawn

# %% tags=["remove-input"]
from sinkpaper.book import findings

card = findings.finding_card("13_after_the_paper")

# %% [markdown]
# Since Gu et al. (2025), production models adopted attention designs that each claim to tame the sink, each shown
# alone, at its own scale and measure. This chapter trains them all on the real text of chapters 4-9 and reads them
# with the paper's metric:
#
# - **Gated attention** (Qiu et al. 2025, arXiv 2505.06708; Qwen3-Next): a query-dependent sigmoid gate on each
#   head's output before the output projection, $Y' = Y \odot \sigma(X W_g)$, $X$ the layer's normed input. The source
#   compares one gate per head dimension (**elementwise**, its recommended form) and one per head (**head-wise**), and
#   calls the result *attention-sink-free*.
# - **A learned sink logit per head** (gpt-oss, 2025): one logit $b_h$ joins each softmax's denominator with no
#   value, so a head can pay no attention to any token: $e^{s_{ij}} / \left(e^{b_h} + \sum_{j'} e^{s_{ij'}}\right)$.
# - **Softmax plus one** (Miller 2023, "Attention is off by one"): the same with $b_h = 0$ fixed.
# - **Softpick** (Zuhri et al. 2025, arXiv 2504.20966): $\mathrm{relu}(e^{s_{ij}} - 1) / \sum_{j'} |e^{s_{ij'}} - 1|$,
#   whose rows need not sum to one; its source reports no sink.
#
# The paper's Section 7 gives a reading of all four before any run: a sink forms where softmax's rows must sum to one
# and nothing else can take the excess. A learnable K bias takes the whole sink (Section 7.2); sigmoid without
# normalization has none (Section 7.3). So a logit in the denominator should take the sink from token 1, softpick
# should have none, and a gate, which leaves each row summing to one, should leave the sink where it was: the opposite
# of the gated-attention claim, so at most one of the two readings can agree. Each design is its source's exact form
# (`sinkpaper.attention.SINK_DESIGNS`).

# %%
from IPython.display import Markdown, display

from sinkpaper import paper
from sinkpaper.book import figures, parameters, points, prose, realtext, sources, tables
from sinkpaper.results import curves, reading, sweeps

FAMILY = "configs/after_paper.yaml"
POINTS = points.AFTER_PAPER
ORDER = [p.name for p in POINTS]
WITH_BOS = ["softmax", "gate_elementwise", "gate_headwise", "sink_logit", "softmax_plus_one", "softpick"]
# the paper's own rows on the same text, from their families: the K bias, the sink token, sigmoid
BESIDE = {"configs/biases.yaml": ["k_bias", "sink_token"], "configs/attention.yaml": ["sigmoid"]}
CLAIMS = ["after_gate", "after_gate_headwise", "after_gate_paper_reading", "after_sink_logit",
          "after_softmax_plus_one", "after_denominator_paper_reading", "ops_softpick"]
run_stamp = parameters.check(profile, gpu_seeds=gpu_seeds)
map_points = parameters.listed(maps, "maps", ORDER)
sources.record(run_stamp)

# %% [markdown]
# ## Real text: the designs against the base run
#
# Each point of `configs/after_paper.yaml` changes one thing of the text profile's base run. A 2-layer model can
# only sink on a token whose first-layer state does not depend on its context, so without a fixed first token no
# stored 2-layer run grew one (chapter 5, `no_fixed_token`): the no-BOS rows are shown, not judged. For the designs
# with a logit, Sink* is read on the logit.

# %% tags=["hide-input", "full-width"]
lm = sweeps.lm_sweep(FAMILY, profile, gpu_seeds)
source = {"softmax": f"{paper.paper_text('softmax')} (the paper's 60M default, no fixed token)",
          "gate_elementwise": "sink-free (no number at this metric)", "gate_headwise": "sink-free (no number)",
          "sink_logit": "— (a design, no measurement)", "softmax_plus_one": "— (a proposal, no experiment)",
          "softpick": "0 % sink rate (its own metric)"}
realtext.show(lm, ORDER, base="softmax", curves=["softmax", "gate_elementwise", "sink_logit"], maps=map_points,
              table=tables.points_table(lm.payloads, POINTS, paper=source, held_out=True, sink_star=True))

# %% [markdown]
# ## Beside the paper's own places for the excess
#
# The designs with the fixed first token beside the paper's K bias, sink token and sigmoid attention on the same
# text. A dot is a seed, a tick the mean.

# %% tags=["hide-input"]
beside = [p for config, pts in BESIDE.items() for p in sweeps.lm_sweep(config, profile, gpu_seeds, pts).payloads]
shown = [p for p in lm.payloads if reading.point_of(p) in WITH_BOS] + beside
order = WITH_BOS + [pt for pts in BESIDE.values() for pt in pts]
figures.figure(figures.sweep_chart(shown, order, value=("Sink_1", "Sink*"),
                                   title=f"Real text ({lm.profile} profile): Sink_1 and Sink* per design and seed"),
               figures.sweep_caption(shown, order, value=("Sink_1", "Sink*")))

# %% [markdown]
# ## The verdicts
#
# None of the sources reports Sink_1, so each rule was checked on the shape its source states, and on a result with
# no effect, before any run.

# %% tags=["hide-input"]
display(tables.claims_fold(CLAIMS))
results = {c: paper.result(paper.claim(c), "real text (CPU)") for c in CLAIMS}
display(Markdown(prose.after_paper_reading(results)))

# %% [markdown]
# ## Massive activations, loss spikes and held-out loss
#
# Gu et al. tie the sink to a massive activation on token 1 (Section 3), and the gated-attention source reports that
# gating removes it and the loss spikes of training.

# %% tags=["hide-input"]
massive, without = curves.massive_rows(lm.payloads, WITH_BOS)
display(figures.Fold(
    "Token 1's hidden-state norm over the other tokens' mean, after each layer, per run",
    Markdown("At each run's last evaluation; layer 0: the embeddings."),
    figures.Table(massive) if massive else Markdown("No stored run of these designs recorded the ratio yet."),
    Markdown("Runs of " + ", ".join(f"`{p}`" for p in without) + " were stored before evaluations recorded the "
             "ratio; a rerun records it.") if without else None))
display(figures.Fold(
    "Loss spikes and held-out loss, per run",
    Markdown("A spike: a logged loss more than 0.5 nats above the median of the 10 logged before it (a margin fixed "
             "before any run was counted; the trainer logs one batch in 20, so a spike between logged steps is not "
             "seen)."),
    figures.Table(curves.spike_rows(lm.payloads, WITH_BOS))))

# %% [markdown]
# ````{dropdown} Rerun it: the commands
# ```bash
# python -m sinkpaper sweep --config configs/after_paper.yaml --profile text --seeds 0 1 2 --out runs/text
# python -m sinkpaper claims --id after_gate
# python -m sinkpaper.site run --only 13_after_the_paper -p profile gpu
# ```
# ````
