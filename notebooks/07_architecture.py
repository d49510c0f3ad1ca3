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
#
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
# This page shows the real-LM runs of `configs/architecture.yaml` (trained on a GPU and read from the
# results store), the paper's numbers, and a CPU check that every variant trains and is measured end to end.
# **The miniature (the synthetic Bigram-Backcopy task of chapters 4-6 and 8-9) does not cover this
# section**: `configs/miniature.yaml` has no architecture points, so nothing here is trained live beyond the
# few-step CPU check.

# %% tags=["parameters"]
profile = "cpu"  # cpu | gpu | paper: cpu reads the real-LM runs from the results store; gpu and paper train them
gpu_seeds = [0]  # seeds of the real-LM sweep (configs/architecture.yaml) that are read or trained

# %%
import torch
from IPython.display import Markdown, display

from sinkpaper import provenance
from sinkpaper.book import claims, experiments, figures, section7, sections

FAMILY = "configs/architecture.yaml"
PROFILES = ("cpu", "gpu", "paper")
if profile not in PROFILES:
    raise ValueError(f"unknown profile {profile!r}; valid: {', '.join(PROFILES)}")
if profile != "cpu" and not torch.cuda.is_available():
    raise ValueError(f"profile {profile!r} trains the real-LM sweep on a CUDA GPU; none here: use profile='cpu'")
if not isinstance(gpu_seeds, list) or not gpu_seeds or not all(isinstance(s, int) and s >= 0 for s in gpu_seeds):
    raise ValueError(f"gpu_seeds must be a non-empty list of seeds (ints >= 0), got {gpu_seeds!r}")

POINTS = section7.ARCHITECTURE
ORDER = [p.name for p in POINTS]
run_stamp = provenance.stamp("cuda" if profile != "cpu" else "cpu", profile=profile)
display(Markdown(figures.provenance_line(run_stamp)))

# %% [markdown]
# ## Real language models: the architecture sweep
#
# Each point of `configs/architecture.yaml` changes one thing against the base run (RoPE, RMSNorm pre-norm,
# SwiGLU, 8 heads concatenated). At the `cpu` profile this page does not train them: a sink grows from real
# text only after far more tokens than a CPU sees in minutes (the note on scale in *About this book*); it
# reads the runs stored at the `gpu` profile. At `gpu` or `paper` it trains whatever the store lacks.

# %% tags=["hide-input"]
lm = sections.lm_sweep(FAMILY, profile, gpu_seeds)
if lm.payloads:
    display(section7.point_table(lm.payloads, POINTS))
    display(sections.sweep_chart(lm.payloads, ORDER, title=f"Real LM ({lm.profile} profile): Sink_1 per variant"))
    display(Markdown(figures.provenance_line(lm.provenance())))
if lm.missing.missing:
    display(Markdown(lm.missing_text() + " Until then this section has no real-LM number of ours; the paper's "
                     "numbers are below and in the table at the end of the page."))

# %% [markdown]
# ### The paper's numbers
#
# Sink_1^0.3 in % of the paper's 60M models (Section 7.1), typed in from the paper. The rows marked *no* are
# variants the paper ran that our sweep does not (add them to `configs/architecture.yaml` to run them).

# %% tags=["hide-input"]
display(section7.paper_table(POINTS, section7.ARCHITECTURE_NOT_RUN))

# %% [markdown]
# ## In miniature: not covered
#
# The miniature laboratory of this book (`configs/miniature.yaml`, the Bigram-Backcopy task of Guo et al.
# 2024 on a 1-layer model) has no architecture points, so this section has **no miniature result**. Its
# recipe uses RoPE, pre-norm, SwiGLU and 4 concatenated heads; the scorecard says *not run in miniature* for
# the four claims of this page.

