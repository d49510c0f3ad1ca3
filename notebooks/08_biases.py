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
# # Section 7.2: attention biases — give the sink somewhere else to go

# %% tags=["parameters"]
profile = "cpu"  # cpu | gpu | paper: the stored runs of that profile (cpu: the real-text runs); none trained here
gpu_seeds = [0]  # seeds trained or read at gpu/paper (at cpu: the stored text runs, seeds 0, 1, 2)
miniature_seeds = [0, 1, 2]  # seeds of the stored miniature sweep shown next to the live run
live_point = "k_bias"  # miniature point trained live: k_bias | kv_bias | sink_token | v_bias | recipe
live_seed = 0  # seed of the live miniature run
live_steps = None  # None: the point's own steps (1500); tests pass fewer

# %% tags=["remove-input"]
from sinkpaper.book import findings

card = findings.finding_card("08_biases")

# %% [markdown]
# Gu et al. (2025), Section 7.2, argue that the first token acts as a **key bias**: a key every query sees, whose
# value adds (almost) nothing. If so, a model given an explicit bias should put its sink there instead. They pre-train
# their 60M model with one of these additions (per head, unless said otherwise) and measure **Sink\*** on the extra
# position (α_0 > 0.3) beside Sink_1 on the first real token.
#
# ````{dropdown} The biases, and what the paper found, in its numbers
# * a **learnable sink token**: an extra position 0 with a learned embedding, which every query sees;
# * **KV biases**: a learned key $k^*$ and value $v^*$ that every query attends to,
#   $\mathrm{Softmax}\left(q\,[k^*; K]^\top / \sqrt{d_h}\right) [v^*; V]$;
# * **K biases** alone ($v^* = 0$); **V biases** alone, the paper's control group: $v^*$ added to the output after
#   the softmax, $\mathrm{Softmax}\left(q K^\top / \sqrt{d_h}\right) V + v^*$, with no extra key, so the attention
#   map is unchanged; a **fixed v*** of growing size; a k* learned in only d_a of the head's dimensions.
#
# The paper's findings: the sink token, KV biases and K biases take the sink (Sink* 72-74 %, Sink_1 ≤ 0.04 %); V
# biases alone leave it on token 1 (17.53 %); a large fixed v* (20 v') drives it back to token 1 (Sink* 1.51 %,
# Sink_1 25.88 %); even a 1-dimensional k* takes most of it (Sink* 32.18 %, Sink_1 4.74 %).
# ````

# %%
from IPython.display import Markdown, display

from sinkpaper import paper
from sinkpaper.book import experiments, figures, parameters, points, prose, realtext, sources, tables
from sinkpaper.results import curves, reading, sweeps
from sinkpaper.results.numbers import fmt

FAMILY = "configs/biases.yaml"
MINIATURE = "configs/miniature.yaml"
MINI_ORDER = ["recipe", "sink_token", "kv_bias", "k_bias", "v_bias"]  # the miniature's bias points
run_stamp = parameters.check(profile, gpu_seeds=gpu_seeds, miniature_seeds=miniature_seeds, live_seed=live_seed,
                             live_steps=live_steps, choices={"live_point": (live_point, MINI_ORDER)})

POINTS = points.BIASES
ORDER = [p.name for p in POINTS]
P = points.by_name(POINTS)
MINI_NAMES = {"none": "recipe"}  # the miniature's default point is its recipe
sources.record(run_stamp)

# %% [markdown]
# ## Real text: the biases sweep
#
# Each point of `configs/biases.yaml` adds one bias to the base run.
#
# ````{dropdown} Which point is which of the paper's rows
# `k_bias_fixed_v` is the paper's v' = [1, 0, …, 0] row, `k_bias_fixed_5v1` / `k_bias_fixed_20v1` its 5 v' /
# 20 v' rows, `k_bias_fixed_v2` … `k_bias_fixed_20v2` its v'' rows, and `k_bias_dims_1` … `k_bias_dims_16` its d_a
# rows up to 16 (the `text` profile's heads have 32 dimensions). The paper gives no exact form for a k* in d_a
# dimensions; ours learns k* in the head's first d_a dimensions, the others 0.
# ````

# %% tags=["hide-input", "full-width"]
lm = realtext.family_section(FAMILY, profile, gpu_seeds, ORDER, table={"points": POINTS, "paper": True}, base="none",
                             curves=["none", "sink_token", "k_bias", "v_bias"], maps=["none", "k_bias", "v_bias"],
                             sweep_title="Sink* and Sink_1", value=("Sink*", "Sink_1"), width=320)

# %% tags=["hide-input"]
display(figures.Fold("The paper's numbers for every point of the family, ours and the rest",
                     tables.paper_table(POINTS, points.BIASES_NOT_RUN)))

# %% [markdown]
# ## Live, in miniature: a bias next to the BOS
#
# The miniature's sequences ([Bigram-Backcopy](04_optimization.ipynb)) start with a fixed BOS; its bias points add
# the paper's biases to it, one trained now.

# %% tags=["hide-input"]
live = experiments.live_run(MINIATURE, "cpu", point=live_point, seed=live_seed, steps=live_steps)
lr_ = live.payload["result"]
live_label = f"live {live_point}, seed {live_seed}"
display(Markdown(f"**{live_label}**, trained now for {lr_['step']} steps ({lr_['tokens_seen']:,} tokens, "
                 f"{lr_['provenance']['wall_seconds']:.0f} s): Sink* {fmt(lr_.get('sink_star'))} on the "
                 f"bias position, Sink_1 {fmt(lr_['sink_k']['1'])} on the BOS (α_1 = "
                 f"{lr_['alpha_1_mean']:.3f}), final loss {lr_['final_loss']:.3f}."))

