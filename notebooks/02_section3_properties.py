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
# # Section 3: properties of attention sinks in pretrained language models

# %% tags=["hide-input"]
# Colab only: install sinkpaper at the version that built this page; elsewhere this cell does nothing
import sys

if "google.colab" in sys.modules:
    import subprocess

    subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                    "sinkpaper[offline-models] @ git+https://github.com/sinkpaper/sinkpaper@main"], check=True)
    from sinkpaper.book import colab

    colab.setup()

# %% tags=["parameters"]
profile = "cpu"  # cpu | gpu | paper: where this runs (gpu and paper use CUDA)
model = "smollm2-135m,gemma3-270m"  # comma-separated offline names or Hugging Face ids (e.g. gpt2-xl)
n_samples = 100  # sequences per (model, inputs, BOS) setting; the paper uses 100
seq_len = 64  # T, BOS included; the paper uses 64
epsilon = 0.3  # sink threshold
bos = "both"  # True, False or "both": BOS at position 1 is an explicit choice, reported with every number
inputs = "natural"  # comma-separated kinds for the results table: natural, random, repeat (chapter 3 has all)
n_profile = 16  # sequences per (model, BOS) traced in full (queries, keys, values) for the properties
explorer_samples = 8  # sequences per (model, BOS) in the attention explorer (natural text)
seed = 0  # seeds the probe inputs
batch_size = 25  # sequences per forward pass

# %% tags=["remove-input"]
from sinkpaper.book import findings

card = findings.finding_card("02_section3_properties")

# %% [markdown]
# Gu et al. (2025), Section 3, measure how much attention each head puts on the first token and report what the
# sink token looks like inside open LMs:
#
# 1. most heads of most layers put a large share of their attention on token 1 (the sink);
# 2. the sink token carries a *massive activation* (a huge hidden-state norm) and a small value norm, so it
#    takes attention while adding little to the head's output: it acts like a **key bias**;
# 3. the sink comes from the angle between queries and the sink's key, not from their norms.
#
# This page measures all three on natural text, on SmolLM2-135M and Gemma-3-270M or any Hugging Face id passed as a
# parameter, with the paper's $\mathrm{Sink}_1^{\epsilon}$ at $\epsilon = 0.3$ and $T = 64$ ([glossary](glossary.md)).
# Threshold, length, random and repeated inputs and the paper's Table 1 are the next chapter, [measuring the
# sink](03_section3_measuring.ipynb).

# %%

import numpy as np
from IPython.display import Markdown, display

from sinkpaper import metrics, paper, provenance
from sinkpaper.analysis import explorer_payload, section3 as s3
from sinkpaper.book import explorer, figures, sources, tables
from sinkpaper.book import measuring as ms
from sinkpaper.lms import measure_sink
from sinkpaper.probes import make_inputs

device = ms.check_profile(profile)
models = ms.parse_models(model)
bos_choices = ms.parse_bos(bos)
input_kinds = ms.parse_inputs(inputs)
if "natural" not in input_kinds:
    raise ValueError(f"inputs must include natural (the properties are measured on natural text), got {inputs!r}")
metrics.check_epsilon(epsilon)
metrics.check_seq_len(seq_len)
for label, v in (("n_samples", n_samples), ("n_profile", n_profile), ("explorer_samples", explorer_samples)):
    ms.positive_int(v, label)

run_stamp = provenance.stamp(device, profile=profile)
sources.record(run_stamp)

# %% tags=["hide-input"]
display(figures.folded("Which BOS setting each verdict reads, and why",
                       ("Every model is measured with BOS on and off (where its tokenizer has a BOS token), and "
                        "both are shown. The verdicts of this chapter's three claims read one setting, fixed in "
                        "`sinkpaper.paper`; the other is shown beside it in the table at the end and in the "
                        "scorecard's note" ":\n\n")
                       + paper.bos_statement(["s3_massive_activation", "s3_small_value_norm", "s3_qk_angle"])))

# %% [markdown]
# ## Sink rate on natural text, with and without BOS
#
# *Natural text* is windows of the Python standard library's docstrings, English prose every machine has offline.
# With BOS, position 1 is the tokenizer's BOS token. The `inputs` parameter adds random and repeated
# tokens.

# %%
lms = s3.load_models(models, device)  # an unknown name or an unreachable hub id stops here, naming what is offline
bos_for = {n: [b for b in bos_choices if not b or lm.bos_token_id is not None] for n, lm in lms.items()}
results = []  # one measure_sink() dict per (model, inputs, bos)
for name, lm in lms.items():
    if bos_for[name] != bos_choices:
        display(Markdown(f"`{name}`: its tokenizer has no BOS token, so it is measured without one only."))
    for with_bos in bos_for[name]:
        for kind in input_kinds:
            probe = make_inputs(lm.tokenizer, kind, n_samples=n_samples, seq_len=seq_len, bos=with_bos, seed=seed)
            results.append(measure_sink(lm, probe, epsilon=epsilon, batch_size=batch_size, progress=False))