# %% [markdown]
# ## Paper vs this run
#
# Rules, applied to the mean Sink_1 over seeds of our real-LM runs (nothing is judged by hand):
#
# * a variant **has a sink** when Sink_1 ≥ 10 % and **has none** below 5 % (in between: no verdict). The
#   paper's smallest sink among these variants is 13.54 % (post-norm).
# * *every positional embedding has a sink*: all six `pos_*` points have a sink; *post-norm still has a
#   sink*: `post_norm` has one.
# * *matters little* (FFN, heads): the default has a sink and every variant lies within a factor 2 of it (the
#   paper's heads span 10.68-21.76 % around 18.18 %).
#
# Our runs differ from the paper's in scale (model, context, tokens: see each row's setting), so the
# comparison is of directions, not of values.

# %% tags=["hide-input"]
CLAIM_POINTS = {
    "arch_pe": ["pos_nope", "pos_absolute", "pos_learnable", "pos_relative", "pos_alibi", "pos_rope"],
    "arch_norm": ["post_norm"],
    "arch_ffn": ["ffn_relu", "ffn_gelu", "ffn_geglu"],
    "arch_heads": ["heads_1", "heads_add"],
}
P = section7.by_name(POINTS)
ours = {name: section7.mean_of(lm.payloads, name) for name in ORDER}
rows = [{"setting": f"{name}: {P[name].what}", "paper": P[name].sink_1,
         "ours": round(ours[name], 2) if ours[name] is not None else "no stored GPU run",
         "note": "Sink_1 %" + (f"; {lm.profile} profile, mean over seeds {gpu_seeds}"
                               if ours[name] is not None else "")}
        for name in ORDER]
display(figures.paper_vs_ours(rows))

base = ours["pos_rope"]
verdicts = {
    "arch_pe": section7.all_true([section7.has_sink(ours[p]) for p in CLAIM_POINTS["arch_pe"]]),
    "arch_norm": section7.has_sink(ours["post_norm"]),
    "arch_ffn": section7.within_factor([ours[p] for p in CLAIM_POINTS["arch_ffn"]], base),
    "arch_heads": section7.within_factor([ours[p] for p in CLAIM_POINTS["arch_heads"]], base),
}
lines = []
for cid, points in CLAIM_POINTS.items():
    c = claims.claim(cid)
    have = [p for p in points if ours[p] is not None]
    runs = [p for p in lm.payloads if experiments.point_of(p) in points + ["pos_rope"]]
    if have:
        text = ", ".join(f"{p} {ours[p]:.2f} %" for p in points if ours[p] is not None)
        if cid in ("arch_ffn", "arch_heads") and base is not None:
            text += f" (default pos_rope {base:.2f} %)"
        missing = [p for p in points if ours[p] is None]
        text = "Sink_1 " + text + (f"; no stored run for {', '.join(missing)}" if missing else "")
        claims.record(cid, ours=text, agrees=verdicts[cid], setting=section7.setting_text(runs),
                      provenance=lm.provenance(), kind="lm")
    else:
        text = "no stored GPU run"
        claims.record(cid, ours=text, agrees=None, provenance=run_stamp, kind="lm",
                      setting=f"the {lm.profile}-profile runs of {FAMILY} are not in the results store yet")
    claims.record(cid, ours="not run in miniature", agrees=None, provenance=run_stamp, kind="miniature",
                  setting="configs/miniature.yaml has no architecture points")
    verdict = {True: "agrees", False: "**disagrees**", None: "no verdict"}[verdicts[cid]]
    lines.append(f"- “{c.text}” (paper: {c.paper}): ours {text} — {verdict}.")
display(Markdown("\n".join(lines)))
display(Markdown(figures.provenance_line(lm.provenance() if lm.payloads else run_stamp)))

# %% [markdown]
# ## Rerun it
#
# ```bash
# python -m sinkpaper sweep --config configs/architecture.yaml --profile gpu --seeds 0 --out runs/architecture
# python -m sinkpaper.book run --only 07_architecture            # then this page reads the stored runs
# python -m sinkpaper train --config configs/architecture.yaml --profile cpu --sweep pos_alibi --out runs/alibi
# ```
