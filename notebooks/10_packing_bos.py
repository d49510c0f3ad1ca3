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
# # Data packing and BOS: what a fixed first token does, and what happens without it

# %% tags=["parameters"]
profile = "cpu"  # cpu | gpu | paper: the stored runs of that profile (cpu: the real-text runs); none trained here
model = "smollm2-135m,gemma3-270m"  # pretrained models: comma-separated offline names or Hugging Face ids (e.g. gpt2-xl)
n_samples = 50  # natural-text windows per (model, BOS) setting; the paper uses 100 (50 keeps the chapter near its budget)
seq_len = 64  # T, BOS included; the paper uses 64
epsilon = 0.3  # sink threshold
seed = 0  # seeds the natural-text windows
batch_size = 25  # windows per forward pass
loss_samples = 16  # windows whose loss is compared with and without BOS (0 skips it: the LM head is the costly part)
gpu_seeds = [0]  # seeds trained or read at gpu/paper (at cpu: the stored text runs, seeds 0, 1, 2)
miniature_seeds = [0, 1, 2]  # seeds of the stored miniature sweep
live_steps = None  # steps of the live miniature run (the recipe, fixed BOS); None: the recipe's 1500; tests pass fewer
live_eval_samples = 100  # held-out windows the live model is measured on, with and without its BOS

# %% tags=["remove-input"]
from sinkpaper.book import findings

card = findings.finding_card("10_packing_bos")

# %% [markdown]
# Gu et al. (2025) cut their training text into windows that start anywhere, with no BOS; a *fixed* token at
# position 1 makes the sink much stronger (Sink_1 18.18 % by default, 74.11 % with one). Barbero et al. (2025,
# "Why do LLMs attend to the first token?") ask what such pre-training choices do to the sink:
#
# ````{dropdown} The three claims this page checks (Barbero et al. 2025)
# 1. **A fixed BOS** at position 1 of every training window receives the sink;
# 2. **intra-document masking** (each token attends only within its own document instead of across the
#    packed window) keeps the sink on the first token that every query of a document sees;
# 3. a model **trained with a BOS depends on it**: run without it at inference, its sink changes.
# ````

# %%
from pathlib import Path

from IPython.display import Markdown, display

from sinkpaper import metrics, paper
from sinkpaper.analysis import packing_bos as pb
from sinkpaper.book import experiments, figures, parameters, prose, sources, tables
from sinkpaper.lms import load_lm
from sinkpaper.results import sweeps
from sinkpaper.results.numbers import sig
from sinkpaper.train.trainer import latest_checkpoint

FAMILY = "configs/packing.yaml"
MINIATURE = "configs/miniature.yaml"
models = [m.strip() for m in str(model).split(",") if m.strip()]
if not models:
    raise ValueError("model must name at least one model (offline: smollm2-135m, gemma3-270m; or a hub id)")
run_stamp = parameters.check(profile, gpu_seeds=gpu_seeds, miniature_seeds=miniature_seeds, n_samples=n_samples,
                             batch_size=batch_size, loss_samples=loss_samples, live_eval_samples=live_eval_samples,
                             seed=seed, live_steps=live_steps, epsilon=epsilon, seq_len=seq_len,
                             minimum={"loss_samples": 0})
device = parameters.device_of(profile)
sources.record(run_stamp)

# %% tags=["hide-input"]
display(figures.folded("Which BOS setting each verdict reads, and why",
                       ("In the packing runs the BOS is the intervention itself (`bos` against `causal`), so "
                        "those verdicts have no BOS choice to make. The inference claim measures pretrained "
                        "models with and without their BOS, and its verdict reads them this way (from "
                        "`sinkpaper.paper`); every model is shown with both settings below, and a model whose "
                        "sink vanishes without BOS shows that number" ":\n\n")
                       + paper.bos_statement(["pack_bos_inference"])))

# %% [markdown]
# ## Real text: models trained with each packing
#
# `configs/packing.yaml`: `causal` (the paper's packing), `doc_mask` (a token sees only its own document), `bos` (a
# fixed BOS at position 1), `bos_doc_mask` (both) and `bos_each_doc_mask` (a BOS before every document, read at each
# query's own document start: Sink_first).