sources.record({"computed_now": True, "settings measured": len(results),
                "seconds": round(sum(r["provenance"]["measure_seconds"] for r in results)),
                "model loading": ", ".join(f"{n} {lm.load_seconds:.0f} s" for n, lm in lms.items())},
               what="the sink of each model, input kind and BOS setting")
by_setting = {(r["model"], r["inputs"], r["bos"]): r for r in results}  # one result per (model, inputs, BOS)

# %% tags=["hide-input"]
rows = []
for r in results:
    rows.append({"model": r["model"], "BOS": "on" if r["bos"] else "off", "inputs": r["inputs"],
                 "Sink_1 (%)": round(r["sink_k"]["1"], 2), "Sink_2 (%)": round(r["sink_k"]["2"], 2),
                 "mean alpha_1": round(r["alpha_1_mean"], 3),
                 "token-1 norm ratio (max over layers)": round(max(r["massive_activation_ratio_by_layer"]), 1)})
display(figures.Fold("The values, per model, input and BOS setting",
                     figures.Table(rows)))
first = results[0]["provenance"]
sources.record({**run_stamp, "n_samples": n_samples, "seq_len": seq_len,
                "epsilon": epsilon,
                "text": f"{first.get('text_source', '')} (Python "
                        f"{first.get('python')}, sha256 {first.get('text_sha256')})"})

# %% [markdown]
# ## Where the sinks are: α_1 per layer and head

# %% tags=["hide-input"]
import altair as alt  # noqa: E402  (book-only dependency, used for layout)

for name in models:  # one row per model: BOS off | BOS on
    charts = [figures.heatmap(np.array(r["alpha_1_matrix"]), "head", "layer",
                              f"{name}, natural, BOS {'on' if with_bos else 'off'}",
                              value_title="α_1", domain=(0, 1), width=140, height=220)
              for with_bos in bos_for[name] if (r := by_setting.get((name, "natural", with_bos)))]
    figures.figure(alt.hconcat(*charts),
               f"α_1 of every head of {name} (rows: layers, columns: heads) on natural text, BOS off and on where "
               f"its tokenizer has one: the mean over {n_samples} samples of {seq_len} tokens, measured now. A head "
               f"with α_1 > ε = {epsilon} has a sink on token 1.")

# %% [markdown]
# ### Explore the attention
#
# Chapter 3 has a larger explorer, with random and repeated inputs.

# %% tags=["hide-input"]
small = [explorer_payload.collect(lm, name, inputs=("natural",), bos=bos_for[name], n_samples=explorer_samples,
                          n_map_samples=1, seq_len=seq_len, seed=seed, batch_size=batch_size)
         for name, lm in lms.items()]
display(figures.Fold("Open the explorer: pick a layer and a head, hover for the tokens, move ε",
                     explorer.render(small, epsilon=epsilon, title="Attention explorer: natural text")))

# %% [markdown]
# ## Massive activations and small value norms on the sink token
#
# The paper finds that from an early layer on the sink token's hidden state has a far larger norm than the other
# tokens', while its values are small.

# %% tags=["hide-input"]
profiles = {}  # "model, BOS on/off" -> s3.sink_token_profile(...)
for name, lm in lms.items():
    hidden, values = {}, {}   # BOS on and off in one pair of panels per model: the two settings side by side
    for with_bos in bos_for[name]:
        ids = make_inputs(lm.tokenizer, "natural", n_samples=n_profile, seq_len=seq_len, bos=with_bos,
                          seed=seed).input_ids
        bos = f"BOS {'on' if with_bos else 'off'}"
        prof = profiles[f"{name}, {bos}"] = s3.sink_token_profile(lm, ids, epsilon)
        hidden |= {f"token 1, {bos}": prof["hidden_first"], f"other tokens (mean), {bos}": prof["hidden_others"]}
        values |= {f"token 1, {bos}": prof["value_first"], f"other tokens (mean), {bos}": prof["value_others"]}
    figures.figure(alt.hconcat(
        figures.lines_by_layer(hidden, "hidden-state L2 norm", f"{name}: hidden states", log_y=True,
                               x_title="layer (0 = embeddings)", width=230, height=200),
        figures.lines_by_layer(values, "value L2 norm (mean over heads)", f"{name}: values", width=230, height=200)),
               f"{name}, per layer: the L2 norm of token 1's hidden state against the mean over the other tokens "
               "(left, log scale), and token 1's mean value norm against the others' (right), BOS off and on; "
               f"natural text, {n_profile} samples of {seq_len} tokens, measured now.")
sources.record({**run_stamp, "n_samples": n_profile, "seq_len": seq_len,
                "inputs": "natural"})

# %% [markdown]
# ## The first token as a key bias
#
# A head that sends most of its attention to token 1 while token 1's value is small in effect adds a learned bias
# to its keys (the paper's Section 7.2 replaces the sink by exactly such a bias). The fold gives medians over each
# setting's sink heads, among them the share of the weighted value mass Σ_j A[t, j] |v_j| that token 1 brings.

# %% tags=["hide-input"]
summaries = {tag: s3.profile_summary(p) for tag, p in profiles.items()}
display(figures.Fold("Per setting: medians over its sink heads",
                     figures.Table([{"setting": tag, **s} for tag, s in summaries.items()])))