mini = sweeps.stored_sweep(MINIATURE, "cpu", points=MINI_ORDER, seeds=tuple(miniature_seeds))
stored_live = [p for p in mini.payloads if reading.point_of(p) == live_point]
same_run = prose.live_vs_stored(live.payload, stored_live)
if same_run:
    display(Markdown(same_run))
KEYS = ("Sink_1", "Sink*", "alpha_1")  # the metrics this page reads (sinkpaper.results.sweeps)
rows = figures.live_and_stored_rows(live.payload, live_label, stored_live, KEYS)
charts = [figures.band_chart(rows, "alpha_1", f"{live_point}: α_1 on the BOS", y_title="α_1 (mean)", x="step",
                             rule_y=live.payload["config"]["eval"]["epsilon"], y_domain=(0, 1))]
if any(r["Sink* %"] is not None for r in rows):
    charts.insert(0, figures.band_chart(rows, "Sink* %", f"{live_point}: Sink* on the bias position", x="step",
                                        y_domain=(0, 100)))
display(figures.Fold("The live run over training, beside its point's stored seeds", figures.Figure(
    figures.Columns(*charts),
    f"The live run ({live_point}, trained now) beside its point's stored seeds: Sink* on the bias position where it "
    "has one, and α_1 on the BOS over training (dotted: ε).")))
sources.record(sweeps.payloads_provenance([live.payload], loaded=False))

# %% [markdown]
# The stored miniature sweep, every bias point:

# %% tags=["hide-input", "full-width"]
if mini.payloads:
    display(figures.Fold("Every point over its seeds",
                         tables.points_table(mini.payloads, POINTS, names=MINI_NAMES, paper=True, held_out=True)))
    figures.figure(figures.sweep_chart(mini.payloads, MINI_ORDER, title="Miniature: Sink* (bias position) and Sink_1 (BOS)",
                                       value=("Sink*", "Sink_1"), width=320),
                   figures.sweep_caption(mini.payloads, MINI_ORDER, value=("Sink*", "Sink_1")))
    sources.record(sweeps.payloads_provenance(mini.payloads, loaded=True))
if mini.missing:
    sources.missing(mini)

# %% [markdown]
# ### A fixed BOS next to a learnable sink token
#
# The paper's runs have no BOS, so a learnable sink token has no rival; in the miniature it meets a fixed BOS:

# %% tags=["hide-input"]
mp = mini.payloads + ([live.payload] if not stored_live else [])
M = {pt: {key: figures.book_mean(mp, pt, key) for key in KEYS} for pt in MINI_ORDER}
bias_bos = figures.Table([{"point": pt, "Sink* % (bias position)": fmt(M[pt]["Sink*"], 1, ""),
                           "Sink_1 % (BOS)": fmt(M[pt]["Sink_1"], 1, ""),
                           "α_1 (BOS, mean)": fmt(M[pt]["alpha_1"], 3, "")}
                          for pt in MINI_ORDER if M[pt]["Sink_1"] is not None])
no_bos = sweeps.stored_sweep(MINIATURE, "cpu", points=["no_fixed_token", "sink_token_no_bos", "k_bias_no_bos"],
                             seeds=tuple(miniature_seeds))
NB = {pt: {key: figures.book_mean(no_bos.payloads, pt, key) for key in KEYS}
      for pt in ("sink_token_no_bos", "k_bias_no_bos", "no_fixed_token")}
lines = prose.miniature_bias_lines(M, NB, len(no_bos.by_point().get("no_fixed_token", [])))
display(Markdown("\n".join(lines) if lines else "The stored miniature runs needed here are missing (see above)."))
reading = prose.sink_token_reading(M, NB)
display(figures.Fold("Every bias point beside the BOS, and one reading of the contrast", bias_bos,
                     Markdown(reading) if reading else None))

# %% [markdown]
# ````{dropdown} Paper vs this run: how these claims are read
#
# A bias takes the sink when Sink* >= 10 % and Sink_1 < 5 %; *V biases alone leave the sink on token 1* when `v_bias`
# keeps Sink_1 >= 10 %. The fixed-v* claim reads v' (the paper: Sink* 70.03, Sink_1 0.06) as "the bias takes the
# sink"; that a large v* (20 v') sends the sink back to token 1 is a row of its own, `bias_fixed_v_large`.
#
# On real text the sink-token, K-bias, KV-bias and fixed-v* claims are judged on the runs **without** a fixed first
# token (`..._no_bos`), as the paper ran them; the runs with a fixed BOS at position 1 are the second reading, in
# each row's notes. In the miniature the base point is `recipe`, which has a fixed BOS.
# ````

# %% tags=["hide-input"]
display(tables.claims_fold(["bias_sink_token", "bias_kv", "bias_k", "bias_v", "bias_fixed_v",
                             "bias_low_dim", "bias_fixed_v_large", "bias_shared", "bias_low_dim_more"]))

# %% [markdown]
# ````{dropdown} Rerun it: the commands
# ```bash
# python -m sinkpaper.site run --only 08_biases -p live_point sink_token
# python -m sinkpaper sweep --config configs/miniature.yaml --seeds 0 1 2 \
#     --points sink_token kv_bias k_bias v_bias --out runs/miniature
# ```
# ````