# %% tags=["hide-input", "full-width"]
FOUR = ["causal", "doc_mask", "bos", "bos_doc_mask"]
ORDER = FOUR + ["bos_each_doc_mask"]
CHANGES = {"bos_each_doc_mask": "a BOS before every document, intra-document mask",
           "causal": "causal mask across documents, no BOS (the paper's packing)",
           "doc_mask": "intra-document mask, no BOS", "bos": "fixed BOS at position 1, causal mask",
           "bos_doc_mask": "fixed BOS at position 1, intra-document mask"}
PAPER = {"causal": f"Gu et al. default: Sink_1 {paper.paper_value('default'):.2f}",
         "bos": "Barbero et al.: the BOS receives the sink (qualitative)",
         "doc_mask": "Barbero et al.: sink kept on the first token (qualitative)",
         "bos_doc_mask": "Barbero et al.: qualitative",
         "bos_each_doc_mask": "Barbero et al.: a sink on each document's first token (qualitative)"}
lm = sweeps.lm_sweep(FAMILY, profile, gpu_seeds)
if lm.payloads:
    display(figures.Fold("Every point over its seeds",
                         tables.points_table(lm.payloads, ORDER, ks=(1, 2), changes=CHANGES, paper=PAPER)))
    figures.figure(figures.sweep_chart(lm.payloads, ORDER, 1, f"Real text ({lm.profile} profile): Sink_1 per packing"),
                   figures.sweep_caption(lm.payloads, ORDER))
    sources.record(lm.provenance())
    # the document-mask claim reads doc_mask and bos_doc_mask; the causal control says whether "no sink with the
    # mask" is the mask's doing or this scale's
    pm = {p: figures.book_mean(lm.payloads, p) for p in FOUR}
    if all(v is not None for v in pm.values()):
        display(Markdown(prose.packing_reading(pm)))
if lm.missing.missing:
    display(Markdown(lm.missing_text() + " Until then this section has no real-text number of ours for the packing "
                     "variants; the pretrained models below are the real-LM evidence for the BOS question."))

# %% [markdown]
# At the `gpu` and `paper` profiles, the run trained with a fixed BOS is also measured with and without its BOS on
# held-out windows of its own data.

# %% tags=["hide-input", "full-width"]
lm_ablation = None
if profile != "cpu":
    bos_dir = Path("runs/packing/bos") / f"seed-{gpu_seeds[0]}"
    if latest_checkpoint(bos_dir) is not None:
        lm_ablation = pb.run_bos_ablation(bos_dir, n_samples=live_eval_samples, epsilon=epsilon, device=device)
        display(figures.Table(pb.condition_rows(lm_ablation, f"packing/bos, seed {gpu_seeds[0]}")))
        sources.record(lm_ablation["provenance"])
    else:
        display(Markdown(f"`{bos_dir}` holds no checkpoint (the run came from the results store, which keeps "
                         "metrics, not weights): retrain it there to measure it without its BOS."))
else:
    display(Markdown("At the `cpu` profile nothing is trained on real text, so there is no real-text model trained "
                     "with a fixed BOS to run without it; the miniature and the pretrained models below answer it."))

# %% [markdown]
# ## In miniature: a fixed BOS, and the model without it
#
# The miniature ([Bigram-Backcopy](04_optimization.ipynb), Guo et al. 2024) packs documents like the paper **plus a
# fixed BOS at position 1**; the stored sweep compares it with `no_fixed_token` (the paper's packing) and with the
# fixed token at position 2 or 3. It has no intra-document-mask point.

# %% tags=["hide-input", "full-width"]
MINI_ORDER = ["recipe", "no_fixed_token", "fixed_pos2", "fixed_pos3"]
MINI_CHANGES = {"recipe": "fixed BOS at position 1", "no_fixed_token": "no fixed token (the paper's packing)",
                "fixed_pos2": "fixed token at position 2", "fixed_pos3": "fixed token at position 3"}
mini = sweeps.stored_sweep(MINIATURE, "cpu", points=MINI_ORDER, seeds=tuple(miniature_seeds))
if mini.payloads:
    display(figures.Fold("Every point over its seeds",
                         tables.points_table(mini.payloads, MINI_ORDER, ks=(1, 2, 3), changes=MINI_CHANGES)))
    figures.figure(figures.position_profile_chart(mini.payloads, MINI_ORDER, "miniature: Sink_k by position (mean over seeds)"),
               "The stored miniature sweep: Sink_k for k = 1..10 with a fixed BOS (the recipe), without one, and "
               "with the fixed token at 2 or 3, the mean over seeds.")
    sources.record(sweeps.payloads_provenance(mini.payloads, loaded=True))