sources.record({**run_stamp, "n_samples": n_profile, "seq_len": seq_len,
                "epsilon": epsilon, "statistic": "median over sink heads"})

# %% [markdown]
# ## The sink comes from the angle, not the norms
#
# $q_t \cdot k_j = \lVert q_t \rVert \, \lVert k_j \rVert \cos(q_t, k_j)$ after RoPE. In the paper's figure the sink
# column (key 1) stands out in the product and in the cosine, not in the norm product. Below, the head with the
# largest α_1 in a middle layer of the first model:

# %% tags=["hide-input"]
name = models[0]
lm = lms[name]
with_bos = bos_for[name][-1]
alpha_1 = profiles[f"{name}, BOS {'on' if with_bos else 'off'}"]["alpha_1"]  # [L, H]
layer = int(len(alpha_1) // 2)
head = int(alpha_1[layer].argmax())
ids = make_inputs(lm.tokenizer, "natural", n_samples=1, seq_len=seq_len, bos=with_bos, seed=seed).input_ids
tr = lm.trace(ids)
qk = metrics.qk_decomposition(tr.queries[layer][0, head], tr.keys[layer][0, head], tr.visible[0])
col1 = {k: float(np.nanmean(v[1:, 0].numpy())) for k, v in qk.items()}
rest = {k: float(np.nanmean(v[1:, 1:].numpy())) for k, v in qk.items()}
display(Markdown("Mean over queries t > 1, key 1 vs the other visible keys: "
                 + "; ".join(f"{k}: {col1[k]:.3g} vs {rest[k]:.3g}" for k in qk)))
display(figures.Fold("The three maps: q·k, the cosine and |q||k|", figures.Figure(
    figures.qk_heatmaps(qk["product"], qk["cosine"], qk["norm_product"],
                        f"{name}, layer {layer}, head {head} (alpha_1 = {alpha_1[layer, head]:.2f}), "
                        f"BOS {'on' if with_bos else 'off'}", size=170),
    f"{name}, layer {layer}, head {head}, one natural-text sample: for each query (rows) and key (columns), q·k, "
    "the cosine of q and k, and |q||k|: which of the three singles out token 1.")))

# %% [markdown]
# ## Paper vs this run
#
# The paper shows these properties on 7B-scale models in figures, without a number to match, so we compare the
# direction. A rule reads the settings with BOS on (where the tokenizer has one) that have a sink on natural text
# (Sink_1 >= 10 %); the others are shown, not judged. Rule history: [When each verdict rule was
# fixed](15_rule_history).

# %% tags=["hide-input"]
KEYS = {"s3_massive_activation": {"token-1 norm ratio": "token-1 norm ratio (max over layers)"},
        "s3_small_value_norm": {"value-norm ratio": "value-norm ratio |v_1|/|v_t|"},
        "s3_qk_angle": {"cos gap": "cos(q, k_1) - cos(q, k_j)", "norm-product ratio": "norm-product ratio"}}
sink_natural = {f"{r['model']}, BOS {'on' if r['bos'] else 'off'}": r["sink_k"]["1"]
                for r in results if r["inputs"] == "natural"}
judged_tag = {n: f"{n}, BOS {'on' if lms[n].bos_token_id is not None else 'off'}" for n in models}
setting = (f"pretrained {', '.join(models)} on natural text ({profile} profile, {n_profile} samples x T = "
           f"{seq_len}, ε = {epsilon}); the paper: 7B-scale models")
record_prov = {**run_stamp, "source_of_numbers": "computed now", "models": ", ".join(models),
               "n_samples": n_profile, "seq_len": seq_len}
table = []
for cid, keys in KEYS.items():
    values, others = s3.property_values(summaries, keys, list(judged_tag.values()), sink_natural)
    table.append({"id": cid, **paper.record(
        cid, values=values, measurement=f"{', '.join(models)}, {n_profile} natural-text samples, sink heads",
        provenance=record_prov, setting=setting, note=("shown, not judged: " + "; ".join(others)) if others else "")})
card.refresh()  # the records just written: the card at the top now shows them
display(tables.claims_fold([r["id"] for r in table]))  # the scales run here
no_sink = [tag for tag, s in sink_natural.items() if s < paper.NO_SINK]
if no_sink:
    norm = {tag: summaries[tag]["token-1 norm ratio (max over layers)"] for tag in no_sink}
    together = all(v < paper.MASSIVE for v in norm.values())
    display(Markdown("Settings without a sink on natural text: " + "; ".join(
        f"`{tag}` (Sink_1 {sink_natural[tag]:.2f} %, token-1 norm ratio {norm[tag]:g})" for tag in no_sink) + "."
        + (" Where there is no sink, token 1 has no massive activation either: the two go together here."
           if together else "")))

# %% [markdown]
# ````{dropdown} Rerun it: the commands
# ```bash
# python -m sinkpaper.site run --only 02_section3_properties -p model gpt2-xl -p bos both
# python -m sinkpaper.site run --only 02_section3_properties -p inputs natural,random,repeat
# ```
# ````