if mini.missing:
    sources.missing(mini)
m = {(p, k): figures.book_mean(mini.payloads, p, f"Sink_{k}") for p in MINI_ORDER for k in (1, 2, 3)}
display(Markdown(
    f"Measured (mean over seeds). Fixed BOS at 1: Sink_1 {sig(m['recipe', 1])} %. No fixed token: Sink_1 "
    f"{sig(m['no_fixed_token', 1])} %. Fixed token at 2: Sink_2 {sig(m['fixed_pos2', 2])} %, Sink_1 "
    f"{sig(m['fixed_pos2', 1])} %. Fixed token at 3: Sink_3 {sig(m['fixed_pos3', 3])} % (chapter 5 also shows "
    "the fixed token at 3 trained twice as long, `fixed_pos3_steps_x2`)."))

# %% [markdown]
# ### Live: train the recipe, then take its BOS away
#
# The recipe trains now, then is measured on held-out windows with its BOS and without it: the same text, the loss
# compared on the same 63 targets.

# %% tags=["hide-input", "full-width"]
live = experiments.live_run(MINIATURE, "cpu", point="recipe", seed=0, steps=live_steps)
lr_ = live.payload["result"]
live_prov = {**lr_["provenance"], "computed_now": True, "model": "1 layer x 4 heads, d 64", "point": "recipe"}
ablation = pb.run_bos_ablation(live.run_dir, n_samples=live_eval_samples, epsilon=epsilon)
display(figures.Fold("The live run, and each condition's numbers",
                     figures.Table([{"run": "live recipe, seed 0", "steps": lr_["step"], "tokens seen": lr_["tokens_seen"],
                                     "Sink_1 % (trainer's evaluation)": round(lr_["sink_k"]["1"], 1),
                                     "alpha_1": round(lr_["alpha_1_mean"], 3),
                                     "seconds": lr_["provenance"]["wall_seconds"]}]),
                     figures.Table(pb.condition_rows(ablation, "live recipe"))))
figures.figure(figures.row(
    figures.sink_by_position_chart(pb.sink_k_chart_rows(ablation, "miniature"), "live miniature: Sink_k with and without BOS"),
    *[figures.heatmap(c["alpha_1_matrix"], "head", "layer",
                      f"alpha_1 per head, BOS {'on' if c['bos'] else 'off'}", domain=(0, 1), width=160, height=60)
      for c in ablation["conditions"]]),
               "The live recipe measured with and without its BOS: Sink_k by position (left), and α_1 per head with "
               "BOS on and off.")
sources.record(live_prov)
sources.record(ablation["provenance"])
a_on, a_off = pb.condition(ablation, True), pb.condition(ablation, False)
display(Markdown(
    f"Measured now. With its BOS the live model has Sink_1 {a_on['sink_k']['1']:.1f} % (mean α_1 "
    f"{a_on['alpha_1_mean']:.3f}; the trainer's own evaluation said {lr_['sink_k']['1']:.1f} %). Without it: "
    f"Sink_1 {a_off['sink_k']['1']:.1f} % (mean α_1 {a_off['alpha_1_mean']:.3f}, uniform attention gives "
    f"{metrics.uniform_alpha(64)[0]:.3f}), "
    f"and a sink at some position 2..{a_off['k_max']} in {a_off['sink_elsewhere']:.1f} % of the (sample, head) "
    f"pairs. The loss on the same targets: {a_on['loss']:.3f} with BOS, {a_off['loss']:.3f} without."))

# %% [markdown]
# ## Pretrained models with and without their BOS
#
# Each natural-text window is measured without BOS (64 text tokens) and with the tokenizer's BOS at position 1 (BOS +
# the first 63). Which input is the trained one differs: Gemma 3's tokenizer puts its BOS first by default; SmolLM2's
# adds none, and its "BOS" token is the chat-turn marker `<|im_start|>`, so for it BOS off is the trained input.

# %% tags=["hide-input", "full-width"]
contrasts = []
for name in models:
    lm_ = load_lm(name, device=device)
    if lm_.bos_token_id is None:
        display(Markdown(f"`{name}`: the tokenizer has no BOS token; skipped."))
        continue
    contrasts.append(pb.lm_bos_contrast(lm_, n_samples=n_samples, seq_len=seq_len, epsilon=epsilon, seed=seed,
                                        batch_size=batch_size, loss_samples=loss_samples))
    contrasts[-1]["load_seconds"] = lm_.load_seconds
    del lm_
rows = []
for c in contrasts:
    for r in pb.condition_rows(c, c["model"]):
        r["trained with BOS first"] = "yes" if c["prepends_bos"] else "no"
        rows.append(r)
display(figures.Fold("The values, per model and BOS setting",
                     figures.Table(rows)))
figures.figure(figures.sink_by_position_chart([r for c in contrasts for r in pb.sink_k_chart_rows(c, c["model"])],
                                       "pretrained models: Sink_k with and without BOS", paper=True),
               "The offline pretrained models measured now with and without a BOS: Sink_k by position; the paper's "
               "values where it reports one.")
for c in contrasts:
    sources.record(pb.short_provenance(c))
display(Markdown(prose.bos_contrast_lines(contrasts, loss_samples)))

# %% [markdown]
# ### Every BOS policy, on the same text
#
# The audit (`python -m sinkpaper bos-audit`, stored in `results/bos/`) measures the same 100 natural-text windows
# under each policy: `default` (what the tokenizer adds by itself), `forced` (its BOS token first), `none` (nothing
# in front), `random` (a random ordinary token first) and `repeat` (the window's first token twice).

# %% tags=["hide-input"]
audit = pb.load_bos_audit()
if audit is None:
    display(Markdown("No stored BOS audit: `python -m sinkpaper bos-audit --out results/bos/audit.json` makes one."))
else:
    display(figures.Fold("Every model and BOS policy", figures.Table(pb.bos_audit_rows(audit))))
    for m in audit["models"]:
        sources.record({**m["provenance"], "computed_now": False, "loaded_from": str(pb.BOS_AUDIT)},
                       what=f"BOS audit of {m['model']}")
    display(Markdown(pb.bos_audit_reading(audit)))

# %% [markdown]
# ## Paper vs this run
#
# The three claims are Barbero et al.'s and qualitative: the paper column names the source. The miniature's fixed-BOS
# runs (`recipe` against `no_fixed_token`) are scored once, by chapter 5's `data_no_fixed_token`, so one measurement
# never counts as two agreements. The inference rule asks for a change of at least 25 % of the with-BOS Sink_1; rule
# history: [When each verdict rule was fixed](15_rule_history).

# %% tags=["hide-input"]
trained_with_bos = [c for c in contrasts if c["prepends_bos"]]
values = {f"{c['model']}: {w} BOS": pb.condition(c, b)["sink_k"]["1"]
          for c in trained_with_bos for w, b in (("with", True), ("without", False))}
if lm_ablation is not None:
    values.update({f"packing/bos ({lm.profile}): {w} BOS": pb.condition(lm_ablation, b)["sink_k"]["1"]
                   for w, b in (("with", True), ("without", False))})
controls = "; ".join(f"control {c['model']} (trained without a BOS): Sink_1 {pb.condition(c, True)['sink_k']['1']:.2f} "
                     f"% with, {pb.condition(c, False)['sink_k']['1']:.2f} % without" for c in contrasts
                     if not c["prepends_bos"])
pre_prov = contrasts[0]["provenance"] if contrasts else run_stamp
paper.record("pack_bos_inference", values=values, provenance=pre_prov,
             measurement=f"pretrained {', '.join(c['model'] for c in contrasts)}, {n_samples} natural-text windows, "
                         f"T = {seq_len}",
             setting="4-bit GGUF models dequantized, not Barbero et al.'s Gemma 7B / LLaMA 3.1", note=controls)
paper.record("pack_bos_inference", scale="miniature",
             values={"recipe (live): with BOS": a_on["sink_k"]["1"], "recipe (live): without BOS": a_off["sink_k"]["1"]},
             provenance=ablation["provenance"],
             measurement=f"the live recipe run, {lr_['step']} steps, {live_eval_samples} held-out windows",
             note=f"loss on the same targets {a_on['loss']:.3f} with BOS, {a_off['loss']:.3f} without")
card.refresh()  # the records just written: the card at the top now shows them
display(tables.claims_fold(["pack_fixed_bos", "pack_doc_mask", "pack_bos_inference"]))

# %% [markdown]
# ````{dropdown} Rerun it: the commands
# ```bash
# python -m sinkpaper.site run --only 10_packing_bos -p model gpt2-xl -p n_samples 100
# python -m sinkpaper sink --model gemma3-270m --inputs natural --no-bos
# ```
# ````
